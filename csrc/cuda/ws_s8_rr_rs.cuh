// ckgemm's own 8-bit RR grouped kernel (int8; e4m3 below), third form: B [G, K, N] (N contiguous) loaded by TMA as it is stored and
// never transposed in shared memory. The kernel computes the transposed product, C^T = B^T A^T: B's tile is the
// wgmma's register operand, A's tile its shared-memory operand (K-major, as TMA writes A for RC).
//
// Why a third form: the TMA form (ws_s8_rr_tma.cuh) reads and writes each k-block's B tile once more in shared
// memory (192 KB of traffic a k-block against RC's 128 KB) and runs prefill at 1.4-1.5x RC. Here the consumers
// read B's raw tile once, 16 bytes of K per ldmatrix row, straight into the K-major A fragment of an s8 wgmma
// (ws_s8_layout.h: one ldmatrix .x4 .trans and four byte permutes a warp per 32 of K).
//
// Two tiles (RsShape), BM rows x 128 * (256 / BM) columns, the same work a k-block:
//   - BM 128: 128 x 256, each consumer warp group two slabs of 64 columns, m64n128k32 wgmmas. Per k-block TMA
//     writes 48 KB, the wgmmas read A (16 KB) once per slab (64 KB), the ldmatrix B once (32 KB): 144 KB. As many
//     MMAs per byte of B as RC's 128 x 256 tile, so decode stays bound by B's bytes;
//   - BM 256: 256 x 128, one slab of 64 columns a warp group, m64n256k32 wgmmas: TMA 48 KB, wgmma reads 64 KB,
//     ldmatrix 16 KB: 128 KB, RC's. Twice the MMAs per byte of B: on decode's few rows a group the tensor cores
//     may pace it rather than B's bytes.
//
//   - 384 threads in clusters of two sharing A (two N-blocks of one M-block of BM rows), the fp8 kernel's schedule
//     and group table (as the other forms); a setmaxnreg split (producer 40, consumers 232): the consumers hold 128
//     int32 accumulators and a ring of fragment registers (32 or 16);
//   - one ring of kRsStages steps: a step's A tile (multicast, half from each CTA) and B's raw tile (boxes of 128
//     x 128, N halves, 128-byte swizzle), all issued by warp 0's lane 0 against one full barrier; the stage frees
//     when the consumers of both CTAs are done with it;
//   - consumer warp group wg computes its 64-column slabs for all BM rows: wgmmas whose M is the slab's columns and
//     N the tile's rows. Each 32 of K is one commit group (every slab); two groups stay in flight while the next
//     group's fragments are loaded, so a fragment slot (four, one per 32 of K) is rewritten only once its group is
//     done, and a stage is released once the next k-block's second group was issued (as CUTLASS's RS mainloop);
//   - the epilogue stores int32 pairs of adjacent columns (rs_column_of_row); rows past the group and columns
//     past N are not stored.
//
// What it takes is ws_s8_rr_rules.h's rule (the launch refuses the rest); B rows past K and columns past N are
// TMA's zero fill.
// The same kernel on e4m3 (F8: the 128 x 256 tile only, fp32 out), for packed unscaled fp8 RR calls: each
// warp group's k-block is a chain of four m64n128k32 wgmmas per slab, summed in the tensor core into a scratch
// and then added into the fp32 accumulator (promotion every 128 of K, as the RC kernels' interval 4). A chain
// waits for its wgmmas before its promotion, as the RC kernel's halves do (ws_fp8.cuh); the other warp group's
// chain runs meanwhile. The stage is released after the k-block's last chain. Two chains a slab of 64 rows each
// (m64n64, the next slab's fragments loaded under the first) ran 1.07-1.09x RC's time on DeepSeek-V3 prefill
// against this form's 1.03-1.04x (H100, docs/PERF_2026-12-06g.md) and were dropped.
#pragma once

#include "ws_s8_parts.cuh"

