// ckgemm's own fp8 grouped GEMM mainloop for SM90 (packed MoE form, RC: A [rows, K], B [G, N, K]), built
// from CuTe's wgmma/TMA atoms rather than a CUTLASS collective, so the tile and the promotion are ours:
//
//   - persistent CTAs of 384 threads: one producer warp group (one thread issues the TMA loads of A and
//     B, 128-byte swizzled K-major tiles, into a ring of STAGES stages) and two consumer warp groups, each
//     owning 64 of the tile's 128 rows and all BN columns;
//   - every 128-deep k-block is computed by four m64nBNk32 wgmmas into a scratch accumulator that is then
//     promoted into the fp32 accumulator (acc += tmp * scale): promotion interval 4, cuBLAS's precision
//     without fast accumulation. Block scales (1x128 A, 128x128 B) are that scale; unscaled and row-scaled
//     calls promote with 1 and apply row scales in the epilogue. The two warp groups reach their
//     promotions at different times, so one's FFMAs run under the other's wgmmas;
//   - the tile scheduler and the per-group row offsets come from the device-resident group sizes (a
//     prefix sum in shared memory at the start of each CTA): no argument-building launch, no host sync,
//     graph-capturable with new sizes;
//   - tiles of one group are taken M-fastest, so the CTAs in flight share each B tile through L2.
//
// Rows of a tile past its group's end are computed on the next group's rows (or TMA's zero fill) and
// never stored. K need not be a multiple of 128 (TMA zero-fills the partial block).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cute/arch/mma_sm90_desc.hpp"
#include "cute/arch/mma_sm90_gmma.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/arch/reg_reconfig.h"

namespace ckgemm::ws {

enum class Recipe : int { None = 0, Row = 1, Block = 2 };
constexpr int kBlockM = 128, kBlockK = 128, kThreads = 384, kMaxGroups = 1024;

template <int BN>
struct Config {
  static constexpr int kStages = BN <= 128 ? 6 : 5;
  static constexpr int kBytesA = kBlockM * kBlockK, kBytesB = BN * kBlockK;
};

struct Params {
  CUtensorMap tma_a;  // [rows, k] e4m3, box 128 x 128
  CUtensorMap tma_b;  // [groups, n, k] e4m3, box 1 x BN x 128
  void* c;
  int64_t ldc;
  const void* sizes;
  int sizes_int64, groups, rows, n, k, vector_store;
  const float* sa;  // Row: sa[row]; Block: sa[row * sa_stride + kb]
  int64_t sa_stride;
  const float* sb;  // Row: sb[g * sb_stride + col]; Block: sb[g * sb_stride + nb * kblocks + kb]
  int64_t sb_stride;
  int* sizes_ok;    // null: bad sizes trap with a message; else 1 / 0 and nothing computed on 0
};

template <int BN>
struct alignas(1024) Smem {
  uint8_t a[Config<BN>::kStages][Config<BN>::kBytesA];
  uint8_t b[Config<BN>::kStages][Config<BN>::kBytesB];
  uint64_t full[Config<BN>::kStages], empty[Config<BN>::kStages];
  int row_start[kMaxGroups + 1], tile_start[kMaxGroups + 1];
  int bad;
};

template <int BN>
using Mma = std::conditional_t<BN == 128, cute::SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_SS_TN<>,
                               cute::SM90::GMMA::MMA_64x192x32_F32E4M3E4M3_SS_TN<>>;

template <class M, size_t... I>
__device__ __forceinline__ void mma_call(uint64_t da, uint64_t db, float* d, bool accumulate, std::index_sequence<I...>) {
  M::fma(da, db, d[I]..., accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

// K-major, 128-byte swizzle (what TMA's SWIZZLE_128B writes): 8-row atoms 1024 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void tma_load_2d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      :: "r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))), "l"(map),
         "r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar))), "r"(c0), "r"(c1) : "memory");
}

__device__ __forceinline__ void tma_load_3d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      :: "r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))), "l"(map),
         "r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar))), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// The group of tile t: tile_start[g] <= t < tile_start[g + 1] (empty groups have no tiles).
__device__ __forceinline__ int group_of(const int* tile_start, int groups, int t) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (tile_start[mid] <= t) lo = mid; else hi = mid;
  }
  return lo;
}

