// The block recipe's cooperative 128x128x128 CUTLASS instance with other cluster shapes, A/B against the
// shipped one (cluster 1x2), through ckgemm's own Instance<>::run on the packed path (the builder kernel
// included), on the prefill shapes of benchmarks/bench_scaled.py with uniform group sizes. The output of
// each variant is compared with the shipped one's (same sums in the same order per tile: equal bits).
//
//   nvcc -std=c++17 -O3 -DNDEBUG --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
//     -DCUTLASS_DEBUG_TRACE_LEVEL=0 -DVAM=2 -DVAN=1 -DVBM=1 -DVBN=1 -Icsrc -I$CUTLASS/include \
//     -I$CUTLASS/tools/util/include -o /tmp/bench_block_clusters benchmarks/native/bench_block_clusters.cu
//   /tmp/bench_block_clusters 30        # iterations per timing; CKGEMM_RASTER / CKGEMM_SWIZZLE apply
//
// VAM x VAN and VBM x VBN are the two variants' clusters. Timings run shipped, A, B, B, A, shipped (each
// after ~30 ms of untimed calls), so drift shows as the difference between a variant's two figures.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>

#include "cuda/instance.cuh"

#ifndef VAM
#define VAM 2
#endif
#ifndef VAN
#define VAN 1
#endif
#ifndef VBM
#define VBM 1
#endif
#ifndef VBN
#define VBN 1
#endif
#define STR2(...) #__VA_ARGS__
#define STR(...) STR2(__VA_ARGS__)

using namespace ckgemm;
using namespace ckgemm::cuda;

template <int CM, int CN>
using BlockKernel = GroupedGemmKernel<cutlass::float_e4m3_t, cutlass::bfloat16_t, float, cutlass::layout::ColumnMajor,
                                      Shape<_128, _128, _128>, Shape<Int<CM>, Int<CN>, _1>, CooperativeBlockwise,
                                      Scaling::Block>;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); std::exit(1); } } while (0)

__global__ void fill_fp8(uint8_t* p, int64_t n, uint32_t seed) {  // sign, exponent <= 6: never NaN
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u ^ seed;
    x ^= x >> 15; x *= 2246822519u; x ^= x >> 13;
    p[i] = (uint8_t)(x & 0xB7);
  }
}

template <class K>
struct Variant {
  PackedArgs p;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  int sms;
  Variant(const PackedArgs& args, int sm_count) : p(args), sms(sm_count) {
    ws_bytes = Instance<K>::bytes(p.groups, sms);
    CK(cudaMalloc(&ws, ws_bytes));
  }
  ~Variant() { cudaFree(ws); }
  void call() {
    Buffers b{ws, ws_bytes};
    RunReport r{};
    Launch l{p.groups, nullptr, &p, &b, 0, sms, &r};
    if (Instance<K>::run(l) != Status::Ok) { std::printf("run failed: %s\n", r.message); std::exit(1); }
  }
};

