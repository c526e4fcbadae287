// CK-tile types of one ckgemm instance: input dtype -> CK data types, output type, layout -> CK
// layouts, TileId -> a named tile, assembled like CK's example/ck_tile/17_grouped_gemm in CK-tile
// generation G3 (the CK pinned from the amd-aiter wheel: docs/ROCM.md). Included only by the
// instance translation units (through ck_kernel.hpp) and the host probe.
#pragma once

#include <hip/hip_runtime.h>

#if !__has_include("ck_tile/ops/gemm/kernel/universal_gemm_kernel.hpp")
#error "ckgemm: these CK headers predate CK-tile generation G3 (csrc/hip's); set CK_DIR (docs/ROCM.md)"
#endif

#include "ck_tile/core.hpp"
#include "ck_tile/ops/epilogue.hpp"
#include "ck_tile/ops/gemm.hpp"

#include "instance.h"

namespace ckgemm {
namespace ck {

using ck_tile::index_t;
using ck_tile::sequence;

// ---- input dtype -> (A/B, accumulator) ----
template <DType D> struct CkInput;
template <> struct CkInput<DType::F16> { using AB = ck_tile::half_t; using Acc = float; };
template <> struct CkInput<DType::BF16> { using AB = ck_tile::bf16_t; using Acc = float; };
// ck_tile::fp8_t is one type (_BitInt(8)) in every compiler pass; which encoding the MFMA decodes is
// the device's (gfx942 e4m3fnuz, gfx950 OCP e4m3). No kernel converts fp8 values in software, and
// kernel symbols name only ckgemm types, so host and device passes of a multi-arch build agree.
template <> struct CkInput<DType::FP8_E4M3_FNUZ> { using AB = ck_tile::fp8_t; using Acc = float; };
template <> struct CkInput<DType::I8> { using AB = ck_tile::int8_t; using Acc = int32_t; };

template <OutType O> struct CkOutput;
template <> struct CkOutput<OutType::F16> { using T = ck_tile::half_t; };
template <> struct CkOutput<OutType::BF16> { using T = ck_tile::bf16_t; };
template <> struct CkOutput<OutType::F32> { using T = float; };
template <> struct CkOutput<OutType::I32> { using T = int32_t; };

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

// ---- named tiles (warp tiles from gfx942's WarpGemmMfmaDispatcher, also native on gfx950) ----
// MinWavesPerEu bounds the registers per lane (512 / waves): see the VGPR notes in docs/ROCM.md.
//
// TileId::ComputeV4: 128x128x64 block, 2x2 waves of 32x32x16 MFMA, CompV4 double-LDS ping-pong
// (2 x 32 KiB for 16-bit inputs = all of gfx942's LDS), no padding. Upstream CK's grouped-GEMM
// GemmConfigComputeV4 shape with a 64-wide K tile for every dtype (128 bytes of 8-bit K: no spills).
struct ComputeV4Tile {
  static constexpr index_t M = 128, N = 128, K = 64;
  static constexpr index_t WarpsM = 2, WarpsN = 2, WarpM = 32, WarpN = 32, WarpK = 16;
  static constexpr bool DoubleLds = true, PadN = false, PadK = false;
  static constexpr int MinWavesPerEu = 1;
  static constexpr const char* name = "compute_v4_128x128x64";
};
// TileId::Padded: 16x64x128 block, 1x4 waves of 16x16x32 MFMA, CompV3, kPadN + kPadK (M tails need
// no padding for row-major A and C: research/ck_tile.md 0.2). The shape of CK's 03_gemm decode
// config: one 16-row tile for a small MoE expert, and the fallback for N/K that are not ComputeV4
// tile multiples or whose K-loop count CompV4 mishandles.
struct PaddedTile {
  static constexpr index_t M = 16, N = 64, K = 128;
  static constexpr index_t WarpsM = 1, WarpsN = 4, WarpM = 16, WarpN = 16, WarpK = 32;
  static constexpr bool DoubleLds = false, PadN = true, PadK = true;
  static constexpr int MinWavesPerEu = 2;
  static constexpr const char* name = "padded_16x64x128";
};

template <TileId T>
using TileFor = std::conditional_t<T == TileId::ComputeV4, ComputeV4Tile, PaddedTile>;

// The A/B types the CShuffle epilogue is told. It uses them only to look up the warp GEMM whose C
// register layout it reads (WarpGemmDispatcher<A, B, Acc, ...>::CWarpDstrEncoding). A scaled int8
// instance hands the epilogue its int32 accumulator converted to float, and CK has no
// (int8, int8, float) warp GEMM; the fp8 one of the same M x N x K has the C layout of the int8 one
// (checked below at compile time), so the epilogue is told fp8.
template <class AB, class EpiAcc>
using EpilogueInput = std::conditional_t<std::is_same_v<AB, ck_tile::int8_t> && std::is_same_v<EpiAcc, float>,
                                         ck_tile::fp8_t, AB>;

// ---- the assembled CK kernel parts ----
template <DType D, OutType O, Layout L, Scaling S, TileId T>
struct CkGemm {
  static_assert(S == Scaling::None || S == Scaling::Row, "CK instances compute unscaled or row-scaled GEMMs");
  using AB = typename CkInput<D>::AB;
  using Acc = typename CkInput<D>::Acc;
  using COut = typename CkOutput<O>::T;
  using Layouts = CkLayouts<L>;
  using Tile = TileFor<T>;
  static constexpr bool kScaled = S == Scaling::Row;
  // Scaled: the epilogue multiplies float accumulators by sa[row] * sb[col], then rounds once.
  using EpiAcc = std::conditional_t<kScaled, float, Acc>;
  using EpiAB = EpilogueInput<AB, EpiAcc>;

