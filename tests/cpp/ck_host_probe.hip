// Host-side probe of the real CK instances, built (host pass only) and run on a machine without an
// AMD GPU by scripts/check_hip_compile.py, linked with the instances' and the runner's host objects
// and libamdhip64. It checks what the g++ test (test_host_plan.cpp) can only fake:
//  * the registry holds every compiled (dtype, layout, config), fp8 flavours share one instance;
//  * ckgemm's GroupArgs -> CK UniversalGemmKernelArgs conversion copies every field;
//  * over a sweep of shapes, every group routing.h's tile rules accept, CK's IsSupportedArgument
//    accepts too (the rules may be stricter than CK, never looser);
//  * run_list / run_packed fail cleanly (BackendError, no crash) when no GPU is present.
#include <cstdio>
#include <cstring>
#include <string>

#include "hip/ck_kernel.hpp"
#include "hip/routing.h"

using namespace ckgemm;
using namespace ckgemm::ck;

static int g_failures = 0;
#define EXPECT(cond, ...)                    \
  do {                                       \
    if (!(cond)) {                           \
      ++g_failures;                          \
      std::printf("FAIL %s: ", #cond);       \
      std::printf(__VA_ARGS__);              \
      std::printf("\n");                     \
    }                                        \
  } while (0)

static const char* dtype_name(DType d) {
  switch (d) {
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8_E4M3: return "fp8";
    case DType::FP8_E4M3_FNUZ: return "fp8_fnuz";
    case DType::I8: return "int8";
  }
  return "?";
}

template <DType D, Layout L, Config C>
static void check_ck_args() {
  using Gemm = CkGemm<D, L, C>;
  const GroupArgs g{reinterpret_cast<const void*>(0x1000), reinterpret_cast<const void*>(0x2000),
                    reinterpret_cast<void*>(0x3000), 3, 5, 7, 11, 13, 17};
  const auto k = ck_args<Gemm>(g);
  EXPECT(k.as_ptr[0] == g.a && k.bs_ptr[0] == g.b && k.e_ptr == g.c, "pointers");
  EXPECT(k.M == 3 && k.N == 5 && k.K == 7 && k.k_batch == 1, "sizes");
  EXPECT(k.stride_As[0] == 11 && k.stride_Bs[0] == 13 && k.stride_E == 17, "strides");
}

// Every shape the tile rules accept must be accepted by CK itself.
static void sweep(const Instance& inst, Layout layout, const char* tag) {
  const int64_t ms[] = {1, 7, 16, 128, 129, 1000};
  const int64_t ns[] = {4, 8, 12, 16, 24, 64, 100, 128, 200, 256, 4096};
  const int64_t ks[] = {8, 16, 24, 32, 64, 100, 128, 192, 200, 256, 320, 4096};
  int both = 0, rules_only_refuse = 0, ck_only_refuse = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        const int64_t ldb = layout == Layout::RC ? k : n;
        const GroupDesc d{reinterpret_cast<const void*>(0x10000000), reinterpret_cast<const void*>(0x20000000),
                          reinterpret_cast<void*>(0x30000000), m, n, k, k, ldb, n};
        const bool rules = tile_rejects(inst.traits, layout, d).empty();
        const bool ck = inst.ck_accepts(pack_group(d));
        both += rules && ck;
        rules_only_refuse += !rules && ck;
        if (rules && !ck) {
          ++ck_only_refuse;
          EXPECT(false, "%s: M=%lld N=%lld K=%lld passes ckgemm's rules but CK refuses it", tag, (long long)m,
                 (long long)n, (long long)k);
        }
      }
  std::printf("  %-34s accepted %4d  refused by ckgemm's stricter rules only %4d  by CK only %d\n", tag, both,
              rules_only_refuse, ck_only_refuse);
}

static void check_registry() {
  const DType dtypes[] = {DType::F16, DType::BF16, DType::FP8_E4M3_FNUZ, DType::I8};
  for (DType d : dtypes)
    for (Layout l : {Layout::RC, Layout::RR})
      for (Config c : {Config::Large, Config::Small}) {
        const Instance* inst = find_instance(d, l, c);
        char tag[96];
        std::snprintf(tag, sizeof tag, "%s %s %s", dtype_name(d), l == Layout::RC ? "RC" : "RR",
                      c == Config::Large ? "Large" : "Small");
        if (inst == nullptr) {
          std::printf("  %-34s not instantiated in this build\n", tag);
          continue;
        }
        const TileTraits& t = inst->traits;
        std::printf("  %-34s %-22s tile %3dx%3dx%3d  vec a/b/c %2d/%2d/%2d  pad N/K %d/%d\n", tag, t.name, t.m_tile,
                    t.n_tile, t.k_tile, t.vec_a, t.vec_b, t.vec_c, t.pad_n, t.pad_k);
        EXPECT(std::strncmp(t.name, c == Config::Large ? "compute_v4" : "padded", 6) == 0, "%s named %s", tag, t.name);
        if (d == DType::FP8_E4M3_FNUZ)
          EXPECT(find_instance(DType::FP8_E4M3, l, c) == inst, "%s: fp8 flavours share one instance", tag);
        sweep(*inst, l, tag);
      }
}

static void check_no_gpu_paths() {
  const Problem p{DType::F16, Layout::RC, Config::Large};
  if (find_instance(p.dtype, p.layout, p.config) == nullptr) return;
  const GroupDesc g{reinterpret_cast<const void*>(0x10000000), reinterpret_cast<const void*>(0x20000000),
                    reinterpret_cast<void*>(0x30000000), 128, 128, 128, 128, 128, 128};
  RunReport report;
  const Status s = run_list(p, &g, 1, Buffers{nullptr, 0, nullptr, 0}, nullptr, 0, &report);
  std::printf("  run_list without a GPU: status %d (%s): %s\n", int(s), status_string(s), report.message);
  EXPECT(s == Status::BackendError, "run_list without a GPU must report a backend error");
  PackedArgs packed{};
  const Status sp = run_packed(p, packed, Buffers{nullptr, 0, nullptr, 0}, nullptr, 0, &report);
  EXPECT(sp == Status::BackendError, "run_packed without a GPU must report a backend error");
  EXPECT(std::strcmp(backend_name(), "ck") == 0, "backend_name() is \"ck\"");
}

int main() {
  std::printf("CK instances in this build (host pass; routing rules vs CK IsSupportedArgument):\n");
  check_registry();
  check_ck_args<DType::F16, Layout::RC, Config::Large>();
  check_ck_args<DType::I8, Layout::RR, Config::Small>();
  check_no_gpu_paths();
  std::printf("ck_host_probe: %d failures\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
