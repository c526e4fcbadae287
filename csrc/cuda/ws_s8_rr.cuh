// ckgemm's own int8 grouped GEMM for SM90 with B row-major (layout RR: A [rows, K], B [G, K, N], N contiguous),
// exact int32 out, B transposed inside the kernel's producer rather than by a separate pass over all of B.
//
// Status: an experiment, not used by the op. Exact on every check shape (H100 and H200), but on the H200 it ran
// DeepSeek-V3 prefill at 2.7x the RC kernel's time (decode 1.95x, against 2.93x for the op's per-call transpose):
// each k-block step of its producer takes about 4000 cycles. docs/PERF_2026-12-05e.md has the numbers, the
// suspects and the switches below that test them.
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

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "cute/arch/cluster_sm90.hpp"
#include "cute/arch/mma_sm90_desc.hpp"
#include "cute/arch/mma_sm90_gmma.hpp"
#include "cutlass/arch/barrier.h"
#include "ws_fp8_parts.cuh"
#include "ws_s8_rr_rules.h"

// Experiment switches (docs/PERF_2026-12-05e.md): CKGEMM_S8_FENCE 1 = each producer thread fences its stores
// for the async proxy (fence.proxy.async), 2 = each consumer thread does after the stage's full barrier, 3 = each
// producer thread's unidirectional generic-to-async release fence restricted to shared::cta, 4 = 3 and the
// consumers' matching acquire fence after the full barrier, 0 = no fence (unsafe, for timing only);
// CKGEMM_S8_LOADS_AFTER 1 issues the next step's loads after this step's fence.
#ifndef CKGEMM_S8_FENCE
#define CKGEMM_S8_FENCE 1
#endif
#ifndef CKGEMM_S8_LOADS_AFTER
#define CKGEMM_S8_LOADS_AFTER 0
#endif

