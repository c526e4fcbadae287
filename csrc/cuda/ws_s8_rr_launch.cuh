// Host half of ckgemm's own 8-bit RR grouped kernels: the tensor maps and the launch of a packed call of the ckgemm
// ABI (PackedArgs with B [G, K, N] row-major; one kernel, whose CTAs read the group sizes themselves). Which int8
// kernel is a build switch (ws_s8_rr_rules.h): CKGEMM_S8_FORM 2 (default) launches ws_s8_rr_rs.cuh's (B by TMA,
// read as the wgmmas' register operand) with the tile rs_block_m picks for the call, 1 ws_s8_rr_tma.cuh's (B by
// TMA, transposed in shared memory), 0 ws_s8_rr.cuh's (B through the producer's registers). Only the selected
// form's header is compiled. e4m3 (F8) has the register-operand form only, on its 128 x 256 tile.
#pragma once

#include <cuda.h>

#include <string>

#include "ws_fp8_launch.cuh"
#include "ws_s8_rr_rules.h"
#if CKGEMM_S8_FORM == 2
#include "ws_s8_rr_rs.cuh"
#elif CKGEMM_S8_FORM == 1
#include "ws_s8_rr_tma.cuh"
#else
#include "ws_s8_rr.cuh"
#endif

namespace ckgemm::ws::s8 {

// The build's kernel for tiles of BM rows (BM matters to the register-operand form only) of int8 or e4m3 (F8), its
// shared memory and tile: rows (the schedule's M-blocks) and columns.
struct Form {
  void (*kernel)(Params);
  size_t smem;
  int block_m, tile_n;
};
template <int BM, bool F8>
inline Form form() {
#if CKGEMM_S8_FORM == 2
  return {grouped_s8_rr_rs_kernel<BM, F8>, sizeof(SmemRs<BM>), BM, RsShape<BM>::kTileN};
#elif CKGEMM_S8_FORM == 1
  return {grouped_s8_rr_tma_kernel, sizeof(SmemTma), kBlockM, kTileN};
#else
  return {grouped_s8_rr_kernel, sizeof(Smem), kBlockM, kTileN};
#endif
}

template <int BM, bool F8>
inline cudaError_t smem_raised() {
  static const cudaError_t raised = cudaFuncSetAttribute(form<BM, F8>().kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         static_cast<int>(form<BM, F8>().smem));
  return raised;
}

template <int BM, bool F8>
inline cudaError_t launch_tile(const PackedArgs& c, int sm_count, cudaStream_t stream, std::string* why) {
  const Form f = form<BM, F8>();
  Params p{};
  const cuuint64_t dims_a[2] = {static_cast<cuuint64_t>(c.k), static_cast<cuuint64_t>(c.rows)};
  const cuuint64_t strides_a[1] = {static_cast<cuuint64_t>(c.lda)};
  const cuuint32_t box_a[2] = {kBlockK, static_cast<cuuint32_t>(f.block_m / 2)};  // half the tile's rows a CTA
  // B as stored, [groups, k, n], for the TMA and register-operand forms: boxes of 128 columns (128 bytes, the
  // swizzle's row) x 128 rows.
  // One group: B's group stride is never followed (it may be 0), but the tensor map wants a real one.
  const int64_t b_group_stride = c.groups > 1 ? c.b_group_stride : c.k * c.ldb;
  const cuuint64_t dims_b[3] = {static_cast<cuuint64_t>(c.n), static_cast<cuuint64_t>(c.k),
                                static_cast<cuuint64_t>(c.groups)};
  const cuuint64_t strides_b[2] = {static_cast<cuuint64_t>(c.ldb), static_cast<cuuint64_t>(b_group_stride)};
  const cuuint32_t box_b[3] = {128, kBlockK, 1};
  if (!encode(&p.tma_a, c.a, 2, dims_a, strides_a, box_a) ||
      (CKGEMM_S8_FORM != 0 && !encode(&p.tma_b, c.b, 3, dims_b, strides_b, box_b))) {
    *why = "cuTensorMapEncodeTiled refused the operands";
    return cudaErrorInvalidValue;
  }
  p.b = static_cast<const int8_t*>(c.b);
  p.ldb = c.ldb;
  p.b_group_stride = c.b_group_stride;
  p.c = static_cast<int32_t*>(c.c);  // int32 or fp32: the kernel stores 32-bit words
  set_call_fields(p, c);
  p.vector_store = c.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(c.c) % 8 == 0;
  const cudaError_t raised = smem_raised<BM, F8>();
  if (raised != cudaSuccess) {
    *why = std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(raised);
    return raised;
  }
  // Clusters of two sharing A (two N-blocks of one M-block a unit).
  const int64_t n_blocks = (c.n + f.tile_n - 1) / f.tile_n;
  const int64_t units = (c.rows / f.block_m + c.groups) * ((n_blocks + 1) / 2);
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = pair_config(pair_grid(units, sm_count), kThreads, f.smem, stream, &attr);
  const cudaError_t e = cudaLaunchKernelEx(&config, f.kernel, p);
  if (e != cudaSuccess) *why = std::string("launch: ") + cudaGetErrorString(e);
  return e;
}

// F8: e4m3 operands to fp32 (the register-operand form's 128 x 256 tile), else int8 to int32.
template <bool F8 = false>
inline cudaError_t launch(const PackedArgs& c, int sm_count, cudaStream_t stream, std::string* why) {
  static_assert(!F8 || CKGEMM_S8_FORM == 2, "the e4m3 RR kernel is the register-operand form");
  *why = rejects(c);
  if (!why->empty()) return cudaErrorInvalidValue;
  if (c.n == 0) return cudaSuccess;  // nothing to store (and a tensor map of B wants N > 0)
  if constexpr (F8) {
    return launch_tile<128, true>(c, sm_count, stream, why);
  } else {
    if (CKGEMM_S8_FORM == 2 && rs_block_m(c) == 256) return launch_tile<256, false>(c, sm_count, stream, why);
    return launch_tile<128, false>(c, sm_count, stream, why);
  }
}

}  // namespace ckgemm::ws::s8
