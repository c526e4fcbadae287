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

// The last index g in [0, groups) with start(g) <= v, for a nondecreasing start with start(0) <= v: with
// start(groups) > v, start(g) <= v < start(g + 1), so the range of g is not empty.
template <class Start>
CKGEMM_WS_HD int last_at_or_below(Start start, int groups, int v) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (start(mid) <= v) lo = mid; else hi = mid;
  }
  return lo;
}

// The group of unit u: unit_start[g] <= u < unit_start[g + 1] (empty groups have no units).
CKGEMM_WS_HD int group_of(const int* unit_start, int groups, int u) {
  return last_at_or_below([unit_start](int g) { return unit_start[g]; }, groups, u);
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

// Balanced static units (the 16-bit A-multicast form's default where its clusters take units by stride:
// ws_fp8_rules.h's units_balanced). A group's last M-block with BM / 2 rows or fewer is a cheap unit: one warp
// group skips its wgmmas, about half the tensor work. The stride hands cluster c units c, c + C, ... (C clusters),
// so where the cheap units land decides which clusters finish early: on Mixtral's prefill shapes 84 of 3696
// units are cheap and the stride's busiest cluster does 56 whole units against a mean of 55.4. This schedule keeps
// the stride's rounds (round j is units [jC, jC + C): the units in flight stay a contiguous run, as drawn ones do)
// and permutes each round among the clusters: the call's cheap units, numbered in order, go to the clusters in
// turn (cheap unit T to cluster T mod C), the whole units of the round to the round's other clusters in turn after
// them, and the last round's missing units (none to take) to the clusters next in turn for a cheap one, which have
// had fewest. So over the rounds before the last every cluster's count of cheap units is within one of every
// other's (the last round's missing units may leave a cluster with two fewer, no busier for it), and a round
// without cheap units is the stride's, rotated by the cheap units before it. benchmarks/units_model.py models it ("balanced"); tests/cpp/test_ws_schedule.cpp checks it.
//
// cheap_start: prefix sums over groups of each group's cheap units (cheap_units_of).
template <int BM = kBlockM>
CKGEMM_WS_HD bool cheap_group(int m) { return m > 0 && m - (m - 1) / BM * BM <= BM / 2; }

template <int BM = kBlockM>
CKGEMM_WS_HD int cheap_units_of(int m, int n_blocks) { return cheap_group<BM>(m) ? (n_blocks + 1) / 2 : 0; }

struct Balance {
  const int *row_start, *unit_start, *cheap_start;
  int groups, clusters;
};

// Cheap units among units [0, x), x <= the call's units: a cheap group's are the last of each of its pairs'
// columns of M-blocks (units are numbered M-fastest).
template <int BM = kBlockM>
CKGEMM_WS_HD int cheap_before(const Balance& b, int x) {
  if (x >= b.unit_start[b.groups]) return b.cheap_start[b.groups];
  const int g = group_of(b.unit_start, b.groups, x);
  if (b.cheap_start[g + 1] == b.cheap_start[g]) return b.cheap_start[g];
  const int m_blocks = (b.row_start[g + 1] - b.row_start[g] + BM - 1) / BM;
  return b.cheap_start[g] + (x - b.unit_start[g]) / m_blocks;
}

// Cluster c's unit in round j, or the call's units where it has none (past the last round, or one of the last
// round's missing units).
template <int BM = kBlockM>
CKGEMM_WS_HD int balanced_unit(const Balance& b, int c, int j) {
  const int units = b.unit_start[b.groups], x0 = j * b.clusters;  // j <= units / clusters + 1: no overflow
  if (x0 >= units) return units;
  const int x1 = units - x0 < b.clusters ? units : x0 + b.clusters;
  const int cheap0 = cheap_before<BM>(b, x0), cheap = cheap_before<BM>(b, x1) - cheap0;
  const int missing = b.clusters - (x1 - x0);
  int o = c - cheap0 % b.clusters;  // c's place in turn: the round's missing units, then cheap ones, then whole
  if (o < 0) o += b.clusters;
  if (o < missing) return units;
  o -= missing;
  if (o < cheap) {  // the call's cheap unit number cheap0 + o
    const int t = cheap0 + o;
    const int g = last_at_or_below([&b](int i) { return b.cheap_start[i]; }, b.groups, t);
    const int m_blocks = (b.row_start[g + 1] - b.row_start[g] + BM - 1) / BM;
    return b.unit_start[g] + (t - b.cheap_start[g]) * m_blocks + m_blocks - 1;
  }
  // The call's whole unit number f: its group's whole units skip each column's last unit where that one is cheap.
  const int f = x0 - cheap0 + o - cheap;
  const int g = last_at_or_below([&b](int i) { return b.unit_start[i] - b.cheap_start[i]; }, b.groups, f);
  const int local = f - (b.unit_start[g] - b.cheap_start[g]);
  if (b.cheap_start[g + 1] == b.cheap_start[g]) return b.unit_start[g] + local;
  const int m_blocks = (b.row_start[g + 1] - b.row_start[g] + BM - 1) / BM;  // >= 2: the group has whole units
  return b.unit_start[g] + local + local / (m_blocks - 1);
}

}  // namespace ckgemm::ws
