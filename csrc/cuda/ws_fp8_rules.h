// What ckgemm's own RC grouped kernel (ws_fp8.cuh) takes, in plain C++: the one statement of its rule,
// read by the router (rules.cpp, through instance_rejects_packed) and by the benchmark's C entry
// (benchmarks/native/ws_fp8_capi.cu). Packed RC calls only: A [rows, k] and B [groups, n, k] (e4m3, or
// bf16/fp16/int8 unscaled) through TMA (16-byte aligned bases; leading dimensions, B's group stride when there is more than one
// group, and K multiples of 16 bytes), at most kMaxGroups groups, sizes that stay 32-bit when rounded up to tiles, and with block
// scales at most kMaxKBlocks k-blocks (K <= 65536: DeepGEMM's feed, kFeedTma, holds a tile's B scales in shared
// memory; the rule holds for either feed, so routing never depends on CKGEMM_WS_SCALES); C of any leading dimension,
// aligned to its element.
#pragma once

#include <cstdint>
#include <string>

#include "../ckgemm.h"
#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

// Why the kernel cannot take a packed call of the ckgemm ABI (csrc/ckgemm.h) whose operands are in_bytes and
// output elements out_bytes wide, with block scales or not, in tiles of tile_rows rows ("" when it can).
inline std::string rejects(const PackedArgs& e, int out_bytes, bool block_scales, int in_bytes = 1, int tile_rows = kBlockM) {
  auto aligned = [](const void* ptr, int to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (e.groups < 1 || e.groups > kMaxGroups) return "takes 1 to " + std::to_string(kMaxGroups) + " groups";
  // The kernel rounds rows, N and K up to whole tiles in 32-bit ints (a group's M-blocks, a tile's n0 + BN for a
  // pair's second tile, the k-blocks): each must stay below 2^31 after that.
  constexpr int64_t kIntMax = 2147483647;
  // (K counted in bytes.)
  if (e.rows > kIntMax - tile_rows || e.n > kIntMax - 2 * kMaxTileN || e.k > (kIntMax - kBlockK) / in_bytes)
    return "a dimension is within a tile of 2^31";
  auto bytes16 = [&](int64_t elements) { return elements * in_bytes % 16 == 0; };
  if (!bytes16(e.k) || !bytes16(e.lda) || !bytes16(e.ldb) || (e.groups > 1 && !bytes16(e.b_group_stride)))
    return "TMA needs K, lda, ldb and B's group stride to be multiples of 16 bytes";
  if (!aligned(e.a, 16) || !aligned(e.b, 16)) return "TMA needs 16-byte aligned A and B";
  if (!aligned(e.c, out_bytes)) return "C is not aligned to its element";
  if (block_scales && (e.k + kBlockK - 1) / kBlockK > kMaxKBlocks)
    return "block scales: at most " + std::to_string(kMaxKBlocks) + " k-blocks (K <= " + std::to_string(kMaxKBlocks * kBlockK) + ")";
  return "";
}

// How a 16-bit call's clusters take their units (ws_units.cuh), from CKGEMM_WS_UNITS (ws_fp8_launch.cuh:
// kUnitsAuto unset or "auto", kUnitsDrawn "dynamic", kUnitsStride "static") and the call's rows a group on
// average: drawn in turn from a counter below kStrideUnitRows, every clusters-th unit from there. Drawn units keep
// the clusters in step where a group's partial last tile is half skipped (DeepSeek-V3's ragged sizes, 1024 rows a
// group, K 7168: 0.94x CUTLASS's 128x256 by stride, 1.00x drawn, docs/PERF_2026-12-06d.md call 3); on groups of
// 4096 rows, where nearly every tile is whole, the stride was 1.012-1.015x that tile in eight H100 processes
// against 0.983-0.990x drawn in five (0.992-0.995x in three once each warp reads its next unit before its
// stores, docs/PERF_2026-12-06f.md), and on Mixtral's 2048 1.004-1.007x (bf16, fp16; one process, 06d call 1)
// against 0.976-0.996x drawn (bf16, fp16 in 06d call 3; bf16 in docs/PERF_2026-12-06e.md call 1).
constexpr int kUnitsAuto = 0, kUnitsDrawn = 1, kUnitsStride = 2;
constexpr int64_t kStrideUnitRows = 2048;
inline bool units_drawn(int mode, int64_t rows, int64_t groups) {
  return mode == kUnitsDrawn || (mode == kUnitsAuto && rows < kStrideUnitRows * groups);
}

// L2 cache policies of the RC kernel's A loads, B loads and C stores (16-byte stores of whole m64 blocks; the
// 8-bit RR launch, ws_s8_rr_launch.cuh, sets none) from CKGEMM_WS_L2 (value: the variable, or null where unset):
// three letters, each n (no hint, the plain instruction), N (evict_normal), f (evict_first) or l (evict_last);
// unset or empty is kL2Default. The 64-bit policies are
// createpolicy.fractional's with fraction 1 (CUTLASS's CacheHintSm90 values). Returns false for any other value.
// C evict_first by default: the kernel writes C once and never reads it back, and what L2 then keeps is the
// operands, which the units in flight read again. Unscaled fp8 (fp32 C) ran 3.3-3.5% faster with it on Mixtral's
// prefill shapes in two H100 samples and 2.7% on 8 x 4096^3; 16-bit ran the same (0.997-1.002) (graph replay and
// end to end, docs/PERF_2026-12-07c.md calls 4 and 5). B evict_first cost 8-11% on Mixtral bf16 (B is read
// again by each M-block of the units in flight); A evict_last added nothing to C's evict_first. Not timed under
// the default: the block-scaled recipe and the decode tiles (there C is under 1% of the bytes moved).
constexpr const char* kL2Default = "nnf";
inline bool l2_policies(const char* value, uint64_t pol[3]) {
  const std::string v = value == nullptr || value[0] == 0 ? kL2Default : value;
  if (v.size() != 3) return false;
  for (int i = 0; i < 3; ++i) {
    switch (v[i]) {
      case 'n': pol[i] = 0; break;
      case 'N': pol[i] = 0x1000000000000000ull; break;
      case 'f': pol[i] = 0x12F0000000000000ull; break;
      case 'l': pol[i] = 0x14F0000000000000ull; break;
      default: return false;
    }
  }
  return true;
}

}  // namespace ckgemm::ws