namespace ckgemm::ws::s8 {

template <int BM>
struct RsShape {
  static_assert(BM == 128 || BM == 256, "the register-operand form's tiles: 128 x 256 or 256 x 128");
  static constexpr int kSlabs = 256 / BM;          // 64-column slabs a consumer warp group
  static constexpr int kTileN = 128 * kSlabs;      // columns a tile
  static constexpr int kAcc = BM / 2;              // a slab's int32 accumulators a thread
  static constexpr int kBytesA = BM * kBlockK, kBytesB = kTileN * kBlockK, kRowsA = BM / 2;  // kRowsA: one CTA's
  using Mma = std::conditional_t<BM == 128, cute::SM90::GMMA::MMA_64x128x32_S32S8S8_RS_TN,
                                 cute::SM90::GMMA::MMA_64x256x32_S32S8S8_RS_TN>;
};

// The e4m3 form's wgmma: 64 columns (a slab) x the tile's 128 rows x 32 of K, into fp32; kF8Tmp: its scratch
// registers a thread.
using MmaF8 = cute::SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_RS_TN<>;
constexpr int kF8Tmp = 64;

template <int BM>
struct alignas(1024) SmemRs {
  uint8_t a[kRsStages][RsShape<BM>::kBytesA];
  uint8_t raw[kRsStages][RsShape<BM>::kBytesB];  // 128 (K) x 128 (N) halves, 128-byte swizzled rows
  uint64_t full[kRsStages], empty[kRsStages];
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
  int bad;
};
static_assert(sizeof(SmemRs<128>) <= 227 * 1024 && sizeof(SmemRs<256>) <= 227 * 1024, "shared memory of one SM");

constexpr int kRsProducerRegs = 40, kRsConsumerRegs = 232;

template <class M, class D, size_t... I>
__device__ __forceinline__ void mma_rs(const uint32_t (&a)[4], uint64_t db, D* d, std::index_sequence<I...>,
                                       bool accumulate = true) {
  M::fma(a[0], a[1], a[2], a[3], db, d[I]..., accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t (&d)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(addr));
}

// int32 out of one slab: this thread's wgmma rows g and g + 8 are columns n and n + 1 (rs_column_of_row), its
// wgmma columns 8j + 2q + {0, 1} the tile's rows. N % 16 == 0 (the rule), so a warp's 16 columns are all in or
// all out.
template <int BM>
__device__ __forceinline__ void store_slab_s32(const Params& p, const Tile& t, const uint32_t* acc, int n, int lane) {
  if (n >= p.n) return;
  const bool whole = t.m_local0 + BM <= t.m_g;
#pragma unroll
  for (int j = 0; j < BM / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 8 * j + 2 * (lane % 4) + h;
      if (!whole && t.m_local0 + m >= t.m_g) continue;
      int32_t* dst = p.c + static_cast<int64_t>(t.row0 + m) * p.ldc + n;
      const int v0 = static_cast<int>(acc[4 * j + h]), v1 = static_cast<int>(acc[4 * j + 2 + h]);
      if (p.vector_store) {
        *reinterpret_cast<int2*>(dst) = make_int2(v0, v1);
      } else {
        dst[0] = v0;
        dst[1] = v1;
      }
    }
}

// The A fragment of one 32 of K from the raw tile: raw is this lane's ldmatrix row there.
__device__ __forceinline__ void load_fragment(uint32_t raw, uint32_t even, uint32_t odd, uint32_t (&f)[4]) {
  uint32_t d[4];
  ldsm_x4_trans(raw, d);
  rs_fragment(d, even, odd, f);
}

// One k-block of the e4m3 form (128 x 256 tile): for each slab, its fragments (+32 rows of K each: the swizzle's
// row % 8 holds), then four wgmmas into tmp, waited for and added into the slab's accumulator. raw: this lane's
// ldmatrix rows of the stage for each slab; da: the descriptor's low word of the stage's A tile.
__device__ __forceinline__ void f8_kblock(uint32_t (&acc)[2][64], const uint32_t (&raw)[2], uint32_t da, uint32_t even,
                                          uint32_t odd) {
  float tmp[kF8Tmp];
  uint32_t frag[kBlockK / 32][4];
#pragma unroll
  for (int sl = 0; sl < 2; ++sl) {
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk) load_fragment(raw[sl] + kk * 32 * 128, even, odd, frag[kk]);
#pragma unroll
    for (int i = 0; i < kF8Tmp; ++i) cute::warpgroup_fence_operand(tmp[i]);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K inside A's swizzled row: +2 in the descriptor
      mma_rs<MmaF8>(frag[kk], desc_of(da + 2 * kk), tmp, std::make_index_sequence<kF8Tmp>{}, kk > 0);
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int i = 0; i < kF8Tmp; ++i) cute::warpgroup_fence_operand(tmp[i]);
#pragma unroll
    for (int i = 0; i < kF8Tmp; ++i) acc[sl][i] = __float_as_uint(__uint_as_float(acc[sl][i]) + tmp[i]);
  }
}

