// Host half of ckgemm's own fp8 grouped kernel (ws_fp8.cuh): the TMA tensor maps of A and B, the scale feed
// of a block-scaled call and its workspace, and the launch of a packed call of the ckgemm ABI (PackedArgs; one
// kernel: its CTAs read the group sizes themselves). What it takes is ws_fp8_rules.h's rule.
#pragma once

#include <cuda.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "ws_fp8.cuh"
#include "ws_fp8_rules.h"
#include "ws_fp8_scales.cuh"

namespace ckgemm::ws {

// The driver's cuTensorMapEncodeTiled through the runtime (no -lcuda). Its type from cuda.h's declaration:
// cudaTypedefs.h's PFN_ typedef lands in namespace cutlass when a CUTLASS header included it first.
using EncodeFn = decltype(&cuTensorMapEncodeTiled);
inline EncodeFn encode_fn() {
  static EncodeFn fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      ptr = nullptr;
    return reinterpret_cast<EncodeFn>(ptr);
  }();
  return fn;
}

// An operand's tensor map, dims innermost first, in bytes along K (any element): box 128 bytes x rows [x 1] of
// K-major 128-byte swizzled rows.
inline bool encode(CUtensorMap* map, const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
                   const cuuint32_t* box) {
  auto fn = encode_fn();
  const cuuint32_t unit[3] = {1, 1, 1};
  return fn != nullptr &&
         fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, rank, const_cast<void*>(base), dims, strides, box, unit,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The scale feed of block-scaled calls: CKGEMM_WS_SCALES=0 (a producer warp's cp.async) or 2 (DeepGEMM's feed;
// the default), read once; any other value is refused at the first block-scaled call (-1 here).
inline int block_feed() {
  static const int feed = [] {
    const char* e = std::getenv("CKGEMM_WS_SCALES");
    if (e == nullptr || e[0] == 0) return kFeedTma;
    const std::string v(e);
    return v == "0" ? kFeedWarp : v == "2" ? kFeedTma : -1;
  }();
  return feed;
}

// CKGEMM_WS_UNITS, how a 16-bit call's clusters take their units (ws_fp8_rules.h's units_drawn): unset or "auto"
// (by the call's rows a group), "dynamic" (drawn in turn) or "static" (every clusters-th), read once; any other
// value refuses every 16-bit call routed to the own kernel (-1 here).
inline int units_mode() {
  static const int mode = [] {
    const char* e = std::getenv("CKGEMM_WS_UNITS");
    if (e == nullptr || e[0] == 0) return kUnitsAuto;
    const std::string v(e);
    return v == "auto" ? kUnitsAuto : v == "dynamic" ? kUnitsDrawn : v == "static" ? kUnitsStride : -1;
  }();
  return mode;
}

// Whether a call's clusters draw their units from a counter (ws_units.cuh): kCanDraw, the kernels with that form
// (16-bit, A multicast; fp8 and int8 instantiate the stride only), where units_drawn says so; the others take
// every clusters-th unit.
template <In I, bool McastB>
constexpr bool kCanDraw = in_bytes(I) == 2 && !McastB;
template <In I, bool McastB>
bool draws_units(const PackedArgs& c) {
  return kCanDraw<I, McastB> && units_drawn(units_mode(), c.rows, c.groups);
}

// Device workspace a call needs: kFeedTma's MN-major copy of A's block scales (ws_fp8_scales.cuh), the unit
// counter of a call that draws its units (16 bytes), else none.
template <Recipe R, In I = In::E4M3, bool McastB = false>
size_t workspace_bytes(const PackedArgs& c, int feed) {
  if (in_bytes(I) == 2) return draws_units<I, McastB>(c) ? 16 : 0;
  if (R != Recipe::Block || feed != kFeedTma) return 0;
  return static_cast<size_t>(mn_major_floats(c.rows, (c.k + kBlockK - 1) / kBlockK)) * sizeof(float);
}

// The fields every own kernel's Params takes from a packed call as they are: C's leading dimension, the sizes
// and their check's flag, the dimensions (the rules keep them a tile below 2^31).
template <class P>
void set_call_fields(P& p, const PackedArgs& c) {
  p.ldc = c.ldc;
  p.sizes = c.group_sizes;
  p.sizes_int64 = c.sizes_are_int64;
  p.groups = c.groups;
  p.rows = static_cast<int>(c.rows);
  p.n = static_cast<int>(c.n);
  p.k = static_cast<int>(c.k);
  p.sizes_ok = c.sizes_ok;
}

// The grid of a call of the own kernels: clusters of two, at most one CTA per SM, no more than `units` (an upper
// bound on the call's cluster units from the host-side sizes), and one cluster at least: a cap of one SM
// (ckgemm.set_num_sms(1)) still gets a pair rather than an empty grid.
inline int pair_grid(int64_t units, int sm_count) {
  const int64_t clusters = sm_count / 2 > 0 ? sm_count / 2 : 1;
  return static_cast<int>(2 * (units < clusters ? units : clusters));
}

// A launch of `grid` CTAs of `threads` in clusters of two (attr: the caller's storage for the cluster attribute).
inline cudaLaunchConfig_t pair_config(int grid, int threads, size_t smem, cudaStream_t stream, cudaLaunchAttribute* attr) {
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = 2;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  return config;
}

// An instantiation of the kernel, with its dynamic shared memory limit raised (once per instantiation) and the
// error of that.
using KernelFn = void (*)(Params);
template <int BN, bool McastB, Recipe R, class Out, int Feed, In I, bool Dyn, int BM>
std::pair<KernelFn, cudaError_t> kernel_ready() {
  constexpr KernelFn kernel = grouped_fp8_kernel<BN, McastB, R, Out, Feed, I, Dyn, BM>;
  static_assert(sizeof(Smem<BN, McastB, BM>) <= 227 * 1024, "shared memory: at most 227 KB a CTA");
  static const cudaError_t raised = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         static_cast<int>(sizeof(Smem<BN, McastB, BM>)));
  return {kernel, raised};
}

// I: the operands' element (the kernel reads them as bytes: K, lda, ldb and B's group stride are scaled to bytes);
// BM: the tile's rows (Config).
template <int BN, bool McastB, Recipe R, class Out, In I = In::E4M3, int BM = kBlockM>
cudaError_t launch(const PackedArgs& c, int feed, void* workspace, size_t workspace_size, int sm_count,
                   cudaStream_t stream, std::string* why) {
  if (R == Recipe::Block && feed != kFeedWarp && feed != kFeedTma) {
    *why = "CKGEMM_WS_SCALES must be 0 (a producer warp copies the block scales) or 2 (DeepGEMM's feed)";
    return cudaErrorInvalidValue;
  }
  if (in_bytes(I) == 2 && units_mode() < 0) {
    *why = "CKGEMM_WS_UNITS must be auto (the default), dynamic or static";
    return cudaErrorInvalidValue;
  }
  const size_t needed = workspace_bytes<R, I, McastB>(c, feed);
  if (needed > 0 && (workspace_size < needed || reinterpret_cast<uintptr_t>(workspace) % 16 != 0)) {
    *why = "workspace too small or not 16-byte aligned (the block scales' MN-major copy, or a 16-bit call's unit counter)";
    return cudaErrorInvalidValue;
  }
  Params p{};
  uint64_t pol[3];  // CKGEMM_WS_L2, read at each call (ws_fp8_rules.h's l2_policies)
  if (!l2_policies(std::getenv("CKGEMM_WS_L2"), pol)) {
    *why = "CKGEMM_WS_L2 must be three letters of n, N, f, l (A's loads, B's loads, C's stores; default nnf)";
    return cudaErrorInvalidValue;
  }
  p.l2_a = pol[0];
  p.l2_b = pol[1];
  p.l2_c = pol[2];
  constexpr int64_t eb = in_bytes(I);
  const cuuint64_t dims_a[2] = {static_cast<cuuint64_t>(c.k * eb), static_cast<cuuint64_t>(c.rows)};
  const cuuint64_t strides_a[1] = {static_cast<cuuint64_t>(c.lda * eb)};
  const cuuint64_t dims_b[3] = {static_cast<cuuint64_t>(c.k * eb), static_cast<cuuint64_t>(c.n),
                                static_cast<cuuint64_t>(c.groups)};
  // One group: B's group stride is never followed (it may be 0), but the tensor map wants a real one.
  const int64_t b_group_stride = c.groups > 1 ? c.b_group_stride : c.n * c.ldb;
  const cuuint64_t strides_b[2] = {static_cast<cuuint64_t>(c.ldb * eb), static_cast<cuuint64_t>(b_group_stride * eb)};
  using Cfg = Config<BN, McastB, BM>;
  const cuuint32_t box_a[2] = {kBlockK, Cfg::kRowsA}, box_b[3] = {kBlockK, Cfg::kRowsB, 1};
  if (!encode(&p.tma_a, c.a, 2, dims_a, strides_a, box_a) || !encode(&p.tma_b, c.b, 3, dims_b, strides_b, box_b)) {
    *why = "cuTensorMapEncodeTiled refused the operands";
    return cudaErrorInvalidValue;
  }
  p.c = c.c;
  set_call_fields(p, c);
  p.k = static_cast<int>(c.k * eb);  // the k-loop counts 128-byte k-blocks
  p.vector_store = c.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(c.c) % (2 * sizeof(Out)) == 0;
  if (p.vector_store && (c.ldc * sizeof(Out)) % 16 == 0 && reinterpret_cast<uintptr_t>(c.c) % 16 == 0) p.vector_store = 2;
  p.sa = c.sa;
  p.sa_stride = c.sa_row_stride;
  p.sa_kb_stride = 1;
  p.sb = c.sb;
  p.sb_stride = c.sb_group_stride;
  // Units drawn or by stride (draws_units). Only block-scaled calls have a second feed (the other recipes
  // instantiate kFeedWarp's kernel alone).
  const bool dynamic = draws_units<I, McastB>(c);
  constexpr int kTmaFeed = R == Recipe::Block ? kFeedTma : kFeedWarp;
  const bool tma_feed = R == Recipe::Block && feed == kFeedTma;
  const auto [kernel, raised] = tma_feed  ? kernel_ready<BN, McastB, R, Out, kTmaFeed, I, false, BM>()
                                : dynamic ? kernel_ready<BN, McastB, R, Out, kFeedWarp, I, kCanDraw<I, McastB>, BM>()
                                          : kernel_ready<BN, McastB, R, Out, kFeedWarp, I, false, BM>();
  if (raised != cudaSuccess) {
    *why = std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(raised);
    return raised;
  }
  // Clusters of two, at most one CTA per SM, no more than the units the call can have (an upper bound from
  // the host-side sizes: sum over groups of ceil(M_g / BM) <= rows / BM + G).
  const int64_t n_blocks = (c.n + BN - 1) / BN;
  const int64_t units = McastB ? (c.rows / (2 * BM) + c.groups) * n_blocks
                               : (c.rows / BM + c.groups) * ((n_blocks + 1) / 2);
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = pair_config(pair_grid(units, sm_count), Cfg::kThreadsCta, sizeof(Smem<BN, McastB, BM>), stream, &attr);
  // DeepGEMM's feed reads A's block scales MN-major: a copy into the workspace (from the op's caching allocator:
  // no allocation here, graph-capturable).
  if (tma_feed) {
    const int64_t k_blocks = (c.k + kBlockK - 1) / kBlockK, ld = mn_major_ld(c.rows);
    float* sa_mn = static_cast<float*>(workspace);
    const cudaError_t e = launch_scales_to_mn_major(c.sa, c.sa_row_stride, sa_mn, ld, c.rows, k_blocks, stream);
    if (e != cudaSuccess) {
      *why = std::string("block scales to MN-major: ") + cudaGetErrorString(e);
      return e;
    }
    p.sa = sa_mn;
    p.sa_stride = 1;
    p.sa_kb_stride = ld;
  }
  if (dynamic) {  // the units drawn so far: none
    p.counter = static_cast<int*>(workspace);
    const cudaError_t e = cudaMemsetAsync(p.counter, 0, sizeof(int), stream);
    if (e != cudaSuccess) {
      *why = std::string("unit counter: ") + cudaGetErrorString(e);
      return e;
    }
  }
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, p);
  if (e != cudaSuccess) *why = std::string("launch: ") + cudaGetErrorString(e);
  return e;
}

}  // namespace ckgemm::ws
