// The types of ckgemm's own grouped kernel (ws_fp8.cuh; fp8, bf16/fp16 and int8 operands): recipes, operand types,
// tile configuration, kernel parameters and the shared-memory layout.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cute/arch/mma_sm90_desc.hpp"
#include "cute/arch/mma_sm90_gmma.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/arch/reg_reconfig.h"
#include "cute/arch/cluster_sm90.hpp"
#include "ws_fp8_schedule.h"
#include "ws_units.cuh"

namespace ckgemm::ws {

enum class Recipe : int { None = 0, Row = 1, Block = 2 };

// The operands' element. The kernel works in bytes along K: a k-block is 128 bytes of K (128 fp8 or int8 elements,
// 64 bf16/fp16 ones), its stage and its TMA boxes the same for every element; only the wgmma differs (k32 fp8
// ones promoted every k-block; k16 16-bit and k32 int8 ones straight into the accumulator, fp32 or int32,
// unscaled only).
enum class In : int { E4M3 = 1, BF16 = 2, F16 = 3, S8 = 4 };
constexpr int in_bytes(In in) { return in == In::E4M3 || in == In::S8 ? 1 : 2; }

// How a block-scaled call's scales reach the consumers (ws_fp8.cuh): a producer warp's cp.async per stage, or
// DeepGEMM's feed (the TMA thread's bulk copy of an MN-major copy of A's, B's per tile in shared memory). The
// values are CKGEMM_WS_SCALES's (ws_fp8_launch.cuh).
constexpr int kFeedWarp = 0, kFeedTma = 2;

// BN: tile columns; BM: tile rows, 128 (two consumer warp groups, one m64 block of rows each) or, 16-bit only (no
// promotion), 192 x 192 sharing A (three consumer warp groups in 512 threads: 20% fewer operand bytes loaded per
// output than the 128 x 256 pair, as cuBLAS's 192-row tiles on Mixtral's shapes, docs/PERF_2026-12-07c.md; ptxas
// holds each instruction of a 512-thread kernel to its 128 registers a thread whatever setmaxnreg says, so one
// m64n224 wgmma, 112 accumulators, needs 138 and does not compile, while m64n192's 96 do, without spills).
// Clusters of two CTAs share one operand's tile through TMA multicast (each CTA loads
// half of it into both): McastB pairs two M-blocks of one group and N-block (B shared), else two N-blocks of
// one M-block (A shared). A pair's second tile past the group's M-blocks (or past N) is computed on rows or
// columns that are never stored, so both CTAs keep the shared ring in step.
// BN 256 runs each k-block as two 128-column halves (their wgmmas into one 64-register scratch, each half
// promoted before the next starts), so its registers are BN 128's plus the wider fp32 accumulator.
template <int BN, bool McastB, int BM = kBlockM>
struct Config {
  static_assert((BN == 128 || BN == 192 || BN == 256) && BN <= kMaxTileN, "tile columns: 128, 192 or 256");
  static_assert(BM == kBlockM || (BM == 192 && BN == 192 && !McastB), "tile rows: 128, or 192 x 192 sharing A");
  static constexpr int kConsumers = BM / 64;  // consumer warp groups, one m64 block of rows each
  static constexpr int kClusterConsumerWarps = 2 * 4 * kConsumers;  // both CTAs': each arrives on every empty barrier
  static constexpr int kThreadsCta = threads_of(BM);
  static constexpr int kHalves = BN == 256 ? 2 : 1, kMmaN = BN / kHalves;  // columns of one wgmma
  // Stages: what fits in shared memory beside the scales' and the table's (about 26 KB; 10 KB at 192 rows, which
  // hold no block scales).
  static constexpr int kStages = BM == 192 || BN == 256 ? 4 : BN == 192 ? 5 : 6;
  static constexpr int kBytesA = BM * kBlockK, kBytesB = BN * kBlockK;
  // setmaxnreg split of the 64K registers (128 x producer + 128 x kConsumers x consumer <= 65536): at 192 rows the
  // producer 32 and three consumer warp groups 160, as FlashAttention-3's three-consumer split (without it their
  // loop spills 96 bytes; with it none)
  static constexpr int kProducerRegs = BM == 192 ? 32 : BN <= 128 ? 56 : 40;
  static constexpr int kConsumerRegs = BM == 192 ? 160 : BN <= 128 ? 224 : 232;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "setmaxnreg split over 64K registers");
  static constexpr int kRowsA = McastB ? BM : BM / 2, kRowsB = McastB ? BN / 2 : BN;  // rows one CTA loads
  static constexpr int kScaleKBlocks = BM == kBlockM ? kMaxKBlocks : 1;  // kFeedTma's B scales: 128-row tiles only
};

