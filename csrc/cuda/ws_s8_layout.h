// The data movement of ckgemm's own int8 RR kernels (ws_s8_rr.cuh, ws_s8_rr_tma.cuh) in plain C++, so that the
// kernels and a host test (tests/cpp/test_ws_s8_layout.cpp) run the same arithmetic: where a byte sits in the
// 128-byte-swizzled tiles, which 16 x 16 byte block each producer thread moves, and the byte transpose.
//
// A k-block's B tile is 128 (K) x 256 (N) bytes. The wgmmas read it K-major: row n holds its 128 bytes of K, the
// 16-byte chunk kc (K kc * 16 .. + 15) stored at chunk kc ^ (n % 8) (TMA's 128-byte swizzle). The TMA form loads it
// as stored first: two halves of 128 (K) x 128 (N), row k holding 128 bytes of N, chunk c at c ^ (k % 8).
#pragma once

#include <cstdint>

#include "ws_fp8_schedule.h"

#if defined(__CUDACC__)
#define CKGEMM_S8_UNROLL _Pragma("unroll")
#else
#define CKGEMM_S8_UNROLL
#endif

namespace ckgemm::ws::s8 {

constexpr int kRawHalfBytes = 128 * 128;

// Byte offset of chunk kc of row n in a K-major tile.
CKGEMM_WS_HD int kmajor_offset(int n, int kc) { return n * 128 + ((kc ^ (n & 7)) << 4); }

// Byte offset of the 16 columns nc * 16 .. + 15 of row k in a raw tile.
CKGEMM_WS_HD int raw_offset(int k, int nc) { return (nc / 8) * kRawHalfBytes + k * 128 + (((nc % 8) ^ (k & 7)) << 4); }

// A thread's block (rows kc * 16 .., columns nc * 16 ..). The register form (128 threads, one block each): the eight
// lanes of a store phase share nc and take the eight kc, eight chunks of one row. The TMA form (64 threads, blocks
// h = 0, 1 of each): those eight lanes take eight kc and eight different nc % 8, so their loads from the raw tile
// (same row % 8) and their stores (same n % 8) each touch eight different chunks.
struct Block {
  int kc, nc;
};
CKGEMM_WS_HD Block register_block(int t) { return {t % 8, t / 8}; }
CKGEMM_WS_HD Block tma_block(int t, int h) { return {t % 8, (t % 8 + t / 8) % 8 + 8 * h}; }

// __byte_perm on the device; the same selection on the host: byte i of the result is byte (s >> 4i) & 7 of y:x.
CKGEMM_WS_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t both = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) out |= static_cast<uint32_t>((both >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return out;
#endif
}

// A 4 x 4 byte transpose: x[i] holds row i's four bytes, y[j] gets column j's (row 0 in the low byte).
CKGEMM_WS_HD void transpose4(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, uint32_t* y) {
  const uint32_t t0 = byte_perm(x0, x1, 0x5140), t1 = byte_perm(x0, x1, 0x7362);
  const uint32_t t2 = byte_perm(x2, x3, 0x5140), t3 = byte_perm(x2, x3, 0x7362);
  y[0] = byte_perm(t0, t2, 0x5410);
  y[1] = byte_perm(t0, t2, 0x7632);
  y[2] = byte_perm(t1, t3, 0x5410);
  y[3] = byte_perm(t1, t3, 0x7632);
}

// Columns 4c .. 4c + 3 of a 16 x 16 byte block whose row i is rows[i][0..3] (four words, low byte first): y[q][j]
// holds K rows 4q .. 4q + 3 of column 4c + j, so y[0..3][j] is column 4c + j's 16 bytes of K in order.
CKGEMM_WS_HD void transpose_columns(const uint32_t (&rows)[16][4], int c, uint32_t (&y)[4][4]) {
  CKGEMM_S8_UNROLL
  for (int q = 0; q < 4; ++q) transpose4(rows[4 * q][c], rows[4 * q + 1][c], rows[4 * q + 2][c], rows[4 * q + 3][c], y[q]);
}

}  // namespace ckgemm::ws::s8
