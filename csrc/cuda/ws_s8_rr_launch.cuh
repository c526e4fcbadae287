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
  p.ldc = c.ldc;
  p.sizes = c.group_sizes;
  p.sizes_int64 = c.sizes_are_int64;
  p.groups = c.groups;
  p.rows = static_cast<int>(c.rows);
  p.n = static_cast<int>(c.n);
  p.k = static_cast<int>(c.k);
  p.vector_store = c.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(c.c) % 8 == 0;
  p.sizes_ok = c.sizes_ok;
  const cudaError_t raised = smem_raised();
  if (raised != cudaSuccess) {
    *why = std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(raised);
    return raised;
  }
  // Clusters of two sharing A, at most one CTA per SM, no more than the units the call can have.
  const int64_t n_blocks = (c.n + kTileN - 1) / kTileN;
  const int64_t units = (c.rows / kBlockM + c.groups) * ((n_blocks + 1) / 2);
  const int grid = static_cast<int>(2 * (units < sm_count / 2 ? units : sm_count / 2));
  if (grid == 0) return cudaSuccess;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = sizeof(Smem);
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, grouped_s8_rr_kernel, p);
  if (e != cudaSuccess) *why = std::string("launch: ") + cudaGetErrorString(e);
  return e;
}

}  // namespace ckgemm::ws::s8