namespace ckgemm::ws::s8 {

constexpr int kBytesA = kBlockM * kBlockK, kBytesB = kTileN * kBlockK, kRowsA = kBlockM / 2;

struct Params {
  CUtensorMap tma_a;   // [rows, k] int8, box 128 x kRowsA, 128-byte swizzle
  const int8_t* b;     // B[g][k][n] at b + g * b_group_stride + k * ldb + n
  int64_t ldb, b_group_stride;
  int32_t* c;
  int64_t ldc;
  const void* sizes;
  int sizes_int64, groups, rows, n, k, vector_store;  // vector_store: int32 pairs where C allows
  int* sizes_ok;       // null: bad sizes trap; else 1 / 0 (and nothing computed on 0)
};

struct alignas(1024) Smem {
  uint8_t a[kStages][kBytesA];
  uint8_t b[kStages][kBytesB];
  uint64_t full[kStages], empty[kStages];
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
  int bad;
};

using Mma = cute::SM90::GMMA::MMA_64x256x32_S32S8S8_SS_TN;

template <size_t... I>
__device__ __forceinline__ void mma_s8(uint64_t da, uint64_t db, uint32_t* d, std::index_sequence<I...>) {
  Mma::fma(da, db, d[I]..., cute::SM90::GMMA::ScaleOut::One);
}

// A 4 x 4 byte transpose: x[i] holds row i's four bytes, y[j] gets column j's (row 0 in the low byte).
__device__ __forceinline__ void transpose4(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, uint32_t* y) {
  const uint32_t t0 = __byte_perm(x0, x1, 0x5140), t1 = __byte_perm(x0, x1, 0x7362);
  const uint32_t t2 = __byte_perm(x2, x3, 0x5140), t3 = __byte_perm(x2, x3, 0x7362);
  y[0] = __byte_perm(t0, t2, 0x5410);
  y[1] = __byte_perm(t0, t2, 0x7632);
  y[2] = __byte_perm(t1, t3, 0x5410);
  y[3] = __byte_perm(t1, t3, 0x7632);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// A 16-byte load of B, or zeros where `in` is false: one predicated instruction whose registers are zeroed first,
// so nothing consumes the loaded value until the transpose (a select after the load waited for each load's
// whole latency in turn: the first build ran at a third of the RC kernel's rate, docs/PERF_2026-12-05e.md).
__device__ __forceinline__ uint4 load_b16(const int8_t* p, bool in) {
  uint4 v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @p ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "r"(static_cast<int>(in)));
  return v;
}

// This thread's 16 x 16 block of the tile's k-block kb: rows kb * 128 + kc * 16 + i, columns t.n0 + nc * 16 + j.
__device__ __forceinline__ void load_block(const Params& p, const Tile& t, int kb, int kc, int nc, uint4 (&d)[16]) {
  const int n = t.n0 + nc * 16, k = kb * kBlockK + kc * 16;
  const int8_t* src = p.b + t.g * p.b_group_stride + static_cast<int64_t>(k) * p.ldb + n;
  const bool n_ok = n < p.n;
#pragma unroll
  for (int i = 0; i < 16; ++i) d[i] = load_b16(src + i * p.ldb, n_ok && k + i < p.k);
}

// The block K-major into the stage's B tile (row n: 128 bytes of K; 16-byte chunk c stored at chunk c ^ (n % 8),
// TMA's 128-byte swizzle). The eight lanes of a store phase share nc and differ in kc: eight chunks of one row,
// no bank conflict.
__device__ __forceinline__ void store_block(uint8_t* tile, int kc, int nc, const uint4 (&d)[16]) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {  // columns nc * 16 + 4c .. + 3
    uint32_t y[4][4];            // [q: rows 4q .. 4q + 3][column 4c + j]
#pragma unroll
    for (int q = 0; q < 4; ++q)
      transpose4(word(d[4 * q], c), word(d[4 * q + 1], c), word(d[4 * q + 2], c), word(d[4 * q + 3], c), y[q]);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n_local = 4 * c + j;  // n % 8 == n_local % 8: nc * 16 is a multiple of 8
      const uint32_t dst = smem_u32(tile + (nc * 16 + n_local) * kBlockK + ((kc ^ (n_local & 7)) << 4));
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(dst), "r"(y[0][j]), "r"(y[1][j]), "r"(y[2][j]),
                   "r"(y[3][j]) : "memory");
    }
  }
}

