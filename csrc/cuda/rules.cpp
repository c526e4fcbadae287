// The CUTLASS backend's instance table, its one acceptance rule and its selection rule: the half of the
// ckgemm ABI (csrc/ckgemm.h) that needs no CUDA. Plain C++, compiled into the extension and, with g++,
// into tests/cpp/native_probe.cpp (tests/test_native_routes.py), so the router is tested against these
// very rules.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "../ckgemm.h"
#include "fp8_promotion.h"
#include "ws_fp8_rules.h"
#include "ws_s8_rr_rules.h"

namespace ckgemm {
namespace {

struct ScheduleInfo {
  const char* prefix;
  const char* suffix;  // "_direct": the ping-pong schedule without a TMA store
  bool any_output;     // writes any C (no TMA store)
  bool swap_ab;        // runs D^T = B A^T (decode-sized M on the narrow side of the MMA)
  bool packed_only;    // ckgemm's own kernels: packed calls, their rules in ws_fp8_rules.h, ws_s8_rr_rules.h
};
constexpr ScheduleInfo kSched_Cooperative{"coop", "", false, false, false};
constexpr ScheduleInfo kSched_CooperativeSwapAB{"coop_swapab", "", false, true, false};
constexpr ScheduleInfo kSched_PingpongDirectStore{"pingpong", "_direct", true, false, false};
constexpr ScheduleInfo kSched_Pingpong{"pingpong", "", false, false, false};
constexpr ScheduleInfo kSched_CooperativeBlockwise{"coop_blockwise", "", false, false, false};
constexpr ScheduleInfo kSched_CooperativeBlockwiseSwapAB{"coop_blockwise_swapab", "", false, true, false};
constexpr ScheduleInfo kSched_PingpongBlockwise{"pingpong_blockwise", "", false, false, false};
constexpr ScheduleInfo kSched_OwnWarpSpecialized{"ws", "", true, false, true};

struct Spec {
  const char* key;
  Kind kind;
  ScheduleInfo schedule;
  int tm, tn, tk, cm, cn;
};

const Spec kSpecs[] = {
#define CKGEMM_INSTANCE(key, dtype, out, layout, scaling, schedule, tm, tn, tk, cm, cn) \
  {#key, {DType::dtype, OutType::out, Layout::layout, Scaling::scaling}, kSched_##schedule, tm, tn, tk, cm, cn},
#include "instances.inc"
#undef CKGEMM_INSTANCE
};
constexpr int kCount = static_cast<int>(sizeof(kSpecs) / sizeof(kSpecs[0]));

std::string display_name(const Spec& s) {
  std::string name = std::string(s.schedule.prefix) + "_" + std::to_string(s.tm) + "x" + std::to_string(s.tn) + "x" +
                     std::to_string(s.tk);
  if (s.cm != 1 || s.cn != 1) name += "_c" + std::to_string(s.cm) + "x" + std::to_string(s.cn);
  return name + s.schedule.suffix;
}

const std::vector<InstanceInfo>& table() {
  static const std::vector<InstanceInfo> infos = [] {
    static std::vector<std::string> names;  // storage of the InstanceInfo names, built once
    names.reserve(kCount);
    std::vector<InstanceInfo> out;
    for (const Spec& s : kSpecs) {
      names.push_back(display_name(s));
      out.push_back({names.back().c_str(), s.kind, s.tm, s.tn, s.tk, s.cm, s.cn, s.schedule.any_output,
                     s.schedule.packed_only});
    }
    return out;
  }();
  return infos;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The instance ids of each kind, in table order, built once (the table never changes).
const std::vector<int>& ids_of(const Kind& kind) {
  static const std::vector<std::pair<Kind, std::vector<int>>> by_kind = [] {
    std::vector<std::pair<Kind, std::vector<int>>> out;
    for (int id = 0; id < kCount; ++id) {
      const Kind& k = table()[id].kind;
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == k; });
      if (it == out.end()) out.push_back({k, {id}});
      else it->second.push_back(id);
    }
    return out;
  }();
  static const std::vector<int> none;
  for (const auto& [k, ids] : by_kind)
    if (k == kind) return ids;
  return none;
}

// A call making at least this many 256-wide SwapAB tiles (about one wave of an H200's 132 SMs) takes the
// 256-wide tile; with fewer, the 128-wide one keeps twice as many SMs streaming weights (docs/PERF.md, fifth
// session, 16 rows per group, N 4096, K 7168: 1-4 groups took 3-38% longer on the 256-wide tile, 8-32 groups
// 0.4-1.3% less).
constexpr int64_t kWideSwapTiles = 128;

// The selection rule, from H200 measurements (docs/PERF.md): rank of an instance for `groups` groups of
// about m rows and n columns (lower first). Decode-sized M (<= 32 rows) takes a SwapAB tile (packed 8-bit calls
// making a wave of 256-wide tiles: ckgemm's own 256-wide tile, below), whose MMA
// pads a group's rows to 32 rather than 64 (the weights fill its 128- or 256-row side: the wider when the
// call makes a wave of tiles); up to 64 rows the 64-row ping-pong tile, which fills the SMs with more
// tiles; otherwise the cooperative tiles, 128-row ones first, in table order: int8 128x256, 16-bit 128x256
// unless its 128x192 applies (below), fp8 128x192 (docs/PERF.md, N 1536-14336: unscaled from 1% slower to
// 4% faster than 128x128, row-scaled from 2% slower to 9% faster) unless N pads its last 192-wide tile by
// more than 5% of N (N 256: 50%).
// 16-bit: the 1x2 clusters take two adjacent N-blocks, so a 256-wide tile pads N to 512 columns and a
// 192-wide one to 384. The 128x192 (table order: before the 128x256) is taken only where its pairs pad N by
// more than 4% of N less than the 256-wide pairs do (it ran 4-6% slower where neither pads): N 5760 (gpt-oss:
// 384 columns against none; 128x192 1.057-1.068x the 128x256 in four of five runs, docs/PERF_2026-12-06c.md),
// not N 2880 (both pad 192: the 128x256 was 1.02-1.06x, docs/PERF_2026-12-06d.md); H100, round-robin timing.
// ckgemm's own kernel on 16-bit packed calls of more than 64 rows per group (ws_fp8.cuh) ranks before CUTLASS's
// tile of the same width. Below 2048 rows a group its units are drawn in turn (ws_units.cuh): with a group's
// partial last tile half-skipped it was 1.04-1.08x CUTLASS's 128x256 on DeepSeek-V3 prefill (1024 rows a group,
// K 7168), 1.01-1.02x at 512 rows, 1.06-1.08x on gpt-oss's down projection, 0.99-1.00x on DeepSeek-V3's (K 2048;
// docs/PERF_2026-12-06d.md). From 2048 rows (Mixtral, uniform) they are taken by stride (ws_fp8_rules.h's
// units_drawn): 1.012-1.015x on 8 x 4096^3 in six processes and 1.004-1.007x on Mixtral in one
// (docs/PERF_2026-12-06e.md, PERF_2026-12-06d.md). Under 257 rows a group it ranked after CUTLASS's tiles until
// 72-256 rows were timed on the current kernel: 1.03-1.05x CUTLASS's 128x256 at 256 rows (128 experts, Qwen3-235B's
// down projection), 1.03-1.04x at 72 rows, 1.06-1.07x at 80, 1.07-1.10x at 96 and 128 (N 1536, K 2048), 1.08-1.68x
// at 128 and 256 rows with K 4096 (Qwen3-235B's gate/up, where CUTLASS's times spread widely and it ran 0.79-0.95x
// torch's _grouped_mm in bf16) (docs/PERF_2026-12-07h.md; H100 throughout).
// Its 192x192 tile (three consumer warp groups, ws_fp8_types.cuh) ranks before both where groups average 80 to
// 512 rows, K is at most 2880 and 192-wide pairs pad N no more than 256-wide pairs do: on gpt-oss (N 5760, K 2880,
// 512 rows) 1.009-1.018x the 128x192, on its down projection (N 2880) 1.038-1.045x the 128x256, on 128 experts
// (N 1536, K 2048, 256 rows) 1.022-1.024x CUTLASS's 128x256 (both gpt-oss cases in bf16 in two processes, the
// rest in one; every p10 above 1.0). It ran level at 1024 rows and K 2048 (DeepSeek-V3 down, 0.994-0.996x),
// behind at K 7168 and 512 rows (0.986-0.995x) and 3-6% behind on the long-K and larger-group cases (Mixtral,
// uniform, DeepSeek-V3 prefill, Llama-4 down) (H100, round-robin, docs/PERF_2026-12-07g.md). At 80, 96 and 128
// rows (N 1536, K 2048) it was 1.007-1.020x the own 128x256 (128 rows in two processes, the others in one), and
// 0.99x at 72 rows (docs/PERF_2026-12-07h.md).
// ckgemm's own RC kernel's 256-wide 8-bit tiles (fp8 unscaled and block-scaled, int8 unscaled) take decode-sized
// groups where the SwapAB rule would take its 256-wide tile (as many tiles, in clusters sharing A): on DeepSeek-V3 decode (32 groups of
// 16 rows on average, N 4096, K 7168; H100, graph replay, four rounds) the block-scaled one ran 0.3416 ms, 91.7%
// of the copy bandwidth in weight bytes, against 0.3548 ms (88.3%) for CUTLASS's blockwise SwapAB 32x256; the
// own 8-bit RR kernel's tile of the same shape 0.338 ms unscaled, and the SwapAB 32x256 0.3568 ms (87.8%)
// (docs/PERF_2026-12-06g.md; on another H100 95.4% unscaled and 95.0% block against SwapAB's 93.5% and 94.1%).
// Fewer tiles keep the 128-wide SwapAB tile, which streams weights on more SMs. The unscaled 256-wide tile was
// timed on decode only, so larger groups rank it last (the block-scaled one's prefill rule is below). int8's
// (ws_fp8.cuh's k32 s8 wgmmas into int32, no promotion) follows fp8's rule: on DeepSeek-V3 decode it ran 0.3320 ms,
// 94.2% of copy, against 0.3496 ms (89.5%) for CUTLASS's SwapAB 32x256 and 0.3487 ms for its 32x128 (H100,
// graph replay, four rounds; docs/PERF_2026-12-06h.md).
// ckgemm's own fp8 kernel (table order: before CUTLASS's tiles of its kind) ranks as a 128x192 tile does: on
// the packed calls it takes, unscaled it was 6-21% faster than CUTLASS's 128x192 at the same output
// (docs/PERF_2026-12-02.md); block-scaled, 0.99-1.11x CUTLASS's blockwise 128x128 (docs/PERF_2026-12-03d.md).
// Its block-scaled 128x256 tile (table order: before its 128x192) was 0-9% faster than the 128x192 on the
// prefill cases with DeepGEMM's scale feed (docs/PERF_2026-12-04b.md); its clusters take two adjacent 256-wide
// tiles, so where N pads pairs of them (512 columns) by more than 5% it ranks after every other tile, for
// groups of any size.
int64_t padding(int64_t n, int64_t width) { return (n + width - 1) / width * width - n; }
bool pads_over_5pct(int64_t n, int64_t width) { return padding(n, width) * 20 > n; }
bool narrow_16bit_fits(int64_t n) { return (padding(n, 512) - padding(n, 384)) * 25 > n; }
constexpr int64_t kRows192Min = 80, kRows192Max = 512, kK192Max = 2880;
bool own_192_rows_fit(int64_t m, int64_t n, int64_t k) {
  return m >= kRows192Min && m <= kRows192Max && k <= kK192Max && padding(n, 384) <= padding(n, 512);
}

int rank_for(const Spec& s, int64_t m, int64_t n, int64_t k, int64_t groups) {
  const bool wide16 = element_bytes(s.kind.dtype) == 2;
  const bool own8_256 = s.schedule.packed_only && !wide16 && s.tn == 256;
  if (own8_256 && pads_over_5pct(n, 512)) return 6;
  const bool swap = s.schedule.swap_ab;
  const bool small_tile = s.tm <= 64 && !swap;
  const bool wide = groups * ((n + 255) / 256) >= kWideSwapTiles;
  if (m <= 32 && wide && own8_256) return -1;  // the own 8-bit decode tile
  if (own8_256 && s.kind.scaling == Scaling::None && s.kind.layout == Layout::RC) return 6;  // timed on decode only
  if (m <= 32 && swap) return (s.tn == 256) == wide ? 0 : 1;
  if (m <= 64) return small_tile ? 2 : swap ? 3 : (s.tn == 256 ? 4 : 5);
  if (swap) return 4;
  if (small_tile) return 3;
  if (wide16 && s.schedule.packed_only && s.tm == 192) return own_192_rows_fit(m, n, k) ? -2 : 3;
  if (wide16 && s.tm == 128) {
    const bool width_fits = (s.tn == 192) == narrow_16bit_fits(n);
    if (s.schedule.packed_only) return width_fits ? -1 : 3;
    if (s.tn == 192) return width_fits ? 0 : 2;
  }
  if (s.tn == 192 && pads_over_5pct(n, 192)) return 1;
  return s.tm == 128 ? 0 : 1;
}

}  // namespace

const char* backend_name() { return "cutlass"; }
int instance_count() { return kCount; }
const InstanceInfo& instance_info(int id) { return table()[id]; }

// TMA needs 16-byte aligned bases and leading dimensions and a contiguous extent that is a multiple of
// 16 bytes (A's and B's K, RR B's N, C's N); the direct-store epilogue lifts those rules for C.
std::string instance_rejects(int id, const GroupDesc& g) {
  const InstanceInfo& info = instance_info(id);
  if (info.packed_only) return "ckgemm's own kernels take only the packed form";
  const int64_t in = element_bytes(info.kind.dtype), out = out_bytes(info.kind.out);
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) return "a dimension exceeds 2^31-1";
  if (!aligned16(g.a) || (g.lda * in) % 16) return "A base or lda not 16-byte aligned";
  if (!aligned16(g.b) || (g.ldb * in) % 16) return "B base or ldb not 16-byte aligned";
  if ((g.k * in) % 16) return "K is not a multiple of 16 bytes";
  if (info.kind.layout == Layout::RR && (g.n * in) % 16) return "N (contiguous in RR B) is not a multiple of 16 bytes";
  if (!info.any_output && (!aligned16(g.c) || (g.ldc * out) % 16 || (g.n * out) % 16))
    return "C base, ldc or N not 16-byte aligned for the TMA-store epilogue";
  if (info.kind.scaling != Scaling::None && (g.sa == nullptr || g.sb == nullptr)) return "missing scales";
  return "";
}