// Prefix sums of rows and tiles per group, checked as the packed builder checks them.
template <int BN>
__device__ void build_table(Smem<BN>& s, const Params& p, int n_blocks) {
  const int tid = threadIdx.x;
  for (int i = tid; i < p.groups; i += blockDim.x)
    s.row_start[i + 1] = p.sizes_int64 ? static_cast<int>(static_cast<const int64_t*>(p.sizes)[i])
                                       : static_cast<const int*>(p.sizes)[i];
  __syncthreads();
  if (tid < 32) {
    int rows = 0, tiles = 0;
    bool bad = false;
    for (int base = 0; base < p.groups; base += 32) {
      const int i = base + tid;
      int m = i < p.groups ? s.row_start[i + 1] : 0;
      bad |= m < 0;
      m = m < 0 ? 0 : m;
      int t = (m + kBlockM - 1) / kBlockM * n_blocks;
      for (int d = 1; d < 32; d <<= 1) {
        const int mu = __shfl_up_sync(0xffffffffu, m, d), tu = __shfl_up_sync(0xffffffffu, t, d);
        if (tid >= d) { m += mu; t += tu; }
      }
      __syncwarp();
      if (i < p.groups) { s.row_start[i + 1] = rows + m; s.tile_start[i + 1] = tiles + t; }
      rows += __shfl_sync(0xffffffffu, m, 31);
      tiles += __shfl_sync(0xffffffffu, t, 31);
    }
    bad = __any_sync(0xffffffffu, bad) || rows != p.rows;
    if (tid == 0) {
      s.row_start[0] = s.tile_start[0] = 0;
      s.bad = bad;
      if (bad) s.tile_start[p.groups] = 0;
    }
  }
  __syncthreads();
  if (blockIdx.x == 0 && tid == 0 && p.sizes_ok != nullptr) *p.sizes_ok = s.bad ? 0 : 1;
  // No printf here: a call in the kernel makes ptxas serialise the wgmmas (C7510). The host wrapper passes
  // sizes_ok and reports bad sizes; without it, bad sizes trap the launch.
  if (s.bad && p.sizes_ok == nullptr) asm volatile("trap;");
}