// int32 out, rows r_lo and r_lo + 8 of the tile, columns 8j + 2(lane % 4) + {0, 1}.
__device__ __forceinline__ void store_tile_s32(const Params& p, const Tile& t, const uint32_t* acc, int r_lo, int lane) {
  const bool whole = t.m_local0 + kBlockM <= t.m_g && t.n0 + kTileN <= p.n;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m_local = t.m_local0 + r_lo + 8 * h;
    if (!whole && m_local >= t.m_g) continue;
    int32_t* row = p.c + static_cast<int64_t>(t.row0 + r_lo + 8 * h) * p.ldc;
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int col = t.n0 + 8 * j + 2 * (lane % 4);
      const int v0 = static_cast<int>(acc[4 * j + 2 * h]), v1 = static_cast<int>(acc[4 * j + 2 * h + 1]);
      if (p.vector_store && (whole || col + 1 < p.n)) {
        *reinterpret_cast<int2*>(row + col) = make_int2(v0, v1);
      } else if (whole || col < p.n) {
        row[col] = v0;
        if (col + 1 < p.n) row[col + 1] = v1;
      }
    }
  }
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
    const int kc = tid % 8, nc = tid / 8;
    int stage = 0;
    uint32_t phase = 0;
    // The (tile, k-block) steps of this cluster, flattened so that the next step's loads can be issued early.
    int u = cluster, kb = 0;
    Tile t = u < units ? tile_of(u) : Tile{};
    uint4 d0[16], d1[16];
    if (u < units && k_blocks > 0) load_block(p, t, kb, kc, nc, d0);
    auto step = [&](uint4 (&cur)[16], uint4 (&nxt)[16]) {
      int nu = u, nkb = kb + 1;
      Tile nt = t;
      if (nkb == k_blocks) { nkb = 0; nu += clusters; if (nu < units) nt = tile_of(nu); }
      if (!CKGEMM_S8_LOADS_AFTER && nu < units) load_block(p, nt, nkb, kc, nc, nxt);
      Barrier::wait(&s.empty[stage], phase ^ 1);
      if (tid == 0) {
        Barrier::arrive_and_expect_tx(&s.full[stage], kBytesA);
        tma_load(&p.tma_a, &s.full[stage], s.a[stage] + rank * kRowsA * kBlockK, kb * kBlockK, t.row0 + rank * kRowsA,
                 0, false, true);
      }
      store_block(s.b[stage], kc, nc, cur);
      // The stores made visible to the wgmmas (the async proxy), then this warp's arrival. In SASS
      // fence.proxy.async is MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S; if the MEMBAR waits for this thread's loads of
      // the next step, the prefetch hides nothing (the suspect for the kernel's speed, docs/PERF_2026-12-05e.md).
      if (CKGEMM_S8_FENCE == 1) cutlass::arch::fence_view_async_shared();
      if (CKGEMM_S8_FENCE >= 3)
        asm volatile("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;" ::: "memory");
      __syncwarp();
      if (lane == 0) Barrier::arrive(&s.full[stage]);
      if (CKGEMM_S8_LOADS_AFTER && nu < units) load_block(p, nt, nkb, kc, nc, nxt);
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
    const int wg = warp_group - 1, warp = (tid / 32) % 4;
    const int r_lo = wg * 64 + warp * 16 + lane / 4;
    int stage = 0;
    uint32_t phase = 0;
    uint32_t acc[kTileN / 2];
    const uint32_t a_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.a[0] + wg * 64 * kBlockK), 0);
    const uint32_t b_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.b[0]), 0);
    for (int u = cluster; u < units; u += clusters) {
      const Tile t = tile_of(u);
      const bool skip = __shfl_sync(0xffffffffu, static_cast<int>(t.m_local0 + wg * 64 >= t.m_g || t.n0 >= p.n), 0);
      if (skip) {  // no rows of the group in this warp group's half, or a pair's tile past N: keep the ring in step
        for (int kb = 0; kb < k_blocks; ++kb) {
          Barrier::wait(&s.full[stage], phase);
          if (lane < 2) Barrier::arrive(&s.empty[stage], lane, 1);
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
        continue;
      }
#pragma unroll
      for (int i = 0; i < kTileN / 2; ++i) acc[i] = 0;
      int prev = -1;
      for (int kb = 0; kb < k_blocks; ++kb) {
        Barrier::wait(&s.full[stage], phase);
        if (CKGEMM_S8_FENCE == 2) cutlass::arch::fence_view_async_shared();
        if (CKGEMM_S8_FENCE == 4)
          asm volatile("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
#pragma unroll
        for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
        cute::warpgroup_arrive();
        const uint32_t da = a_lo0 + stage * (kBytesA / 16), db = b_lo0 + stage * (kBytesB / 16);
#pragma unroll
        for (int kk = 0; kk < kBlockK / 32; ++kk)
          mma_s8(desc_of(da + 2 * kk), desc_of(db + 2 * kk), acc, std::make_index_sequence<kTileN / 2>{});
        cute::warpgroup_commit_batch();
        cute::warpgroup_wait<1>();  // the previous k-block's wgmmas are done: release its stage
#pragma unroll
        for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
        if (prev >= 0 && lane < 2) Barrier::arrive(&s.empty[prev], lane, 1);
        prev = stage;
        if (++stage == kStages) { stage = 0; phase ^= 1; }
      }
      cute::warpgroup_wait<0>();
#pragma unroll
      for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
      if (prev >= 0 && lane < 2) Barrier::arrive(&s.empty[prev], lane, 1);
      store_tile_s32(p, t, acc, r_lo, lane);
    }
  }
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
}

}  // namespace ckgemm::ws::s8
