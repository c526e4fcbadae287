// ckgemm's persistent grouped-GEMM kernel over CK-tile parts, and the host entry points of one
// instance. Each csrc/hip/instances/*.hip file includes this and instantiates one instance<...>().
//
// Why not ck_tile::GroupedGemmKernel / QuantGroupedGemmKernel as they are in the pinned CK (G3,
// e31a7a4f; research/ck_2026-12.md section 2):
//  * upstream bug: no LDS barrier between the persistent kernel's tiles (the next tile's prologue
//    overwrites LDS the previous tile's CShuffle epilogue still reads); fixed upstream only in
//    rocm-libraries 45ac153a / 705d00c1, which no registry ships. Ours: inter_tile_barrier() below;
//  * upstream example bug: hot loop / tail and split-K mode taken from group 0 for every group. Ours:
//    chosen per tile from that group's K, and k_batch is always 1 (no split-K; C written with set);
//  * upstream example bug: the launch passes gemm_descs.size() after MakeKargs dropped empty groups.
//    Ours: the runner passes the count of the records it built;
//  * its kernel-argument layout (GemmTransKernelArg) changed between and within CK generations.
// So the loop over groups and tiles is ours (reading ckgemm's GroupArgs), and each tile runs CK's
// own view/window builders, pipeline and CShuffle epilogue (with CK's row/column scale windows for
// the scaled instances: the RowCol recipe of CK's grouped quant kernel, composed into this loop).
#pragma once

#include <hip/hip_runtime.h>

#include "ck_gemm.hpp"
#include "group_args.h"
#include "memo.h"