struct Params {
  CUtensorMap tma_a;  // [rows, k bytes] of any element, box 128 bytes x Config::kRowsA
  CUtensorMap tma_b;  // [groups, n, k bytes], box 1 x Config::kRowsB x 128 bytes
  void* c;
  int64_t ldc;
  const void* sizes;
  int sizes_int64, groups, rows, n, k, vector_store;  // k in bytes; vector_store: 0 scalar, 1 pairs, 2 16-byte pieces
  const float* sa;  // Row: sa[row * sa_stride]; Block: sa[row * sa_stride + kb * sa_kb_stride]
  int64_t sa_stride, sa_kb_stride;
  const float* sb;  // Row: sb[g * sb_stride + col]; Block: sb[g * sb_stride + nb * kblocks + kb]
  int64_t sb_stride;
  int* sizes_ok;    // null: bad sizes trap; else 1 / 0 (and nothing computed on 0)
  int* counter;     // dynamic units (the kernel's Dyn): the units drawn so far, zeroed by the launch (ws_units.cuh)
  // L2 cache policies of A's and B's TMA loads and C's 16-byte stores (CKGEMM_WS_L2, ws_fp8_rules.h's
  // l2_policies): 0 is no hint, the plain instruction.
  uint64_t l2_a, l2_b, l2_c;
};

template <int BN, bool McastB, int BM = kBlockM>
struct alignas(1024) Smem {
  uint8_t a[Config<BN, McastB, BM>::kStages][Config<BN, McastB, BM>::kBytesA];
  uint8_t b[Config<BN, McastB, BM>::kStages][Config<BN, McastB, BM>::kBytesB];
  // Block scales. A's of the stage: 128 rows (kFeedWarp) or 132 from the tile's first row rounded down to 4
  // (kFeedTma's bulk copy); the tile's two B blocks of the stage (kFeedWarp); and, per consumer warp group, the
  // tile's two B blocks for every k-block (kFeedTma).
  float sa[Config<BN, McastB, BM>::kStages][kBulkScaleRows];
  float sb[Config<BN, McastB, BM>::kStages][2];
  float sbt[2][2][2][Config<BN, McastB, BM>::kScaleKBlocks];  // [buffer][warp group][B block][k-block]: a tile's, and
  // the next tile's in flight
  uint64_t full[Config<BN, McastB, BM>::kStages], empty[Config<BN, McastB, BM>::kStages];
  UnitRing units;  // dynamic units (ws_units.cuh)
  int row_start[kMaxGroups + 1], unit_start[kMaxGroups + 1];
  int bad;
};

template <int MmaN>
using Mma = std::conditional_t<MmaN == 128, cute::SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_SS_TN<>,
                               cute::SM90::GMMA::MMA_64x192x32_F32E4M3E4M3_SS_TN<>>;

// The wgmma of a whole tile row straight into the accumulator (m64nBN, both operands K-major in shared memory):
// k16 16-bit ones into fp32, k32 int8 ones into int32.
namespace gmma = cute::SM90::GMMA;
template <int N, class M128, class M192, class M256>
using PickN = std::conditional_t<N == 128, M128, std::conditional_t<N == 192, M192, M256>>;
template <In I, int N>
using MmaDirect = std::conditional_t<
    I == In::BF16,
    PickN<N, gmma::MMA_64x128x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>,
          gmma::MMA_64x192x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>,
          gmma::MMA_64x256x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>>,
    std::conditional_t<
        I == In::S8,
        PickN<N, gmma::MMA_64x128x32_S32S8S8_SS_TN, gmma::MMA_64x192x32_S32S8S8_SS_TN,
              gmma::MMA_64x256x32_S32S8S8_SS_TN>,
        PickN<N, gmma::MMA_64x128x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>,
              gmma::MMA_64x192x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>,
              gmma::MMA_64x256x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>>>>;

}  // namespace ckgemm::ws
