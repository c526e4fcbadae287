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
#include "cute/arch/cluster_sm90.hpp"

namespace ckgemm::ws {

enum class Recipe : int { None = 0, Row = 1, Block = 2 };
constexpr int kBlockM = 128, kBlockK = 128, kThreads = 384, kMaxGroups = 1024;

// BN: tile columns. Clusters of two CTAs share one operand's tile through TMA multicast (each CTA loads
// half of it into both): McastB pairs two M-blocks of one group and N-block (B shared), else two N-blocks of
// one M-block (A shared). A pair's second tile past the group's M-blocks (or past N) is computed on rows or
// columns that are never stored, so both CTAs keep the shared ring in step.
template <int BN, bool McastB>
struct Config {
  static constexpr int kStages = BN <= 128 ? 6 : 5;
  static constexpr int kBytesA = kBlockM * kBlockK, kBytesB = BN * kBlockK;
  // setmaxnreg split of the 64K registers (128 x producer + 256 x consumer <= 65536)
  static constexpr int kProducerRegs = BN <= 128 ? 56 : 40, kConsumerRegs = BN <= 128 ? 224 : 232;
  static constexpr int kRowsA = McastB ? kBlockM : kBlockM / 2, kRowsB = McastB ? BN / 2 : BN;  // rows one CTA loads
};

struct Params {
  CUtensorMap tma_a;  // [rows, k] e4m3, box 128 x Config::kRowsA
  CUtensorMap tma_b;  // [groups, n, k] e4m3, box 1 x Config::kRowsB x 128
  CUtensorMap tma_sa;  // scale mode 2: [rows, kblocks] f32, box 128 x 4
  CUtensorMap tma_sb;  // scale mode 2: [groups, n blocks, kblocks] f32, box 1 x 2 x 4
  void* c;
  int64_t ldc;
  const void* sizes;
  int sizes_int64, groups, rows, n, k, vector_store;
  const float* sa;  // Row: sa[row * sa_stride]; Block: sa[row * sa_stride + kb]
  int64_t sa_stride;
  const float* sb;  // Row: sb[g * sb_stride + col]; Block: sb[g * sb_stride + nb * kblocks + kb]
  int64_t sb_stride;
  int* sizes_ok;    // null: bad sizes trap; else 1 / 0 (and nothing computed on 0)
};

template <int BN, bool McastB>
struct alignas(1024) Smem {
  uint8_t a[Config<BN, McastB>::kStages][Config<BN, McastB>::kBytesA];
  uint8_t b[Config<BN, McastB>::kStages][Config<BN, McastB>::kBytesB];
  float sa[Config<BN, McastB>::kStages][kBlockM];  // block scales of the stage: A rows, the tile's two B blocks
  float sb[Config<BN, McastB>::kStages][2];
  // scale mode 2: four k-blocks' scales of the stage's rows and two B blocks (TMA wants 128-byte aligned boxes)
  alignas(128) float sa4[Config<BN, McastB>::kStages][kBlockM][4];
  alignas(128) float sb4[Config<BN, McastB>::kStages][32];
  uint64_t full[Config<BN, McastB>::kStages], empty[Config<BN, McastB>::kStages];
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
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

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// A TMA load of a 2-D ([rows, k]) or 3-D ([groups, n, k]) box into this CTA, or multicast to both CTAs of
// the cluster (each CTA's barrier at the same offset counts the bytes that land in it).
__device__ __forceinline__ void tma_load(const CUtensorMap* map, uint64_t* bar, void* dst, int k0, int r0, int g,
                                         bool three_d, bool multicast) {
  const uint32_t d = smem_u32(dst), b = smem_u32(bar);
  const uint16_t mask = 0x3;
  if (three_d && multicast)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5}], [%2], %6;" :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g), "h"(mask) : "memory");
  else if (three_d)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g) : "memory");
  else if (multicast)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;" :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "h"(mask) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0) : "memory");
}

__device__ __forceinline__ void cp_async_f32(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_u32(dst)), "l"(src) : "memory");
}

// The group of unit u: unit_start[g] <= u < unit_start[g + 1] (empty groups have no units).
__device__ __forceinline__ int group_of(const int* unit_start, int groups, int u) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (unit_start[mid] <= u) lo = mid; else hi = mid;
  }
  return lo;
}

