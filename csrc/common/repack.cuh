// The repack kernel of repack.h: one block per 64 x 64-byte destination tile (see repack.h).
// Portable CUDA/HIP C++ (no runtime headers): compiled by csrc/launch.cu, which hipifies for ROCm.
#pragma once

#include "repack.h"

namespace ckgemm {

namespace repack_detail {

__device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// 16 destination bytes of row r starting at element c (e elements of `elem` bytes), from `src_at`.
template <class SrcAt>
__device__ inline void write16(const CopyJob& j, char* dst_row, int64_t r, int64_t c, SrcAt&& src_at) {
  const int e = 16 / j.elem;
  if (c >= j.dst_cols) return;
  alignas(16) char buf[16];
  const bool full = c + e <= j.dst_cols;
  for (int i = 0; i < e; ++i) {
    const bool in = r < j.rows && c + i < j.cols;
    for (int x = 0; x < j.elem; ++x) buf[i * j.elem + x] = in ? src_at(c + i, x) : 0;
  }
  char* out = dst_row + c * j.elem;
  if (full && aligned16(out)) {
    *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(buf);
  } else {
    for (int i = 0; i < e && c + i < j.dst_cols; ++i)
      for (int x = 0; x < j.elem; ++x) out[i * j.elem + x] = buf[i * j.elem + x];
  }
}

}  // namespace repack_detail

__global__ void __launch_bounds__(kRepackThreads) repack_kernel(RepackChunk chunk) {
  __shared__ char tile[kTileBytes][kTileRows + 4];  // transposes: [source row (dst col byte)][dst row]
  int64_t t = blockIdx.x;
  int jid = 0;
  while (jid + 1 < chunk.count && t >= chunk.first_tile[jid + 1]) ++jid;
  const CopyJob& j = chunk.jobs[jid];
  t -= chunk.first_tile[jid];
  const int64_t tn = repack_tiles_n(j), tm = repack_tiles_m(j);
  const int64_t b = t / (tm * tn), rest = t % (tm * tn);
  const int64_t r0 = (rest / tn) * kTileRows, c0 = (rest % tn) * (kTileBytes / j.elem);
  const char* src = j.src + b * j.src_batch_stride * j.elem;
  char* dst = j.dst + b * j.dst_batch_stride * j.elem;
  const int tid = threadIdx.x;
  const int row = tid / (kTileBytes / 16), chunk16 = tid % (kTileBytes / 16);  // 64 rows x 4 chunks of 16 bytes
  const int e = 16 / j.elem;
  const int64_t r = r0 + row, c = c0 + chunk16 * e;
  if (!j.transpose) {
    if (r >= j.dst_rows) return;
    const char* src_row = src + r * j.src_ld * j.elem;
    char* dst_row = dst + r * j.dst_ld * j.elem;
    const char* from = src_row + c * j.elem;
    char* to = dst_row + c * j.elem;
    if (r < j.rows && c + e <= j.cols && repack_detail::aligned16(from) && repack_detail::aligned16(to)) {
      *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);  // the common case: 16 bytes of data
      return;
    }
    repack_detail::write16(j, dst_row, r, c, [&](int64_t cc, int x) { return src_row[cc * j.elem + x]; });
    return;
  }
  // Transpose: the tile's source block is kTileBytes / elem source rows (destination columns c0..) of
  // kTileRows elements (destination rows r0..). Load it row-wise (coalesced), then write destination rows.
  const int src_rows = kTileBytes / j.elem;
  for (int i = tid; i < src_rows * kTileRows; i += kRepackThreads) {
    const int sr = i / kTileRows, sc = i % kTileRows;  // source row (dst column), source column (dst row)
    const int64_t gr = c0 + sr, gc = r0 + sc;
    const bool in = gr < j.cols && gc < j.rows;
    const char* p = src + (gr * j.src_ld + gc) * j.elem;
    for (int x = 0; x < j.elem; ++x) tile[sr * j.elem + x][sc] = in ? p[x] : 0;
  }
  __syncthreads();
  if (r >= j.dst_rows) return;
  repack_detail::write16(j, dst + r * j.dst_ld * j.elem, r, c,
                         [&](int64_t cc, int x) { return tile[(cc - c0) * j.elem + x][row]; });
}

}  // namespace ckgemm