namespace ckgemm {
namespace ck {

template <class Gemm>
__host__ __device__ typename Gemm::Kernel::KernelArgs ck_args(const GroupArgs& g) {
  return typename Gemm::Kernel::KernelArgs{{g.a}, {g.b}, {}, g.c, g.m, g.n, g.k, {g.lda}, {g.ldb}, {}, g.ldc, 1};
}

// The barrier between two tiles of one workgroup. Open upstream report ROCm/rocm-libraries#10893:
// block_sync_lds() is a bare s_waitcnt + s_barrier with no compiler fence, and an LLVM scheduling
// change sank LDS stores across it (gfx942 runs failed 57 of 60 times). The fix it asks for: a
// workgroup-scope release fence on LDS before the barrier and an acquire fence after it.
__device__ inline void inter_tile_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup", "local");
  ck_tile::block_sync_lds();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup", "local");
}

// Row scales of A (broadcast along N) and column scales (broadcast along M) as M x N views, the way
// CK's RowColQuant GEMM kernel builds them (gemm_quant_kernel.hpp); loads beyond M or N read 0 and
// feed only elements the C store drops.
template <class Gemm>
__device__ auto scale_windows(const GroupArgs& g, index_t i_m, index_t i_n) {
  using ck_tile::address_space_enum;
  using ck_tile::number;
  const auto rows = ck_tile::make_naive_tensor_view<address_space_enum::global>(
      g.sa, ck_tile::make_tuple(g.m, g.n), ck_tile::make_tuple(1, 0), number<1>{}, number<1>{});
  const auto cols = ck_tile::make_naive_tensor_view<address_space_enum::global>(
      g.sb, ck_tile::make_tuple(g.m, g.n), ck_tile::make_tuple(0, 1), number<1>{}, number<1>{});
  const auto lengths = ck_tile::make_tuple(number<Gemm::Tile::M>{}, number<Gemm::Tile::N>{});
  return ck_tile::make_tuple(ck_tile::make_tile_window(rows, lengths, {i_m, i_n}),
                             ck_tile::make_tile_window(cols, lengths, {i_m, i_n}));
}

// One output tile (i_m, i_n) of one group, by the whole workgroup.
template <class Gemm>
__device__ void run_tile(const GroupArgs& g, index_t i_m, index_t i_n) {
  using Kernel = typename Gemm::Kernel;
  using Pipeline = typename Gemm::Pipeline;
  using Epilogue = typename Gemm::Epilogue;

  const auto kargs = ck_args<Gemm>(g);
  const auto& views = Kernel::template MakeGemmTensorViews<Epilogue::MemoryOperation>(
      {static_cast<const typename Gemm::AB*>(g.a)}, {static_cast<const typename Gemm::AB*>(g.b)}, {},
      static_cast<typename Gemm::COut*>(g.c), kargs, g.k);  // k_batch 1: one split, all of K
  const auto& pad_views = Kernel::MakeGemmPadViews(views);
  auto windows = Kernel::MakeGemmTileWindows(pad_views, i_m, i_n);

  // Hot loop and tail from this group's K (CompV4's counts 1 and 3 never get here: rules.h).
  const index_t k_loops = __builtin_amdgcn_readfirstlane(Gemm::Partitioner::GetLoopNum(g.k));
  const bool hot = Pipeline::BlockHasHotloop(k_loops);
  const ck_tile::TailNumber tail = Pipeline::GetBlockLoopTailNum(k_loops);

  __shared__ char smem0[Kernel::GetSmemSize()];
  const auto& acc = [&]() {
    if constexpr (Gemm::Tile::DoubleLds) {
      __shared__ char smem1[Kernel::GetSmemSize()];
      return Pipeline{}(windows.at(Kernel::I0), windows.at(Kernel::I1), k_loops, hot, tail, smem0, smem1);
    } else {
      return Pipeline{}(windows.at(Kernel::I0), windows.at(Kernel::I1), k_loops, hot, tail, smem0);
    }
  }();
  auto& c_window = windows.at(Kernel::I3);
  const auto& d_windows = windows.at(Kernel::I2);
  if constexpr (Gemm::kScaled) {
    // C = (acc * sa[row]) * sb[col] in fp32, rounded once to C's type (CK's MultiDMultiply); int8's
    // exact int32 accumulator is converted to fp32 first.
    const auto acc_f32 = ck_tile::cast_tile<float>(acc);
    auto [sa_window, sb_window] = scale_windows<Gemm>(g, i_m, i_n);
    Epilogue{}(c_window, acc_f32, d_windows, smem0, sa_window, sb_window);
  } else {
    Epilogue{}(c_window, acc, d_windows, smem0);
  }
}

// Persistent grid-stride loop over the tiles of all groups: group g owns the tile range
// [sum of tiles of groups < g, + its own). M, N, K come from device memory, so the packed form
// needs no host sync; groups with M == 0 or N == 0 own no tiles.
template <class Gemm>
__global__ void __launch_bounds__(Gemm::kBlockSize) __attribute__((amdgpu_waves_per_eu(Gemm::Tile::MinWavesPerEu)))
grouped_gemm_persistent(const GroupArgs* __restrict__ groups, int group_count) {
#if defined(__HIP_DEVICE_COMPILE__)
  using Partitioner = typename Gemm::Partitioner;
  const index_t grid = __builtin_amdgcn_readfirstlane(gridDim.x);
  index_t tile = __builtin_amdgcn_readfirstlane(blockIdx.x);
  index_t group_begin = 0;
  bool lds_used = false;
  for (int gi = 0; gi < group_count; ++gi) {
    const GroupArgs g = groups[gi];
    const index_t group_end = group_begin + Partitioner::GridSize(g.m, g.n);
    for (; tile < group_end; tile += grid) {
      if (lds_used) inter_tile_barrier();  // see the upstream bugs at the top of this file
      lds_used = true;
      const auto [tile_m, tile_n] = Partitioner{g.m, g.n}.GetOutputTileIndex(tile - group_begin);
      run_tile<Gemm>(g, __builtin_amdgcn_readfirstlane(tile_m * Partitioner::MPerBlock),
                     __builtin_amdgcn_readfirstlane(tile_n * Partitioner::NPerBlock));
    }
    group_begin = group_end;
  }
#else
  (void)groups;
  (void)group_count;
#endif
}

// ---- host entry points (instance.h) ----

template <class Gemm>
bool ck_accepts(const GroupArgs& g) {
  static ShapeMemo memo;  // CK's check queries the device properties on every call: memo.h
  return memo.get(g.m, g.n, g.k, [&] { return Gemm::Kernel::IsSupportedArgument(ck_args<Gemm>(g)); });
}

template <class Gemm>
int blocks_per_cu() {
  int blocks = 0;
  const hipError_t err = hipOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(&grouped_gemm_persistent<Gemm>), Gemm::kBlockSize, 0);
  return err == hipSuccess ? blocks : 0;
}

template <class Gemm>
int launch(const GroupArgs* device_args, int count, int grid, void* stream) {
  hipLaunchKernelGGL((grouped_gemm_persistent<Gemm>), dim3(grid), dim3(Gemm::kBlockSize), 0,
                     static_cast<hipStream_t>(stream), device_args, count);
  return static_cast<int>(hipGetLastError());
}

template <DType D, OutType O, Layout L, Scaling S, TileId T>
const Instance* instance() {
  using Gemm = CkGemm<D, O, L, S, T>;
  static const Instance inst{Gemm::traits(), &ck_accepts<Gemm>, &blocks_per_cu<Gemm>, &launch<Gemm>};
  return &inst;
}

}  // namespace ck
}  // namespace ckgemm

// The one line of an instance translation unit (the arguments of its csrc/hip/instances.inc entry).
#define CKGEMM_DEFINE_INSTANCE(dtype, out, layout, scaling, tile)                                         \
  template const ckgemm::ck::Instance* ckgemm::ck::instance<ckgemm::DType::dtype, ckgemm::OutType::out, \
                                                            ckgemm::Layout::layout, ckgemm::Scaling::scaling, \
                                                            ckgemm::ck::TileId::tile>();