// F8: e4m3 operands, fp32 out (the accumulators hold fp32 bits, stored as they are), the 128 x 256 tile only.
template <int BM, bool F8>
__global__ void __launch_bounds__(kThreads, 1) grouped_s8_rr_rs_kernel(const __grid_constant__ Params p) {
  static_assert(!F8 || BM == 128, "the e4m3 form: the 128 x 256 tile");
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  using Sh = RsShape<BM>;
  constexpr int kSlabs = Sh::kSlabs, kAcc = Sh::kAcc;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemRs<BM>*>(smem_raw);
  const int tid = threadIdx.x, warp_group = tid / 128, lane = tid % 32;
  const int rank = static_cast<int>(cute::block_rank_in_cluster());
  const int n_blocks = (p.n + Sh::kTileN - 1) / Sh::kTileN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kRsStages; ++i) {
      Barrier::init(&s.full[i], 1);    // the TMA thread's expect_tx (A from both CTAs, this CTA's B)
      Barrier::init(&s.empty[i], 16);  // each consumer warp of both CTAs
    }
    cutlass::arch::fence_barrier_init();
  }
  build_table<false, BM>(s, p, n_blocks);
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
  const int units = s.unit_start[p.groups], cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
  auto phase = [](uint32_t step) { return (step / kRsStages) & 1; };

  if (warp_group == 0) {
    cutlass::arch::warpgroup_reg_dealloc<kRsProducerRegs>();
    if (tid == 0) {
      uint32_t step = 0;
      for (int u = cluster; u < units; u += clusters) {
        const Tile t = decode<Sh::kTileN, false, BM>(s, p.groups, u, rank);
        for (int kb = 0; kb < k_blocks; ++kb, ++step) {
          const uint32_t r = step % kRsStages;
          Barrier::wait(&s.empty[r], phase(step) ^ 1);
          Barrier::arrive_and_expect_tx(&s.full[r], Sh::kBytesA + Sh::kBytesB);
          tma_load(&p.tma_a, &s.full[r], s.a[r] + rank * Sh::kRowsA * kBlockK, kb * kBlockK,
                   t.row0 + rank * Sh::kRowsA, 0, false, true);
          for (int h = 0; h < kSlabs; ++h)  // coordinates innermost first: n, k, group
            tma_load(&p.tma_b, &s.full[r], s.raw[r] + h * kRawHalfBytes, t.n0 + h * 128, kb * kBlockK, t.g, true,
                     false);
        }
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<kRsConsumerRegs>();
    const int wg = warp_group - 1, warp = (tid / 32) % 4;
    const uint32_t even = rs_select(lane, 0), odd = rs_select(lane, 1);
    // This lane's ldmatrix row in stage 0's raw tile for each slab: chunk (wg * kSlabs + slab) * 4 + warp.
    uint32_t ldsm0[kSlabs];
#pragma unroll
    for (int sl = 0; sl < kSlabs; ++sl)
      ldsm0[sl] = smem_u32(s.raw[0]) + raw_offset(rs_ldsm_k(lane), (wg * kSlabs + sl) * 4 + warp);
    const uint32_t a_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.a[0]), 0);
    auto release = [&](uint32_t step) {  // lane r arrives on rank r's barrier (A is multicast)
      if (lane < 2) Barrier::arrive(&s.empty[step % kRsStages], lane, 1);
    };
    uint32_t acc[kSlabs][kAcc];
    auto fence_acc = [&] {  // the accumulators stay in registers, ordered against the wgmmas that write them
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) cute::warpgroup_fence_operand(acc[sl][i]);
    };
    uint32_t step = 0;
    for (int u = cluster; u < units; u += clusters) {
      const Tile t = decode<Sh::kTileN, false, BM>(s, p.groups, u, rank);
      const int n_wg = t.n0 + wg * 64 * kSlabs;
      if (n_wg >= p.n) {  // no columns of this warp group (N's last tile, or a pair's tile past N): keep the ring in step
        for (int kb = 0; kb < k_blocks; ++kb, ++step) {
          Barrier::wait(&s.full[step % kRsStages], phase(step));
          release(step);
        }
        continue;
      }
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[sl][i] = 0;
      if constexpr (F8) {
        for (int kb = 0; kb < k_blocks; ++kb, ++step) {
          const uint32_t r = step % kRsStages;
          Barrier::wait(&s.full[r], phase(step));
          const uint32_t raw[2] = {ldsm0[0] + r * Sh::kBytesB, ldsm0[kSlabs - 1] + r * Sh::kBytesB};
          f8_kblock(acc, raw, a_lo0 + r * (Sh::kBytesA / 16), even, odd);
          release(step);  // the k-block's last chain is done: the stage's A and raw B are read
        }
      } else {
        uint32_t frag[kBlockK / 32][kSlabs][4];  // a slot per 32 of K: every slab's fragment
        for (int kb = 0; kb < k_blocks; ++kb, ++step) {
          const uint32_t r = step % kRsStages;
          Barrier::wait(&s.full[r], phase(step));
          const uint32_t da = a_lo0 + r * (Sh::kBytesA / 16);
          fence_acc();
#pragma unroll
          for (int kk = 0; kk < kBlockK / 32; ++kk) {
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl) {
              uint32_t d[4];
              ldsm_x4_trans(ldsm0[sl] + r * Sh::kBytesB + kk * 32 * 128, d);  // +32 rows of K: the swizzle's row % 8 holds
              rs_fragment(d, even, odd, frag[kk][sl]);
            }
            cute::warpgroup_arrive();
            // +32 bytes along K inside A's swizzled row: +2 in the descriptor
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl)
              mma_rs<typename Sh::Mma>(frag[kk][sl], desc_of(da + 2 * kk), acc[sl], std::make_index_sequence<kAcc>{});
            cute::warpgroup_commit_batch();
            cute::warpgroup_wait<2>();  // the group before last is done: its fragment slot and, at kk 1, the last stage
            if (kk == 1 && kb > 0) release(step - 1);
          }
          fence_acc();
        }
        cute::warpgroup_wait<0>();
        fence_acc();
        if (k_blocks > 0) release(step - 1);
      }
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
        store_slab_s32<BM>(p, t, acc[sl], n_wg + sl * 64 + warp * 16 + rs_column_of_row(lane / 4), lane);
    }
  }
  cute::cluster_arrive();  // release: this CTA's last arrivals on the peer's barriers land before the peer exits
  cute::cluster_wait();
}

}  // namespace ckgemm::ws::s8