template <class V>
float time_ms(V& v, int iters) {
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a); v.call(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float one = 0; cudaEventElapsedTime(&one, a, b);
  for (int i = 0, warm = (int)(30.f / std::max(one, 0.01f)) + 1; i < warm; ++i) v.call();
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) v.call();
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms = 0; cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a); cudaEventDestroy(b);
  return ms / iters;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 30;
  struct Case { const char* name; int groups, rows_per_group, n, k; };
  const Case cases[] = {{"DeepSeek-V3 prefill", 32, 1024, 4096, 7168}, {"DeepSeek-V3 down", 32, 1024, 7168, 2048},
                        {"Mixtral prefill", 8, 2048, 14336, 4096}, {"128 experts", 128, 256, 1536, 2048}};
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  for (const Case& c : cases) {
    const int64_t rows = (int64_t)c.groups * c.rows_per_group, kb = (c.k + 127) / 128, nb = (c.n + 127) / 128;
    const int64_t na = rows * c.k, nbytes_b = (int64_t)c.groups * c.n * c.k, nout = rows * c.n;
    std::mt19937 gen(1234);
    std::uniform_real_distribution<float> scale(0.5f, 2.f);
    std::vector<float> hsa(rows * kb), hsb(c.groups * nb * kb);
    for (auto& x : hsa) x = scale(gen);
    for (auto& x : hsb) x = scale(gen);
    std::vector<int> hgs(c.groups, c.rows_per_group);
    void *a, *b, *d_ref, *d;
    float *sa, *sb;
    int* gs;
    CK(cudaMalloc(&a, na)); CK(cudaMalloc(&b, nbytes_b)); CK(cudaMalloc(&d_ref, nout * 2)); CK(cudaMalloc(&d, nout * 2));
    CK(cudaMalloc(&sa, hsa.size() * 4)); CK(cudaMalloc(&sb, hsb.size() * 4)); CK(cudaMalloc(&gs, c.groups * 4));
    fill_fp8<<<1024, 256>>>((uint8_t*)a, na, 1u);
    fill_fp8<<<1024, 256>>>((uint8_t*)b, nbytes_b, 2u);
    CK(cudaMemcpy(sa, hsa.data(), hsa.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sb, hsb.data(), hsb.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(gs, hgs.data(), c.groups * 4, cudaMemcpyHostToDevice));
    PackedArgs p{};
    p.a = a; p.b = b; p.c = d_ref; p.group_sizes = gs; p.groups = c.groups; p.rows = rows; p.n = c.n; p.k = c.k;
    p.lda = c.k; p.ldb = c.k; p.ldc = c.n; p.b_group_stride = (int64_t)c.n * c.k;
    p.sa = sa; p.sa_row_stride = kb; p.sb = sb; p.sb_group_stride = nb * kb;
    Variant<BlockKernel<1, 2>> shipped(p, sms);
    p.c = d;
    Variant<BlockKernel<VAM, VAN>> va(p, sms);
    Variant<BlockKernel<VBM, VBN>> vb(p, sms);
    std::vector<uint16_t> want(nout), got(nout);
    CK(cudaMemset(d_ref, 0xff, nout * 2)); shipped.call(); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(want.data(), d_ref, nout * 2, cudaMemcpyDeviceToHost));
    for (int v = 0; v < 2; ++v) {
      CK(cudaMemset(d, 0xff, nout * 2));
      if (v == 0) va.call(); else vb.call();
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(got.data(), d, nout * 2, cudaMemcpyDeviceToHost));
      int64_t differ = 0;
      for (int64_t i = 0; i < nout; ++i) differ += got[i] != want[i];
      std::printf("%s: variant %s: %lld of %lld outputs differ from the shipped instance's\n", c.name,
                  v == 0 ? "A" : "B", (long long)differ, (long long)nout);
    }
    float t[6];
    t[0] = time_ms(shipped, iters); t[1] = time_ms(va, iters); t[2] = time_ms(vb, iters);
    t[3] = time_ms(vb, iters); t[4] = time_ms(va, iters); t[5] = time_ms(shipped, iters);
    const double flops = 2.0 * rows * c.n * c.k;
    auto tflops = [&](float x, float y) { return flops / ((x + y) / 2) / 1e9; };
    std::printf("%s: c1x2 %.4f / %.4f ms | A (c" STR(VAM) "x" STR(VAN) ") %.4f / %.4f | B (c" STR(VBM) "x" STR(VBN)
                ") %.4f / %.4f | TFLOP/s %.0f %.0f %.0f\n", c.name, t[0], t[5], t[1], t[4], t[2], t[3],
                tflops(t[0], t[5]), tflops(t[1], t[4]), tflops(t[2], t[3]));
    std::fflush(stdout);
    cudaFree(a); cudaFree(b); cudaFree(d_ref); cudaFree(d); cudaFree(sa); cudaFree(sb); cudaFree(gs);
  }
  return 0;
}
