// Host-side logic of the CK backend, checked with g++ and no GPU: empty-group filtering, the K == 0
// zero-fill plan, per-group routing (Large -> padded fallback -> refusal), descriptor packing,
// the fp8-flavour-per-arch rule and the packed-form checks. The instances are fakes whose tile
// traits copy the real ones (tests/cpp/ck_host_probe.hip prints the real ones and checks CK's
// IsSupportedArgument against these rules; scripts/check_hip_compile.py runs it).
// Built and run by tests/test_host_plan.py.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hip/arch_rules.h"
#include "hip/routing.h"

using namespace ckgemm;
using namespace ckgemm::ck;

static int g_checks = 0, g_failures = 0;

static void record(bool ok, const char* file, int line, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "%s:%d: %s\n", file, line, what.c_str());
}
static std::string text(long long v) { return std::to_string(v); }
static std::string text(const std::string& v) { return "\"" + v + "\""; }
template <class A, class B>
static void check_eq(const A& a, const B& b, const char* expr, const char* file, int line) {
  record(a == b, file, line, std::string("CHECK_EQ failed: ") + expr + ": " + text(a) + " vs " + text(b));
}

#define CHECK(cond) record((cond), __FILE__, __LINE__, "CHECK failed: " #cond)
#define CHECK_EQ(a, b) check_eq((a), (b), #a " == " #b, __FILE__, __LINE__)
#define CHECK_HAS(haystack, needle)                                                                    \
  do {                                                                                                 \
    const std::string hay_ = (haystack);                                                               \
    record(hay_.find(needle) != std::string::npos, __FILE__, __LINE__, "\"" + hay_ + "\" lacks \"" needle "\""); \
  } while (0)

// ---- fakes: the real traits of the fp16 and fp8 instances (see ck_host_probe's printout) ----
static bool ck_accepts_all(const GroupArgs&) { return true; }
static bool ck_rejects_m777(const GroupArgs& g) { return g.m != 777; }  // stands in for a CK-only rule
static int fake_blocks() { return 1; }
static int fake_launch(const GroupArgs*, int, int, void*) { return 0; }

static const TileTraits kLarge16{"compute_v4_128x128x64", 128, 128, 64, 8, 8, 8, false, false, true, 2, 2};
static const TileTraits kSmall16{"padded_16x64x128", 16, 64, 128, 8, 8, 8, true, true, false, 2, 2};
static const TileTraits kSmall8{"padded_16x64x128", 16, 64, 128, 8, 16, 4, true, true, false, 1, 4};
static const Instance large16{kLarge16, ck_accepts_all, fake_blocks, fake_launch};
static const Instance small16{kSmall16, ck_accepts_all, fake_blocks, fake_launch};
static const Instance small8{kSmall8, ck_accepts_all, fake_blocks, fake_launch};
static const Instance large16_ck_picky{kLarge16, ck_rejects_m777, fake_blocks, fake_launch};

// Never dereferenced: only their values and alignment matter.
static void* addr(uintptr_t offset) { return reinterpret_cast<void*>(uintptr_t(1) << 30 | offset); }

static GroupDesc rc(int64_t m, int64_t n, int64_t k, uintptr_t base = 0) {
  return GroupDesc{addr(base), addr(base + 0x1000000), addr(base + 0x2000000), m, n, k, k, k, n};
}
static GroupDesc rr(int64_t m, int64_t n, int64_t k) {
  return GroupDesc{addr(0), addr(0x1000000), addr(0x2000000), m, n, k, k, n, n};
}

static ListLaunch route(const std::vector<GroupDesc>& g, Layout layout = Layout::RC, const Instance& primary = large16,
                        const Instance* fallback = &small16) {
  return plan_list_launch(g.data(), static_cast<int>(g.size()), layout, primary, fallback);
}

