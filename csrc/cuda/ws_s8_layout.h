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

// The register-operand form (ws_s8_rr_rs.cuh) reads a warp's 16 columns of the raw tile (chunk nc) straight into
// the K-major A fragment of an s8 wgmma (m64nNk32, the warp's 16 rows): register i holds row g + 8 (i % 2), K
// 4q + 16 (i / 2) .. + 3 (g = lane / 4, q = lane % 4; CuTe's ALayout_64x32). One ldmatrix .x4 .trans per 32 of
// K: lane l gives row l % 8 of matrix l / 8, at K row rs_ldsm_k(l) of the 32, and gets from each 8 x 8 matrix of
// 16-bit pairs the pair of columns 2g, 2g + 1 in two of its rows. Matrices 0 and 1 hold K 0 .. 15, 2 and 3 K 16 ..
// 31; of lane q's four K rows 4q .. 4q + 3, matrix 0 (2) gives two and matrix 1 (3) the other two, which two
// chosen so that each matrix's eight rows fall in eight different chunks of the swizzle (rows % 8 all
// different: no bank conflict). Two byte permutes then make column 2g's and column 2g + 1's K-ordered words:
// wgmma row g is the warp's column 2g and row g + 8 its column 2g + 1 (rs_column_of_row), which the epilogue
// follows.
CKGEMM_WS_HD int rs_ldsm_k(int lane) {
  const int mat = lane / 8, r = lane % 8, q = r / 2;
  return 16 * (mat / 2) + 4 * q + r % 2 + 2 * ((mat % 2) ^ (q >= 2 ? 1 : 0));
}

// The byte_perm selections of lane's column 2g (odd 0) and 2g + 1 (odd 1) words from matrices x (0 or 2) and y (1
// or 3): lanes q < 2 have K 4q, 4q + 1 in x, lanes q >= 2 in y.
CKGEMM_WS_HD uint32_t rs_select(int lane, int odd) {
  const bool x_first = lane % 4 < 2;
  return odd ? (x_first ? 0x7531u : 0x3175u) : (x_first ? 0x6420u : 0x2064u);
}

// The A fragment from one ldmatrix .x4 .trans (d) and this lane's two selections.
CKGEMM_WS_HD void rs_fragment(const uint32_t (&d)[4], uint32_t even, uint32_t odd, uint32_t (&a)[4]) {
  a[0] = byte_perm(d[0], d[1], even);
  a[1] = byte_perm(d[0], d[1], odd);
  a[2] = byte_perm(d[2], d[3], even);
  a[3] = byte_perm(d[2], d[3], odd);
}

// The warp's column (0 .. 15) that wgmma row r (0 .. 15 of the warp's) computes.
CKGEMM_WS_HD int rs_column_of_row(int r) { return 2 * (r % 8) + r / 8; }

}  // namespace ckgemm::ws::s8