// Units a group of m rows makes: pairs of tiles, one per CTA of the cluster.
template <bool McastB>
__device__ __forceinline__ int units_of(int m, int n_blocks) {
  const int m_blocks = (m + kBlockM - 1) / kBlockM;
  return McastB ? (m_blocks + 1) / 2 * n_blocks : m_blocks * ((n_blocks + 1) / 2);
}

// Prefix sums of rows and units per group, the sizes checked as the packed builder checks them.
template <int BN, bool McastB>
__device__ void build_table(Smem<BN, McastB>& s, const Params& p, int n_blocks) {
  const int tid = threadIdx.x;
  for (int i = tid; i < p.groups; i += blockDim.x)
    s.row_start[i + 1] = p.sizes_int64 ? static_cast<int>(static_cast<const int64_t*>(p.sizes)[i])
                                       : static_cast<const int*>(p.sizes)[i];
  __syncthreads();
  if (tid < 32) {
    int rows = 0, units = 0;
    bool bad = false;
    for (int base = 0; base < p.groups; base += 32) {
      const int i = base + tid;
      int m = i < p.groups ? s.row_start[i + 1] : 0;
      bad |= m < 0;
      m = m < 0 ? 0 : m;
      int u = units_of<McastB>(m, n_blocks);
      for (int d = 1; d < 32; d <<= 1) {
        const int mu = __shfl_up_sync(0xffffffffu, m, d), uu = __shfl_up_sync(0xffffffffu, u, d);
        if (tid >= d) { m += mu; u += uu; }
      }
      __syncwarp();
      if (i < p.groups) { s.row_start[i + 1] = rows + m; s.unit_start[i + 1] = units + u; }
      rows += __shfl_sync(0xffffffffu, m, 31);
      units += __shfl_sync(0xffffffffu, u, 31);
    }
    bad = __any_sync(0xffffffffu, bad) || rows != p.rows;
    if (tid == 0) {
      s.row_start[0] = s.unit_start[0] = 0;
      s.bad = bad;
      if (bad) s.unit_start[p.groups] = 0;
    }
  }
  __syncthreads();
  if (blockIdx.x == 0 && tid == 0 && p.sizes_ok != nullptr) *p.sizes_ok = s.bad ? 0 : 1;
  // No printf here: a call in the kernel makes ptxas serialise the wgmmas (C7510). The host wrapper passes
  // sizes_ok and reports bad sizes; without it, bad sizes trap the launch.
  if (s.bad && p.sizes_ok == nullptr) asm volatile("trap;");
}

struct Tile {
  int g, m_g, m_local0, row0, n0;  // group, its rows, this CTA's first row in the group and in A, first column
};

template <int BN, bool McastB>
__device__ __forceinline__ Tile decode(const Smem<BN, McastB>& s, int groups, int u, int n_blocks, int rank) {
  Tile t;
  t.g = group_of(s.unit_start, groups, u);
  const int local = u - s.unit_start[t.g];
  t.m_g = s.row_start[t.g + 1] - s.row_start[t.g];
  const int m_blocks = (t.m_g + kBlockM - 1) / kBlockM;
  int mb, nb;
  if constexpr (McastB) {
    const int pairs = (m_blocks + 1) / 2;
    mb = 2 * (local % pairs) + rank;
    nb = local / pairs;
  } else {
    mb = local % m_blocks;
    nb = 2 * (local / m_blocks) + rank;
  }
  t.m_local0 = mb * kBlockM;
  t.row0 = s.row_start[t.g] + t.m_local0;
  t.n0 = nb * BN;
  return t;
}

// acc += tmp * scale, the scale of rows r_lo / r_lo + 8 (lo / hi) and of the B block of each column: the first
// (0) left of column kSplit, the second (1) from it on. kSplit is a template argument so no column selects.
template <int BN, int kSplit>
__device__ __forceinline__ void promote(float* acc, const float* tmp, float lo0, float hi0, float lo1, float hi1) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const float lo = j * 8 < kSplit ? lo0 : lo1, hi = j * 8 < kSplit ? hi0 : hi1;
    acc[4 * j + 0] = fmaf(tmp[4 * j + 0], lo, acc[4 * j + 0]);
    acc[4 * j + 1] = fmaf(tmp[4 * j + 1], lo, acc[4 * j + 1]);
    acc[4 * j + 2] = fmaf(tmp[4 * j + 2], hi, acc[4 * j + 2]);
    acc[4 * j + 3] = fmaf(tmp[4 * j + 3], hi, acc[4 * j + 3]);
  }
}

