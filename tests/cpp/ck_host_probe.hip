// Host-side probe of the real CK instances, built (host pass only) and run on a machine without an
// AMD GPU by scripts/check_hip_compile.py, linked with the instances', the registry's and the
// runner's host objects and libamdhip64. It checks what the g++ test (test_host_plan.cpp) can only fake:
//  * the table holds every compiled instance (CKGEMM_PROBE_ENTRIES entries), both fp8 kinds share one
//    kernel, and every instance's tile traits, read from CK's types, are expected_traits.h's (the
//    numbers the g++ tests' fakes use);
//  * ckgemm's GroupArgs -> CK UniversalGemmKernelArgs conversion copies every field;
//  * over a sweep of shapes, every group the acceptance rule's tile rules accept, CK's
//    IsSupportedArgument accepts too (the rules may be stricter than CK, never looser);
//  * the ABI fails cleanly (BackendError, no crash) when no GPU is present.
#include <cstdio>
#include <cstring>
#include <string>

#include "check.h"
#include "expected_traits.h"
#include "hip/ck_kernel.hpp"
#include "hip/rules.h"
#include "hip/table.h"

#ifndef CKGEMM_PROBE_ENTRIES
#error "CKGEMM_PROBE_ENTRIES: the number of table entries this build must have (scripts/check_hip_compile.py)"
#endif

using namespace ckgemm;
using namespace ckgemm::ck;

static const char* kind_text(const Kind& k, char* buf, size_t size) {
  static const char* dtypes[] = {"fp16", "bf16", "fp8", "fp8_fnuz", "int8"};
  static const char* outs[] = {"f16", "bf16", "f32", "i32"};
  std::snprintf(buf, size, "%s->%s %s%s", dtypes[int(k.dtype)], outs[int(k.out)], k.layout == Layout::RC ? "RC" : "RR",
                k.scaling == Scaling::Row ? " row-scaled" : "");
  return buf;
}

template <DType D, OutType O, Layout L, Scaling S, TileId T>
static void check_ck_args() {
  using Gemm = CkGemm<D, O, L, S, T>;
  const GroupArgs g{reinterpret_cast<const void*>(0x1000), reinterpret_cast<const void*>(0x2000),
                    reinterpret_cast<void*>(0x3000), nullptr, nullptr, 3, 5, 7, 11, 13, 17};
  const auto k = ck_args<Gemm>(g);
  CHECK(k.as_ptr[0] == g.a && k.bs_ptr[0] == g.b && k.e_ptr == g.c);
  CHECK(k.M == 3 && k.N == 5 && k.K == 7 && k.k_batch == 1);
  CHECK(k.stride_As[0] == 11 && k.stride_Bs[0] == 13 && k.stride_E == 17);
}

// Every shape the tile rules accept must be accepted by CK itself.
static void sweep(const Entry& e, const char* tag) {
  const int64_t ms[] = {1, 7, 16, 128, 129, 1000};
  const int64_t ns[] = {4, 8, 12, 16, 24, 64, 100, 128, 200, 256, 4096};
  const int64_t ks[] = {8, 16, 24, 32, 64, 100, 128, 192, 200, 256, 320, 4096};
  const Layout layout = e.info.kind.layout;
  int both = 0, rules_only_refuse = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        const int64_t ldb = layout == Layout::RC ? k : n;
        const GroupDesc d{reinterpret_cast<const void*>(0x10000000), reinterpret_cast<const void*>(0x20000000),
                          reinterpret_cast<void*>(0x30000000), m, n, k, k, ldb, n, nullptr, nullptr};
        const bool rules = tile_rejects(e.inst->traits, layout, d).empty();
        const bool ck = e.inst->ck_accepts(pack_group(d));
        both += rules && ck;
        rules_only_refuse += !rules && ck;
        if (rules && !ck)
          CHECK_EQ(std::string(tag) + " M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k),
                   std::string("passes ckgemm's rules but CK refuses it"));
      }
  std::printf("    sweep: %4d accepted, %4d refused only by ckgemm's stricter rules\n", both, rules_only_refuse);
}

static void check_table() {
  const Table& t = instance_table();
  CHECK_EQ(instance_count(), CKGEMM_PROBE_ENTRIES);
  for (int id = 0; id < t.count; ++id) {
    const Entry& e = t.entries[id];
    const TileTraits& tr = e.inst->traits;
    char kind[64];
    std::printf("  %2d %-24s %-22s vec a/b/c %2d/%2d/%2d  C %d B\n", id, kind_text(e.info.kind, kind, sizeof kind),
                e.info.name, tr.vec_a, tr.vec_b, tr.vec_c, tr.c_bytes);
    CHECK(same_traits(tr, expected_traits(e.info.kind.dtype, e.info.kind.out, e.tile)));
    if (e.info.kind.dtype == DType::FP8_E4M3) {
      CHECK(id > 0 && t.entries[id - 1].inst == e.inst);  // the e4m3fnuz twin: the same kernel
      continue;                                          // swept as the twin
    }
    sweep(e, kind);
  }
}

static void check_no_gpu_paths() {
  const Table& t = instance_table();
  if (t.count == 0) return;
  const GroupDesc g{reinterpret_cast<const void*>(0x10000000), reinterpret_cast<const void*>(0x20000000),
                    reinterpret_cast<void*>(0x30000000), 128, 128, 128, 128, 128, 128, nullptr, nullptr};
  int id = 0;
  while (id < t.count && t.entries[id].info.kind.scaling != Scaling::None) ++id;
  RunReport report;
  const Status s = run_list(id, &g, 1, Buffers{nullptr, 0}, nullptr, 0, &report);
  std::printf("  run_list without a GPU: status %d (%s): %s\n", int(s), status_string(s), report.message);
  CHECK(s == Status::BackendError);
  PackedArgs packed{};
  CHECK(run_packed(id, packed, Buffers{nullptr, 0}, nullptr, 0, &report) == Status::BackendError);
  const std::string why = device_rejects(DType::F16);
  std::printf("  device_rejects without a GPU: %s\n", why.c_str());
  CHECK_HAS(why, "cannot query the current device");
}

int main() {
  std::printf("CK instances in this build (traits vs expected_traits.h, rules vs CK IsSupportedArgument):\n");
  check_table();
#if defined(CKGEMM_CK_FP16)
  check_ck_args<DType::F16, OutType::F16, Layout::RC, Scaling::None, TileId::ComputeV4>();
#endif
#if defined(CKGEMM_CK_INT8)
  check_ck_args<DType::I8, OutType::BF16, Layout::RR, Scaling::Row, TileId::Padded>();
#endif
  check_no_gpu_paths();
  std::printf("ck_host_probe: %d checks, %d failures\n", host_test::checks(), host_test::failures());
  return host_test::failures() == 0 ? 0 : 1;
}
