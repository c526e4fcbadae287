// Host half of ckgemm's own int8 RR grouped kernel (ws_s8_rr.cuh): what it accepts, A's tensor map and the
// launch of a packed call of the ckgemm ABI (PackedArgs with B [G, K, N] row-major; one kernel, whose CTAs
// read the group sizes themselves).
#pragma once

#include <cuda.h>

#include <string>

#include "ws_fp8_launch.cuh"
#include "ws_s8_rr.cuh"
#include "ws_s8_rr_rules.h"

namespace ckgemm::ws::s8 {

inline cudaError_t smem_raised() {
  static const cudaError_t raised = cudaFuncSetAttribute(grouped_s8_rr_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         static_cast<int>(sizeof(Smem)));
  return raised;
}

inline cudaError_t launch(const PackedArgs& c, int sm_count, cudaStream_t stream, std::string* why) {
  *why = rejects(c);
  if (!why->empty()) return cudaErrorInvalidValue;
  Params p{};
  const cuuint64_t dims_a[2] = {static_cast<cuuint64_t>(c.k), static_cast<cuuint64_t>(c.rows)};
  const cuuint64_t strides_a[1] = {static_cast<cuuint64_t>(c.lda)};
  const cuuint32_t box_a[2] = {kBlockK, kRowsA};
  if (!encode(&p.tma_a, c.a, 2, dims_a, strides_a, box_a)) {
    *why = "cuTensorMapEncodeTiled refused A";
    return cudaErrorInvalidValue;
  }
  p.b = static_cast<const int8_t*>(c.b);
  p.ldb = c.ldb;
  p.b_group_stride = c.b_group_stride;
  p.c = static_cast<int32_t*>(c.c);
  set_call_fields(p, c);
  p.vector_store = c.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(c.c) % 8 == 0;
  const cudaError_t raised = smem_raised();
  if (raised != cudaSuccess) {
    *why = std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(raised);
    return raised;
  }
  // Clusters of two sharing A (two N-blocks of one M-block a unit).
  const int64_t n_blocks = (c.n + kTileN - 1) / kTileN;
  const int64_t units = (c.rows / kBlockM + c.groups) * ((n_blocks + 1) / 2);
  const int grid = pair_grid(units, sm_count);
  if (grid == 0) return cudaSuccess;
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = pair_config(grid, kThreads, sizeof(Smem), stream, &attr);
  const cudaError_t e = cudaLaunchKernelEx(&config, grouped_s8_rr_kernel, p);
  if (e != cudaSuccess) *why = std::string("launch: ") + cudaGetErrorString(e);
  return e;
}

}  // namespace ckgemm::ws::s8
