// The repack kernel of repack.h: one block per destination tile (64 x 64 bytes; 128 x 128 for 8-bit
// transposes), see repack.h.
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

// One 128 x 128-byte tile of an 8-bit transpose (dst [n][k] = src [k][n]). Load: 8 threads per source row,
// 16 bytes each (coalesced), into a shared tile whose 16-byte groups are XOR-swizzled by the row's 16-row
// band; transpose: each thread reads 16 words (one per source row, conflict-free thanks to the swizzle),
// turns them into 4 destination rows of 16 bytes with byte permutes, and stores them, 8 threads writing
// one contiguous 128-byte destination segment. Out-of-range source bytes load as zeros, which are the pads.
__device__ inline void byte_transpose_tile(const CopyJob& j, const char* src, char* dst, int64_t n0, int64_t k0,
                                           uint32_t* tile) {
  constexpr int kLoads = kByteTile * kByteTile / 16 / kRepackThreads;
  const int tid = threadIdx.x;
  // All of a thread's loads are issued before any shared store (several 16-byte loads in flight per
  // thread, not one): a whole, aligned tile takes unconditional vector loads.
  const bool whole = k0 + kByteTile <= j.cols && n0 + kByteTile <= j.rows && j.src_ld % 16 == 0 &&
                     repack_detail::aligned16(src);
  uint4 v[kLoads];
#pragma unroll
  for (int it = 0; it < kLoads; ++it) {
    const int idx = it * kRepackThreads + tid, r = idx / 8, q = idx % 8;  // source row k0 + r, bytes n0 + 16q
    const int64_t k = k0 + r, n = n0 + 16 * q;
    const char* p = src + k * j.src_ld + n;
    if (whole) {
      v[it] = __ldg(reinterpret_cast<const uint4*>(p));
    } else if (k < j.cols && n + 16 <= j.rows && repack_detail::aligned16(p)) {
      v[it] = *reinterpret_cast<const uint4*>(p);
    } else {
      alignas(16) unsigned char b[16];
      for (int x = 0; x < 16; ++x) b[x] = k < j.cols && n + x < j.rows ? static_cast<unsigned char>(p[x]) : 0;
      v[it] = *reinterpret_cast<const uint4*>(b);
    }
  }
#pragma unroll
  for (int it = 0; it < kLoads; ++it) {
    const int idx = it * kRepackThreads + tid, r = idx / 8, q = idx % 8;
    const int swz = ((r >> 4) & 7) << 2;
    *reinterpret_cast<uint4*>(tile + r * 32 + ((4 * q) ^ swz)) = v[it];
  }
  __syncthreads();
  const int kc = tid % 8, ng = tid / 8;  // destination rows n0 + 4ng .. +3, columns k0 + 16kc .. +15
  uint32_t w[16];
  for (int i = 0; i < 16; ++i) w[i] = tile[(16 * kc + i) * 32 + (ng ^ (kc << 2))];
  uint32_t o[4][4];
  for (int t = 0; t < 4; ++t) {  // 4 x 4 bytes: w[4t + x] byte y -> o[y][t] byte x
    const uint32_t x0 = __byte_perm(w[4 * t], w[4 * t + 1], 0x5140), x1 = __byte_perm(w[4 * t], w[4 * t + 1], 0x7362);
    const uint32_t y0 = __byte_perm(w[4 * t + 2], w[4 * t + 3], 0x5140);
    const uint32_t y1 = __byte_perm(w[4 * t + 2], w[4 * t + 3], 0x7362);
    o[0][t] = __byte_perm(x0, y0, 0x5410);
    o[1][t] = __byte_perm(x0, y0, 0x7632);
    o[2][t] = __byte_perm(x1, y1, 0x5410);
    o[3][t] = __byte_perm(x1, y1, 0x7632);
  }
  const int64_t k = k0 + 16 * kc;
  for (int y = 0; y < 4; ++y) {
    const int64_t n = n0 + 4 * ng + y;
    if (n >= j.dst_rows || k >= j.dst_cols) continue;
    char* out = dst + n * j.dst_ld + k;
    const uint4 v = make_uint4(o[y][0], o[y][1], o[y][2], o[y][3]);
    if (k + 16 <= j.dst_cols && repack_detail::aligned16(out)) {
      *reinterpret_cast<uint4*>(out) = v;
    } else {
      const unsigned char* b = reinterpret_cast<const unsigned char*>(&v);
      for (int x = 0; x < 16 && k + x < j.dst_cols; ++x) out[x] = static_cast<char>(b[x]);
    }
  }
}

__global__ void __launch_bounds__(kRepackThreads) repack_kernel(RepackChunk chunk) {
  __shared__ uint32_t shared[kByteTile * kByteTile / 4];  // the byte transposes' tile; the generic one below
  char(*tile)[kTileRows + 4] = reinterpret_cast<char(*)[kTileRows + 4]>(shared);  // [source row][dst row]
  int64_t t = blockIdx.x;
  int jid = 0;
  while (jid + 1 < chunk.count && t >= chunk.first_tile[jid + 1]) ++jid;
  const CopyJob& j = chunk.jobs[jid];
  t -= chunk.first_tile[jid];
  if (byte_transpose(j)) {
    // Consecutive blocks take consecutive destination row tiles (source column tiles) of one 128-row
    // band of the source, so the blocks in flight read whole source rows.
    const int64_t tn = repack_tiles_n(j), tm = repack_tiles_m(j);
    const int64_t b = t / (tm * tn), rest = t % (tm * tn);
    byte_transpose_tile(j, j.src + b * j.src_batch_stride, j.dst + b * j.dst_batch_stride, (rest % tm) * kByteTile,
                        (rest / tm) * kByteTile, shared);
    return;
  }
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
