// ckgemm's persistent grouped-GEMM kernel over CK-tile parts, and the host entry points of one
// instance. Each csrc/hip/instances/*.hip file includes this and instantiates instance<D, L, C>().
//
// Why not ck_tile::GroupedGemmKernel as is (G2, the CK pinned in flash-attn 2.8.3):
//  * its non-persistent path fixes hot-loop/tail from group 0 for every group;
//  * its persistent path calls the pipeline with one LDS buffer, which CompV4 does not accept;
//  * neither waits for the previous tile's epilogue LDS reads before the next tile writes LDS;
//  * its kernel-argument layout (GemmTransKernelArg) changes between CK generations.
// So the loop over groups and tiles is ours (reading ckgemm's GroupArgs), and each tile runs CK's
// own view/window builders, pipeline (hot-loop and tail chosen per tile) and CShuffle epilogue.
#pragma once

#include <hip/hip_runtime.h>

#include "ck_gemm.hpp"
#include "group_args.h"

namespace ckgemm {
namespace ck {

template <class Gemm>
__host__ __device__ typename Gemm::Kernel::KernelArgs ck_args(const GroupArgs& g) {
  return typename Gemm::Kernel::KernelArgs{{g.a}, {g.b}, {}, g.c, g.m, g.n, g.k, {g.lda}, {g.ldb}, {}, g.ldc, 1};
}

// Hot loop / tail of the pipeline for a K-loop count. CompV4's own helpers are host-only in this
// CK, so its rule is restated here (the host routes away the counts CompV4 mishandles: routing.h);
// CompV3's are used as they are.
template <class Pipeline, bool DoubleLds>
__device__ bool has_hot_loop(index_t k_loops) {
  if constexpr (DoubleLds)
    return k_loops > Pipeline::PrefetchStages;
  else
    return Pipeline::BlockHasHotloop(k_loops);
}
template <class Pipeline, bool DoubleLds>
__device__ ck_tile::TailNumber tail_number(index_t k_loops) {
  if constexpr (DoubleLds)
    return k_loops % Pipeline::PrefetchStages == 1 ? ck_tile::TailNumber::Three : ck_tile::TailNumber::Two;
  else
    return Pipeline::GetBlockLoopTailNum(k_loops);
}

// One output tile (i_m, i_n) of one group, by the whole workgroup.
template <class Gemm>
__device__ void run_tile(const GroupArgs& g, index_t i_m, index_t i_n) {
  using Kernel = typename Gemm::Kernel;
  using Pipeline = typename Gemm::Pipeline;
  using Epilogue = typename Gemm::Epilogue;
  using AB = typename Gemm::Types::AB;
  using C = typename Gemm::Types::C;
  constexpr bool kDoubleLds = Gemm::Tile::DoubleLds;

  const auto kargs = ck_args<Gemm>(g);
  const typename Kernel::SplitKBatchOffset split(kargs, 0);  // k_batch is 1: one split, all of K
  const auto& views = Kernel::template MakeGemmTensorViews<Epilogue::MemoryOperation>(
      {static_cast<const AB*>(g.a)}, {static_cast<const AB*>(g.b)}, {}, static_cast<C*>(g.c), kargs, split);
  const auto& pad_views = Kernel::MakeGemmPadViews(views);
  auto windows = Kernel::MakeGemmTileWindows(pad_views, i_m, i_n);
  const auto& a_window = windows.at(Kernel::I0);
  const auto& b_window = windows.at(Kernel::I1);
  const auto& d_window = windows.at(Kernel::I2);

  const index_t k_loops = __builtin_amdgcn_readfirstlane(Gemm::Partitioner::GetLoopNum(split.splitted_k));
  const bool hot = has_hot_loop<Pipeline, kDoubleLds>(k_loops);
  const ck_tile::TailNumber tail = tail_number<Pipeline, kDoubleLds>(k_loops);

  __shared__ char smem0[Kernel::GetSmemSize()];
  const auto& c_tile = [&]() {
    if constexpr (kDoubleLds) {
      __shared__ char smem1[Kernel::GetSmemSize()];
      return Pipeline{}(a_window[Kernel::I0], b_window[Kernel::I0], k_loops, hot, tail, smem0, smem1);
    } else {
      return Pipeline{}(a_window[Kernel::I0], b_window[Kernel::I0], k_loops, hot, tail, smem0);
    }
  }();
  auto& c_window = windows.at(Kernel::I3);
  Epilogue{}.template operator()<decltype(c_window), decltype(c_tile), decltype(d_window)>(c_window, c_tile, d_window,
                                                                                             smem0);
}

// Persistent grid-stride loop over the tiles of all groups: group g owns the tile range
// [sum of tiles of groups < g, + its own). M, N, K come from device memory, so the packed form
// needs no host sync; groups with M == 0 own no tiles.
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
      // The previous tile's epilogue may still be reading LDS that this tile's prologue writes.
      if (lds_used) ck_tile::block_sync_lds();
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
  return Gemm::Kernel::IsSupportedArgument(ck_args<Gemm>(g));
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

template <DType D, Layout L, Config C>
const Instance* instance() {
  using Gemm = CkGemm<D, L, C>;
  static const Instance inst{Gemm::traits(), &ck_accepts<Gemm>, &blocks_per_cu<Gemm>, &launch<Gemm>};
  return &inst;
}

}  // namespace ck
}  // namespace ckgemm
