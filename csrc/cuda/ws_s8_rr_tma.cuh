// ckgemm's own int8 RR grouped kernel, second form: B [G, K, N] (N contiguous) loaded by TMA as it is stored into
// a ring of raw tiles, transposed in shared memory by two producer warps into the K-major tile the wgmmas read.
// Exact int32 out: 10 of 10 check shapes on an H100 at its first run. An experiment (CKGEMM_S8_FORM=1): on an
// H100, DeepSeek-V3 decode at the RC kernel's speed, prefill at 1.4-1.5x RC (docs/PERF_2026-12-05f.md); the op
// launches the register-operand form (ws_s8_rr_rs.cuh), which drops this form's second pass over each B tile.
//
// Why a second form: the first (ws_s8_rr.cuh) loads B through registers, so the bytes it has in flight are what
// its producer's registers hold (32-64 KB an SM); at the ~2 us loaded latency its calls imply, that paces every
// k-block at about 4000 cycles. Here TMA keeps whole tiles in flight and the transposing threads touch only
// shared memory, so their proxy fence has no global load to wait for. The cost is shared-memory traffic: each
// k-block's B is read and written once more (64 KB), beside RC's TMA writes and wgmma reads.
//
//   - 384 threads in clusters of two sharing A, the fp8 kernel's schedule and group table (as ws_s8_rr.cuh);
//   - ring In (kIn deep): a step's A tile, issued by warp 1's lane 0 (multicast, half from each CTA), and B's raw
//     tile, issued by warp 0's lane 0 (two 128 x 128 boxes, N halves, 128-byte swizzle: row k's chunk c at
//     c ^ (k % 8)); each with its own barriers, so a raw slot frees when the transposers are done with it;
//   - ring Bt (kBt deep): the transposed, K-major B tile. Warps 2 and 3 transpose: each thread two 16 x 16 byte
//     blocks a k-block (kc = lane % 8, nc = (lane % 8 + t / 8) % 8 + 8h for thread t of the 64), so the eight lanes
//     of every shared load and store phase touch eight different 16-byte chunks: no bank conflict either way
//     (ws_s8_layout.h; tests/cpp/test_ws_s8_layout.cpp checks the offsets, the transpose and the phases on the
//     host);
//   - the consumers are ws_s8_parts.cuh's loop, reading A from ring In and B from ring Bt.
#pragma once

#include "ws_s8_parts.cuh"

namespace ckgemm::ws::s8 {

// Two rings (depths kIn and kBt in ws_s8_rr_rules.h). In: A's tile (16 KB) and B's raw tile (32 KB) of a step.
// Bt: the transposed B tile (32 KB) the wgmmas read. 2 x 48 + 3 x 32 = 192 KB.
static_assert(kIn >= 2 && kBt >= 2, "the consumers hold two slots of each ring (one step in flight, one issued)");

struct alignas(1024) SmemTma {
  uint8_t a[kIn][kBytesA];
  uint8_t raw[kIn][kBytesB];  // two 128 (K) x 128 (N) halves, 128-byte swizzled rows
  uint8_t b[kBt][kBytesB];    // K-major, as the wgmmas read it
  // Slot i of ring In has two pairs of barriers, A's and B's raw tile's, so a raw slot frees once the transposers
  // are done with it rather than when both CTAs' wgmmas are done with that slot's A.
  uint64_t a_full[kIn], a_empty[kIn], raw_full[kIn], raw_empty[kIn], bt_full[kBt], bt_empty[kBt];
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
  int bad;
};
static_assert(sizeof(SmemTma) <= 227 * 1024, "shared memory of one SM");

// Block blk of a raw tile (ws_s8_layout.h): rows kc * 16 + i, columns nc * 16 .. + 15.
__device__ __forceinline__ void load_raw_block(const uint8_t* raw, Block blk, uint32_t (&d)[16][4]) {
  const uint32_t base = smem_u32(raw);
#pragma unroll
  for (int i = 0; i < 16; ++i)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(d[i][0]), "=r"(d[i][1]), "=r"(d[i][2]), "=r"(d[i][3])
                 : "r"(base + raw_offset(blk.kc * 16 + i, blk.nc)) : "memory");
}

