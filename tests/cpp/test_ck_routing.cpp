// The router (csrc/common/route.h, the lead's) over the CK backend's real instance table and
// acceptance rule (registry.cpp + rules.h, with test_host_plan.cpp's fake kernels carrying the real
// traits): which CK instance each kind of group lands on, and what is copied first. Purpose: the
// dispatch record the bindings write for ROCm users, checked without an AMD GPU.
#include <cstdint>
#include <string>

#include "check.h"
#include "common/route.h"

using namespace ckgemm;

namespace {

void* addr(uintptr_t offset) { return reinterpret_cast<void*>(uintptr_t(1) << 30 | offset); }
const float* scales() { return static_cast<const float*>(addr(0x3000000)); }
GroupDesc rc(int64_t m, int64_t n, int64_t k) {
  return GroupDesc{addr(0), addr(0x1000000), addr(0x2000000), m, n, k, k, k, n, nullptr, nullptr};
}
GroupDesc rr(int64_t m, int64_t n, int64_t k) {
  return GroupDesc{addr(0), addr(0x1000000), addr(0x2000000), m, n, k, k, n, n, nullptr, nullptr};
}
GroupDesc with_scales(GroupDesc g) {
  g.sa = scales();
  g.sb = scales() + 4096;
  return g;
}

Route route(const Kind& kind, const GroupDesc& g) {
  return route_list_group(kind, g, 1, [](int id, const GroupDesc& d) { return instance_rejects(id, d); });
}
std::string instance_of(const Route& r) {
  return r.ok() ? instance_info(route_instance(r.code)).name : "refused: " + r.why;
}

const Kind kF16{DType::F16, OutType::F16, Layout::RC, Scaling::None};

void test_unscaled_fp16() {
  const Route big = route(kF16, rc(4096, 4096, 4096));
  CHECK_EQ(instance_of(big), std::string("compute_v4_128x128x64"));
  CHECK_EQ(route_flags(big.code), 0);
  CHECK_EQ(instance_of(route(kF16, rc(4096, 200, 4096))), std::string("padded_16x64x128"));  // N tail
  CHECK_EQ(instance_of(route(kF16, rc(4096, 4096, 192))), std::string("padded_16x64x128"));  // CompV4: 3 K tiles
  CHECK_EQ(instance_of(route(kF16, rc(8, 4096, 4096))), std::string("padded_16x64x128"));    // small M first
  CHECK_EQ(route_kind(route(kF16, rc(0, 64, 64)).code), int32_t(kRouteEmpty));
  CHECK_EQ(route_kind(route(kF16, rc(5, 64, 0)).code), int32_t(kRouteZeroK));
}

void test_copies_make_groups_fit() {
  GroupDesc misaligned = rc(4096, 4096, 4096);
  misaligned.a = addr(2);  // A not 16-byte aligned: the router copies it
  const Route r = route(kF16, misaligned);
  CHECK_EQ(instance_of(r), std::string("compute_v4_128x128x64"));
  CHECK_EQ(route_flags(r.code), int32_t(kRepackA));
  const Route odd_k = route(kF16, rc(64, 256, 100));  // K % 8 != 0: A and B copied with K padded
  CHECK(odd_k.ok());
  CHECK_EQ(route_flags(odd_k.code) & (kRepackA | kRepackB), int32_t(kRepackA | kRepackB));
  CHECK_EQ(odd_k.k_padded, int64_t(112));
  const Route odd_n = route(kF16, rc(64, 1001, 256));  // N % 8 != 0: C staged with N padded
  CHECK(odd_n.ok());
  CHECK(route_flags(odd_n.code) & kStageC);
  CHECK_EQ(odd_n.n_padded, int64_t(1008));
}

void test_fp8_and_int8() {
  for (DType fp8 : {DType::FP8_E4M3, DType::FP8_E4M3_FNUZ}) {  // one kernel, both kinds
    const Route rrf = route(Kind{fp8, OutType::F32, Layout::RR, Scaling::None}, rr(4096, 4096, 4096));
    CHECK_EQ(instance_of(rrf), std::string("compute_v4_128x128x64"));
    CHECK_EQ(route_flags(rrf.code), 0);  // CK reads 8-bit RR as stored: no transpose
    CHECK(instance_info(route_instance(rrf.code)).kind.dtype == fp8);
  }
  const Kind row{DType::I8, OutType::BF16, Layout::RC, Scaling::Row};
  CHECK_EQ(instance_of(route(row, with_scales(rc(4096, 4096, 4096)))), std::string("compute_v4_128x128x64"));
  CHECK_EQ(instance_of(route(row, with_scales(rc(3, 4096, 4096)))), std::string("padded_16x64x128"));
}

void test_scaled_outputs() {
  // fp16 out of a scaled call: no CK instance writes it, so the router computes fp32 and converts.
  const Kind f16_out{DType::FP8_E4M3_FNUZ, OutType::F16, Layout::RC, Scaling::Row};
  CHECK_EQ(kernel_out(f16_out) == OutType::F32, true);
  const Route r = route(f16_out, with_scales(rc(4096, 4096, 4096)));
  CHECK(r.ok() && (route_flags(r.code) & kStageC) && r.kind.out == OutType::F32);
  const Kind block{DType::FP8_E4M3, OutType::BF16, Layout::RC, Scaling::Block};
  const Route refused = route(block, with_scales(rc(4096, 4096, 4096)));
  CHECK(!refused.ok());
  CHECK_HAS(refused.why, "no grouped 1x128 x 128x128 kernel");
}

}  // namespace

void run_routing_tests() {
  test_unscaled_fp16();
  test_copies_make_groups_fit();
  test_fp8_and_int8();
  test_scaled_outputs();
}
