// ckgemm's own int8 grouped GEMM for SM90 with B row-major (layout RR: A [rows, K], B [G, K, N], N contiguous),
// exact int32 out, B transposed inside the kernel's producer rather than by a separate pass over all of B.
//
// Status: an experiment (CKGEMM_S8_FORM=0; the op launches ws_s8_rr_rs.cuh's form). Exact on every check shape
// (H100 and H200), but on the H200 it ran DeepSeek-V3 prefill at 2.7x the RC kernel's time (decode 1.95x,
// against 2.93x for the op's per-call transpose): each k-block step of its producer takes about 4000 cycles.
// docs/PERF_2026-12-05e.md has the numbers, the suspects and the switches below that test them.
//
// Hopper's wgmma reads 8-bit operands from shared memory K-major only. The per-call RR path of the op
// (prepack.py, repack.cuh) transposes the whole B first, about 0.47 ms for DeepSeek-V3's 0.94 GB on the H200,
// a third of the GEMM's own time. Here the producer warp group loads each k-block's B tile from global memory
// itself (16-byte loads along N), transposes it in registers with byte permutes and stores it K-major with the
// 128-byte swizzle, the layout TMA would have written: no extra pass over B in global memory, and no more
// shared-memory traffic than RC's TMA writes (the tile is read from L2 once, written to shared memory once) --
// the design's intent; the measured speed is above.
//
//   - no setmaxnreg split: __launch_bounds__(384, 1) gives every thread 168 registers, which the producer's two
//     blocks (128) and the consumers' 64 x 256 int32 accumulators (128) both need;
//   - persistent CTAs of 384 threads in clusters of two sharing A (two N-blocks of one M-block; A multicast by
//     TMA, half its rows loaded by each CTA): the group table and tile schedule are the fp8 kernel's
//     (ws_table.cuh, ws_fp8_schedule.h, McastB false);
//   - producer warp group: 128 threads, each a 16 (K) x 16 (N) byte block of the 128 x 256 B tile a k-block.
//     Its loads for the next k-block are issued before it transposes this one (two blocks of registers), meant
//     to hide their latency under the transpose and the wait for a free stage. Thread 0 also issues A's TMA;
//   - two consumer warp groups, 64 rows each, all 256 columns: four m64n256k32 s8 wgmmas a k-block into int32
//     accumulators, one k-block's wgmmas kept in flight while the next is issued (its stage released after);
//   - the epilogue stores int32 pairs from registers; rows past the group and columns past N are not stored.
//
// What it takes is ws_s8_rr_rules.h's rule (the launch refuses the rest); B rows past K and columns past N are
// read as zeros, never loaded.
#pragma once

#include "ws_s8_parts.cuh"

// CKGEMM_S8_LOADS_AFTER 1 issues the next step's loads after this step's fence (docs/PERF_2026-12-05e.md).
#ifndef CKGEMM_S8_LOADS_AFTER
#define CKGEMM_S8_LOADS_AFTER 0
#endif

namespace ckgemm::ws::s8 {

struct alignas(1024) Smem {
  uint8_t a[kStages][kBytesA];
  uint8_t b[kStages][kBytesB];
  uint64_t full[kStages], empty[kStages];
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
  int bad;
};

// A 16-byte load of B, or zeros where `in` is false: one predicated instruction whose registers are zeroed first,
// so nothing consumes the loaded value until the transpose (a select after the load waited for each load's
// whole latency in turn: the first build ran at a third of the RC kernel's rate, docs/PERF_2026-12-05e.md).
__device__ __forceinline__ void load_b16(const int8_t* p, bool in, uint32_t (&v)[4]) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @p ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "l"(p), "r"(static_cast<int>(in)));
}