template <class Out>
__device__ __forceinline__ void store_pair(Out* dst, float v0, float v1) {
  if constexpr (std::is_same_v<Out, float>) *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
  else *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);
}

// Epilogue, straight from the registers of an m64nBN accumulator (rows r_lo and r_lo + 8, two adjacent
// columns per 8-column chunk): rows past the group's end and columns past N are not stored.
template <int BN, Recipe R, class Out>
__device__ __forceinline__ void store_tile(const Params& p, const Tile& t, const float* acc, int r_lo, int lane) {
  float row_scale[2] = {1.f, 1.f};
  if constexpr (R == Recipe::Row) {
    const int last = p.rows - 1;
    row_scale[0] = __ldg(p.sa + static_cast<int64_t>(min(t.row0 + r_lo, last)) * p.sa_stride);
    row_scale[1] = __ldg(p.sa + static_cast<int64_t>(min(t.row0 + r_lo + 8, last)) * p.sa_stride);
  }
  const float* sb_row = R == Recipe::Row ? p.sb + t.g * p.sb_stride : nullptr;
  if (p.vector_store && t.m_local0 + kBlockM <= t.m_g && t.n0 + BN <= p.n) {  // a whole tile: no bounds per element
    const int col0 = t.n0 + 2 * (lane % 4);
    Out* lo = static_cast<Out*>(p.c) + static_cast<int64_t>(t.row0 + r_lo) * p.ldc + col0;
    Out* hi = lo + 8 * p.ldc;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      float cs0 = 1.f, cs1 = 1.f;
      if constexpr (R == Recipe::Row) { cs0 = __ldg(sb_row + col0 + 8 * j); cs1 = __ldg(sb_row + col0 + 8 * j + 1); }
      store_pair(lo + 8 * j, acc[4 * j + 0] * row_scale[0] * cs0, acc[4 * j + 1] * row_scale[0] * cs1);
      store_pair(hi + 8 * j, acc[4 * j + 2] * row_scale[1] * cs0, acc[4 * j + 3] * row_scale[1] * cs1);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = t.n0 + j * 8 + 2 * (lane % 4);
    if (col >= p.n) continue;
    float cs0 = 1.f, cs1 = 1.f;
    if constexpr (R == Recipe::Row) {
      cs0 = __ldg(sb_row + col);
      cs1 = col + 1 < p.n ? __ldg(sb_row + col + 1) : 0.f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m_local = t.m_local0 + r_lo + 8 * h;
      if (m_local >= t.m_g) continue;
      const float v0 = acc[4 * j + 2 * h] * row_scale[h] * cs0, v1 = acc[4 * j + 2 * h + 1] * row_scale[h] * cs1;
      Out* dst = static_cast<Out*>(p.c) + static_cast<int64_t>(t.row0 + r_lo + 8 * h) * p.ldc + col;
      if (p.vector_store && col + 1 < p.n) {
        store_pair(dst, v0, v1);
      } else {
        dst[0] = static_cast<Out>(v0);
        if (col + 1 < p.n) dst[1] = static_cast<Out>(v1);
      }
    }
  }
}

// How block scales reach the consumers: 0, a producer warp copies the stage's scales with cp.async; 1, the
// consumers read them from global two k-blocks ahead; 2, TMA boxes of four k-blocks with the stage's operands
// (needs ceil(K/128) % 4 == 0).
#ifndef CKGEMM_WS_SCALES
#define CKGEMM_WS_SCALES 0
#endif
#ifndef CKGEMM_WS_FAKE_SCALES
#define CKGEMM_WS_FAKE_SCALES 0
#endif

