// THE acceptance rule of a CK instance (csrc/ckgemm.h: instance_rejects / instance_rejects_packed),
// written once for the router and for the runner's defensive re-check, plus the launch arithmetic
// (tile counts, persistent grid). Plain C++, no HIP or CK: tests/cpp/test_host_plan.cpp checks it
// with g++ and tests/cpp/ck_host_probe.hip checks it against CK's own IsSupportedArgument.
#pragma once

#include <cstdint>
#include <string>

#include "../common/descriptor.h"
#include "table.h"

namespace ckgemm {
namespace ck {

constexpr int64_t kMaxIndex = 2147483647;            // CK-tile's index_t is int32
constexpr int64_t kMaxViewBytes = int64_t(1) << 31;  // one 32-bit buffer resource per operand and group

// Upstream bug (research/ck_2026-12.md 2.1, "CompV4 K-loop count"): in the pinned CK (e31a7a4f) and
// in G2, CompV4's hot loop is a do-while after two prefetched K tiles, so 3 K tiles run 5 (2 from
// beyond K: the next rows' data, not zeros, without kPadK); G2 also ran 3 for 1. Fixed only in
// rocm-libraries 2026 (BlockHasHotloop(n) = n >= 4). Groups with 1 or 3 K tiles go to the padded
// tile (1 is fixed in the pinned CK, and routing it away as well costs nothing).
inline bool compute_v4_loop_ok(int64_t k_loops) { return k_loops == 2 || k_loops >= 4; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

namespace detail {
inline std::string num(int64_t v) { return std::to_string(v); }
inline bool aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
}  // namespace detail

// Why the tile rules of an instance refuse a non-empty group (empty when it takes it). The rules
// mirror CK's UniversalGemmKernel::IsSupportedArgument for C row-major (which instance_rejects also
// runs) and add what CK leaves unchecked: 32-bit index and buffer ranges, the CompV4 loop count, and
// alignment of the pointers and leading dimensions to the vector width (CK assumes it; rather than
// rely on the device's unaligned-access mode in a backend not yet run on hardware, such groups are
// refused).
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

// Row scales: m floats at sa and n floats at sb, read one float at a time through 32-bit buffers.
inline std::string scale_rejects(Scaling scaling, const GroupDesc& g) {
  if (scaling == Scaling::None)
    return g.sa != nullptr || g.sb != nullptr ? "scales given to an unscaled instance" : "";
  if (g.sa == nullptr || g.sb == nullptr) return "null scale pointer";
  if (!detail::aligned(g.sa, 4) || !detail::aligned(g.sb, 4)) return "scale pointer not aligned to 4 bytes";
  if (g.m * 4 >= kMaxViewBytes || g.n * 4 >= kMaxViewBytes) return "scale vector spans 2 GiB or more";
  return "";
}

// instance_rejects for one list-form group. M == 0 or N == 0: the group owns no tiles, so any
// instance takes it (and launches nothing for it); K == 0 is the router's zero fill, never a kernel's.
inline std::string entry_rejects(const Entry& e, const GroupDesc& g) {
  const Kind& kind = e.info.kind;
  const std::string bad = descriptor_error(g, kind.layout, kind.scaling);
  if (!bad.empty()) return bad;
  if (g.m == 0 || g.n == 0) return "";
  if (g.k == 0) return "K=0: C is zero-filled by the router; no CK kernel computes it";
  std::string why = tile_rejects(e.inst->traits, kind.layout, g);
  if (why.empty()) why = scale_rejects(kind.scaling, g);
  if (why.empty() && !e.inst->ck_accepts(pack_group(g)))
    why = std::string("CK IsSupportedArgument rejects it (") + e.info.name + ")";
  return why;
}

// Upper bound on the output tiles of a packed call (each group's last M tile may be partial).
inline int64_t packed_tile_bound(const TileTraits& t, const PackedArgs& p) {
  return (ceil_div(p.rows, t.m_tile) + p.groups) * ceil_div(p.n, t.n_tile);
}

// instance_rejects_packed: the whole call as one group (all rows: checking it checks every group,
// whose sizes stay on the device), plus what only the packed form has.
inline std::string entry_rejects_packed(const Entry& e, const PackedArgs& p) {
  const Kind& kind = e.info.kind;
  const TileTraits& t = e.inst->traits;
  const std::string bad = packed_descriptor_error(p, kind.layout, t.a_bytes, kind.scaling);
  if (!bad.empty()) return bad;
  if (p.rows == 0 || p.n == 0) return "";
  std::string why = entry_rejects(e, packed_envelope(p));
  if (why.empty() && p.b_group_stride % t.vec_b != 0)
    why = "b_group_stride is not a multiple of " + detail::num(t.vec_b) + " (" + t.name + ")";
  if (why.empty() && kind.scaling == Scaling::Row && p.sa_row_stride != 1)
    why = "row scales of A must be contiguous (sa_row_stride 1), got " + detail::num(p.sa_row_stride);
  if (why.empty() && packed_tile_bound(t, p) > kMaxIndex) why = "more than 2^31 output tiles in one call; split it";
  return why;
}

inline int64_t tile_count(const TileTraits& t, const GroupDesc* groups, int count) {
  int64_t tiles = 0;
  for (int i = 0; i < count; ++i) tiles += ceil_div(groups[i].m, t.m_tile) * ceil_div(groups[i].n, t.n_tile);
  return tiles;
}

// Persistent grid: enough blocks to fill the device, never more than there are tiles.
inline int persistent_grid(int64_t tiles, int blocks_per_cu, int compute_units) {
  const int64_t full = int64_t(blocks_per_cu) * compute_units;
  const int64_t grid = tiles < full ? tiles : full;
  return grid < 1 ? 1 : static_cast<int>(grid);
}

}  // namespace ck
}  // namespace ckgemm