  using Shape = ck_tile::TileGemmShape<sequence<Tile::M, Tile::N, Tile::K>, sequence<Tile::WarpsM, Tile::WarpsN, 1>,
                                       sequence<Tile::WarpM, Tile::WarpN, Tile::WarpK>>;
  using Partitioner = ck_tile::GemmSpatiallyLocalTilePartitioner<Shape, 8, 4>;
  using Traits = ck_tile::TileGemmUniversalTraits<false, Tile::PadN, Tile::PadK, Tile::DoubleLds, typename Layouts::A,
                                                  typename Layouts::B, typename Layouts::C>;
  // Hot loop and tail are chosen per tile at run time (ck_kernel.hpp: run_tile), so the Problem's
  // compile-time defaults for them are never used.
  using Problem = ck_tile::UniversalGemmPipelineProblem<AB, AB, Acc, Shape, Traits,
                                                        ck_tile::GemmPipelineScheduler::Intrawave>;
  using Pipeline = std::conditional_t<Tile::DoubleLds, ck_tile::GemmPipelineAgBgCrCompV4<Problem>,
                                      ck_tile::GemmPipelineAgBgCrCompV3<Problem>>;
  using Epilogue = ck_tile::CShuffleEpilogue<ck_tile::CShuffleEpilogueProblem<
      EpiAB, EpiAB, ck_tile::tuple<>, EpiAcc, COut, ck_tile::tuple<>, typename Layouts::C,
      ck_tile::element_wise::PassThrough, Tile::M, Tile::N, Tile::WarpsM, Tile::WarpsN, Tile::WarpM, Tile::WarpN,
      Tile::WarpK, Problem::TransposeC, ck_tile::memory_operation_enum::set>>;
  // Used for its argument checks and its view/window builders; its own entry points are not used.
  using Kernel = ck_tile::UniversalGemmKernel<Partitioner, Pipeline, Epilogue>;

  template <class A, class C>
  using CLayoutOf = typename ck_tile::WarpGemmDispatcher<A, A, C, Tile::WarpM, Tile::WarpN, Tile::WarpK,
                                                         Problem::TransposeC>::CWarpDstrEncoding;
  static_assert(std::is_same_v<CLayoutOf<EpiAB, EpiAcc>, CLayoutOf<AB, Acc>>,
                "the epilogue must read the accumulator in the pipeline's C register layout");

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
                      static_cast<int>(sizeof(AB)),
                      static_cast<int>(sizeof(COut))};
  }
};

}  // namespace ck
}  // namespace ckgemm
