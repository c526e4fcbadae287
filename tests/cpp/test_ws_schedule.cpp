// The tile schedule of ckgemm's own fp8 grouped kernel (csrc/cuda/ws_fp8_schedule.h, the arithmetic the kernel
// runs), checked on the host: for random group sizes (empty groups, single rows, exact tile multiples) and N,
// every real BM x BN tile of every group (BM 128, or 256 as the int8 RR kernel's register-operand form takes) is
// taken exactly once across all units and both CTAs of a cluster;
// the two CTAs of a unit share the operand they multicast (A: the same rows; B: the same group and columns), and
// a quad's four (2 M-blocks x 2 N-blocks) share A along N (ranks r, r ^ 2) and B along M (r, r ^ 1);
// rank 0's tile is always real, so a dummy is only ever a cluster's overhang; rows map to the group's rows of A.
// Also the rule that picks how a 16-bit call's clusters take their units (ws_fp8_rules.h's units_drawn).
#include <cstdio>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "check.h"
#include "cuda/ws_fp8_rules.h"
#include "cuda/ws_fp8_schedule.h"

using namespace ckgemm::ws;

template <int BN, bool McastB, int BM, bool Quad = false>
void check_cover(const std::vector<int>& sizes, int n) {
  const int groups = static_cast<int>(sizes.size()), n_blocks = (n + BN - 1) / BN;
  std::vector<int> row_start(groups + 1, 0), unit_start(groups + 1, 0);
  long long expected = 0;
  for (int g = 0; g < groups; ++g) {
    row_start[g + 1] = row_start[g] + sizes[g];
    unit_start[g + 1] = unit_start[g] + units_of<McastB, BM, Quad>(sizes[g], n_blocks);
    expected += static_cast<long long>((sizes[g] + BM - 1) / BM) * n_blocks;
  }
  std::map<std::tuple<int, int, int>, int> seen;
  for (int u = 0; u < unit_start[groups]; ++u) {
    constexpr int kCtas = Quad ? 4 : 2;
    Tile t[kCtas];
    for (int r = 0; r < kCtas; ++r) t[r] = decode_unit<BN, McastB, BM, Quad>(row_start.data(), unit_start.data(), groups, u, r);
    const Tile &t0 = t[0], &t1 = t[1];
    for (const Tile& tr : t) CHECK_EQ(tr.g, t0.g);
    CHECK(sizes[t0.g] > 0);
    CHECK_EQ(t0.m_g, sizes[t0.g]);
    if (Quad) {    // ranks r and r ^ 1: one N-block, consecutive M-blocks; r and r ^ 2: one M-block, consecutive N-blocks
      for (int r = 0; r < 2; ++r) {
        CHECK_EQ(t[2 * r].n0, t[2 * r + 1].n0);
        CHECK_EQ(t[2 * r + 1].m_local0, t[2 * r].m_local0 + BM);
        CHECK_EQ(t[r].row0, t[r + 2].row0);
        CHECK_EQ(t[r + 2].n0, t[r].n0 + BN);
      }
    } else if (McastB) {  // B shared: same columns, consecutive M-blocks
      CHECK_EQ(t0.n0, t1.n0);
      CHECK_EQ(t1.m_local0, t0.m_local0 + BM);
    } else {       // A shared: same rows, consecutive N-blocks
      CHECK_EQ(t0.row0, t1.row0);
      CHECK_EQ(t1.n0, t0.n0 + BN);
    }
    CHECK(t0.m_local0 < t0.m_g && t0.n0 < n);
    for (const Tile& tr : t) {
      CHECK_EQ(tr.row0, row_start[tr.g] + tr.m_local0);
      if (tr.m_local0 < tr.m_g && tr.n0 < n) ++seen[{tr.g, tr.m_local0 / BM, tr.n0 / BN}];
    }
  }
  CHECK_EQ(static_cast<long long>(seen.size()), expected);
  for (const auto& [tile, count] : seen) CHECK_EQ(count, 1);
}

template <int BN, bool McastB, int BM = kBlockM, bool Quad = false>
void check_cases(std::mt19937& rng) {
  const int ns[] = {1, 64, 128, 129, 192, 200, 384, 4096, 4100};
  const int group_counts[] = {1, 2, 7, 32, 300};
  for (int n : ns) {
    for (int groups : group_counts) {
      std::vector<int> sizes(groups);
      for (int& m : sizes) {
        const int kind = static_cast<int>(rng() % 5);
        m = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? kBlockM * static_cast<int>(1 + rng() % 4)
                                                      : static_cast<int>(rng() % 700);
      }
      check_cover<BN, McastB, BM, Quad>(sizes, n);
    }
  }
}

int main() {
  std::mt19937 rng(20261202);
  check_cases<128, false>(rng);
  check_cases<128, true>(rng);
  check_cases<192, false>(rng);
  check_cases<192, true>(rng);
  check_cases<128, false, 256>(rng);
  check_cases<256, false, kBlockM, true>(rng);
  check_cases<128, false, kBlockM, true>(rng);
  const int unit_start[] = {0, 0, 3, 3, 5};  // empty groups 0 and 2: a unit never lands in one
  CHECK_EQ(group_of(unit_start, 4, 0), 1);
  CHECK_EQ(group_of(unit_start, 4, 2), 1);
  CHECK_EQ(group_of(unit_start, 4, 3), 3);
  CHECK_EQ(group_of(unit_start, 4, 4), 3);
  // How a 16-bit call's clusters take their units (ws_fp8_rules.h): drawn below 2048 rows a group on average,
  // by stride from there, unless CKGEMM_WS_UNITS forces either.
  CHECK(units_drawn(kUnitsAuto, 32 * 1024, 32));      // DeepSeek-V3 prefill
  CHECK(units_drawn(kUnitsAuto, 8 * 2048 - 1, 8));
  CHECK(!units_drawn(kUnitsAuto, 8 * 2048, 8));       // Mixtral prefill
  CHECK(!units_drawn(kUnitsAuto, 8 * 4096, 8));       // uniform 8 x 4096
  CHECK(units_drawn(kUnitsDrawn, 8 * 4096, 8));
  CHECK(!units_drawn(kUnitsStride, 32 * 1024, 32));
  CHECK(!units_drawn(kUnitsAuto, int64_t{1} << 40, 1));  // no overflow on large row counts
  // CKGEMM_WS_L2's policies (ws_fp8_rules.h): unset or empty is the default, C's stores evict_first; n is no hint.
  uint64_t pol[3] = {1, 1, 1};
  CHECK(l2_policies(nullptr, pol));
  CHECK(pol[0] == 0 && pol[1] == 0 && pol[2] == 0x12F0000000000000ull);
  CHECK(l2_policies("", pol) && pol[0] == 0 && pol[2] == 0x12F0000000000000ull);
  CHECK(l2_policies("lNn", pol));
  CHECK(pol[0] == 0x14F0000000000000ull && pol[1] == 0x1000000000000000ull && pol[2] == 0);
  for (const char* bad : {"nn", "nnnn", "nnx", "NNF", " nn"}) CHECK(!l2_policies(bad, pol));
  std::printf("test_ws_schedule: %d checks, %d failures\n", host_test::checks(), host_test::failures());
  return host_test::failures() == 0 ? 0 : 1;
}