static void test_empty_groups_are_filtered() {
  const std::vector<GroupDesc> g = {rc(256, 256, 256), rc(0, 256, 256), rc(128, 0, 64), rc(64, 128, 128), rc(0, 0, 0)};
  const ListLaunch plan = route(g);
  CHECK(plan.status == Status::Ok);
  CHECK(plan.primary == (std::vector<int>{0, 3}));
  CHECK(plan.skipped == (std::vector<int>{1, 2, 4}));
  CHECK(plan.fallback.empty() && plan.zero_fill.empty());
  // Only the kernel groups are staged: the launch gets the filtered count, not g.size().
  std::vector<GroupArgs> staged(g.size());
  CHECK_EQ(stage_group_args(g.data(), plan, staged.data()), 2);
  CHECK_EQ(staged[0].m, 256);
  CHECK_EQ(staged[1].m, 64);
  CHECK_EQ(staged[1].n, 128);
  CHECK(staged[1].a == g[3].a && staged[1].c == g[3].c);
  CHECK_EQ(tile_count(kLarge16, g.data(), plan.primary), 2 * 2 + 1 * 1);
}

static void test_k_zero_is_zero_filled() {
  // K == 0 needs no A/B (null pointers are fine) but C is written with zeros; M == 0 skips first.
  const std::vector<GroupDesc> g = {GroupDesc{nullptr, nullptr, addr(0), 5, 8, 0, 0, 0, 16},
                                    GroupDesc{nullptr, nullptr, addr(0), 0, 8, 0, 0, 0, 8}, rc(128, 128, 128)};
  const ListLaunch plan = route(g);
  CHECK(plan.status == Status::Ok);
  CHECK(plan.zero_fill == (std::vector<int>{0}));
  CHECK(plan.skipped == (std::vector<int>{1}));
  CHECK(plan.primary == (std::vector<int>{2}));
  std::vector<GroupArgs> staged(3);
  CHECK_EQ(stage_group_args(g.data(), plan, staged.data()), 1);
  CHECK_EQ(staged[0].k, 128);
}

static void test_large_routes_to_padded_fallback() {
  const std::vector<GroupDesc> g = {
      rc(1000, 4096, 4096),  // 0: Large
      rc(7, 200, 4096),      // 1: N not a multiple of 128 -> padded
      rc(64, 256, 64),       // 2: one K tile: CompV4 would add a tile from beyond K -> padded
      rc(64, 256, 192),      // 3: three K tiles: same -> padded
      rc(64, 256, 128),      // 4: two K tiles: Large
      rc(64, 256, 320),      // 5: five K tiles: Large
      rc(64, 256, 200),      // 6: K not a multiple of 64 -> padded (kPadK)
  };
  const ListLaunch plan = route(g);
  CHECK(plan.status == Status::Ok);
  CHECK(plan.primary == (std::vector<int>{0, 4, 5}));
  CHECK(plan.fallback == (std::vector<int>{1, 2, 3, 6}));
  std::vector<GroupArgs> staged(g.size());
  CHECK_EQ(stage_group_args(g.data(), plan, staged.data()), 7);
  CHECK_EQ(staged[2].m, 64);    // Large groups first ...
  CHECK_EQ(staged[3].n, 200);   // ... then the fallback ones, in group order
  CHECK_EQ(staged[6].k, 200);
  CHECK_EQ(tile_count(kSmall16, g.data(), plan.fallback), 1 * 4 + 4 * 4 + 4 * 4 + 4 * 4);
  CHECK_EQ(launch_summary(plan, large16, &small16),
           std::string("compute_v4_128x128x64: 3 groups; padded_16x64x128 (fallback): groups 1,2,3,6"));
}

static void test_unsupported_names_group_and_rule() {
  const ListLaunch plan = route({rc(64, 256, 256), rc(64, 256, 100)});  // K % 8 != 0: no config takes it
  CHECK(plan.status == Status::Unsupported);
  CHECK_EQ(plan.group, 1);
  CHECK_HAS(plan.reason, "K=100");
  CHECK_HAS(plan.reason, "compute_v4_128x128x64");
  CHECK_HAS(plan.reason, "fallback: K=100 is not a multiple of 8");
  CHECK(plan.primary.empty() && plan.fallback.empty());  // refused before anything is planned

  const ListLaunch small_only = route({rc(3, 200, 64), rc(3, 1001, 64)}, Layout::RC, small16, nullptr);
  CHECK(small_only.status == Status::Unsupported);
  CHECK_EQ(small_only.group, 1);
  CHECK_HAS(small_only.reason, "N=1001 is not a multiple of 8 (vector stores of C rows)");
}

