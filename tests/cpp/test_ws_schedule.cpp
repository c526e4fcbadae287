// The tile schedule of ckgemm's own fp8 grouped kernel (csrc/cuda/ws_fp8_schedule.h, the arithmetic the kernel
// runs), checked on the host: for random group sizes (empty groups, single rows, exact tile multiples) and N,
// every real BM x BN tile of every group (BM 128, or 256 as the int8 RR kernel's register-operand form takes) is
// taken exactly once across all units and both CTAs of a cluster;
// the two CTAs of a unit share the operand they multicast (A: the same rows; B: the same group and columns);
// rank 0's tile is always real, so a dummy is only ever a pair's overhang; rows map to the group's rows of A.
// The balanced static schedule (balanced_unit): every unit taken once, in its round, by one cluster; the cheap
// units (a group's last M-block of BM / 2 rows or fewer, found here from the tiles) counted alike by cheap_before
// and spread so that no cluster has two more than another before the last round; the stride's units wherever
// nothing is cheap, and no busier a busiest cluster than the stride's. Also the rule that picks how a 16-bit
// call's clusters take their units (ws_fp8_rules.h's units_drawn and units_balanced).
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "check.h"
#include "cuda/ws_fp8_rules.h"
#include "cuda/ws_fp8_schedule.h"

using namespace ckgemm::ws;

template <int BN, bool McastB, int BM>
void check_cover(const std::vector<int>& sizes, int n) {
  const int groups = static_cast<int>(sizes.size()), n_blocks = (n + BN - 1) / BN;
  std::vector<int> row_start(groups + 1, 0), unit_start(groups + 1, 0);
  long long expected = 0;
  for (int g = 0; g < groups; ++g) {
    row_start[g + 1] = row_start[g] + sizes[g];
    unit_start[g + 1] = unit_start[g] + units_of<McastB, BM>(sizes[g], n_blocks);
    expected += static_cast<long long>((sizes[g] + BM - 1) / BM) * n_blocks;
  }
  std::map<std::tuple<int, int, int>, int> seen;
  for (int u = 0; u < unit_start[groups]; ++u) {
    const Tile t0 = decode_unit<BN, McastB, BM>(row_start.data(), unit_start.data(), groups, u, 0);
    const Tile t1 = decode_unit<BN, McastB, BM>(row_start.data(), unit_start.data(), groups, u, 1);
    CHECK_EQ(t0.g, t1.g);
    CHECK(sizes[t0.g] > 0);
    CHECK_EQ(t0.m_g, sizes[t0.g]);
    if (McastB) {  // B shared: same columns, consecutive M-blocks
      CHECK_EQ(t0.n0, t1.n0);
      CHECK_EQ(t1.m_local0, t0.m_local0 + BM);
    } else {       // A shared: same rows, consecutive N-blocks
      CHECK_EQ(t0.row0, t1.row0);
      CHECK_EQ(t1.n0, t0.n0 + BN);
    }
    CHECK(t0.m_local0 < t0.m_g && t0.n0 < n);
    for (const Tile& t : {t0, t1}) {
      CHECK_EQ(t.row0, row_start[t.g] + t.m_local0);
      if (t.m_local0 < t.m_g && t.n0 < n) ++seen[{t.g, t.m_local0 / BM, t.n0 / BN}];
    }
  }
  CHECK_EQ(static_cast<long long>(seen.size()), expected);
  for (const auto& [tile, count] : seen) CHECK_EQ(count, 1);
}

