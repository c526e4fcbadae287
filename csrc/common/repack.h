// The one copy kernel of the native backends: batched matrix copies with an optional transpose and zero
// padding, in 64 x 64-byte tiles (one block each, 16-byte vector loads and stores where the addresses
// allow, a transpose through shared memory). Every destination byte is written exactly once (data or a
// zero pad) and nothing is zero-filled first, so a repack moves each byte of B once each way: the 8-bit
// RR -> RC transpose of a call (or of ckgemm.prepack), K padding of misaligned operands, and the
// zero rows of B behind a staged output. All jobs of a call go in one launch (chunks of kRepackJobs).
//
// This header is plain C++ (the executor's host code includes it); the kernel is repack.cuh.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define CKGEMM_HD __host__ __device__
#else
#define CKGEMM_HD
#endif

namespace ckgemm {

// dst[b][r][c] = src[b][r][c] (or src[b][c][r] when transposed) for r < rows, c < cols; 0 for the pads
// r < dst_rows, c < dst_cols. Sizes, leading dimensions and batch strides count elements.
struct CopyJob {
  const char* src;
  char* dst;
  int64_t rows, cols;  // the data, in destination orientation
  int64_t src_ld, dst_ld;
  int64_t dst_rows, dst_cols;
  int64_t batch, src_batch_stride, dst_batch_stride;
  int32_t transpose;
  int32_t elem;  // bytes: 1, 2 or 4
};

constexpr int kRepackJobs = 16;
constexpr int kRepackThreads = 256;
constexpr int kTileRows = 64;   // destination rows per tile
constexpr int kTileBytes = 64;  // destination bytes per tile row

struct RepackChunk {
  CopyJob jobs[kRepackJobs];
  int64_t first_tile[kRepackJobs + 1];  // tiles of job j: [first_tile[j], first_tile[j + 1])
  int count;
};

// 8-bit transposes (the 8-bit RR -> RC repack and ckgemm.prepack) take a faster path: 128 x 128-byte tiles,
// 16-byte vector loads and stores throughout, a 4 x 4 byte transpose in registers and a swizzled shared
// tile without bank conflicts. Everything else takes the generic 64 x 64-byte tiles.
constexpr int kByteTile = 128;
CKGEMM_HD inline bool byte_transpose(const CopyJob& j) { return j.transpose != 0 && j.elem == 1; }

CKGEMM_HD inline int64_t repack_tiles_m(const CopyJob& j) {
  const int64_t t = byte_transpose(j) ? kByteTile : kTileRows;
  return (j.dst_rows + t - 1) / t;
}
CKGEMM_HD inline int64_t repack_tiles_n(const CopyJob& j) {
  const int64_t t = byte_transpose(j) ? kByteTile : kTileBytes;
  return (j.dst_cols * j.elem + t - 1) / t;
}
CKGEMM_HD inline int64_t repack_tiles(const CopyJob& j) { return j.batch * repack_tiles_m(j) * repack_tiles_n(j); }

}  // namespace ckgemm
