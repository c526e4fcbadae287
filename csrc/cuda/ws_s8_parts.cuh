// The parts of ckgemm's own int8 RR grouped kernels (ws_s8_rr.cuh: B loaded and transposed by the producer's
// threads; ws_s8_rr_tma.cuh: B loaded by TMA as it is stored and transposed in shared memory): their parameters,
// the s8 wgmma, the byte transpose and K-major store of a 16 x 16 block, the int32 epilogue and the consumers'
// loop.
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
#include "ws_s8_layout.h"
#include "ws_s8_rr_rules.h"

// Experiment switches (docs/PERF_2026-12-05e.md): CKGEMM_S8_FENCE 1 = each producer thread fences its stores
// for the async proxy (fence.proxy.async), 2 = each consumer thread does after the stage's full barrier, 3 = each
// producer thread's unidirectional generic-to-async release fence restricted to shared::cta, 4 = 3 and the
// consumers' matching acquire fence after the full barrier, 0 = no fence (unsafe, for timing only).
#ifndef CKGEMM_S8_FENCE
#define CKGEMM_S8_FENCE 1
#endif

namespace ckgemm::ws::s8 {

constexpr int kBytesA = kBlockM * kBlockK, kBytesB = kTileN * kBlockK, kRowsA = kBlockM / 2;

struct Params {
  CUtensorMap tma_a;   // [rows, k] int8, box 128 x kRowsA, 128-byte swizzle
  CUtensorMap tma_b;   // ws_s8_rr_tma.cuh: [groups, k, n] int8 as stored, box 1 x 128 x 128, 128-byte swizzle
  const int8_t* b;     // B[g][k][n] at b + g * b_group_stride + k * ldb + n
  int64_t ldb, b_group_stride;
  int32_t* c;
  int64_t ldc;
  const void* sizes;
  int sizes_int64, groups, rows, n, k, vector_store;  // vector_store: int32 pairs where C allows
  int* sizes_ok;       // null: bad sizes trap; else 1 / 0 (and nothing computed on 0)
};

using Mma = cute::SM90::GMMA::MMA_64x256x32_S32S8S8_SS_TN;

template <size_t... I>
__device__ __forceinline__ void mma_s8(uint64_t da, uint64_t db, uint32_t* d, std::index_sequence<I...>) {
  Mma::fma(da, db, d[I]..., cute::SM90::GMMA::ScaleOut::One);
}

// A block (rows[i]: K row kc * 16 + i's 16 bytes of N, columns nc * 16 ..) K-major into a B tile (ws_s8_layout.h):
// column nc * 16 + 4c + j's 16 bytes of K as one 16-byte store.
__device__ __forceinline__ void store_block(uint8_t* tile, Block blk, const uint32_t (&rows)[16][4]) {
  const uint32_t base = smem_u32(tile);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    uint32_t y[4][4];
    transpose_columns(rows, c, y);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t dst = base + kmajor_offset(blk.nc * 16 + 4 * c + j, blk.kc);
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

// The producer's side of a stage's B tile: its stores made visible to the wgmmas (the async proxy), then this
// warp's arrival on the stage's full barrier. In SASS fence.proxy.async is MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S;
// if the MEMBAR waits for the thread's global loads in flight, a prefetch across it hides nothing (the suspect for
// ws_s8_rr.cuh's speed, docs/PERF_2026-12-05e.md).
__device__ __forceinline__ void publish_b(uint64_t* full, int lane) {
  if (CKGEMM_S8_FENCE == 1) cutlass::arch::fence_view_async_shared();
  if (CKGEMM_S8_FENCE >= 3)
    asm volatile("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;" ::: "memory");
  __syncwarp();
  if (lane == 0) cutlass::arch::ClusterTransactionBarrier::arrive(full);
}

// The consumer warp groups' loop, the same in both kernels: warp group wg (0 or 1) computes rows wg * 64 .. + 63
// of each tile of this cluster, four m64n256k32 s8 wgmmas a k-block into int32 accumulators, one k-block in
// flight while the next is issued (its operands released after), and stores them (store_tile_s32). The kernel's
// rings come in as three callables of the cluster's step number (one step a tile's k-block): wait(step) for its
// operands, desc(step, &da, &db) for the descriptors' low words of this warp group's A rows and of B, and
// release(step, lane) once its wgmmas are done.
template <class S, class Wait, class Desc, class Release>
__device__ __forceinline__ void consume(S& s, const Params& p, int units, int cluster, int clusters, int rank, int wg,
                                        int k_blocks, Wait&& wait, Desc&& desc, Release&& release) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;
  const int r_lo = wg * 64 + warp * 16 + lane / 4;
  uint32_t acc[kTileN / 2];
  uint32_t step = 0;  // unsigned: the rings' % and / by their depths need no sign fix-ups
  for (int u = cluster; u < units; u += clusters) {
    const Tile t = decode<kTileN, false>(s, p.groups, u, rank);
    const bool skip = __shfl_sync(0xffffffffu, static_cast<int>(t.m_local0 + wg * 64 >= t.m_g || t.n0 >= p.n), 0);
    if (skip) {  // no rows of the group in this warp group's half, or a pair's tile past N: keep the rings in step
      for (int kb = 0; kb < k_blocks; ++kb, ++step) {
        wait(step);
        release(step, lane);
      }
      continue;
    }
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) acc[i] = 0;
    for (int kb = 0; kb < k_blocks; ++kb, ++step) {
      wait(step);
      if (CKGEMM_S8_FENCE == 2) cutlass::arch::fence_view_async_shared();
      if (CKGEMM_S8_FENCE == 4)
        asm volatile("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
#pragma unroll
      for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
      cute::warpgroup_arrive();
      uint32_t da, db;
      desc(step, da, db);
#pragma unroll
      for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K inside the swizzled row: +2 in the descriptor
        mma_s8(desc_of(da + 2 * kk), desc_of(db + 2 * kk), acc, std::make_index_sequence<kTileN / 2>{});
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();  // the previous k-block's wgmmas are done: release its operands
#pragma unroll
      for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
      if (kb > 0) release(step - 1, lane);
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
    if (k_blocks > 0) release(step - 1, lane);
    store_tile_s32(p, t, acc, r_lo, lane);
  }
}

}  // namespace ckgemm::ws::s8
