// A's block scales for ckgemm's own fp8 kernel (ws_fp8.cuh, DeepGEMM's feed kFeedTma) in the layout its TMA
// thread copies per stage. The op's layout is K-major ([rows, ceil(K/128)], a row's k-blocks adjacent), so one
// stage's 128 row scales lie 4 * ceil(K/128) bytes apart; MN-major ([ceil(K/128), ld], a k-block's rows
// adjacent) they are one contiguous bulk copy. DeepGEMM's kernels take them MN-major too.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

// Rows of the MN-major copy: each k-block's run starts 16-byte aligned.
inline int64_t mn_major_ld(int64_t rows) { return (rows + 3) / 4 * 4; }
// Its floats: the runs, and room past the last for a bulk copy of kBulkScaleRows rows from any tile's first row
// rounded down to 4, a B-multicast pair's tile past the last group's rows included (its first row is below
// rows + kBlockM; rows past a run's end are read, never used).
inline int64_t mn_major_floats(int64_t rows, int64_t k_blocks) {
  return mn_major_ld(rows) * k_blocks + kBlockM + kBulkScaleRows;
}

// out[kb * ld_out + row] = in[row * ld_in + kb], through a kTile x (kTile + 1) shared tile (both sides
// coalesced); blocks across rows in x (up to 2^31 - 1 of them), across k-blocks in y (at most kMaxKBlocks / kTile
// by the kernel's rule). A template so that every translation unit that launches the kernel may define it.
template <int kTile>
__global__ void __launch_bounds__(256) scales_to_mn_major(const float* __restrict__ in, int64_t ld_in,
                                                          float* __restrict__ out, int64_t ld_out, int rows,
                                                          int k_blocks) {
  __shared__ float tile[kTile][kTile + 1];
  const int row0 = blockIdx.x * kTile, kb0 = blockIdx.y * kTile, tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int i = ty; i < kTile; i += 256 / kTile) {
    const int row = row0 + i, kb = kb0 + tx;
    if (row < rows && kb < k_blocks) tile[i][tx] = in[static_cast<int64_t>(row) * ld_in + kb];
  }
  __syncthreads();
  for (int i = ty; i < kTile; i += 256 / kTile) {
    const int kb = kb0 + i, row = row0 + tx;
    if (row < rows && kb < k_blocks) out[static_cast<int64_t>(kb) * ld_out + row] = tile[tx][i];
  }
}

inline cudaError_t launch_scales_to_mn_major(const float* in, int64_t ld_in, float* out, int64_t ld_out,
                                             int64_t rows, int64_t k_blocks, cudaStream_t stream) {
  if (rows == 0 || k_blocks == 0) return cudaSuccess;
  constexpr int kTile = 32;
  const dim3 grid(static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>((k_blocks + kTile - 1) / kTile));
  scales_to_mn_major<kTile><<<grid, 256, 0, stream>>>(in, ld_in, out, ld_out, static_cast<int>(rows),
                                                   static_cast<int>(k_blocks));
  return cudaGetLastError();
}

}  // namespace ckgemm::ws
