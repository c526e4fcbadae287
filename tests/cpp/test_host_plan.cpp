// Host side of the CK backend, checked with g++ and no GPU: the real instance table (csrc/hip/
// registry.cpp over instances.inc, linked in) with fake kernels that carry the real tile traits
// (expected_traits.h), the ABI's host half (instance ids and infos, acceptance, kind refusals,
// preference order, scratch sizes) and the selection rules. test_rules.cpp adds the acceptance rule
// itself, test_ck_routing.cpp the router (common/route.h) over this table. Built and run by
// tests/test_host_plan.py; ck_host_probe.hip repeats the table checks on the real instances.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "check.h"
#include "expected_traits.h"
#include "hip/selection.h"
#include "hip/table.h"

using namespace ckgemm;
using namespace ckgemm::ck;

void run_rule_tests();     // test_rules.cpp
void run_routing_tests();  // test_ck_routing.cpp

namespace ckgemm {
namespace ck {
namespace {
bool fake_accepts(const GroupArgs& g) { return g.m != 777; }  // stands in for a CK-only rule
int fake_blocks() { return 2; }
int fake_launch(const GroupArgs*, int, int, void*) { return 0; }
}  // namespace

// The fake kernels registry.cpp's table points at: one per instances.inc line, real traits.
template <DType D, OutType O, Layout L, Scaling S, TileId T>
const Instance* instance() {
  static const Instance inst{expected_traits(D, O, T), fake_accepts, fake_blocks, fake_launch};
  return &inst;
}
#define CKGEMM_INSTANCE(file, dtype, out, layout, scaling, tile) \
  template const Instance* instance<DType::dtype, OutType::out, Layout::layout, Scaling::scaling, TileId::tile>();
#include "hip/instances.inc"
#undef CKGEMM_INSTANCE
}  // namespace ck
}  // namespace ckgemm

