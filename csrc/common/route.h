// The router: which instance takes each group, and what must be copied first so that one can. The
// backend's instance table and its one acceptance rule (csrc/ckgemm.h: instance_rejects,
// preferred_instances, kind_rejects) decide; nothing here restates a backend's rules. Plain C++ over
// the ABI (g++-tested with the real CUTLASS rules and with fake backends).
//
// For a group with work, the router tries, in order of bytes copied, until an instance takes it:
//   1. the group as given;
//   2. A copied (misaligned or overlapping rows), B copied, both;
//   3. both copied with K zero-padded to a multiple of kPadK elements (zeros add nothing);
//   then each again with C staged through an aligned temporary [M, N padded to kPadN] (B padded with
//   zero rows to match, its scales with zeros). 8-bit RR on a backend with no RR instance transposes
//   B to RC first (B is copied either way). Output types no instance writes (fp16 out of a scaled call
//   on CUTLASS) are computed into an fp32 staged output and converted once.
// Route codes (one int32 per group) are decoded by ckgemm/backends/routes.py.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../ckgemm.h"
#include "descriptor.h"

namespace ckgemm {

enum RouteKind : int32_t { kRouteEmpty = 0, kRouteZeroK = 1, kRouteKernel = 2 };
enum RouteFlag : int32_t { kRepackA = 1, kRepackB = 2, kTransposeB = 4, kStageC = 8, kExpandScales = 16 };
constexpr int64_t kPadK = 16;  // elements: 16 bytes of 8-bit inputs, 32 of 16-bit ones
constexpr int64_t kPadN = 16;  // elements of the staged output (covers every output type's vector width)

inline int32_t route_code(int32_t kind, int instance = 0, int32_t flags = 0) {
  return kind | (instance << 4) | (flags << 16);
}
inline int32_t route_kind(int32_t code) { return code & 0xF; }
inline int route_instance(int32_t code) { return (code >> 4) & 0xFFF; }
inline int32_t route_flags(int32_t code) { return (code >> 16) & 0xFF; }
inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// A route for one group (or a whole packed call), with the shapes of what must be allocated.
struct Route {
  int32_t code = route_code(kRouteEmpty);
  Kind kind{};           // the kind the chosen instance computes (RC after a transpose; fp32 out when staged for fp16)
  int64_t k_padded = 0;  // K of the copied A and B
  int64_t n_padded = 0;  // N of the staged C (and of the copied B)
  std::string why;       // when no instance can take it: the preferred instance's refusal
  bool ok() const { return why.empty(); }
};

namespace route_detail {

// Fake, perfectly aligned addresses of buffers the executor will allocate: the rules only test them.
inline const void* fresh(int which) { return reinterpret_cast<const void*>(uintptr_t(1) << (40 + which)); }

// CKGEMM_CONFIG=<instance name> puts that instance first wherever it can take the group (tuning runs,
// sanitizer coverage), on every backend. Read at each routing (one getenv), so a process can switch.
inline void put_forced_first(int* ids, int count) {
  const char* forced = std::getenv("CKGEMM_CONFIG");
  if (forced == nullptr || *forced == '\0') return;
  for (int i = 0; i < count; ++i) {
    if (std::strcmp(forced, instance_info(ids[i]).name) == 0) {
      std::rotate(ids, ids + i, ids + i + 1);
      return;
    }
  }
}

template <class Rejects>
bool first_taker(const Kind& kind, const GroupDesc& g, int64_t m_hint, int64_t groups, Rejects&& rejects,
                 int* chosen, std::string* first_why) {
  int ids[16];
  const int count = preferred_instances(kind, m_hint, g.n, g.k, groups, ids, 16);
  put_forced_first(ids, count);
  for (int i = 0; i < count; ++i) {
    const std::string why = rejects(ids[i], g);
    if (why.empty()) {
      *chosen = ids[i];
      return true;
    }
    // A packed-only instance's refusal says nothing about a list group, and on a packed call the other
    // instances' refusals are the more telling: never the reason given.
    if (first_why->empty() && !instance_info(ids[i]).packed_only)
      *first_why = std::string(instance_info(ids[i]).name) + ": " + why;
  }
  return false;
}

}  // namespace route_detail

// The output type the kernels write for a requested one: the same, or fp32 (then staged and converted:
// fp32 rounded once to fp16 is what an fp16 epilogue computes). Either layout counts: a copy of B
// settles the layout.
inline OutType kernel_out(const Kind& kind) {
  if (kind.out != OutType::F16 || kind.scaling == Scaling::None) return kind.out;  // the common case: no lookup
  const auto any_layout = [&](OutType out) {
    return kind_rejects({kind.dtype, out, kind.layout, kind.scaling}).empty() ||
           kind_rejects({kind.dtype, out, Layout::RC, kind.scaling}).empty();
  };
  if (!any_layout(OutType::F16) && any_layout(OutType::F32)) return OutType::F32;
  return kind.out;
}

// Route one group with work (m, n, k > 0) of `kind`, of about `m_hint` rows per group (a packed call's
// envelope has all rows), one of `groups` in the call. `rejects(id, desc)` is the acceptance rule to apply
// (instance_rejects, or a packed-call wrapper around instance_rejects_packed). A copied B is always stored
// RC [N (padded when C is staged), K (padded)], so a copy also settles the layout.
template <class Rejects>
Route route_group(const Kind& wanted, const GroupDesc& given, int64_t m_hint, int64_t groups, Rejects&& rejects) {
  Route r;
  const OutType out = kernel_out(wanted);
  const bool must_stage = out != wanted.out;
  const Kind as_given{wanted.dtype, out, wanted.layout, wanted.scaling};
  const Kind copied_b{wanted.dtype, out, Layout::RC, wanted.scaling};
  const std::string given_missing = kind_rejects(as_given);
  const bool b_must_move = !given_missing.empty();  // e.g. 8-bit RR on CUTLASS: no RR instance
  if (b_must_move && wanted.layout == Layout::RC) {
    r.why = given_missing;
    return r;
  }
  if (b_must_move && !kind_rejects(copied_b).empty()) {
    r.why = given_missing;
    return r;
  }
  const int64_t kp = round_up(given.k, kPadK), np = round_up(given.n, kPadN);
  std::string first_why;
  for (int stage = must_stage ? 1 : 0; stage < 2; ++stage) {
    for (int pad = 0; pad < 2; ++pad) {
      for (int copies = 0; copies < 4; ++copies) {
        const bool copy_a = copies & 1, copy_b = copies & 2;
        const bool pads_n = stage && np != given.n;  // a staged C of padded N needs B padded with zero rows
        if ((pad && !(copy_a && copy_b)) || ((b_must_move || pads_n) && !copy_b)) continue;
        const Kind kind = copy_b ? copied_b : as_given;
        GroupDesc g = given;
        g.k = pad ? kp : given.k;
        if (copy_a) g.a = route_detail::fresh(0), g.lda = g.k;
        if (copy_b) g.b = route_detail::fresh(1), g.ldb = g.k;
        if (stage) g.c = const_cast<void*>(route_detail::fresh(2)), g.n = np, g.ldc = np;
        int chosen = -1;
        if (!route_detail::first_taker(kind, g, m_hint, groups, rejects, &chosen, &first_why)) continue;
        int32_t flags = (copy_a ? kRepackA : 0) | (copy_b ? kRepackB : 0) | (stage ? kStageC : 0);
        if (copy_b && wanted.layout == Layout::RR) flags |= kTransposeB;
        r.code = route_code(kRouteKernel, chosen, flags);
        r.kind = kind;
        r.k_padded = g.k;
        r.n_padded = g.n;
        return r;
      }
    }
  }
  r.why = first_why.empty() ? std::string("no instance of this kind is preferred for this group") : first_why;
  return r;
}

// A group as the list forms see it: empty, K = 0, or routed (one of `groups` with work in the call).
template <class Rejects>
Route route_list_group(const Kind& kind, const GroupDesc& g, int64_t groups, Rejects&& rejects) {
  Route r;
  if (g.m == 0 || g.n == 0) return r;
  if (g.k == 0) {
    r.code = route_code(kRouteZeroK);
    return r;
  }
  return route_group(kind, g, g.m, groups, rejects);
}

// Route a packed call with work (rows, n, k > 0): one route for every group (they share N, K and strides),
// through instance_rejects_packed. The sizes stay on the device: a group has about rows / groups rows, and
// at most `rows` groups have any (the rule's estimate of the call's tiles).
inline Route route_packed(const Kind& kind, const PackedArgs& p) {
  const int64_t groups = p.groups, with_rows = std::min(groups, p.rows), m_hint = (p.rows + groups - 1) / groups;
  return route_group(kind, packed_envelope(p), m_hint, with_rows, [&](int id, const GroupDesc& x) {
    PackedArgs q = p;
    q.a = x.a, q.b = x.b, q.c = x.c, q.n = x.n, q.k = x.k, q.lda = x.lda, q.ldb = x.ldb, q.ldc = x.ldc;
    if (x.b != p.b) q.b_group_stride = x.n * x.k;
    return instance_rejects_packed(id, q);
  });
}

}  // namespace ckgemm