// Every group of a packed call shares N, K, strides and bases; offsets of later groups keep 16-byte
// alignment iff the leading dimensions and B's group stride do, so the envelope decides for all.
std::string instance_rejects_packed(int id, const PackedArgs& p) {
  const InstanceInfo& info = instance_info(id);
  const int in = element_bytes(info.kind.dtype);
  if (info.packed_only && info.kind.dtype == DType::FP8_E4M3 && info.kind.scaling == Scaling::None &&
      fp8_promotion_interval() != 4)  // block: every block
    return "promotes every 4 wgmma k-blocks only (CKGEMM_FP8_PROMOTION=" + std::to_string(fp8_promotion_interval()) +
           " is CUTLASS's)";
  if (info.packed_only && info.kind.layout == Layout::RR) return ws::s8::rejects(p);  // the 8-bit RR kernel, int8 and e4m3
  if (info.packed_only)
    return ws::rejects(p, out_bytes(info.kind.out), info.kind.scaling == Scaling::Block, in, info.tile_m);
  const GroupDesc envelope{p.a, p.b, p.c, p.rows, p.n, p.k, p.lda, p.ldb, p.ldc, p.sa, p.sb};
  const std::string why = instance_rejects(id, envelope);
  if (!why.empty()) return why;
  if ((p.b_group_stride * element_bytes(instance_info(id).kind.dtype)) % 16) return "B group stride not 16-byte aligned";
  return "";
}