namespace {

constexpr int kInstanceLines = 32;  // instances.inc: 16 unscaled + 16 row-scaled
constexpr int kFp8Lines = 12;       // each listed under both fp8 kinds

void* addr(uintptr_t offset) { return reinterpret_cast<void*>(uintptr_t(1) << 30 | offset); }
GroupDesc rc(int64_t m, int64_t n, int64_t k) {
  return GroupDesc{addr(0), addr(0x1000000), addr(0x2000000), m, n, k, k, k, n, nullptr, nullptr};
}
Kind kind(DType d, OutType o, Layout l = Layout::RC, Scaling s = Scaling::None) { return Kind{d, o, l, s}; }

void test_table() {
  const Table& t = instance_table();
  CHECK_EQ(instance_count(), kInstanceLines + kFp8Lines);
  CHECK_EQ(t.count, instance_count());
  int fp8_pairs = 0;
  for (int id = 0; id < t.count; ++id) {
    const Entry& e = t.entries[id];
    const InstanceInfo& info = instance_info(id);
    CHECK(&info == &e.info);
    CHECK(same_traits(e.inst->traits, expected_traits(info.kind.dtype, info.kind.out, e.tile)));
    CHECK_EQ(std::string(info.name), std::string(e.inst->traits.name));
    CHECK(info.tile_m == e.inst->traits.m_tile && info.tile_n == e.inst->traits.n_tile &&
          info.tile_k == e.inst->traits.k_tile);
    CHECK(info.cluster_m == 1 && info.cluster_n == 1 && !info.any_output);
    CHECK(info.kind.scaling == Scaling::None ? info.kind.out == unscaled_out(info.kind.dtype)
                                             : info.kind.out == OutType::BF16 || info.kind.out == OutType::F32);
    if (info.kind.dtype == DType::FP8_E4M3) {  // follows its e4m3fnuz twin, same kernel
      const Entry& twin = t.entries[id - 1];
      CHECK(twin.info.kind.dtype == DType::FP8_E4M3_FNUZ && twin.inst == e.inst && twin.tile == e.tile);
      CHECK(twin.info.kind.out == info.kind.out && twin.info.kind.layout == info.kind.layout &&
            twin.info.kind.scaling == info.kind.scaling);
      ++fp8_pairs;
    }
  }
  CHECK_EQ(fp8_pairs, kFp8Lines);
  CHECK_EQ(std::string(instance_info(-1).name), std::string("(no such CK instance)"));
  CHECK_EQ(std::string(instance_info(t.count).name), std::string("(no such CK instance)"));
  CHECK_EQ(std::string(backend_name()), std::string("ck"));
}

int first_of(const Kind& k, TileId tile) {
  const Table& t = instance_table();
  for (int id = 0; id < t.count; ++id)
    if (t.entries[id].info.kind == k && t.entries[id].tile == tile) return id;
  return -1;
}

void test_abi_acceptance() {
  const int large = first_of(kind(DType::F16, OutType::F16), TileId::ComputeV4);
  const int padded = first_of(kind(DType::F16, OutType::F16), TileId::Padded);
  CHECK(large >= 0 && padded >= 0);
  CHECK_EQ(instance_rejects(large, rc(256, 256, 256)), std::string());
  CHECK_HAS(instance_rejects(large, rc(256, 200, 256)), "N=200");
  CHECK_EQ(instance_rejects(padded, rc(256, 200, 256)), std::string());
  CHECK_HAS(instance_rejects(large, rc(777, 256, 256)), "CK IsSupportedArgument rejects it");
  CHECK_HAS(instance_rejects(-3, rc(1, 8, 8)), "no CK instance with id -3");
  PackedArgs p{};
  CHECK_HAS(instance_rejects_packed(1000, p), "no CK instance with id 1000");
  CHECK_EQ(list_buffer_bytes(large, 10, 304), 10 * sizeof(GroupArgs));
  PackedArgs seven{};
  seven.groups = 7;
  CHECK_EQ(packed_buffer_bytes(large, seven, 0), 7 * sizeof(GroupArgs));
  CHECK_EQ(list_buffer_bytes(large, 0, 304), size_t(0));
  CHECK_EQ(list_buffer_bytes(-1, 10, 304), size_t(0));
}

void test_kind_rejects() {
  for (DType d : {DType::FP8_E4M3, DType::FP8_E4M3_FNUZ, DType::I8})
    for (OutType o : {OutType::BF16, OutType::F32})
      for (Layout l : {Layout::RC, Layout::RR}) CHECK_EQ(kind_rejects(kind(d, o, l, Scaling::Row)), std::string());
  CHECK_EQ(kind_rejects(kind(DType::BF16, OutType::BF16, Layout::RR)), std::string());
  const std::string block = kind_rejects(kind(DType::FP8_E4M3_FNUZ, OutType::BF16, Layout::RC, Scaling::Block));
  CHECK_HAS(block, "no grouped 1x128 x 128x128 kernel");
  CHECK_HAS(block, "amd-aiter 0.1.7.post2.dev18");
  CHECK_HAS(kind_rejects(kind(DType::F16, OutType::F16, Layout::RC, Scaling::Row)), "scales apply to fp8 and int8");
  CHECK_HAS(kind_rejects(kind(DType::I8, OutType::I32, Layout::RC, Scaling::Row)), "bfloat16 or float32, not int32");
  CHECK_HAS(kind_rejects(kind(DType::FP8_E4M3, OutType::F16, Layout::RR, Scaling::Row)),
            "float16 output is not instantiated");
  CHECK_HAS(kind_rejects(kind(DType::FP8_E4M3, OutType::BF16)), "writes float32 on CK, not bfloat16");
  CHECK_HAS(kind_rejects(kind(DType::I8, OutType::F32)), "writes int32 on CK, not float32");

  // A build that left int8 out (CKGEMM_DTYPES=fp16,bf16,fp8) says so.
  std::vector<Entry> no_int8;
  for (int id = 0; id < instance_table().count; ++id)
    if (instance_table().entries[id].info.kind.dtype != DType::I8) no_int8.push_back(instance_table().entries[id]);
  const Table partial{no_int8.data(), static_cast<int>(no_int8.size())};
  CHECK_HAS(kind_rejects(partial, kind(DType::I8, OutType::I32)), "left out by CKGEMM_DTYPES");
  CHECK_HAS(kind_rejects(partial, kind(DType::I8, OutType::BF16, Layout::RC, Scaling::Row)), "int8");
  CHECK_EQ(kind_rejects(partial, kind(DType::F16, OutType::F16)), std::string());
}

void test_preferred_instances() {
  const Kind k = kind(DType::FP8_E4M3, OutType::BF16, Layout::RR, Scaling::Row);
  int ids[4] = {-1, -1, -1, -1};
  CHECK_EQ(preferred_instances(k, 4096, 4096, 7168, 1, ids, 4), 2);
  CHECK(instance_info(ids[0]).kind == k && instance_info(ids[1]).kind == k);
  CHECK_EQ(std::string(instance_info(ids[0]).name), std::string("compute_v4_128x128x64"));
  CHECK_EQ(std::string(instance_info(ids[1]).name), std::string("padded_16x64x128"));
  CHECK_EQ(preferred_instances(k, kPaddedFirstBelowRows - 1, 4096, 7168, 1, ids, 4), 2);
  CHECK_EQ(std::string(instance_info(ids[0]).name), std::string("padded_16x64x128"));
  CHECK_EQ(std::string(instance_info(ids[1]).name), std::string("compute_v4_128x128x64"));
  CHECK_EQ(preferred_instances(k, kPaddedFirstBelowRows, 4096, 7168, 1, ids, 1), 1);
  CHECK_EQ(std::string(instance_info(ids[0]).name), std::string("compute_v4_128x128x64"));
  CHECK_EQ(preferred_instances(kind(DType::F16, OutType::F16, Layout::RC, Scaling::Block), 4096, 1, 1, 1, ids, 4), 0);
  CHECK_EQ(preferred_instances(k, 4096, 1, 1, 1, nullptr, 4), 0);
  CHECK_EQ(preferred_instances(k, 4096, 1, 1, 1, ids, 0), 0);
}

}  // namespace

int main() {
  test_table();
  test_abi_acceptance();
  test_kind_rejects();
  test_preferred_instances();
  run_rule_tests();
  run_routing_tests();
  std::printf("test_host_plan: %d checks, %d failures\n", host_test::checks(), host_test::failures());
  return host_test::failures() == 0 ? 0 : 1;
}
