// Host-side decisions of the CK backend, kept free of HIP and CK so tests/cpp/test_host_plan.cpp
// checks them with g++: which instance takes each group (the requested config, else the padded
// fallback, else a refusal that names the group and the rule), and how the per-group kernel
// arguments are staged. The runner (runner.hip) only executes what these functions decide.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/plan.h"
#include "instance.h"

namespace ckgemm {
namespace ck {

constexpr int64_t kMaxIndex = 2147483647;         // CK-tile's index_t is int32
constexpr int64_t kMaxViewBytes = int64_t(1) << 31;  // one buffer resource per operand and group

// CompV4 (this CK generation and the newest one read) always computes at least two K tiles, and
// with a hot loop at least five for an odd count: with 1 or 3 K tiles it would add a K tile from
// beyond K (the next row's data, not zeros, unless kPadK). Such groups go to the fallback config.
inline bool compute_v4_loop_ok(int64_t k_loops) { return k_loops == 2 || k_loops >= 4; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

namespace detail {
inline std::string num(int64_t v) { return std::to_string(v); }
inline bool aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
}  // namespace detail

// Why the tile rules of an instance refuse a group (empty when it takes it). The rules mirror CK's
// UniversalGemmKernel::IsSupportedArgument for C row-major (which ck_accepts also runs) and add what
// CK leaves unchecked: 32-bit index and buffer ranges, the CompV4 loop count, and alignment of the
// pointers and leading dimensions to the vector width (CK assumes it; rather than rely on the
// device's unaligned-access mode in a backend not yet run on hardware, such groups are refused).
inline std::string tile_rejects(const TileTraits& t, Layout layout, const GroupDesc& g) {
  using detail::num;
  const std::string in = std::string(" (") + t.name + ")";
  const int64_t fields[6] = {g.m, g.n, g.k, g.lda, g.ldb, g.ldc};
  const char* names[6] = {"M", "N", "K", "lda", "ldb", "ldc"};
  for (int i = 0; i < 6; ++i)
    if (fields[i] > kMaxIndex) return std::string(names[i]) + "=" + num(fields[i]) + " exceeds CK's 32-bit index_t";
  const bool rc = layout == Layout::RC;
  const int64_t b_rows = rc ? g.n : g.k, b_cols = rc ? g.k : g.n;
  if (view_bytes(g.m, g.k, g.lda, t.a_bytes) >= kMaxViewBytes ||
      view_bytes(b_rows, b_cols, g.ldb, t.a_bytes) >= kMaxViewBytes ||
      view_bytes(g.m, g.n, g.ldc, t.c_bytes) >= kMaxViewBytes)
    return "an operand of this group spans 2 GiB or more; CK-tile addresses each through a 32-bit buffer";
  auto not_multiple = [&](const char* dim, int64_t value, int64_t of, const char* what) {
    return std::string(dim) + "=" + num(value) + " is not a multiple of " + num(of) + " (" + what + ")" + in;
  };
  if (g.k % t.vec_a != 0) return not_multiple("K", g.k, t.vec_a, "vector loads of A rows");
  if (rc && g.k % t.vec_b != 0) return not_multiple("K", g.k, t.vec_b, "vector loads of B rows");
  if (!rc && g.n % t.vec_b != 0) return not_multiple("N", g.n, t.vec_b, "vector loads of B rows");
  if (g.n % t.vec_c != 0) return not_multiple("N", g.n, t.vec_c, "vector stores of C rows");
  if (!t.pad_n && g.n % t.n_tile != 0) return not_multiple("N", g.n, t.n_tile, "the N tile");
  if (!t.pad_k && g.k % t.k_tile != 0) return not_multiple("K", g.k, t.k_tile, "the K tile");
  const int64_t k_loops = ceil_div(g.k, t.k_tile);
  if (t.double_lds && !compute_v4_loop_ok(k_loops))
    return "K=" + num(g.k) + " gives " + num(k_loops) + " K tiles; the CompV4 pipeline needs 2 or at least 4" + in;
  if (!detail::aligned(g.a, int64_t(t.vec_a) * t.a_bytes) || (g.m > 1 && g.lda % t.vec_a != 0))
    return "A pointer or lda is not aligned to " + num(int64_t(t.vec_a) * t.a_bytes) + " bytes" + in;
  if (!detail::aligned(g.b, int64_t(t.vec_b) * t.a_bytes) || (b_rows > 1 && g.ldb % t.vec_b != 0))
    return "B pointer or ldb is not aligned to " + num(int64_t(t.vec_b) * t.a_bytes) + " bytes" + in;
  if (!detail::aligned(g.c, int64_t(t.vec_c) * t.c_bytes) || (g.m > 1 && g.ldc % t.vec_c != 0))
    return "C pointer or ldc is not aligned to " + num(int64_t(t.vec_c) * t.c_bytes) + " bytes" + in;
  return "";
}

// The tile rules, then CK's own IsSupportedArgument (defense in depth: if the two ever disagree,
// the group is refused rather than launched).
inline std::string instance_rejects(const Instance& inst, Layout layout, const GroupDesc& g) {
  std::string why = tile_rejects(inst.traits, layout, g);
  if (why.empty() && !inst.ck_accepts(pack_group(g)))
    why = std::string("CK IsSupportedArgument rejects it (") + inst.traits.name + ")";
  return why;
}

inline int64_t tile_count(const TileTraits& t, const GroupDesc* groups, const std::vector<int>& ids) {
  int64_t tiles = 0;
  for (int i : ids) tiles += ceil_div(groups[i].m, t.m_tile) * ceil_div(groups[i].n, t.n_tile);
  return tiles;
}

// Plan of a list-form call: groups for the requested instance, for the fallback instance, zero
// fills and skips; or the status that refuses the whole call before anything is written.
struct ListLaunch {
  Status status = Status::Ok;
  int group = -1;
  std::string reason;
  std::vector<int> primary, fallback, zero_fill, skipped;
};

inline ListLaunch plan_list_launch(const GroupDesc* groups, int count, Layout layout, const Instance& primary,
                                   const Instance* fallback) {
  ListLaunch out;
  if (count < 0 || (count > 0 && groups == nullptr)) {
    out.status = Status::InvalidArgument;
    out.reason = "negative group count or null descriptor array";
    return out;
  }
  const ListPlan plan = plan_list(groups, count, layout, [&](const GroupDesc& g) {
    return instance_rejects(primary, layout, g).empty();
  });
  if (plan.invalid_group >= 0) {
    out.status = Status::InvalidArgument;
    out.group = plan.invalid_group;
    out.reason = plan.invalid_reason;
    return out;
  }
  for (int i : plan.unsupported) {
    const std::string fallback_why =
        fallback == nullptr ? std::string("no fallback config") : instance_rejects(*fallback, layout, groups[i]);
    if (!fallback_why.empty()) {
      out.status = Status::Unsupported;
      out.group = i;
      out.reason = instance_rejects(primary, layout, groups[i]);
      if (fallback != nullptr) out.reason += "; fallback: " + fallback_why;
      return out;
    }
    out.fallback.push_back(i);
  }
  if (tile_count(primary.traits, groups, plan.kernel) > kMaxIndex ||
      (fallback != nullptr && tile_count(fallback->traits, groups, out.fallback) > kMaxIndex)) {
    out.status = Status::Unsupported;
    out.reason = "more than 2^31 output tiles in one call; split the call";
    return out;
  }
  out.primary = plan.kernel;
  out.zero_fill = plan.zero_fill;
  out.skipped = plan.skipped;
  return out;
}

// One line for RunReport::message on success (ckgemm.last_dispatch()): which instance took how many
// groups, and which groups went to the fallback.
inline std::string launch_summary(const ListLaunch& plan, const Instance& primary, const Instance* fallback) {
  std::string text = std::string(primary.traits.name) + ": " + detail::num(int64_t(plan.primary.size())) + " groups";
  if (fallback != nullptr && !plan.fallback.empty()) {
    text += "; " + std::string(fallback->traits.name) + " (fallback): groups";
    for (size_t i = 0; i < plan.fallback.size(); ++i) text += (i ? "," : " ") + detail::num(plan.fallback[i]);
  }
  return text;
}

// Writes the kernel arguments in launch order (requested instance first, then fallback) and
// returns how many were written; only groups that reach a kernel are staged, so the counts handed
// to the launches are the filtered ones.
inline int stage_group_args(const GroupDesc* groups, const ListLaunch& plan, GroupArgs* out) {
  int n = 0;
  for (int i : plan.primary) out[n++] = pack_group(groups[i]);
  for (int i : plan.fallback) out[n++] = pack_group(groups[i]);
  return n;
}

// Persistent grid: enough blocks to fill the device, never more than there are tiles.
inline int persistent_grid(int64_t tiles, int blocks_per_cu, int compute_units) {
  const int64_t full = int64_t(blocks_per_cu) * compute_units;
  const int64_t grid = tiles < full ? tiles : full;
  return grid < 1 ? 1 : static_cast<int>(grid);
}

// ---- packed (MoE) form: N, K, strides and pointers are shared, only M varies per group ----

// Upper bound on the output tiles of a packed call (each group's last M tile may be partial).
inline int64_t packed_tile_bound(const TileTraits& t, const PackedArgs& p) {
  return (ceil_div(p.rows, t.m_tile) + p.groups) * ceil_div(p.n, t.n_tile);
}

inline std::string packed_rejects(const Instance& inst, Layout layout, const PackedArgs& p) {
  std::string why = instance_rejects(inst, layout, packed_envelope(p));
  if (why.empty() && p.b_group_stride % inst.traits.vec_b != 0)
    why = "b_group_stride is not a multiple of " + detail::num(inst.traits.vec_b) + " (" + inst.traits.name + ")";
  if (why.empty() && packed_tile_bound(inst.traits, p) > kMaxIndex)
    why = "more than 2^31 output tiles in one call; split the call";
  return why;
}

}  // namespace ck
}  // namespace ckgemm