template <int BN, bool McastB, Recipe R, class Out>
__global__ void __launch_bounds__(kThreads, 1) grouped_fp8_kernel(const __grid_constant__ Params p) {
  using Cfg = Config<BN, McastB>;
  constexpr bool kScaleWarp = R == Recipe::Block && CKGEMM_WS_SCALES == 0;
  constexpr bool kScaleTma = R == Recipe::Block && CKGEMM_WS_SCALES == 2;
  constexpr bool kScalePrefetch = R == Recipe::Block && CKGEMM_WS_SCALES == 1;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;
  // Dynamic shared memory starts 1024-aligned here (no static shared memory), as the 128-byte swizzle needs; a
  // pointer that keeps the shared window lets the compiler use LDS and 32-bit addresses.
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<Smem<BN, McastB>*>(smem_raw);
  const int tid = threadIdx.x, warp_group = tid / 128, lane = tid % 32;
  const int rank = static_cast<int>(cute::block_rank_in_cluster());
  const int n_blocks = (p.n + BN - 1) / BN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kStages; ++i) {
      Barrier::init(&s.full[i], kScaleWarp ? 1 + 32 : 1);  // the TMA thread (+ the scale warp's lanes)
      Barrier::init(&s.empty[i], 16);  // each consumer warp of both CTAs
    }
    cutlass::arch::fence_barrier_init();
  }
  build_table(s, p, n_blocks);
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
  const int units = s.unit_start[p.groups], cluster = blockIdx.x / 2, clusters = gridDim.x / 2;

  if (warp_group == 0) {  // producer: warp 0 issues TMA, warp 1 copies block scales
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    const int warp = tid / 32;
    if ((warp == 0 && lane == 0) || (kScaleWarp && warp == 1)) {
      int stage = 0;
      uint32_t phase = 0;
      const int n_scale_blocks = (p.n + 127) / 128;
      for (int u = cluster; u < units; u += clusters) {
        const Tile t = decode(s, p.groups, u, n_blocks, rank);
        for (int kb = 0; kb < k_blocks; ++kb) {
          Barrier::wait(&s.empty[stage], phase ^ 1);
          if (warp == 0) {
            Barrier::arrive_and_expect_tx(&s.full[stage], Cfg::kBytesA + Cfg::kBytesB + (kScaleTma ? (128 + 2) * 16 : 0));
            const int k0 = kb * kBlockK;
            if constexpr (kScaleTma) {
              tma_load(&p.tma_sa, &s.full[stage], s.sa4[stage], kb & ~3, t.row0, 0, false, false);
              tma_load(&p.tma_sb, &s.full[stage], s.sb4[stage], kb & ~3, t.n0 / 128, t.g, true, false);
            }
            if constexpr (McastB) {
              tma_load(&p.tma_a, &s.full[stage], s.a[stage], k0, t.row0, 0, false, false);
              tma_load(&p.tma_b, &s.full[stage], s.b[stage] + rank * Cfg::kRowsB * kBlockK, k0,
                       t.n0 + rank * Cfg::kRowsB, t.g, true, true);
            } else {
              tma_load(&p.tma_a, &s.full[stage], s.a[stage] + rank * Cfg::kRowsA * kBlockK, k0,
                       t.row0 + rank * Cfg::kRowsA, 0, false, true);
              tma_load(&p.tma_b, &s.full[stage], s.b[stage], k0, t.n0, t.g, true, false);
            }
          } else {
            for (int i = 0; i < kBlockM / 32; ++i) {
              const int r = lane + 32 * i;
              cp_async_f32(&s.sa[stage][r], p.sa + static_cast<int64_t>(min(t.row0 + r, p.rows - 1)) * p.sa_stride + kb);
            }
            if (lane < 2) {
              const int nb = min(t.n0 / 128 + lane, n_scale_blocks - 1);
              cp_async_f32(&s.sb[stage][lane], p.sb + t.g * p.sb_stride + static_cast<int64_t>(nb) * k_blocks + kb);
            }
            asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(smem_u32(&s.full[stage])) : "memory");
          }
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    const int wg = warp_group - 1, warp = (tid / 32) % 4;
    const int r_lo = wg * 64 + warp * 16 + lane / 4;  // this thread's rows in the tile: r_lo and r_lo + 8
    int stage = 0;
    uint32_t phase = 0;
    float acc[BN / 2], tmp[BN / 2];
    for (int u = cluster; u < units; u += clusters) {
      const Tile t = decode(s, p.groups, u, n_blocks, rank);
      const int split = (t.n0 / 128 + 1) * 128 - t.n0;  // Block: columns [0, split) use the stage's sb[0], the rest sb[1]
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      const float *pa_lo = nullptr, *pa_hi = nullptr, *pb0 = nullptr, *pb1 = nullptr;
      float q0[4] = {1.f, 1.f, 1.f, 1.f}, q1[4] = {1.f, 1.f, 1.f, 1.f};  // scales of k-blocks kb and kb + 1
      if constexpr (kScalePrefetch) {
        const int last = p.rows - 1, n_scale_blocks = (p.n + 127) / 128;
        pa_lo = p.sa + static_cast<int64_t>(min(t.row0 + r_lo, last)) * p.sa_stride;
        pa_hi = p.sa + static_cast<int64_t>(min(t.row0 + r_lo + 8, last)) * p.sa_stride;
        pb0 = p.sb + t.g * p.sb_stride + static_cast<int64_t>(min(t.n0 / 128, n_scale_blocks - 1)) * k_blocks;
        pb1 = p.sb + t.g * p.sb_stride + static_cast<int64_t>(min(t.n0 / 128 + 1, n_scale_blocks - 1)) * k_blocks;
        q0[0] = __ldg(pa_lo); q0[1] = __ldg(pa_hi); q0[2] = __ldg(pb0); q0[3] = __ldg(pb1);
        if (k_blocks > 1) { q1[0] = __ldg(pa_lo + 1); q1[1] = __ldg(pa_hi + 1); q1[2] = __ldg(pb0 + 1); q1[3] = __ldg(pb1 + 1); }
      }
      for (int kb = 0; kb < k_blocks; ++kb) {
        Barrier::wait(&s.full[stage], phase);
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(tmp[i]);
        cute::warpgroup_arrive();
        const uint64_t da = smem_desc(s.a[stage] + wg * 64 * kBlockK), db = smem_desc(s.b[stage]);
#pragma unroll
        for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K inside the swizzled row: +2 in the descriptor
          mma_call<Mma<BN>>(da + 2 * kk, db + 2 * kk, tmp, kk > 0, std::make_index_sequence<BN / 2>{});
        cute::warpgroup_commit_batch();
        // The scales are read under the wgmmas: wgmma.fence (warpgroup_arrive) waits for every register write in
        // flight, so a load issued before it would stall the MMAs' issue for its whole latency.
        float a_lo = q0[0], a_hi = q0[1], b0 = q0[2], b1 = q0[3];
        if constexpr (kScaleWarp) {
#if CKGEMM_WS_FAKE_SCALES  // timing experiment only (wrong results): the promotion's math without its scale reads
          a_lo = 1.f + kb; a_hi = 2.f + kb; b0 = 0.5f; b1 = 0.25f;
#else
          a_lo = s.sa[stage][r_lo]; a_hi = s.sa[stage][r_lo + 8]; b0 = s.sb[stage][0]; b1 = s.sb[stage][1];
#endif
        }
        if constexpr (kScaleTma) {
          const int q = kb & 3;
          a_lo = s.sa4[stage][r_lo][q]; a_hi = s.sa4[stage][r_lo + 8][q]; b0 = s.sb4[stage][q]; b1 = s.sb4[stage][4 + q];
        }
        float q2[4] = {1.f, 1.f, 1.f, 1.f};
        if constexpr (kScalePrefetch) {
          if (kb + 2 < k_blocks) { q2[0] = __ldg(pa_lo + kb + 2); q2[1] = __ldg(pa_hi + kb + 2); q2[2] = __ldg(pb0 + kb + 2); q2[3] = __ldg(pb1 + kb + 2); }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) { q0[i] = q1[i]; q1[i] = q2[i]; }
        cute::warpgroup_wait<0>();
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(tmp[i]);
        if (lane < 2) Barrier::arrive(&s.empty[stage], lane, 1);  // lane 0 here, lane 1 the other CTA
        if (++stage == kStages) { stage = 0; phase ^= 1; }
        if constexpr (R == Recipe::Block) {
          const float s_lo0 = a_lo * b0, s_hi0 = a_hi * b0, s_lo1 = a_lo * b1, s_hi1 = a_hi * b1;
          if (BN == 128 || split == 128)  // the 128-wide B scale block boundary sits at column 128 or 64 of the tile
            promote<BN, 128>(acc, tmp, s_lo0, s_hi0, s_lo1, s_hi1);
          else
            promote<BN, 64>(acc, tmp, s_lo0, s_hi0, s_lo1, s_hi1);
        } else {
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[i] += tmp[i];
        }
      }
      store_tile<BN, R, Out>(p, t, acc, r_lo, lane);
    }
  }
  // Neither CTA leaves while the other may still multicast into it or arrive on its barriers.
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
}

}  // namespace ckgemm::ws
