// CUTLASS SM90 ptr-array grouped GEMM, assembled from named parts (CUTLASS 3.x/4.x style): element
// types, B layout, tile, cluster, mainloop and epilogue schedule, and the scaling of the epilogue.
//
// Unscaled: D = A @ op(B) (alpha 1, no C operand), accumulating in ElementAcc (float, or int32 for int8 so
// results are exact). Row-scaled: D = cast((acc * sA[m]) * sB[n]) through an EVT epilogue (column broadcast
// of per-row A scales, row broadcast of per-column B scales, one pointer per group). Block-scaled: CUTLASS's
// blockwise mainloop promotes each 128-deep K block with sA[m, kb] * sB[nb, kb] (K-major scale layouts,
// rebuilt per group on the device from the group's shape), then D = cast(acc). SwapAB schedules (decode-sized
// M) run the same on the transposed problem: D^T = B A^T, the scales trading places with the operands.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include "../ckgemm.h"

namespace ckgemm::cuda {

using namespace cute;

// Schedules (their display names are rules.cpp's). Large per-group M: two consumer warp groups share a
// tile; TMA-store epilogue.
struct Cooperative {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
  static constexpr bool kDirectStore = false, kBlockwise = false, kSwapAB = false;
};
// Decode-sized per-group M (8-bit RC): the kernel computes D^T = B A^T, so the weights fill the 128- or
// 256-row side of the tile (m64 MMAs, one or two per warp group) and the group's few rows its 32-wide N side
// (padded to 32 rows, not 64). Cooperative warp groups, TMA-store epilogue into a column-major view of D.
struct CooperativeSwapAB {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
  static constexpr bool kDirectStore = false, kBlockwise = false, kSwapAB = true;
};
// Small M or any output alignment: ping-pong warp groups; the epilogue stores straight from registers
// (no TMA), so D needs no 16-byte alignment (no fusion: unscaled only).
struct PingpongDirectStore {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::PtrArrayNoSmemWarpSpecialized;
  static constexpr bool kDirectStore = true, kBlockwise = false, kSwapAB = false;
};
// Small M with a fused (scaled) epilogue: ping-pong with the TMA-store epilogue.
struct Pingpong {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
  static constexpr bool kDirectStore = false, kBlockwise = false, kSwapAB = false;
};
struct CooperativeBlockwise {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
  static constexpr bool kDirectStore = false, kBlockwise = true, kSwapAB = false;
};
struct CooperativeBlockwiseSwapAB : CooperativeBlockwise {  // decode-sized M, block scales
  static constexpr bool kSwapAB = true;
};
struct PingpongBlockwise {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8Blockwise;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
  static constexpr bool kDirectStore = false, kBlockwise = true, kSwapAB = false;
};

// The epilogue fusion of a scaling.
template <Scaling S, class ElementOut, class ElementAcc, class Tile>
struct FusionFor {  // unscaled and block-scaled: D = acc (alpha 1, no C), computed in the accumulator's type
  using Compute = ElementAcc;  // int32 for int8: exact
  using Type = cutlass::epilogue::fusion::LinearCombination<ElementOut, Compute, void, Compute>;
};
template <class ElementOut, class ElementAcc, class Tile>
struct FusionFor<Scaling::Row, ElementOut, ElementAcc, Tile> {
  using Compute = float;
  using ScaleA = cutlass::epilogue::fusion::Sm90ColBroadcast<0, Tile, float*, float, Stride<_1, _0, _0>>;
  using ScaleB = cutlass::epilogue::fusion::Sm90RowBroadcast<0, Tile, float*, float, Stride<_0, _1, _0>>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;
  using Mul = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float,
                                                     cutlass::FloatRoundStyle::round_to_nearest>;
  using Cast = cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::Identity, ElementOut, float,
                                                      cutlass::FloatRoundStyle::round_to_nearest>;
  using RowScaled = cutlass::epilogue::fusion::Sm90EVT<Mul, Acc, ScaleA>;  // acc * sA[m]
  using Type = cutlass::epilogue::fusion::Sm90EVT<Cast, cutlass::epilogue::fusion::Sm90EVT<Mul, RowScaled, ScaleB>>;
};

// K-major scale layouts ([M, ceil(K/128)] and [ceil(N/128), ceil(K/128)] row-major), 1 x 128 / 128 x 128 in
// the kernel's (M, N); a SwapAB kernel's rows are B's, so its granularities are 128 x 128 / 1 x 128.
template <bool Swap>
struct BlockScaleFor {
  using Type = cutlass::detail::Sm90BlockwiseScaleConfig<1, kScaleBlock, kScaleBlock, cute::GMMA::Major::K,
                                                         cute::GMMA::Major::K>;
};
template <>
struct BlockScaleFor<true> {
  using Type = cutlass::detail::Sm90BlockwiseScaleConfig<kScaleBlock, 1, kScaleBlock, cute::GMMA::Major::K,
                                                         cute::GMMA::Major::K>;
};

// The kernel's view of a logical tile (rows of A x columns of B x K) and cluster: swapped for SwapAB.
template <class Shape3, bool Swap>
struct KernelShape {
  using Type = Shape3;
};
template <class M, class N, class K>
struct KernelShape<Shape<M, N, K>, true> {
  using Type = Shape<N, M, K>;
};

// TileShape_ and ClusterShape_ are logical (M rows of A, N columns of B); with a SwapAB schedule the kernel
// runs on (N, M) and its operands are (B, A): for RC both stay K-major (same layout tags), and D is
// written through a column-major view.
template <class ElementIn_, class ElementOut_, class ElementAcc_, class LayoutB_, class TileShape_,
          class ClusterShape_, class Schedule_, Scaling Scaling_>
struct GroupedGemmKernel {
  using ElementIn = ElementIn_;
  using ElementOut = ElementOut_;
  using ElementAcc = ElementAcc_;
  using Schedule = Schedule_;
  static constexpr bool kSwapAB = Schedule::kSwapAB;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = LayoutB_;
  using LayoutD = std::conditional_t<kSwapAB, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using TileShape = typename KernelShape<TileShape_, kSwapAB>::Type;
  using ClusterShape = typename KernelShape<ClusterShape_, kSwapAB>::Type;
  static constexpr Scaling kScaling = Scaling_;
  using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
  static_assert(!Schedule::kBlockwise || kScaling == Scaling::Block, "blockwise schedules are for block scales");
  static_assert(!Schedule::kDirectStore || kScaling == Scaling::None, "the direct-store epilogue fuses nothing");
  static_assert(!kSwapAB || std::is_same_v<LayoutB, cutlass::layout::ColumnMajor>,
                "SwapAB instances are RC (A and B both K-major)");
  using BlockScale = typename BlockScaleFor<kSwapAB>::Type;
  using LayoutSFA = decltype(BlockScale::deduce_layoutSFA());
  using LayoutSFB = decltype(BlockScale::deduce_layoutSFB());

  static constexpr int kAlignIn = 16 / sizeof(ElementIn);
  static constexpr int kAlignOut = Schedule::kDirectStore ? 1 : 16 / sizeof(ElementOut);

  // Row scales: the column broadcast scales the kernel's rows, the row broadcast its columns (for SwapAB
  // the builder hands them B's and A's scales).
  using Fusion = typename FusionFor<kScaling, ElementOut, ElementAcc, TileShape>::Type;
  using ElementCompute = typename FusionFor<kScaling, ElementOut, ElementAcc, TileShape>::Compute;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute,
      void, LayoutD*, kAlignOut,  // no C operand
      ElementOut, LayoutD*, kAlignOut, typename Schedule::Epilogue, Fusion>::CollectiveOp;

  using OperandA = std::conditional_t<kScaling == Scaling::Block, cute::tuple<LayoutA*, LayoutSFA*>, LayoutA*>;
  using OperandB = std::conditional_t<kScaling == Scaling::Block, cute::tuple<LayoutB*, LayoutSFB*>, LayoutB*>;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementIn, OperandA, kAlignIn, ElementIn, OperandB,
      kAlignIn, ElementAcc, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Schedule::Mainloop>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

}  // namespace ckgemm::cuda
