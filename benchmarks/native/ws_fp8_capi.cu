// A C entry to ckgemm's own fp8 grouped kernel (csrc/cuda/ws_fp8*.cuh) for benchmarks/native/bench_ws_fp8.py,
// which loads it with ctypes beside torch and the peers: every recipe and variant of the kernel, where the
// extension's instance table holds only the A-multicast unscaled 128x192 and block-scaled 128x192 / 128x256 ones
// (csrc/cuda/ws_instance.cuh).
//
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr \
//     -gencode=arch=compute_90a,code=sm_90a -Icsrc -I$CUTLASS/include -o /tmp/libws_fp8.so \
//     benchmarks/native/ws_fp8_capi.cu
// -DCKGEMM_WS_SCALES=0 or 2 sets the scale feed of block-scaled calls (ws_fp8_launch.cuh; default 0 here).
#include <cstdio>

#include "cuda/ws_fp8_launch.cuh"

#ifndef CKGEMM_WS_SCALES
#define CKGEMM_WS_SCALES 0
#endif

using namespace ckgemm::ws;

namespace {
// The feed's workspace: one device buffer, grown when a call needs more (warm-up calls, before any capture).
void* workspace(size_t bytes, size_t* have) {
  static void* buffer = nullptr;
  static size_t size = 0;
  if (bytes > size) {
    if (buffer != nullptr) cudaFree(buffer);
    buffer = nullptr;
    size = 0;
    if (cudaMalloc(&buffer, bytes) == cudaSuccess) size = bytes;
  }
  *have = size;
  return buffer;
}
}  // namespace

// Exported by name (the build hides everything else: build_support/__init__.py HIDDEN says why).
extern "C" __attribute__((visibility("default")))
int ws_fp8_packed(const void* a, const void* b, void* c, const void* sizes, int sizes_int64, int groups,
                  long long rows, long long n, long long k, long long lda, long long ldb, long long ldc,
                  long long b_group_stride, const float* sa, long long sa_stride, const float* sb,
                  long long sb_stride, int recipe, int out_f32, int bn, int mcast_b, int sm_count,
                  void* stream) {
  const ckgemm::PackedArgs call{a, b, c, sizes, sizes_int64, groups, rows, n, k, lda, ldb, ldc, b_group_stride,
                               sa, sa_stride, sb, sb_stride, nullptr};
  std::string why = rejects(call, out_f32 ? 4 : 2, recipe == static_cast<int>(Recipe::Block));
  if (!why.empty()) {
    std::fprintf(stderr, "ws_fp8: %s\n", why.c_str());
    return -1;
  }
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaErrorInvalidValue;
#define WS_CASE(BN_, MB_, R_, OUT_)                                                                      \
  if (bn == BN_ && mcast_b == MB_ && recipe == static_cast<int>(Recipe::R_) &&                          \
      out_f32 == std::is_same_v<OUT_, float>)                                                             \
    {                                                                                                     \
      size_t have = 0;                                                                                    \
      void* w = workspace(workspace_bytes<Recipe::R_>(call, CKGEMM_WS_SCALES), &have);                    \
      e = launch<BN_, MB_, Recipe::R_, OUT_>(call, CKGEMM_WS_SCALES, w, have, sm_count, s, &why);         \
    }
#define WS_BOTH(BN_, R_, OUT_) WS_CASE(BN_, 0, R_, OUT_) WS_CASE(BN_, 1, R_, OUT_)
  WS_BOTH(128, None, float)
  WS_BOTH(192, None, float)
  WS_BOTH(128, Row, __nv_bfloat16)
  WS_BOTH(192, Row, __nv_bfloat16)
  WS_BOTH(128, Block, __nv_bfloat16)
  WS_BOTH(192, Block, __nv_bfloat16)
  WS_BOTH(256, None, float)
  WS_BOTH(256, Row, __nv_bfloat16)
  WS_BOTH(256, Block, __nv_bfloat16)
#undef WS_BOTH
#undef WS_CASE
  if (e != cudaSuccess) std::fprintf(stderr, "ws_fp8: %s (%s)\n", why.c_str(), cudaGetErrorString(e));
  return static_cast<int>(e);
}
