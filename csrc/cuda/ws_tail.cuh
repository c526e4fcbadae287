// The split tail of ckgemm's own 16-bit kernel (ws_fp8.cuh, its Tail form): the call's last tail_rounds x clusters
// units are each split along K into tail_slices slices, drawn in turn from the unit counter (ws_units.cuh) after
// the units before them (by stride or drawn), so that the clusters that finish their share early take the rest
// of the call rather than wait for the last round (8 x 4096^3 makes 31.03 rounds of 66 clusters; Mixtral's ragged
// groups leave the stride's clusters 1.15% apart: benchmarks/units_model.py, docs/PERF_2026-12-07.md).
//
// A slice's warp group keeps its 64 x BN fp32 partial in registers. Slices 0 .. S-2 write theirs to a workspace slot
// of their (unit, CTA, warp group) and count themselves on the slot's flag (release, GPU scope); the last slice,
// drawn after the others, waits for the flag to reach S-1 (acquire) and sums the partials in slice order, its own
// last: ((p0 + p1) + ...) + p_{S-1}, the same order whatever cluster ran what, so a call's bits depend on its
// shapes and SM count only, not on timing. They differ from the unsplit sum's (fp32, then rounded once to the
// output). The launch zeroes the flags with the counter.
#pragma once

#include <cstdint>

#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

// The warp group's share of a tail unit's sum (acc: this thread's BN / 2 fp32 values; t: its index in the warp
// group; slot: the unit's index in the tail, times 4, plus 2 x CTA rank + warp group). True where this thread
// holds the whole sum to store (the last slice), false where it wrote its partial and has nothing to store.
// Partials are laid out thread-major in 16-byte pieces (coalesced) and cross SMs through L2 (.cg).
template <int BN>
__device__ __forceinline__ bool tail_sum(float* acc, int* flags, float* partials, int slot, int slice, int slices,
                                         int wg, int t) {
  constexpr int kPieces = BN / 8;  // float4 pieces a thread holds
  int* flag = flags + slot;
  float4* part = reinterpret_cast<float4*>(partials) + static_cast<int64_t>(slot) * (slices - 1) * kPieces * 128;
  const int bar = 3 + wg;  // named barriers 1-2 are kFeedTma's (fp8 only)
  if (slice < slices - 1) {
    float4* mine = part + static_cast<int64_t>(slice) * kPieces * 128;
#pragma unroll
    for (int i = 0; i < kPieces; ++i)
      __stcg(mine + i * 128 + t, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
    asm volatile("bar.sync %0, 128;" :: "r"(bar) : "memory");  // every thread's partial written, then counted
    if (t == 0) asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.gpu.global.add.s32 [%0], 1;" :: "l"(flag) : "memory");
    return false;
  }
  if (t == 0) {
    int seen = 0;
    for (;;) {
      asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
      if (seen >= slices - 1) break;
      __nanosleep(32);
    }
  }
  asm volatile("bar.sync %0, 128;" :: "r"(bar) : "memory");
#pragma unroll
  for (int i = 0; i < kPieces; ++i) {
    float4 sum = __ldcg(part + i * 128 + t);
    for (int s = 1; s < slices - 1; ++s) {
      const float4 v = __ldcg(part + static_cast<int64_t>(s) * kPieces * 128 + i * 128 + t);
      sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
    }
    acc[4 * i] = sum.x + acc[4 * i];
    acc[4 * i + 1] = sum.y + acc[4 * i + 1];
    acc[4 * i + 2] = sum.z + acc[4 * i + 2];
    acc[4 * i + 3] = sum.w + acc[4 * i + 3];
  }
  return true;
}

}  // namespace ckgemm::ws
