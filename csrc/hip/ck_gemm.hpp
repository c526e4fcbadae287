// CK-tile types of one ckgemm instance: dtype -> CK data types, layout -> CK layouts, Config -> a
// named tile, assembled like CK's example/ck_tile/17_grouped_gemm (CK generation G2, mid-2025: see
// docs/ROCM.md). Included only by the instance translation units and ck_kernel.hpp.
#pragma once

#include <hip/hip_runtime.h>

#if !__has_include("ck_tile/ops/gemm/kernel/universal_gemm_kernel.hpp")
#error "ckgemm: these CK headers predate the CK-tile generation ckgemm supports (G2); set CK_DIR (docs/ROCM.md)"
#endif

#include "ck_tile/core.hpp"
#include "ck_tile/ops/epilogue.hpp"
#include "ck_tile/ops/gemm.hpp"

#include "instance.h"

namespace ckgemm {
namespace ck {

using ck_tile::index_t;
using ck_tile::sequence;

// ---- dtype -> (A/B, accumulator, C) ----
template <DType D> struct CkTypes;
template <> struct CkTypes<DType::F16> { using AB = ck_tile::half_t; using Acc = float; using C = ck_tile::half_t; };
template <> struct CkTypes<DType::BF16> { using AB = ck_tile::bf16_t; using Acc = float; using C = ck_tile::bf16_t; };
// ck_tile::fp8_t is one type in every compiler pass; which encoding the MFMA decodes is the
// device's (gfx942 e4m3fnuz, gfx950 OCP e4m3). Nothing in this fp8 -> fp32 kernel converts fp8
// values, and the kernel symbol names only ckgemm types, so host and device passes always agree.
template <> struct CkTypes<DType::FP8_E4M3_FNUZ> { using AB = ck_tile::fp8_t; using Acc = float; using C = float; };
template <> struct CkTypes<DType::I8> { using AB = ck_tile::int8_t; using Acc = int32_t; using C = int32_t; };

// ---- ckgemm layout -> CK (A, B, C) layouts; see csrc/ckgemm.h ----
template <Layout L> struct CkLayouts;
template <> struct CkLayouts<Layout::RC> {  // B stored [N, K] row-major = CK "column-major K x N"
  using A = ck_tile::tensor_layout::gemm::RowMajor;
  using B = ck_tile::tensor_layout::gemm::ColumnMajor;
  using C = ck_tile::tensor_layout::gemm::RowMajor;
};
template <> struct CkLayouts<Layout::RR> {
  using A = ck_tile::tensor_layout::gemm::RowMajor;
  using B = ck_tile::tensor_layout::gemm::RowMajor;
  using C = ck_tile::tensor_layout::gemm::RowMajor;
};

// ---- named tiles (warp tiles only from gfx942's WarpGemmMfmaDispatcher, also valid on gfx950) ----
// MinWavesPerEu bounds the registers per lane (512 / waves): see the VGPR notes in docs/ROCM.md.
//
// Config::Large: 128x128x64 block, 2x2 waves of 32x32x16 MFMA, CompV4 double-LDS ping-pong
// (2 x 32 KiB for 16-bit inputs = all of gfx942's LDS), no padding. Upstream CK's grouped-GEMM
// GemmConfigComputeV4 shape; G2's 256x256 COMPUTE_V4 tile spills VGPRs to scratch with clang-19.
struct ComputeV4Tile {
  static constexpr index_t M = 128, N = 128, K = 64;
  static constexpr index_t WarpsM = 2, WarpsN = 2, WarpM = 32, WarpN = 32, WarpK = 16;
  static constexpr bool DoubleLds = true, PadN = false, PadK = false;
  static constexpr int MinWavesPerEu = 1;
  static constexpr const char* name = "compute_v4_128x128x64";
};
// Config::Small: 16x64x128 block, 1x4 waves of 16x16x32 MFMA, CompV3, kPadN + kPadK (M tails
// need no padding for row-major A and C: research/ck_tile.md 0.2). The shape of CK's 03_gemm
// "ComputeV3" decode config: one 16-row tile for a small MoE expert, and the fallback for N/K
// that are not Large tile multiples.
struct PaddedTile {
  static constexpr index_t M = 16, N = 64, K = 128;
  static constexpr index_t WarpsM = 1, WarpsN = 4, WarpM = 16, WarpN = 16, WarpK = 32;
  static constexpr bool DoubleLds = false, PadN = true, PadK = true;
  static constexpr int MinWavesPerEu = 2;
  static constexpr const char* name = "padded_16x64x128";
};

template <Config C>
using TileFor = std::conditional_t<C == Config::Large, ComputeV4Tile, PaddedTile>;

// ---- the assembled CK kernel parts ----
template <DType D, Layout L, Config CFG>
struct CkGemm {
  using Types = CkTypes<D>;
  using Layouts = CkLayouts<L>;
  using Tile = TileFor<CFG>;

  using Shape = ck_tile::TileGemmShape<sequence<Tile::M, Tile::N, Tile::K>, sequence<Tile::WarpsM, Tile::WarpsN, 1>,
                                       sequence<Tile::WarpM, Tile::WarpN, Tile::WarpK>>;
  using Partitioner = ck_tile::GemmSpatiallyLocalTilePartitioner<Shape, 8, 4>;
  using Traits = ck_tile::TileGemmUniversalTraits<false, Tile::PadN, Tile::PadK, Tile::DoubleLds, typename Layouts::A,
                                                  typename Layouts::B, typename Layouts::C>;
  // Hot-loop and tail are chosen per tile at run time (run_tile), so the Problem's defaults for
  // them are never used.
  using Problem = ck_tile::UniversalGemmPipelineProblem<typename Types::AB, typename Types::AB, typename Types::Acc,
                                                        Shape, Traits, ck_tile::GemmPipelineScheduler::Intrawave>;
  using Pipeline = std::conditional_t<Tile::DoubleLds, ck_tile::GemmPipelineAgBgCrCompV4<Problem>,
                                      ck_tile::GemmPipelineAgBgCrCompV3<Problem>>;
  using Epilogue = ck_tile::CShuffleEpilogue<ck_tile::CShuffleEpilogueProblem<
      typename Types::AB, typename Types::AB, ck_tile::tuple<>, typename Types::Acc, typename Types::C,
      ck_tile::tuple<>, typename Layouts::C, ck_tile::element_wise::PassThrough, Problem::kBlockSize, Tile::M, Tile::N,
      Tile::WarpsM, Tile::WarpsN, Tile::WarpM, Tile::WarpN, Tile::WarpK, Problem::TransposeC,
      ck_tile::memory_operation_enum::set>>;
  // Used for its argument checks and its view/window builders; its own entry points are not used.
  using Kernel = ck_tile::UniversalGemmKernel<Partitioner, Pipeline, Epilogue>;

  static constexpr index_t kBlockSize = Problem::kBlockSize;

  static TileTraits traits() {
    return TileTraits{Tile::name,
                      Tile::M,
                      Tile::N,
                      Tile::K,
                      static_cast<int>(Pipeline::GetVectorSizeA()),
                      static_cast<int>(Pipeline::GetVectorSizeB()),
                      static_cast<int>(Epilogue::GetVectorSizeC()),
                      Tile::PadN,
                      Tile::PadK,
                      Tile::DoubleLds,
                      static_cast<int>(sizeof(typename Types::AB)),
                      static_cast<int>(sizeof(typename Types::C))};
  }
};

}  // namespace ck
}  // namespace ckgemm