// The balanced schedule of one call's units on `clusters` clusters (A multicast, BM-row M-blocks).
template <int BN, int BM = kBlockM>
void check_balanced(const std::vector<int>& sizes, int n, int clusters) {
  const int groups = static_cast<int>(sizes.size()), n_blocks = (n + BN - 1) / BN;
  std::vector<int> row_start(groups + 1, 0), unit_start(groups + 1, 0), cheap_start(groups + 1, 0);
  for (int g = 0; g < groups; ++g) {
    row_start[g + 1] = row_start[g] + sizes[g];
    unit_start[g + 1] = unit_start[g] + units_of<false, BM>(sizes[g], n_blocks);
    cheap_start[g + 1] = cheap_start[g] + cheap_units_of<BM>(sizes[g], n_blocks);
  }
  const int units = unit_start[groups];
  const Balance b{row_start.data(), unit_start.data(), cheap_start.data(), groups, clusters};
  std::vector<char> cheap(units);
  int counted = 0;
  for (int u = 0; u < units; ++u) {  // cheap: rank 0's tile holds BM / 2 rows of its group or fewer
    CHECK_EQ(cheap_before<BM>(b, u), counted);
    const Tile t = decode_unit<BN, false, BM>(row_start.data(), unit_start.data(), groups, u, 0);
    cheap[u] = t.m_g - t.m_local0 <= BM / 2;
    counted += cheap[u];
  }
  CHECK_EQ(cheap_before<BM>(b, units), counted);
  const int rounds = (units + clusters - 1) / clusters, last = units - (rounds - 1) * clusters;
  std::vector<int> taken(units, 0), cheap_of(clusters, 0);
  std::vector<double> load(clusters, 0.0), ideal(clusters, 0.0);
  for (int j = 0; j <= rounds; ++j) {
    for (int c = 0; c < clusters; ++c) {
      const int u = balanced_unit<BM>(b, c, j);
      if (u >= units) {  // none: only past the last round, or in it
        CHECK_EQ(u, units);
        CHECK(j >= rounds - 1);
        continue;
      }
      CHECK(j < rounds && u >= j * clusters && u < (j + 1) * clusters);  // in its round
      if (counted == 0)  // nothing cheap: the stride, the last round's units on its last clusters
        CHECK_EQ(u, j * clusters + c - (j == rounds - 1 ? clusters - last : 0));
      ++taken[u];
      if (j < rounds - 1) cheap_of[c] += cheap[u];
      load[c] += cheap[u] ? 0.5 : 1.0;
    }
    // The best this round can do given the loads so far: its cheapest units (none counting 0) to the busiest
    // clusters (ideal's own assignment, independent of balanced_unit's).
    std::vector<double> costs(clusters, 0.0);
    for (int i = 0; j < rounds && i < clusters && j * clusters + i < units; ++i) costs[i] = cheap[j * clusters + i] ? 0.5 : 1.0;
    std::sort(costs.begin(), costs.end());
    std::sort(ideal.begin(), ideal.end(), [](double x, double y) { return x > y; });
    for (int c = 0; c < clusters; ++c) ideal[c] += costs[c];
  }
  double stride = 0;
  for (int c = 0; c < clusters; ++c) {
    double mine = 0;
    for (int u = c; u < units; u += clusters) mine += cheap[u] ? 0.5 : 1.0;
    stride = std::max(stride, mine);
  }
  for (int u = 0; u < units; ++u) CHECK_EQ(taken[u], 1);
  CHECK(*std::max_element(cheap_of.begin(), cheap_of.end()) - *std::min_element(cheap_of.begin(), cheap_of.end()) <= 1);
  const double busiest = *std::max_element(load.begin(), load.end());
  CHECK(busiest <= stride);
  CHECK_EQ(busiest, *std::max_element(ideal.begin(), ideal.end()));
}

template <int BN, bool McastB, int BM = kBlockM>
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
      check_cover<BN, McastB, BM>(sizes, n);
      if (!McastB && BM == kBlockM)
        for (int clusters : {1, 3, 8, 66})
          if (static_cast<long long>(groups) * n < 300 * 4096) check_balanced<BN>(sizes, n, clusters);
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
  const int unit_start[] = {0, 0, 3, 3, 5};  // empty groups 0 and 2: a unit never lands in one
  CHECK_EQ(group_of(unit_start, 4, 0), 1);
  CHECK_EQ(group_of(unit_start, 4, 2), 1);
  CHECK_EQ(group_of(unit_start, 4, 3), 3);
  CHECK_EQ(group_of(unit_start, 4, 4), 3);
  // How a 16-bit call's clusters take their units (ws_fp8_rules.h): drawn below 2048 rows a group on average,
  // by stride from there, unless CKGEMM_WS_UNITS forces one form.
  CHECK(units_drawn(kUnitsAuto, 32 * 1024, 32));      // DeepSeek-V3 prefill
  CHECK(units_drawn(kUnitsAuto, 8 * 2048 - 1, 8));
  CHECK(!units_drawn(kUnitsAuto, 8 * 2048, 8));       // Mixtral prefill
  CHECK(!units_drawn(kUnitsAuto, 8 * 4096, 8));       // uniform 8 x 4096
  CHECK(units_drawn(kUnitsDrawn, 8 * 4096, 8));
  CHECK(!units_drawn(kUnitsStride, 32 * 1024, 32));
  CHECK(!units_drawn(kUnitsAuto, int64_t{1} << 40, 1));  // no overflow on large row counts
  // Where the stride is taken by default, its rounds are balanced; "static" is the plain stride.
  CHECK(units_balanced(kUnitsAuto, 8 * 2048, 8) && units_balanced(kUnitsAuto, 8 * 4096, 8));
  CHECK(!units_balanced(kUnitsAuto, 32 * 1024, 32));  // drawn
  CHECK(units_balanced(kUnitsBalanced, 32 * 1024, 32) && !units_drawn(kUnitsBalanced, 32 * 1024, 32));
  CHECK(!units_balanced(kUnitsStride, 8 * 4096, 8) && !units_balanced(kUnitsDrawn, 8 * 4096, 8));
  std::printf("test_ws_schedule: %d checks, %d failures\n", host_test::checks(), host_test::failures());
  return host_test::failures() == 0 ? 0 : 1;
}
