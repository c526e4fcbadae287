// A C entry to ckgemm's own int8 RR grouped kernel (csrc/cuda/ws_s8_rr*.cuh) for
// benchmarks/native/bench_ws_s8_rr.py, which loads it with ctypes beside torch and the op:
//
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr \
//     -gencode=arch=compute_90a,code=sm_90a -Icsrc -I$CUTLASS/include -o /tmp/libws_s8.so \
//     benchmarks/native/ws_s8_capi.cu
#include <cstdio>

#include "cuda/ws_s8_rr_launch.cuh"

// Exported by name (the build hides everything else: build_support/__init__.py HIDDEN says why).
extern "C" __attribute__((visibility("default")))
int ws_s8_rr_packed(const void* a, const void* b, void* c, const void* sizes, int sizes_int64, int groups,
                    long long rows, long long n, long long k, long long lda, long long ldb, long long ldc,
                    long long b_group_stride, int sm_count, void* stream) {
  const ckgemm::PackedArgs call{a, b, c, sizes, sizes_int64, groups, rows, n, k, lda, ldb, ldc, b_group_stride,
                               nullptr, 0, nullptr, 0, nullptr};
  std::string why;
  const cudaError_t e = ckgemm::ws::s8::launch(call, sm_count, static_cast<cudaStream_t>(stream), &why);
  if (e != cudaSuccess) std::fprintf(stderr, "ws_s8_rr: %s (%s)\n", why.c_str(), cudaGetErrorString(e));
  return static_cast<int>(e);
}
