// The acceptance rule of a CK instance (csrc/hip/rules.h), the fp8 flavour per arch (arch_rules.h),
// the per-group record (group_args.h) and the IsSupportedArgument memo (memo.h), checked with g++ and
// no GPU. The entries carry the real tile traits (expected_traits.h, which ck_host_probe checks
// against the compiled instances) and fake CK entry points. Part of test_host_plan
// (tests/test_host_plan.py builds and runs it).
#include <cstdint>
#include <string>

#include "check.h"
#include "expected_traits.h"
#include "hip/arch_rules.h"
#include "hip/memo.h"
#include "hip/rules.h"

using namespace ckgemm;
using namespace ckgemm::ck;

namespace {

bool ck_accepts_all(const GroupArgs&) { return true; }
bool ck_rejects_m777(const GroupArgs& g) { return g.m != 777; }  // stands in for a CK-only rule
int fake_blocks() { return 1; }
int fake_launch(const GroupArgs*, int, int, void*) { return 0; }

struct Fake {
  Instance inst;
  Entry entry;
  Fake(DType d, OutType o, Layout l, Scaling s, TileId t, bool (*accepts)(const GroupArgs&) = ck_accepts_all)
      : inst{expected_traits(d, o, t), accepts, fake_blocks, fake_launch},
        entry{info_of(inst.traits, Kind{d, o, l, s}), t, &inst} {}
  Fake(const Fake&) = delete;
};

const Fake large16(DType::F16, OutType::F16, Layout::RC, Scaling::None, TileId::ComputeV4);
const Fake small16(DType::F16, OutType::F16, Layout::RC, Scaling::None, TileId::Padded);
const Fake small16_rr(DType::F16, OutType::F16, Layout::RR, Scaling::None, TileId::Padded);
const Fake small8(DType::FP8_E4M3_FNUZ, OutType::F32, Layout::RC, Scaling::None, TileId::Padded);
const Fake picky(DType::F16, OutType::F16, Layout::RC, Scaling::None, TileId::ComputeV4, ck_rejects_m777);
const Fake row_bf16(DType::FP8_E4M3_FNUZ, OutType::BF16, Layout::RC, Scaling::Row, TileId::Padded);

// Never dereferenced: only their values and alignment matter.
void* addr(uintptr_t offset) { return reinterpret_cast<void*>(uintptr_t(1) << 30 | offset); }
const float* scales(uintptr_t offset) { return static_cast<const float*>(addr(0x3000000 + offset)); }

GroupDesc rc(int64_t m, int64_t n, int64_t k, uintptr_t base = 0) {
  return GroupDesc{addr(base), addr(base + 0x1000000), addr(base + 0x2000000), m, n, k, k, k, n, nullptr, nullptr};
}
GroupDesc rr(int64_t m, int64_t n, int64_t k) {
  return GroupDesc{addr(0), addr(0x1000000), addr(0x2000000), m, n, k, k, n, n, nullptr, nullptr};
}
GroupDesc scaled(GroupDesc g) {
  g.sa = scales(0);
  g.sb = scales(0x100000);
  return g;
}
std::string rejects(const Fake& f, const GroupDesc& g) { return entry_rejects(f.entry, g); }

void test_tiles_and_fallback_rules() {
  CHECK_EQ(rejects(large16, rc(1000, 4096, 4096)), std::string());
  CHECK_HAS(rejects(large16, rc(7, 200, 4096)), "N=200 is not a multiple of 128 (the N tile)");
  CHECK_EQ(rejects(small16, rc(7, 200, 4096)), std::string());  // the padded tile takes the N tail
  CHECK_HAS(rejects(large16, rc(64, 256, 200)), "K=200 is not a multiple of 64 (the K tile)");
  CHECK_EQ(rejects(small16, rc(64, 256, 200)), std::string());
  CHECK_HAS(rejects(small16, rc(64, 256, 100)), "K=100 is not a multiple of 8 (vector loads of A rows)");
  CHECK_HAS(rejects(small16, rc(3, 1001, 64)), "N=1001 is not a multiple of 8 (vector stores of C rows)");
}

void test_compute_v4_loop_rule() {  // the CompV4 K-loop bug (rules.h)
  for (int loops : {1, 3}) CHECK(!compute_v4_loop_ok(loops));
  for (int loops : {2, 4, 5, 6, 7, 64}) CHECK(compute_v4_loop_ok(loops));
  CHECK_HAS(rejects(large16, rc(64, 256, 64)), "gives 1 K tiles; the CompV4 pipeline needs 2 or at least 4");
  CHECK_HAS(rejects(large16, rc(64, 256, 192)), "gives 3 K tiles");
  CHECK_EQ(rejects(large16, rc(64, 256, 128)), std::string());
  CHECK_EQ(rejects(large16, rc(64, 256, 320)), std::string());
  CHECK_EQ(rejects(small16, rc(64, 256, 192)), std::string());  // CompV3 has no such bug
}

void test_layout_specific_vectors() {
  // RR: B rows run along N, so N must fill B's vectors; RC: B rows run along K.
  CHECK_HAS(rejects(small16_rr, rr(4, 12, 64)), "N=12 is not a multiple of 8 (vector loads of B rows)");
  CHECK_HAS(rejects(small16, rc(4, 12, 64)), "N=12 is not a multiple of 8 (vector stores of C rows)");
  // fp8 -> fp32: A loads 8, B loads 16, C stores 4 elements per vector in the padded tile.
  CHECK_HAS(rejects(small8, rc(4, 64, 24)), "K=24 is not a multiple of 16 (vector loads of B rows)");
  CHECK_EQ(rejects(small8, rc(4, 20, 32)), std::string());
  CHECK_HAS(rejects(small8, rc(4, 18, 32)), "N=18 is not a multiple of 4");
}

void test_alignment_and_ranges() {
  CHECK_HAS(rejects(large16, rc(256, 256, 256, 2)), "A pointer or lda is not aligned to 16 bytes");
  GroupDesc odd_lda = rc(256, 256, 256);
  odd_lda.lda = 260;
  CHECK_HAS(rejects(large16, odd_lda), "lda");
  odd_lda.m = 1;  // a single row never uses lda
  CHECK_EQ(rejects(large16, odd_lda), std::string());
  GroupDesc odd_ldc = rc(256, 256, 256);
  odd_ldc.ldc = 264;
  CHECK_EQ(rejects(large16, odd_ldc), std::string());  // 264 is a multiple of 8: fine
  odd_ldc.ldc = 257;
  CHECK_HAS(rejects(large16, odd_ldc), "C pointer or ldc");
  CHECK_HAS(rejects(large16, rc(300000, 4096, 4096)), "2 GiB");  // A is 2.4 GB
  CHECK_EQ(rejects(large16, rc(200000, 4096, 4096)), std::string());  // 1.6 GB
  CHECK_HAS(rejects(large16, rc(1, 128, int64_t(1) << 32)), "exceeds CK's 32-bit index_t");
}

void test_empty_groups_and_descriptors() {
  CHECK_EQ(rejects(large16, rc(0, 256, 256)), std::string());  // owns no tiles
  CHECK_EQ(rejects(large16, GroupDesc{nullptr, nullptr, nullptr, 5, 0, 7, 0, 0, 0, nullptr, nullptr}), std::string());
  CHECK_HAS(rejects(large16, GroupDesc{nullptr, nullptr, addr(0), 5, 8, 0, 0, 0, 8, nullptr, nullptr}),
            "K=0: C is zero-filled by the router");
  GroupDesc bad = rc(64, 128, 64);
  bad.ldc = 100;
  CHECK_EQ(rejects(small16, bad), std::string("ldc smaller than n"));
  CHECK_EQ(rejects(small16, rc(-1, 128, 128)), std::string("negative size"));
}

void test_ck_is_supported_argument_is_consulted() {
  CHECK_HAS(rejects(picky, rc(777, 256, 256)), "CK IsSupportedArgument rejects it (compute_v4_128x128x64)");
  CHECK_EQ(rejects(picky, rc(776, 256, 256)), std::string());
}

void test_scales() {
  CHECK_EQ(rejects(row_bf16, scaled(rc(5, 64, 128))), std::string());
  CHECK_EQ(rejects(row_bf16, rc(5, 64, 128)), std::string("null scale pointer"));
  GroupDesc odd = scaled(rc(5, 64, 128));
  odd.sb = reinterpret_cast<const float*>(addr(0x3000002));
  CHECK_EQ(rejects(row_bf16, odd), std::string("scale pointer not aligned to 4 bytes"));
  CHECK_EQ(rejects(small16, scaled(rc(5, 64, 128))), std::string("scales given to an unscaled instance"));
  // bf16 C stores 8 elements per vector, fp32 C 4.
  CHECK_HAS(rejects(row_bf16, scaled(rc(5, 68, 128))), "N=68 is not a multiple of 8 (vector stores of C rows)");
  CHECK_EQ(rejects(small8, rc(5, 68, 128)), std::string());
}

void test_packing_copies_every_field() {
  const GroupDesc d{addr(0x10), addr(0x20), addr(0x40), 3, 5, 7, 11, 13, 17, scales(4), scales(8)};
  const GroupArgs g = pack_group(d);
  CHECK(g.a == d.a && g.b == d.b && g.c == d.c && g.sa == d.sa && g.sb == d.sb);
  CHECK_EQ(g.m, 3);
  CHECK_EQ(g.n, 5);
  CHECK_EQ(g.k, 7);
  CHECK_EQ(g.lda, 11);
  CHECK_EQ(g.ldb, 13);
  CHECK_EQ(g.ldc, 17);
}

void test_launch_arithmetic() {
  CHECK_EQ(persistent_grid(5, 2, 304), 5);
  CHECK_EQ(persistent_grid(1000000, 2, 304), 608);
  CHECK_EQ(persistent_grid(0, 2, 304), 1);
  const GroupDesc g[3] = {rc(256, 256, 256), rc(0, 256, 256), rc(64, 128, 128)};
  CHECK_EQ(tile_count(large16.inst.traits, g, 3), 2 * 2 + 0 + 1 * 1);
  CHECK_EQ(tile_count(small16.inst.traits, g, 3), 16 * 4 + 0 + 4 * 2);
}

void test_fp8_flavour_per_arch() {
  CHECK_EQ(arch_rejects(DType::FP8_E4M3_FNUZ, "gfx942:sramecc+:xnack-"), std::string());
  CHECK_HAS(arch_rejects(DType::FP8_E4M3, "gfx942:sramecc+:xnack-"), "float8_e4m3fnuz");
  CHECK_EQ(arch_rejects(DType::FP8_E4M3, "gfx950"), std::string());
  CHECK_HAS(arch_rejects(DType::FP8_E4M3_FNUZ, "gfx950:sramecc+:xnack-"), "OCP float8_e4m3fn");
  CHECK_EQ(arch_rejects(DType::I8, "gfx942"), std::string());
  CHECK_HAS(arch_rejects(DType::F16, "gfx90a:sramecc+:xnack-"), "this device is gfx90a");
}

PackedArgs packed(int64_t rows, int64_t n, int64_t k, int groups) {
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

void test_packed_rules() {
  const Entry& large = large16.entry;
  CHECK_EQ(entry_rejects_packed(large, packed(4096, 256, 256, 8)), std::string());
  CHECK_HAS(entry_rejects_packed(large, packed(4096, 200, 256, 8)), "N=200");
  CHECK_EQ(entry_rejects_packed(small16.entry, packed(4096, 200, 256, 8)), std::string());
  CHECK_EQ(entry_rejects_packed(large, packed(0, 256, 256, 8)), std::string());  // no rows: nothing to launch
  PackedArgs bad = packed(64, 256, 256, 4);
  bad.group_sizes = nullptr;
  CHECK_EQ(entry_rejects_packed(large, bad), std::string("null group_sizes"));
  bad = packed(4096, 256, 256, 8);
  bad.b_group_stride = 256 * 256 + 4;
  CHECK_HAS(entry_rejects_packed(large, bad), "b_group_stride is not a multiple of 8");
  // The envelope is all rows: C of 300000 x 4096 fp16 rows spans 2.4 GB, so every group is refused.
  CHECK_HAS(entry_rejects_packed(large, packed(300000, 4096, 256, 8)), "2 GiB");
  CHECK_EQ(packed_tile_bound(large16.inst.traits, packed(1000, 256, 256, 8)), (8 + 8) * 2);

  PackedArgs row = packed(4096, 256, 256, 8);
  CHECK_EQ(entry_rejects_packed(row_bf16.entry, row), std::string("null scale pointer"));
  row.sa = scales(0);
  row.sb = scales(0x100000);
  row.sa_row_stride = 1;
  row.sb_group_stride = 256;
  CHECK_EQ(entry_rejects_packed(row_bf16.entry, row), std::string());
  row.sa_row_stride = 2;
  CHECK_HAS(entry_rejects_packed(row_bf16.entry, row), "row scales of A must be contiguous");
}

void test_shape_memo() {
  ShapeMemo memo;
  int calls = 0;
  auto accepts_even_k = [&](int32_t k) { return [&calls, k] { ++calls; return k % 2 == 0; }; };
  CHECK(memo.get(4, 64, 128, accepts_even_k(128)));
  CHECK(memo.get(4, 64, 128, accepts_even_k(128)));
  CHECK(!memo.get(4, 64, 127, accepts_even_k(127)));
  CHECK(!memo.get(4, 64, 127, accepts_even_k(127)));
  CHECK(memo.get(5, 64, 128, accepts_even_k(128)));  // every size is part of the key
  CHECK_EQ(calls, 3);
  CHECK_EQ(memo.size(), size_t(3));
  for (int32_t m = 0; m < int32_t(ShapeMemo::kMaxShapes); ++m) memo.get(1000 + m, 64, 128, accepts_even_k(128));
  CHECK(memo.size() <= ShapeMemo::kMaxShapes);  // bounded
  CHECK_EQ(calls, 3 + int(ShapeMemo::kMaxShapes));
}

}  // namespace

void run_rule_tests() {
  test_tiles_and_fallback_rules();
  test_compute_v4_loop_rule();
  test_layout_specific_vectors();
  test_alignment_and_ranges();
  test_empty_groups_and_descriptors();
  test_ck_is_supported_argument_is_consulted();
  test_scales();
  test_packing_copies_every_field();
  test_launch_arithmetic();
  test_fp8_flavour_per_arch();
  test_packed_rules();
  test_shape_memo();
}
