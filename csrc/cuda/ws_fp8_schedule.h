// The tile schedule of ckgemm's own fp8 grouped kernel (ws_fp8.cuh), in plain C++ so that the kernel and a
// host test (tests/cpp/test_ws_schedule.cpp) run the same arithmetic. A cluster of two CTAs takes one unit at a
// time: two 128 x BN tiles that share A (two N-blocks of one M-block) or B (two M-blocks of one N-block,
// McastB). A group's units are numbered M-fastest; the unit table (prefix sums over groups) maps a unit to
// its group. A pair's tile past the group's rows or past N is a dummy: computed, never stored.
#pragma once

#if defined(__CUDACC__)
#define CKGEMM_WS_HD __host__ __device__ __forceinline__
#else
#define CKGEMM_WS_HD inline
#endif

namespace ckgemm::ws {

constexpr int kBlockM = 128, kBlockK = 128, kThreads = 384, kMaxGroups = 1024, kMaxTileN = 256;
// Block scales fed as DeepGEMM does (kFeedTma, ws_fp8.cuh): a consumer warp group holds the tile's B scales for
// every k-block in shared memory, and the TMA thread copies a stage's A scales for the tile's rows from its first
// rounded down to 4.
constexpr int kMaxKBlocks = 512, kBulkScaleRows = kBlockM + 4;

// Units a group of m rows makes with n_blocks tiles across N, in M-blocks of BM rows (the int8 RR kernel's
// register-operand form takes 256).
template <bool McastB, int BM = kBlockM>
CKGEMM_WS_HD int units_of(int m, int n_blocks) {
  const int m_blocks = (m + BM - 1) / BM;
  return McastB ? (m_blocks + 1) / 2 * n_blocks : m_blocks * ((n_blocks + 1) / 2);
}

// The group of unit u: unit_start[g] <= u < unit_start[g + 1] (empty groups have no units).
CKGEMM_WS_HD int group_of(const int* unit_start, int groups, int u) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (unit_start[mid] <= u) lo = mid; else hi = mid;
  }
  return lo;
}

struct Tile {
  int g, m_g, m_local0, row0, n0;  // group, its rows, this CTA's first row in the group and in A, first column
};

// The tile of cluster rank `rank` (0 or 1) in unit u, from the prefix sums of rows and units per group. A group's
// units run down its M-blocks (pairs of them for McastB) one column of N at a time. With `band` > 0 they run so
// within bands of that many rows of units (the last band of a group may be shorter), a band's every column
// before the next band: a band's A stays in L2 while B is read once per band. With `snake` every other column
// runs up instead, so that the A rows read last are the first read again (CKGEMM_WS_ORDER, ws_fp8_rules.h's
// unit_order).
template <int BN, bool McastB, int BM = kBlockM>
CKGEMM_WS_HD Tile decode_unit(const int* row_start, const int* unit_start, int groups, int u, int rank,
                              bool snake = false, int band = 0) {
  Tile t;
  t.g = group_of(unit_start, groups, u);
  const int local = u - unit_start[t.g];
  t.m_g = row_start[t.g + 1] - row_start[t.g];
  const int m_blocks = (t.m_g + BM - 1) / BM;
  const int down = McastB ? (m_blocks + 1) / 2 : m_blocks;  // units in one column
  const int cols = (unit_start[t.g + 1] - unit_start[t.g]) / down;
  const int h = band > 0 && band < down ? band : down;      // a band's rows of units
  const int b = local / (h * cols), in_band = local - b * h * cols;
  const int hb = down - b * h < h ? down - b * h : h;       // this band's rows
  const int col = in_band / hb, r = in_band % hb;
  const int row = b * h + (snake && (col & 1) ? hb - 1 - r : r);
  int mb, nb;
  if (McastB) {
    mb = 2 * row + rank;
    nb = col;
  } else {
    mb = row;
    nb = 2 * col + rank;
  }
  t.m_local0 = mb * BM;
  t.row0 = row_start[t.g] + t.m_local0;
  t.n0 = nb * BN;
  return t;
}

}  // namespace ckgemm::ws