template <int BN, Recipe R, class Out>
__global__ void __launch_bounds__(kThreads, 1) grouped_fp8_kernel(const __grid_constant__ Params p) {
  using Cfg = Config<BN>;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;
  extern __shared__ uint8_t smem_raw[];
  Smem<BN>& s = *reinterpret_cast<Smem<BN>*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  const int tid = threadIdx.x, warp_group = tid / 128;
  const int n_blocks = (p.n + BN - 1) / BN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kStages; ++i) {
      Barrier::init(&s.full[i], 1);
      Barrier::init(&s.empty[i], 8);  // one arrival per consumer warp
    }
    cutlass::arch::fence_barrier_init();
  }
  build_table(s, p, n_blocks);
  const int total = s.tile_start[p.groups];

  if (warp_group == 0) {  // producer
    cutlass::arch::warpgroup_reg_dealloc<40>();
    if (tid == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const int g = group_of(s.tile_start, p.groups, t);
        const int m_blocks = (s.tile_start[g + 1] - s.tile_start[g]) / n_blocks, local = t - s.tile_start[g];
        const int row0 = s.row_start[g] + (local % m_blocks) * kBlockM, n0 = (local / m_blocks) * BN;
        for (int kb = 0; kb < k_blocks; ++kb) {
          Barrier::wait(&s.empty[stage], phase ^ 1);
          Barrier::arrive_and_expect_tx(&s.full[stage], Cfg::kBytesA + Cfg::kBytesB);
          tma_load_2d(&p.tma_a, &s.full[stage], s.a[stage], kb * kBlockK, row0);
          tma_load_3d(&p.tma_b, &s.full[stage], s.b[stage], kb * kBlockK, n0, g);
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
      }
    }
    return;
  }

  cutlass::arch::warpgroup_reg_alloc<232>();
  const int wg = warp_group - 1, lane = tid % 32, warp = (tid / 32) % 4;
  const int r_lo = wg * 64 + warp * 16 + lane / 4;  // this thread's rows in the tile: r_lo and r_lo + 8
  int stage = 0;
  uint32_t phase = 0;
  float acc[BN / 2], tmp[BN / 2];
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const int g = group_of(s.tile_start, p.groups, t);
    const int m_blocks = (s.tile_start[g + 1] - s.tile_start[g]) / n_blocks, local = t - s.tile_start[g];
    const int m_local0 = (local % m_blocks) * kBlockM, n0 = (local / m_blocks) * BN;
    const int m_g = s.row_start[g + 1] - s.row_start[g], row0 = s.row_start[g] + m_local0;
    const float* sa_lo = nullptr;
    const float* sa_hi = nullptr;
    const float* sb0 = nullptr;
    const float* sb1 = nullptr;
    int split = BN;  // Block: columns [0, split) of the tile use sb0, the rest sb1
    if constexpr (R == Recipe::Block) {
      const int last = p.rows - 1;
      sa_lo = p.sa + static_cast<int64_t>(min(row0 + r_lo, last)) * p.sa_stride;
      sa_hi = p.sa + static_cast<int64_t>(min(row0 + r_lo + 8, last)) * p.sa_stride;
      const int nb = n0 / 128, n_scale_blocks = (p.n + 127) / 128;
      sb0 = p.sb + g * p.sb_stride + static_cast<int64_t>(nb) * k_blocks;
      sb1 = nb + 1 < n_scale_blocks ? sb0 + k_blocks : sb0;
      split = (nb + 1) * 128 - n0;
    }
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
    for (int kb = 0; kb < k_blocks; ++kb) {
      float a_lo = 1.f, a_hi = 1.f, b0 = 1.f, b1 = 1.f;  // this k-block's scales: their loads run under the wgmmas
      if constexpr (R == Recipe::Block) { a_lo = __ldg(sa_lo + kb); a_hi = __ldg(sa_hi + kb); b0 = __ldg(sb0 + kb); b1 = __ldg(sb1 + kb); }
      Barrier::wait(&s.full[stage], phase);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(tmp[i]);
      cute::warpgroup_arrive();
      const uint64_t da = smem_desc(s.a[stage] + wg * 64 * kBlockK), db = smem_desc(s.b[stage]);
#pragma unroll
      for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K inside the swizzled row: +2 in the descriptor
        mma_call<Mma<BN>>(da + 2 * kk, db + 2 * kk, tmp, kk > 0, std::make_index_sequence<BN / 2>{});
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<0>();
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(tmp[i]);
      if (lane == 0) Barrier::arrive(&s.empty[stage]);
      if (++stage == kStages) { stage = 0; phase ^= 1; }
      if constexpr (R == Recipe::Block) {
        const float s_lo0 = a_lo * b0, s_hi0 = a_hi * b0, s_lo1 = a_lo * b1, s_hi1 = a_hi * b1;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const bool first = j * 8 < split;
          const float lo = first ? s_lo0 : s_lo1, hi = first ? s_hi0 : s_hi1;
          acc[4 * j + 0] = fmaf(tmp[4 * j + 0], lo, acc[4 * j + 0]);
          acc[4 * j + 1] = fmaf(tmp[4 * j + 1], lo, acc[4 * j + 1]);
          acc[4 * j + 2] = fmaf(tmp[4 * j + 2], hi, acc[4 * j + 2]);
          acc[4 * j + 3] = fmaf(tmp[4 * j + 3], hi, acc[4 * j + 3]);
        }
      } else {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] += tmp[i];
      }
    }
    // Epilogue: straight from registers; rows past the group's end and columns past N are not stored.
    float row_scale[2] = {1.f, 1.f};
    if constexpr (R == Recipe::Row) {
      const int last = p.rows - 1;
      row_scale[0] = __ldg(p.sa + static_cast<int64_t>(min(row0 + r_lo, last)) * p.sa_stride);
      row_scale[1] = __ldg(p.sa + static_cast<int64_t>(min(row0 + r_lo + 8, last)) * p.sa_stride);
    }
    const float* sb_row = R == Recipe::Row ? p.sb + g * p.sb_stride : nullptr;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = n0 + j * 8 + 2 * (lane % 4);
      float cs0 = 1.f, cs1 = 1.f;
      if constexpr (R == Recipe::Row) {
        cs0 = col < p.n ? __ldg(sb_row + col) : 0.f;
        cs1 = col + 1 < p.n ? __ldg(sb_row + col + 1) : 0.f;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m_local = m_local0 + r_lo + 8 * h;
        if (m_local >= m_g || col >= p.n) continue;
        const float v0 = acc[4 * j + 2 * h] * row_scale[h] * cs0, v1 = acc[4 * j + 2 * h + 1] * row_scale[h] * cs1;
        Out* dst = static_cast<Out*>(p.c) + static_cast<int64_t>(row0 - m_local0 + m_local) * p.ldc + col;
        if (p.vector_store && col + 1 < p.n) {
          if constexpr (std::is_same_v<Out, float>) *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
          else *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);
        } else {
          dst[0] = static_cast<Out>(v0);
          if (col + 1 < p.n) dst[1] = static_cast<Out>(v1);
        }
      }
    }
  }
}

}  // namespace ckgemm::ws