// This thread's 16 x 16 block of the tile's k-block kb: rows kb * 128 + kc * 16 + i, columns t.n0 + nc * 16 + ...
__device__ __forceinline__ void load_block(const Params& p, const Tile& t, int kb, Block blk, uint32_t (&d)[16][4]) {
  const int n = t.n0 + blk.nc * 16, k = kb * kBlockK + blk.kc * 16;
  const int8_t* src = p.b + t.g * p.b_group_stride + static_cast<int64_t>(k) * p.ldb + n;
  const bool n_ok = n < p.n;
#pragma unroll
  for (int i = 0; i < 16; ++i) load_b16(src + i * p.ldb, n_ok && k + i < p.k, d[i]);
}

__global__ void __launch_bounds__(kThreads, 1) grouped_s8_rr_kernel(const __grid_constant__ Params p) {
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<Smem*>(smem_raw);
  const int tid = threadIdx.x, warp_group = tid / 128, lane = tid % 32;
  const int rank = static_cast<int>(cute::block_rank_in_cluster());
  const int n_blocks = (p.n + kTileN - 1) / kTileN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kStages; ++i) {
      Barrier::init(&s.full[i], 1 + 4);  // the TMA thread's expect_tx, then each producer warp's B stores
      Barrier::init(&s.empty[i], 16);    // each consumer warp of both CTAs
    }
    cutlass::arch::fence_barrier_init();
  }
  build_table<false>(s, p, n_blocks);
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
  const int units = s.unit_start[p.groups], cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
  auto tile_of = [&](int u) { return decode<kTileN, false>(s, p.groups, u, rank); };

  if (warp_group == 0) {  // producer: every thread transposes a block of B; thread 0 also loads A
    const Block blk = register_block(tid);
    int stage = 0;
    uint32_t phase = 0;
    // The (tile, k-block) steps of this cluster, flattened so that the next step's loads can be issued early.
    int u = cluster, kb = 0;
    Tile t = u < units ? tile_of(u) : Tile{};
    uint32_t d0[16][4], d1[16][4];
    if (u < units && k_blocks > 0) load_block(p, t, kb, blk, d0);
    auto step = [&](uint32_t (&cur)[16][4], uint32_t (&nxt)[16][4]) {
      int nu = u, nkb = kb + 1;
      Tile nt = t;
      if (nkb == k_blocks) { nkb = 0; nu += clusters; if (nu < units) nt = tile_of(nu); }
      if (!CKGEMM_S8_LOADS_AFTER && nu < units) load_block(p, nt, nkb, blk, nxt);
      Barrier::wait(&s.empty[stage], phase ^ 1);
      if (tid == 0) {
        Barrier::arrive_and_expect_tx(&s.full[stage], kBytesA);
        tma_load(&p.tma_a, &s.full[stage], s.a[stage] + rank * kRowsA * kBlockK, kb * kBlockK, t.row0 + rank * kRowsA,
                 0, false, true);
      }
      store_block(s.b[stage], blk, cur);
      publish_b(&s.full[stage], lane);
      if (CKGEMM_S8_LOADS_AFTER && nu < units) load_block(p, nt, nkb, blk, nxt);
      if (++stage == kStages) { stage = 0; phase ^= 1; }
      u = nu; kb = nkb; t = nt;
    };
    if (k_blocks > 0) {
      while (u < units) {
        step(d0, d1);
        if (u >= units) break;
        step(d1, d0);
      }
    }
  } else {
    const int wg = warp_group - 1;
    const uint32_t a_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.a[0] + wg * 64 * kBlockK), 0);
    const uint32_t b_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.b[0]), 0);
    consume(s, p, units, cluster, clusters, rank, wg, k_blocks,
            [&](uint32_t step) { Barrier::wait(&s.full[step % kStages], (step / kStages) & 1); },
            [&](uint32_t step, uint32_t& da, uint32_t& db) {
              da = a_lo0 + step % kStages * (kBytesA / 16);
              db = b_lo0 + step % kStages * (kBytesB / 16);
            },
            [&](uint32_t step, int lane) {  // lane r arrives on rank r's barrier (A is multicast)
              if (lane < 2) Barrier::arrive(&s.empty[step % kStages], lane, 1);
            });
  }
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
}

}  // namespace ckgemm::ws::s8