std::string kind_rejects(const Kind& kind) {
  if (!ids_of(kind).empty()) return "";
  if (element_bytes(kind.dtype) == 1 && kind.layout == Layout::RR)
    return "Hopper's tensor cores take 8-bit operands only K-major, so CUTLASS reads 8-bit B only as RC";
  if (kind.dtype == DType::FP8_E4M3_FNUZ) return "float8_e4m3fnuz is not the fp8 of NVIDIA GPUs";
  return "no CUTLASS instance of this dtype, output and scaling in this build (CKGEMM_DTYPES at build time?)";
}

// The instances of a kind in the selection rule's order (CKGEMM_CONFIG is applied by the router).
int preferred_instances(const Kind& kind, int64_t m_hint, int64_t n, int64_t k, int64_t groups, int* out, int cap) {
  const std::vector<int>& ids = ids_of(kind);
  std::pair<int, int> ranked[32];
  int count = 0;
  for (int id : ids) {
    if (count == 32) break;
    ranked[count++] = {rank_for(kSpecs[id], m_hint, n, k, groups), id};
  }
  std::stable_sort(ranked, ranked + count, [](auto x, auto y) { return x.first < y.first; });
  const int written = count < cap ? count : cap;
  for (int i = 0; i < written; ++i) out[i] = ranked[i].second;
  return written;
}

}  // namespace ckgemm