static void test_ck_is_supported_argument_is_consulted() {
  const ListLaunch plan = route({rc(777, 256, 256), rc(776, 256, 256)}, Layout::RC, large16_ck_picky, &small16);
  CHECK(plan.status == Status::Ok);
  CHECK(plan.fallback == (std::vector<int>{0}));
  CHECK(plan.primary == (std::vector<int>{1}));
  CHECK_HAS(instance_rejects(large16_ck_picky, Layout::RC, rc(777, 256, 256)), "CK IsSupportedArgument");
}

static void test_layout_specific_vectors() {
  // RR: B rows run along N, so N must fill B's vectors; RC: B rows run along K.
  CHECK_HAS(tile_rejects(kSmall16, Layout::RR, rr(4, 12, 64)), "N=12 is not a multiple of 8 (vector loads of B rows)");
  CHECK_HAS(tile_rejects(kSmall16, Layout::RC, rc(4, 12, 64)), "N=12 is not a multiple of 8 (vector stores of C rows)");
  // fp8 -> fp32: A loads 8, B loads 16, C stores 4 elements per vector in the padded tile.
  CHECK_HAS(tile_rejects(kSmall8, Layout::RC, rc(4, 64, 24)), "K=24 is not a multiple of 16 (vector loads of B rows)");
  CHECK_EQ(tile_rejects(kSmall8, Layout::RC, rc(4, 20, 32)), std::string());
  CHECK_HAS(tile_rejects(kSmall8, Layout::RC, rc(4, 18, 32)), "N=18 is not a multiple of 4");
}

static void test_alignment_and_ranges() {
  CHECK_EQ(tile_rejects(kLarge16, Layout::RC, rc(256, 256, 256)), std::string());
  CHECK_HAS(tile_rejects(kLarge16, Layout::RC, rc(256, 256, 256, 2)), "A pointer or lda is not aligned to 16 bytes");
  GroupDesc odd_lda = rc(256, 256, 256);
  odd_lda.lda = 260;
  CHECK_HAS(tile_rejects(kLarge16, Layout::RC, odd_lda), "lda");
  odd_lda.m = 1;  // a single row never uses lda
  CHECK_EQ(tile_rejects(kLarge16, Layout::RC, odd_lda), std::string());
  GroupDesc odd_ldc = rc(256, 256, 256);
  odd_ldc.ldc = 257;
  CHECK_HAS(tile_rejects(kLarge16, Layout::RC, odd_ldc), "C pointer or ldc");
  CHECK_HAS(tile_rejects(kLarge16, Layout::RC, rc(300000, 4096, 4096)), "2 GiB");  // A is 2.4 GB
  CHECK_EQ(tile_rejects(kLarge16, Layout::RC, rc(200000, 4096, 4096)), std::string());  // 1.6 GB
  CHECK_HAS(tile_rejects(kLarge16, Layout::RC, rc(1, 128, int64_t(1) << 32)), "exceeds CK's 32-bit index_t");
}

static void test_invalid_descriptor() {
  GroupDesc bad = rc(64, 128, 64);
  bad.ldc = 100;
  const ListLaunch plan = route({rc(64, 128, 128), rc(0, 5, 5), bad});
  CHECK(plan.status == Status::InvalidArgument);
  CHECK_EQ(plan.group, 2);
  CHECK_EQ(plan.reason, std::string("ldc smaller than n"));
  CHECK(route({rc(-1, 128, 128)}).status == Status::InvalidArgument);
  CHECK(plan_list_launch(nullptr, 3, Layout::RC, large16, &small16).status == Status::InvalidArgument);
}

static void test_compute_v4_loop_rule() {
  for (int loops : {1, 3}) CHECK(!compute_v4_loop_ok(loops));
  for (int loops : {2, 4, 5, 6, 7, 64}) CHECK(compute_v4_loop_ok(loops));
}

