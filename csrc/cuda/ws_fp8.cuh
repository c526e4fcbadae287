// ckgemm's own grouped GEMM mainloop for SM90 (packed MoE form, RC: A [rows, K], B [G, N, K]), fp8 and, unscaled,
// bf16/fp16 and int8, built from CuTe's wgmma/TMA atoms rather than a CUTLASS collective, so the tile and the
// promotion are ours. The op routes unscaled fp8 packed calls to its 128x192 A-multicast form (decode-sized ones
// making a wave of 256-wide tiles to its 128x256), block-scaled ones to its 128x256 or 128x192 A-multicast form,
// 16-bit packed calls of more than 64 rows a group to its 128x256 or 128x192 16-bit form (80-512 rows a group at
// K <= 2880 to its 192x192 one, rules.cpp), and int8 decode-sized
// ones making a wave of 256-wide tiles to its 128x256 int8 form (ws_instance.cuh, rules.cpp);
// every fp8 recipe and variant is checked and timed by benchmarks/native/bench_ws_fp8.py (docs/PERF_2026-12-02.md;
// its row recipe in the op trailed CUTLASS's on short K and many groups, docs/PERF_2026-12-03e.md).
//
//   - persistent CTAs of 384 threads in clusters of two: one producer warp group (one thread issues the TMA
//     loads of 128-byte swizzled K-major tiles into a ring of stages; the cluster's CTAs share A or B through
//     multicast) and two consumer warp groups, each owning 64 of the tile's 128 rows and all BN columns (the
//     16-bit 192x192 form: 512 threads, three consumer warp groups, BM = 192);
//   - every 128-deep k-block is four m64nBNk32 wgmmas into a scratch accumulator promoted into the fp32 one
//     (acc += tmp * scale): promotion interval 4, cuBLAS's precision without fast accumulation. Block scales
//     (1x128 A, 128x128 B) are that scale (the k-loop is instantiated per column where a 192-wide tile's B
//     scale block changes, so the promotion has no branch: 1-3% on the H200, docs/PERF_2026-12-04.md);
//     unscaled and row-scaled calls promote with 1 and apply row scales in the epilogue. The two warp groups
//     reach their promotions at different times, so one's FFMAs run under the other's wgmmas;
//   - 16-bit operands: the same 128-byte k-blocks (64 elements), four m64nBNk16 wgmmas each straight into the
//     fp32 accumulator with one k-block's batch in flight (k_loop_direct, ws_fp8_parts.cuh); the same bits as
//     CUTLASS's cooperative tile of that width; int8 the same with m64nBNk32 s8 wgmmas into an int32
//     accumulator, stored as its bits (exact);
//   - the tile scheduler and the per-group row offsets come from the device-resident group sizes (a prefix
//     sum in shared memory at the start of each CTA): no argument-building launch, no host sync,
//     graph-capturable with new sizes; a group's tiles are taken M-fastest so CTAs in flight share B in L2.
//     fp8 and int8 clusters take every clusters-th unit; 16-bit ones draw theirs in turn from a counter (Dyn,
//     ws_units.cuh), which keeps the units in flight a contiguous run where tiles take unequal times, unless
//     their groups average 2048 rows or more or CKGEMM_WS_UNITS says otherwise (ws_fp8_rules.h's units_drawn);
//   - a consumer warp group with no rows of its group in the tile (or a pair's tile past N) skips the
//     wgmmas and the store and only keeps the ring in step;
//   - the epilogue stores from registers: a warp group's whole m64 block without per-element bounds and, where
//     C's rows are 16-byte aligned, in 16-byte pieces after the lanes of each quad exchange values (ws_fp8_parts.cuh),
//     those with an L2 policy, evict_first by default (p.l2_c; the TMA loads take p.l2_a and p.l2_b, none by
//     default: CKGEMM_WS_L2, ws_fp8_rules.h's l2_policies).
//
// Rows of a tile past its group's end are computed on the next group's rows (or TMA's zero fill) and
// never stored. K need not be a multiple of 128 (TMA zero-fills the partial block).
#pragma once

