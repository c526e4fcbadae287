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

// A CTA's threads with tiles of bm rows: one producer warp group and a consumer warp group per 64 rows.
constexpr int threads_of(int bm) { return 128 * (1 + bm / 64); }
constexpr int kBlockM = 128, kBlockK = 128, kThreads = threads_of(kBlockM), kMaxGroups = 1024, kMaxTileN = 256;
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

// The tile of cluster rank `rank` (0 or 1) in unit u, from the prefix sums of rows and units per group.
template <int BN, bool McastB, int BM = kBlockM>
CKGEMM_WS_HD Tile decode_unit(const int* row_start, const int* unit_start, int groups, int u, int rank) {
  Tile t;
  t.g = group_of(unit_start, groups, u);
  const int local = u - unit_start[t.g];
  t.m_g = row_start[t.g + 1] - row_start[t.g];
  const int m_blocks = (t.m_g + BM - 1) / BM;
  int mb, nb;
  if (McastB) {
    const int pairs = (m_blocks + 1) / 2;
    mb = 2 * (local % pairs) + rank;
    nb = local / pairs;
  } else {
    mb = local % m_blocks;
    nb = 2 * (local / m_blocks) + rank;
  }
  t.m_local0 = mb * BM;
  t.row0 = row_start[t.g] + t.m_local0;
  t.n0 = nb * BN;
  return t;
}

}  // namespace ckgemm::ws