static void test_packing_copies_every_field() {
  const GroupDesc d{addr(0x10), addr(0x20), addr(0x40), 3, 5, 7, 11, 13, 17};
  const GroupArgs g = pack_group(d);
  CHECK(g.a == d.a && g.b == d.b && g.c == d.c);
  CHECK_EQ(g.m, 3);
  CHECK_EQ(g.n, 5);
  CHECK_EQ(g.k, 7);
  CHECK_EQ(g.lda, 11);
  CHECK_EQ(g.ldb, 13);
  CHECK_EQ(g.ldc, 17);
}

static void test_persistent_grid() {
  CHECK_EQ(persistent_grid(5, 2, 304), 5);
  CHECK_EQ(persistent_grid(1000000, 2, 304), 608);
  CHECK_EQ(persistent_grid(0, 2, 304), 1);
}

static void test_fp8_flavour_per_arch() {
  CHECK_EQ(arch_rejects(DType::FP8_E4M3_FNUZ, "gfx942:sramecc+:xnack-"), std::string());
  CHECK_HAS(arch_rejects(DType::FP8_E4M3, "gfx942:sramecc+:xnack-"), "float8_e4m3fnuz");
  CHECK_EQ(arch_rejects(DType::FP8_E4M3, "gfx950"), std::string());
  CHECK_HAS(arch_rejects(DType::FP8_E4M3_FNUZ, "gfx950:sramecc+:xnack-"), "OCP float8_e4m3fn");
  CHECK_EQ(arch_rejects(DType::I8, "gfx942"), std::string());
  CHECK_HAS(arch_rejects(DType::F16, "gfx90a:sramecc+:xnack-"), "this device is gfx90a");
}

static PackedArgs packed(int64_t rows, int64_t n, int64_t k, int groups) {
  static const int32_t sizes[4] = {0, 0, 0, 0};
  PackedArgs p{};
  p.a = addr(0);
  p.b = addr(0x1000000);
  p.c = addr(0x2000000);
  p.group_sizes = sizes;
  p.groups = groups;
  p.rows = rows;
  p.n = n;
  p.k = k;
  p.lda = k;
  p.ldb = k;
  p.ldc = n;
  p.b_group_stride = n * k;
  return p;
}

static void test_packed_checks() {
  CHECK_EQ(packed_descriptor_error(packed(64, 256, 256, 4), Layout::RC), std::string());
  PackedArgs bad = packed(64, 256, 256, 4);
  bad.group_sizes = nullptr;
  CHECK_EQ(packed_descriptor_error(bad, Layout::RC), std::string("null group_sizes"));
  bad = packed(64, 256, 256, 4);
  bad.b_group_stride = 100;
  CHECK_EQ(packed_descriptor_error(bad, Layout::RC), std::string("b_group_stride smaller than one B"));
  CHECK_EQ(packed_descriptor_error(packed(-1, 256, 256, 4), Layout::RC), std::string("negative size"));

  CHECK_EQ(packed_rejects(large16, Layout::RC, packed(4096, 256, 256, 8)), std::string());
  CHECK_HAS(packed_rejects(large16, Layout::RC, packed(4096, 200, 256, 8)), "N=200");
  CHECK_EQ(packed_rejects(small16, Layout::RC, packed(4096, 200, 256, 8)), std::string());
  PackedArgs odd_stride = packed(4096, 256, 256, 8);
  odd_stride.b_group_stride = 256 * 256 + 4;
  CHECK_HAS(packed_rejects(large16, Layout::RC, odd_stride), "b_group_stride");
  // The envelope is all rows: C of 300000 x 4096 fp16 rows spans 2.4 GB, so every group is refused.
  CHECK_HAS(packed_rejects(large16, Layout::RC, packed(300000, 4096, 256, 8)), "2 GiB");
  CHECK_EQ(packed_tile_bound(kLarge16, packed(1000, 256, 256, 8)), (8 + 8) * 2);
}

int main() {
  test_empty_groups_are_filtered();
  test_k_zero_is_zero_filled();
  test_large_routes_to_padded_fallback();
  test_unsupported_names_group_and_rule();
  test_ck_is_supported_argument_is_consulted();
  test_layout_specific_vectors();
  test_alignment_and_ranges();
  test_invalid_descriptor();
  test_compute_v4_loop_rule();
  test_packing_copies_every_field();
  test_persistent_grid();
  test_fp8_flavour_per_arch();
  test_packed_checks();
  std::printf("test_host_plan: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