#include "ws_fp8_parts.cuh"

namespace ckgemm::ws {

#ifndef CKGEMM_WS_AHEAD
#define CKGEMM_WS_AHEAD 1
#endif

// How block scales reach the consumers (Feed; Block recipe only, launch() picks it at run time: ws_fp8_launch.cuh):
// kFeedWarp, a producer warp copies the stage's scales with cp.async; kFeedTma, DeepGEMM's feed: the TMA thread
// bulk-copies the stage's A scales from an MN-major copy (ws_fp8_scales.cuh, made by the launch in the op's
// workspace) beside the operands, each consumer warp group copies the tile's B scales for every k-block into
// shared memory once per tile, and the k-loop reads B's before the full-barrier wait and A's before wgmma.fence.
// (Consumers reading the scales from global two k-blocks ahead, and TMA boxes of four k-blocks' scales with the
// stage's operands, were measured and removed: docs/PERF_2026-12-02.md.)
template <int BN, bool McastB, Recipe R, class Out, int Feed, In I = In::E4M3, bool Dyn = false, int BM = kBlockM>
__global__ void __launch_bounds__(threads_of(BM), 1) grouped_fp8_kernel(const __grid_constant__ Params p) {
  using Cfg = Config<BN, McastB, BM>;
  static_assert(Feed == kFeedWarp || Feed == kFeedTma, "scale feed: kFeedWarp or kFeedTma");
  static_assert(I == In::E4M3 || R == Recipe::None, "16-bit and int8 operands: unscaled only");
  static_assert(!Dyn || (in_bytes(I) == 2 && !McastB), "dynamic units (ws_units.cuh): 16-bit A-multicast pairs");
  static_assert(BM == kBlockM || in_bytes(I) == 2, "192-row tiles: 16-bit (no promotion)");
  static_assert(CKGEMM_WS_AHEAD == 1 || I == In::E4M3, "CKGEMM_WS_AHEAD 2: fp8 only (the direct k-loop never calls ahead)");
  constexpr bool kScaleWarp = R == Recipe::Block && Feed == kFeedWarp;
  constexpr bool kScaleTma = R == Recipe::Block && Feed == kFeedTma;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;
  // Dynamic shared memory starts 1024-aligned here (no static shared memory), as the 128-byte swizzle needs; a
  // pointer that keeps the shared window lets the compiler use LDS and 32-bit addresses.
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<Smem<BN, McastB, BM>*>(smem_raw);
  const int tid = threadIdx.x, warp_group = tid / 128, lane = tid % 32;
  const int rank = static_cast<int>(cute::block_rank_in_cluster());
  const int n_blocks = (p.n + BN - 1) / BN, k_blocks = (p.k + kBlockK - 1) / kBlockK;
  if (tid == 0) {
    for (int i = 0; i < kStages; ++i) {
      Barrier::init(&s.full[i], kScaleWarp ? 1 + 32 : 1);  // the TMA thread (+ the scale warp's lanes)
      Barrier::init(&s.empty[i], Cfg::kClusterConsumerWarps);
    }
    if constexpr (Dyn) init_units(s.units, 1 + Cfg::kClusterConsumerWarps);  // rank 1's TMA thread too
    cutlass::arch::fence_barrier_init();
  }
  build_table<McastB, BM>(s, p, n_blocks);
  cute::cluster_arrive_relaxed();
  cute::cluster_wait();
  const int units = s.unit_start[p.groups], cluster = blockIdx.x / 2, clusters = gridDim.x / 2;

  if (warp_group == 0) {  // producer: warp 0 issues TMA, warp 1 copies block scales
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    const int warp = tid / 32;
    if ((warp == 0 && lane == 0) || (kScaleWarp && warp == 1)) {
      int stage = 0, step = 0;
      uint32_t phase = 0;
      auto next = [&](int u) {  // dynamic units: rank 0 draws and publishes them, rank 1 reads them (16-bit only)
        if constexpr (!Dyn) return u + clusters;
        else return rank == 0 ? publish_unit(s.units, p.counter, step++) : read_unit(s.units, step++, true, 1u, 0);
      };
      for (int u = Dyn ? next(0) : cluster; u < units; u = next(u)) {
        const Tile t = decode<BN, McastB, BM>(s, p.groups, u, rank);
        for (int kb = 0; kb < k_blocks; ++kb) {
          Barrier::wait(&s.empty[stage], phase ^ 1);
          if (warp == 0) {
            Barrier::arrive_and_expect_tx(&s.full[stage], Cfg::kBytesA + Cfg::kBytesB + (kScaleTma ? kBulkScaleBytes : 0));
            const int k0 = kb * kBlockK;
            if constexpr (kScaleTma)  // A's scales of k-block kb, from row0 rounded down to 4 (16-byte aligned)
              bulk_load(s.sa[stage], p.sa + kb * p.sa_kb_stride + (t.row0 & ~3), kBulkScaleBytes, &s.full[stage]);
            if constexpr (McastB) {
              tma_load(&p.tma_a, &s.full[stage], s.a[stage], k0, t.row0, 0, false, false, p.l2_a);
              tma_load(&p.tma_b, &s.full[stage], s.b[stage] + rank * Cfg::kRowsB * kBlockK, k0,
                       t.n0 + rank * Cfg::kRowsB, t.g, true, true, p.l2_b);
            } else {
              tma_load(&p.tma_a, &s.full[stage], s.a[stage] + rank * Cfg::kRowsA * kBlockK, k0,
                       t.row0 + rank * Cfg::kRowsA, 0, false, true, p.l2_a);
              tma_load(&p.tma_b, &s.full[stage], s.b[stage], k0, t.n0, t.g, true, false, p.l2_b);
            }
          } else {
            for (int i = 0; i < kBlockM / 32; ++i) {
              const int r = lane + 32 * i;
              cp_async_f32(&s.sa[stage][r], a_scales(p, t.row0 + r) + kb);
            }
            if (lane < 2) cp_async_f32(&s.sb[stage][lane], b_block_scales(p, t.g, t.n0 / 128 + lane, k_blocks) + kb);
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
    constexpr int kHalves = Cfg::kHalves, kTmp = Cfg::kMmaN / 2;  // scratch registers of one wgmma group
    // int8's accumulator holds int32 (typed so, or ptxas serialises the wgmmas that write it: C7511)
    std::conditional_t<I == In::S8, uint32_t, float> acc[BN / 2];
    float tmp[kTmp];
    // The descriptors' low words at stage 0, warp-uniform through __shfl_sync (as DeepGEMM does), so that each
    // k-block's descriptors are a uniform-register add rather than vector arithmetic moved by R2UR.
    const uint32_t a_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.a[0] + wg * 64 * kBlockK), 0);
    const uint32_t b_lo0 = __shfl_sync(0xffffffffu, smem_desc_lo(s.b[0]), 0);
    // kFeedTma: each warp group copies a tile's B scales for every k-block into one of two shared buffers with
    // cp.async a tile ahead (no register is written, so the wgmma fences do not wait for the copies), and waits
    // for them at the tile's start: one named barrier a tile, no global-load latency before its first wgmma
    // (0.5-2% on the 256-wide tile against the copy at the tile's start, docs/PERF_2026-12-05.md).
    auto fetch_b = [&](const Tile& tn, int buf) {
      const float* b0p = b_block_scales(p, tn.g, tn.n0 / 128, k_blocks);
      const float* b1p = b_block_scales(p, tn.g, tn.n0 / 128 + 1, k_blocks);
      for (int i = tid % 128; i < 2 * k_blocks; i += 128)
        cp_async_f32(&s.sbt[buf][wg][i >= k_blocks][i % k_blocks], i < k_blocks ? b0p + i : b1p + (i - k_blocks));
      asm volatile("cp.async.commit_group;" ::: "memory");
    };
    int buf = 0, step = 0, u_next = 0;
    // Dynamic units: each warp reads its next unit once its k-loop is done and before the tile's stores. The
    // read's release of the ring slot (cluster scope: MEMBAR.GPU, ERRBAR) then waits only for the previous tile's
    // stores, long landed, not for this tile's 64 KB in flight, which cost a global round trip every tile: drawn
    // units on 8 x 4096^3 went from 0.983-0.987x CUTLASS's 128x256 to 0.992-0.995x (three H100 processes each;
    // the stride 1.015x; docs/PERF_2026-12-06f.md).
    auto read_next = [&] {
      if constexpr (Dyn) u_next = read_unit(s.units, step++, lane == 0, 0xffffffffu, 0);
    };
    auto next = [&](int u) {
      if constexpr (Dyn) return u_next;
      else return u + clusters;
    };
    read_next();
    Tile t_next{};
    if (!Dyn && cluster < units) {
      t_next = decode<BN, McastB, BM>(s, p.groups, cluster, rank);
      if constexpr (kScaleTma) fetch_b(t_next, 0);
    }
    for (int u = Dyn ? u_next : cluster; u < units; u = next(u)) {
      const Tile t = Dyn ? decode<BN, McastB, BM>(s, p.groups, u, rank) : t_next;
      if constexpr (kScaleTma) {  // this tile's copies landed (each thread's, then all of the warp group's), and
        // every thread is past the last tile's reads of the other buffer, which the next tile's copies now fill
        asm volatile("cp.async.wait_all;" ::: "memory");
        asm volatile("bar.sync %0, 128;" :: "r"(1 + wg) : "memory");
      }
      const int cur = buf;
      buf ^= 1;
      // The next tile and its B scales: here (CKGEMM_WS_AHEAD 1), or under the first k-block's wgmmas (2).
      auto ahead = [&] {
        if (!Dyn && u + clusters < units) {
          t_next = decode<BN, McastB, BM>(s, p.groups, u + clusters, rank);
          if constexpr (kScaleTma) fetch_b(t_next, cur ^ 1);
        }
      };
      // A warp group whose 64 rows hold none of the group's rows (DeepGEMM skips these too), or a multicast
      // pair's tile past N, has nothing to compute or store: it waits for its k-blocks and releases them, so
      // the ring stays in step (docs/PERF_2026-12-03e.md: up to 4% on many small groups).
      const bool skip = __shfl_sync(0xffffffffu, static_cast<int>(t.m_local0 + wg * 64 >= t.m_g || t.n0 >= p.n), 0);
      if (CKGEMM_WS_AHEAD == 1 || skip || k_blocks == 0) ahead();
      if (skip) {
        for (int kb = 0; kb < k_blocks; ++kb) {
          Barrier::wait(&s.full[stage], phase);
          if (lane < 2) Barrier::arrive(&s.empty[stage], lane, 1);  // lane 0 here, lane 1 the other CTA
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
        read_next();
        continue;
      }
      const int sa_off = r_lo + (t.row0 & 3);  // kFeedTma: this thread's first row in the stage's 132 A scales
      const int split = (t.n0 / 128 + 1) * 128 - t.n0;  // Block: columns [0, split) use the stage's sb[0], the rest sb[1]
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0;
      if constexpr (I != In::E4M3) {  // 16-bit and int8: no promotion
        k_loop_direct<BN, I>(s, acc, a_lo0 + 0, b_lo0 + 0, k_blocks, stage, phase, lane);
      } else {
        // The k-loop, instantiated per position of the B scale block boundary in the tile (a compile-time kSplit,
        // as DeepGEMM dispatches it) rather than branching on it in every k-block's promotion.
        auto k_loop = [&](auto split_c) {
          [[maybe_unused]] constexpr int kSplit = decltype(split_c)::value;
#pragma unroll (kScaleTma ? 8 : 1)
          for (int kb = 0; kb < k_blocks; ++kb) {
            [[maybe_unused]] float a_lo = 1.f, a_hi = 1.f, b0 = 1.f, b1 = 1.f;
            // kFeedTma: B's scales before the wait, as DeepGEMM reads them
            if constexpr (kScaleTma) { b0 = s.sbt[cur][wg][0][kb]; b1 = s.sbt[cur][wg][1][kb]; }
            Barrier::wait(&s.full[stage], phase);
            if constexpr (kScaleTma) { a_lo = s.sa[stage][sa_off]; a_hi = s.sa[stage][sa_off + 8]; }  // before the fence
#pragma unroll
            for (int h = 0; h < kHalves; ++h) {
#pragma unroll
              for (int i = 0; i < kTmp; ++i) cute::warpgroup_fence_operand(tmp[i]);
              cute::warpgroup_arrive();
              // B's half h: 128 rows of 128 bytes further into the stage (+1024 in the descriptor's 16-byte units)
              const uint32_t da = a_lo0 + stage * (Cfg::kBytesA / 16), db = b_lo0 + stage * (Cfg::kBytesB / 16) + h * 1024;
#pragma unroll
              for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K inside the swizzled row: +2 in the descriptor
                mma_call<Mma<Cfg::kMmaN>>(desc_of(da + 2 * kk), desc_of(db + 2 * kk), tmp, kk > 0,
                                          std::make_index_sequence<kTmp>{});
              cute::warpgroup_commit_batch();
              if constexpr (CKGEMM_WS_AHEAD == 2)
                if (h == 0 && kb == 0) ahead();
              if (h == 0) {
                // kFeedWarp reads the scales under the wgmmas (a load issued before wgmma.fence, which waits for every
                // register write in flight, would stall the MMAs' issue for its latency); kFeedTma read them above.
                if constexpr (kScaleWarp) {
                  a_lo = s.sa[stage][r_lo]; a_hi = s.sa[stage][r_lo + 8]; b0 = s.sb[stage][0]; b1 = s.sb[stage][1];
                }
              }
              cute::warpgroup_wait<0>();
#pragma unroll
              for (int i = 0; i < kTmp; ++i) cute::warpgroup_fence_operand(tmp[i]);
              if (h == kHalves - 1) {
                if (lane < 2) Barrier::arrive(&s.empty[stage], lane, 1);  // lane 0 here, lane 1 the other CTA
                if (++stage == kStages) { stage = 0; phase ^= 1; }
              }
              float* part = acc + h * kTmp;
              if constexpr (R == Recipe::Block) {
                const float s_lo0 = a_lo * b0, s_hi0 = a_hi * b0, s_lo1 = a_lo * b1, s_hi1 = a_hi * b1;
                if constexpr (BN == 256)  // a 256-wide tile starts on a 128-column scale block: one block per half
                  promote<128, 128>(part, tmp, h ? s_lo1 : s_lo0, h ? s_hi1 : s_hi0, 0.f, 0.f);
                else  // the B scale block boundary sits at column 128 or 64 of the tile
                  promote<BN, kSplit>(part, tmp, s_lo0, s_hi0, s_lo1, s_hi1);
              } else {
#pragma unroll
                for (int i = 0; i < kTmp; ++i) part[i] += tmp[i];
              }
            }
          }
        };
        if constexpr (R == Recipe::Block && BN == 192) {
          if (split != 128) k_loop(std::integral_constant<int, 64>{});
          else k_loop(std::integral_constant<int, 128>{});
        } else {
          k_loop(std::integral_constant<int, 128>{});
        }
      }
      read_next();
      store_tile<BN, R, Out>(p, t, acc, r_lo, lane);
    }
  }
  // Neither CTA leaves while the other may still multicast into it or arrive on its barriers (release: this
  // CTA's last arrivals on the peer's barriers land before the peer exits).
  cute::cluster_arrive();
  cute::cluster_wait();
}

}  // namespace ckgemm::ws