__global__ void __launch_bounds__(kThreads, 1) grouped_s8_rr_tma_kernel(const __grid_constant__ Params p) {
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemTma*>(smem_raw);
  const int tid = threadIdx.x, warp_group = tid / 128, warp = tid / 32, lane = tid % 32;
  const int rank = static_cast<int>(cute::block_rank_in_cluster());
  const int n_blocks = (p.n + kTileN - 1) / kTileN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kIn; ++i) {
      Barrier::init(&s.a_full[i], 1);     // A's TMA thread's expect_tx (the bytes of both CTAs' halves)
      Barrier::init(&s.a_empty[i], 16);   // each consumer warp of both CTAs
      Barrier::init(&s.raw_full[i], 1);   // B's TMA thread's expect_tx
      Barrier::init(&s.raw_empty[i], 2);  // each transposing warp
    }
    for (int i = 0; i < kBt; ++i) {
      Barrier::init(&s.bt_full[i], 2);   // each transposing warp
      Barrier::init(&s.bt_empty[i], 8);  // each consumer warp of this CTA
    }
    cutlass::arch::fence_barrier_init();
  }
  build_table<false>(s, p, n_blocks);
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
  const int units = s.unit_start[p.groups], cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
  auto phase = [](uint32_t step, uint32_t depth) { return (step / depth) & 1; };

  if (warp_group == 0) {
    if (warp < 2 && lane == 0) {  // TMA threads: warp 0 B's raw tiles, warp 1 A (half from each CTA into both)
      uint32_t step = 0;
      for (int u = cluster; u < units; u += clusters) {
        const Tile t = decode<kTileN, false>(s, p.groups, u, rank);
        for (int kb = 0; kb < k_blocks; ++kb, ++step) {
          const uint32_t r = step % kIn;
          if (warp == 0) {
            Barrier::wait(&s.raw_empty[r], phase(step, kIn) ^ 1);
            Barrier::arrive_and_expect_tx(&s.raw_full[r], kBytesB);
            for (int h = 0; h < 2; ++h)  // coordinates innermost first: n, k, group
              tma_load(&p.tma_b, &s.raw_full[r], s.raw[r] + h * (kBytesB / 2), t.n0 + h * 128, kb * kBlockK, t.g,
                       true, false);
          } else {
            Barrier::wait(&s.a_empty[r], phase(step, kIn) ^ 1);
            Barrier::arrive_and_expect_tx(&s.a_full[r], kBytesA);
            tma_load(&p.tma_a, &s.a_full[r], s.a[r] + rank * kRowsA * kBlockK, kb * kBlockK, t.row0 + rank * kRowsA,
                     0, false, true);
          }
        }
      }
    } else if (warp >= 2) {  // the transposing warps
      const int t64 = tid - 64;
      const uint32_t steps = k_blocks * (cluster < units ? (units - cluster + clusters - 1) / clusters : 0);
      for (uint32_t step = 0; step < steps; ++step) {
        const uint32_t r = step % kIn, st = step % kBt;
        Barrier::wait(&s.raw_full[r], phase(step, kIn));
        Barrier::wait(&s.bt_empty[st], phase(step, kBt) ^ 1);
#pragma unroll 1
        for (int h = 0; h < 2; ++h) {
          const Block blk = tma_block(t64, h);
          uint32_t d[16][4];
          load_raw_block(s.raw[r], blk, d);
          store_block(s.b[st], blk, d);
        }
        __syncwarp();
        if (lane == 0) Barrier::arrive(&s.raw_empty[r]);  // every lane's loads are in: their values were stored
        publish_b(&s.bt_full[st], lane);
      }
    }
  } else {
    const int wg = warp_group - 1;
    const uint32_t a_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.a[0] + wg * 64 * kBlockK), 0);
    const uint32_t b_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.b[0]), 0);
    consume(s, p, units, cluster, clusters, rank, wg, k_blocks,
            [&](uint32_t step) {
              Barrier::wait(&s.a_full[step % kIn], phase(step, kIn));
              Barrier::wait(&s.bt_full[step % kBt], phase(step, kBt));
            },
            [&](uint32_t step, uint32_t& da, uint32_t& db) {
              da = a_lo0 + step % kIn * (kBytesA / 16);
              db = b_lo0 + step % kBt * (kBytesB / 16);
            },
            [&](uint32_t step, int lane) {
              // lane r arrives on rank r's barrier: each CTA's consumers release A in both (it is multicast)
              if (lane < 2) Barrier::arrive(&s.a_empty[step % kIn], lane, 1);
              if (lane == 0) Barrier::arrive(&s.bt_empty[step % kBt]);
            });
  }
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
}

}  // namespace ckgemm::ws::s8
