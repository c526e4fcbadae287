// Dynamic tile units for ckgemm's own grouped kernel (ws_fp8.cuh, its 16-bit form): the clusters take units in
// the order they become free, from a counter in global memory (zeroed by the launch), instead of every
// clusters-th unit. With a static stride a cluster that drew tiles shorter than the others' (a warp group with
// none of its group's rows skips its wgmmas) runs ahead of them, the clusters drift apart along K, and a group's
// B (58.7 MB at N 4096, K 7168 in bf16) no longer stays in L2 between its readers: 17% slower than CUTLASS on
// DeepSeek-V3 prefill, H100, docs/PERF_2026-12-06d.md. Taken in order, the units in flight stay a contiguous run.
//
// Cluster rank 0's TMA thread draws each unit (a unit ahead) and publishes it to both CTAs through a ring of
// kUnitSlots slots:
// the value into each CTA's slot, then an arrival on each CTA's full barrier (release, cluster scope). Its
// readers (rank 1's TMA thread and every consumer warp of both CTAs) wait for it with acquire at cluster
// scope, and one lane of each arrives on rank 0's empty barrier of the slot once read. The last draw, at or past the
// call's units, ends every reader's loop.
#pragma once

#include <cstdint>

#include "cute/arch/cluster_sm90.hpp"
#include "cutlass/arch/barrier.h"

namespace ckgemm::ws {

constexpr int kUnitSlots = 4;
constexpr int kUnitReaders = 1 + 16;  // rank 1's TMA thread, each consumer warp of both CTAs

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

// One asm block with its loop inside, as CUTLASS's ClusterBarrier::wait (read_unit says why).
__device__ __forceinline__ void wait_acquire_cluster(uint64_t* bar, uint32_t parity) {
  asm volatile("{\n\t.reg .pred p;\n\t"
               "WAIT:\n\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
               "@!p bra WAIT;\n\t}" :: "r"(cute::cast_smem_ptr_to_uint(bar)), "r"(parity) : "memory");
}

// Both CTAs' barriers of the ring (thread 0 of each CTA, before the cluster's first barrier).
__device__ __forceinline__ void init_units(UnitRing& r) {
  for (int i = 0; i < kUnitSlots; ++i) {
    cutlass::arch::ClusterBarrier::init(&r.full[i], 1);
    cutlass::arch::ClusterBarrier::init(&r.empty[i], kUnitReaders);
  }
}

// Rank 0's TMA thread: the next unit from the counter. The kernel draws a unit's successor once it has issued
// the unit's first k-block: the atomic's round trip (which the thread waits for: the compiler aggregates atomics
// over the warp and shuffles the result right away) then falls where the ring of stages is full, rather than
// between a unit's last load and the next unit's first (docs/PERF_2026-12-06e.md).
__device__ __forceinline__ int draw_unit(int* counter) { return atomicAdd(counter, 1); }

// Rank 0's TMA thread: publish unit u as the step-th to both CTAs.
__device__ __forceinline__ int publish_unit(UnitRing& r, int u, int step) {
  const int slot = step % kUnitSlots;
  wait_acquire_cluster(&r.empty[slot], ((step / kUnitSlots) & 1) ^ 1);  // its last value read by every reader
  r.unit[slot] = u;
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(peer_u32(&r.unit[slot], 1)), "r"(u) : "memory");
  arrive_release_cluster(&r.full[slot], 0);
  arrive_release_cluster(&r.full[slot], 1);
  return u;
}

// A reader's step-th unit: every thread of `mask` waits for the slot and reads it, the value of lane `src` reaches
// all of them through a shuffle, and `signal` (the thread of lane `src`: its read is the one kept) releases the
// slot. No branch: a branch here, or a spin loop in C++ (wait_acquire_cluster), is control flow the compiler
// cannot prove uniform, and it then moves the consumers' loop-carried values (stage, phase, the wgmma
// descriptors) from uniform registers into vector ones, with R2UR and WARPSYNC before every wgmma: 2.8% slower
// on 8 x 4096^3 than the same kernel taking units by stride (docs/PERF_2026-12-06e.md).
__device__ __forceinline__ int read_unit(UnitRing& r, int step, bool signal, unsigned mask, int src) {
  const int slot = step % kUnitSlots;
  wait_acquire_cluster(&r.full[slot], (step / kUnitSlots) & 1);
  const int u = __shfl_sync(mask, *reinterpret_cast<volatile int*>(&r.unit[slot]), src);
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\t"
               "@p mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n\t}"
               :: "r"(peer_u32(&r.empty[slot], 0)), "r"(static_cast<int>(signal)) : "memory");
  return u;
}

}  // namespace ckgemm::ws
