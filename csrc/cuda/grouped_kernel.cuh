// CUTLASS SM90 ptr-array grouped GEMM, assembled from named parts (CUTLASS 3.x/4.x style):
// element types, B layout, tile, cluster, mainloop schedule and epilogue schedule.
//
// Every instance writes D = alpha * (A @ op(B)) with alpha = 1 and no C operand (ElementC = void),
// accumulating in ElementAcc (float, or int32 for int8 so results are exact).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

namespace ckgemm::cuda {

using namespace cute;

// Large per-group M: two consumer warp groups share a 128-row tile; TMA-store epilogue.
struct Cooperative {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
  static constexpr bool kDirectStore = false;
};

// Small M or any output alignment: ping-pong warp groups on 64-row tiles; the epilogue stores
// straight from registers (no TMA), so D needs no 16-byte alignment.
struct PingpongDirectStore {
  using Mainloop = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::PtrArrayNoSmemWarpSpecialized;
  static constexpr bool kDirectStore = true;
};

template <class ElementIn_, class ElementOut_, class ElementAcc_, class LayoutB_, class TileShape_,
          class ClusterShape_, class Schedule_>
struct GroupedGemmKernel {
  using ElementIn = ElementIn_;
  using ElementOut = ElementOut_;
  using ElementAcc = ElementAcc_;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = LayoutB_;
  using LayoutD = cutlass::layout::RowMajor;
  using Schedule = Schedule_;
  using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;

  static constexpr int kAlignIn = 16 / sizeof(ElementIn);
  static constexpr int kAlignOut = Schedule::kDirectStore ? 1 : 16 / sizeof(ElementOut);

  using Fusion = cutlass::epilogue::fusion::LinearCombination<ElementOut, ElementAcc, void, ElementAcc>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape_, ClusterShape_,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementAcc,
      void, LayoutD*, kAlignOut,  // no C operand
      ElementOut, LayoutD*, kAlignOut, typename Schedule::Epilogue, Fusion>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementIn, LayoutA*, kAlignIn, ElementIn, LayoutB*,
      kAlignIn, ElementAcc, TileShape_, ClusterShape_,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Schedule::Mainloop>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

}  // namespace ckgemm::cuda
