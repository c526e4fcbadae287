// Dynamic tile units for ckgemm's own grouped kernel (ws_fp8.cuh, its 16-bit form where groups average under 2048
// rows, or as CKGEMM_WS_UNITS says: ws_fp8_rules.h's units_drawn): the clusters take units in
// the order they become free, from a counter in global memory (zeroed by the launch), instead of every
// clusters-th unit. With a static stride a cluster that drew tiles shorter than the others' (a warp group with
// none of its group's rows skips its wgmmas) runs ahead of them, the clusters drift apart along K, and a group's
// B (58.7 MB at N 4096, K 7168 in bf16) no longer stays in L2 between its readers: 17% slower than CUTLASS on
// DeepSeek-V3 prefill, H100, docs/PERF_2026-12-06d.md. Taken in order, the units in flight stay a contiguous run.
//
// Cluster rank 0's TMA thread draws each unit and publishes it to both CTAs through a ring of kUnitSlots slots:
// the value into each CTA's slot, then an arrival on each CTA's full barrier (release, cluster scope). Its
// readers (rank 1's TMA thread and every consumer warp of both CTAs, one lane each) wait for it with acquire
// at cluster scope and arrive on rank 0's empty barrier of the slot once read. The last draw, at or past the
// call's units, ends every reader's loop.
#pragma once

#include <cstdint>

#include "cute/arch/cluster_sm90.hpp"
#include "cutlass/arch/barrier.h"

namespace ckgemm::ws {

constexpr int kUnitSlots = 4;

struct UnitRing {
  int unit[kUnitSlots];
  uint64_t full[kUnitSlots], empty[kUnitSlots];
};

// p's shared-memory address in cluster rank `cta`'s CTA.
__device__ __forceinline__ uint32_t peer_u32(const void* p, int cta) {
  return cute::set_block_rank(cute::cast_smem_ptr_to_uint(p), cta);
}

// CUTLASS's ClusterBarrier arrives and waits at its default scope (CTA); the ring's value crosses CTAs, so its
// arrivals release and its waits acquire at cluster scope.
__device__ __forceinline__ void arrive_release_cluster(uint64_t* bar, int cta) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(peer_u32(bar, cta)) : "memory");
}

__device__ __forceinline__ void wait_acquire_cluster(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = cute::cast_smem_ptr_to_uint(bar);
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
}

// Both CTAs' barriers of the ring (thread 0 of each CTA, before the cluster's first barrier).
__device__ __forceinline__ void init_units(UnitRing& r, int readers) {
  for (int i = 0; i < kUnitSlots; ++i) {
    cutlass::arch::ClusterBarrier::init(&r.full[i], 1);
    cutlass::arch::ClusterBarrier::init(&r.empty[i], readers);
  }
}

// Rank 0's TMA thread: draw the step-th unit and publish it to both CTAs.
__device__ __forceinline__ int publish_unit(UnitRing& r, int* counter, int step) {
  const int slot = step % kUnitSlots;
  wait_acquire_cluster(&r.empty[slot], ((step / kUnitSlots) & 1) ^ 1);  // its last value read by every reader
  const int u = atomicAdd(counter, 1);
  r.unit[slot] = u;
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(peer_u32(&r.unit[slot], 1)), "r"(u) : "memory");
  arrive_release_cluster(&r.full[slot], 0);
  arrive_release_cluster(&r.full[slot], 1);
  return u;
}

// A reader's step-th unit: `signal` is the one thread of its warp (or the lone reader thread) that waits, reads
// and releases the slot; the value reaches the others of `mask` through a shuffle from lane `src`.
__device__ __forceinline__ int read_unit(UnitRing& r, int step, bool signal, unsigned mask, int src) {
  const int slot = step % kUnitSlots;
  int u = 0;
  if (signal) {
    wait_acquire_cluster(&r.full[slot], (step / kUnitSlots) & 1);
    u = *reinterpret_cast<volatile int*>(&r.unit[slot]);
    arrive_release_cluster(&r.empty[slot], 0);
  }
  return __shfl_sync(mask, u, src);
}

}  // namespace ckgemm::ws
