// The split tail of ckgemm's own 16-bit kernel (ws_fp8.cuh, its Tail form): the call's last tail_rounds x clusters
// units are each split along K into tail_slices slices, drawn in turn from the unit counter (ws_units.cuh) after
// the units before them (by stride or drawn), so that the clusters that finish their share early take the rest
// of the call rather than wait for the last round (8 x 4096^3 makes 31.03 rounds of 66 clusters; Mixtral's ragged
// groups leave the stride's clusters 1.15% apart: benchmarks/units_model.py, docs/PERF_2026-12-07.md).
//
// A slice's warp group keeps its 64 x BN fp32 partial in registers, writes it to the workspace slot of its
// (unit, CTA, warp group) and counts itself on the slot's flag; the slice that counts last sums the partials in
// slice order, ((p0 + p1) + ...) + p_{S-1}, the same order whatever cluster ran what and whichever came last, so a
// call's bits depend on its shapes and SM count only, not on timing. They differ from the unsplit sum's (fp32, then
// rounded once to the output). No slice waits: a designated last slice that waited for the others' partials made
// convoys (each waiting cluster holding the next slices it had drawn), 1.6% slower than no split at 2 slices and
// 19% at 4 on 8 x 4096^3 (docs/PERF_2026-12-07.md). The launch zeroes the flags with the counter.
#pragma once

#include <cstdint>

#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

// The warp group's share of a tail unit's sum (acc: this thread's BN / 2 fp32 values; t: its index in the warp
// group; slot: the unit's index in the tail, times 4, plus 2 x CTA rank + warp group; last: a shared int of the
// warp group's). Every slice writes its partial to its place in the slot and counts itself on the slot's flag;
// the one that counts last (no slice ever waits for another) sums the slot's partials in slice order. True where this thread then holds the whole sum to store, false where it has nothing to
// store. Partials are laid out thread-major in 16-byte pieces (coalesced) and cross SMs through L2 (.cg).
template <int BN>
__device__ __forceinline__ bool tail_sum(float* acc, int* flags, float* partials, int slot, int slice, int slices,
                                         int wg, int t, int* last) {
  constexpr int kPieces = BN / 8;  // float4 pieces a thread holds
  constexpr int64_t kSlice = kPieces * 128;  // a slice's partial, in float4 pieces
  float4* part = reinterpret_cast<float4*>(partials) + static_cast<int64_t>(slot) * slices * kSlice;
  const int bar = 3 + wg;  // named barriers 1-2 are kFeedTma's (fp8 only)
#pragma unroll
  for (int i = 0; i < kPieces; ++i)
    __stcg(part + slice * kSlice + i * 128 + t, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  asm volatile("bar.sync %0, 128;" :: "r"(bar) : "memory");  // every thread's partial written, then counted
  if (t == 0) {
    int before;
    asm volatile("fence.acq_rel.gpu;\n\tatom.relaxed.gpu.global.add.s32 %0, [%1], 1;\n\tfence.acq_rel.gpu;"
                 : "=r"(before) : "l"(flags + slot) : "memory");
    *last = before == slices - 1;
  }
  asm volatile("bar.sync %0, 128;" :: "r"(bar) : "memory");
  if (!*reinterpret_cast<volatile int*>(last)) return false;
  // Its own partial read back too (the same bits as its registers), so that the registers are free for the loads.
#pragma unroll
  for (int i = 0; i < kPieces; ++i) {
    float4 sum = __ldcg(part + i * 128 + t);
    for (int s = 1; s < slices; ++s) {
      const float4 v = __ldcg(part + s * kSlice + i * 128 + t);
      sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
    }
    acc[4 * i] = sum.x; acc[4 * i + 1] = sum.y; acc[4 * i + 2] = sum.z; acc[4 * i + 3] = sum.w;
  }
  return true;
}

}  // namespace ckgemm::ws
