// The device-side parts of ckgemm's own grouped kernel (ws_fp8.cuh): wgmma and TMA wrappers, the group
// table and tile decoding, the promotion, the k-loop without promotion (16-bit, int8) and the epilogue.
#pragma once

#include "ws_fp8_types.cuh"
#include "ws_table.cuh"

namespace ckgemm::ws {

template <class M, class Acc, size_t... I>
__device__ __forceinline__ void mma_call(uint64_t da, uint64_t db, Acc* d, bool accumulate, std::index_sequence<I...>) {
  M::fma(da, db, d[I]..., accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

// wgmma shared-memory descriptors, K-major with the 128-byte swizzle (what TMA's SWIZZLE_128B writes): the high
// word holds the 1024-byte stride between 8-row atoms and the swizzle mode, the low word the start address in
// 16-byte units and a leading offset of 1. A byte offset d moves the descriptor by d / 16 in the low word (shared
// memory is below 256 KB, so the address field does not carry into the offset's).
constexpr uint32_t kDescHi = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ uint64_t desc_of(uint32_t lo) { return (uint64_t{kDescHi} << 32) | lo; }
__device__ __forceinline__ uint32_t smem_desc_lo(const void* p) {
  return ((static_cast<uint32_t>(__cvta_generic_to_shared(p)) & 0x3FFFF) >> 4) | (1u << 16);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// A TMA load of a 2-D ([rows, k]) or 3-D ([groups, n, k]) box into this CTA, or multicast to both CTAs of
// the cluster (each CTA's barrier at the same offset counts the bytes that land in it).
// hint: an L2 cache policy (createpolicy's 64-bit form) for the load, or 0 for none.
__device__ __forceinline__ void tma_load(const CUtensorMap* map, uint64_t* bar, void* dst, int k0, int r0, int g,
                                         bool three_d, bool multicast, uint64_t hint = 0) {
  const uint32_t d = smem_u32(dst), b = smem_u32(bar);
  const uint16_t mask = 0x3;
  if (hint != 0) {
    if (three_d && multicast)
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                   ".L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6, %7;"
                   :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g), "h"(mask), "l"(hint) : "memory");
    else if (three_d)
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                   " [%0], [%1, {%3, %4, %5}], [%2], %6;"
                   :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g), "l"(hint) : "memory");
    else if (multicast)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                   ".L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5, %6;"
                   :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "h"(mask), "l"(hint) : "memory");
    else
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                   " [%0], [%1, {%3, %4}], [%2], %5;"
                   :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "l"(hint) : "memory");
    return;
  }
  if (three_d && multicast)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5}], [%2], %6;" :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g), "h"(mask) : "memory");
  else if (three_d)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "r"(g) : "memory");
  else if (multicast)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;" :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0), "h"(mask) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(d), "l"(map), "r"(b), "r"(k0), "r"(r0) : "memory");
}

// A bulk copy (no tensor map) of `bytes` (a multiple of 16; both addresses 16-byte aligned) into this CTA, counted
// by its barrier: kFeedTma's A scales of one stage, 128 rows and the up to 3 before the tile's first.
constexpr int kBulkScaleBytes = kBulkScaleRows * 4;
__device__ __forceinline__ void bulk_load(void* dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}

__device__ __forceinline__ void cp_async_f32(float* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_u32(dst)), "l"(src) : "memory");
}

// Scale addresses, clamped so that a dummy tile's rows or columns never read past the scales: A's scales of a
// row (Row: that row's scale; Block: its first k-block's), and B's block scales of one 128-column block.
__device__ __forceinline__ const float* a_scales(const Params& p, int row) {
  return p.sa + static_cast<int64_t>(min(row, p.rows - 1)) * p.sa_stride;
}
__device__ __forceinline__ const float* b_block_scales(const Params& p, int g, int nb, int k_blocks) {
  return p.sb + g * p.sb_stride + static_cast<int64_t>(min(nb, (p.n + 127) / 128 - 1)) * k_blocks;
}

// acc += tmp * scale, the scale of rows r_lo / r_lo + 8 (lo / hi) and of the B block of each column: the first
// (0) left of column kSplit, the second (1) from it on. kSplit is a template argument so no column selects.
template <int BN, int kSplit>
__device__ __forceinline__ void promote(float* acc, const float* tmp, float lo0, float hi0, float lo1, float hi1) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const float lo = j * 8 < kSplit ? lo0 : lo1, hi = j * 8 < kSplit ? hi0 : hi1;
    acc[4 * j + 0] = fmaf(tmp[4 * j + 0], lo, acc[4 * j + 0]);
    acc[4 * j + 1] = fmaf(tmp[4 * j + 1], lo, acc[4 * j + 1]);
    acc[4 * j + 2] = fmaf(tmp[4 * j + 2], hi, acc[4 * j + 2]);
    acc[4 * j + 3] = fmaf(tmp[4 * j + 3], hi, acc[4 * j + 3]);
  }
}

// The k-loop of operands that need no promotion (ws_fp8.cuh's consumers): each 128-byte k-block is four
// m64nBNk16 (16-bit) or m64nBNk32 (int8) wgmmas straight into the accumulator (zeroed by the caller: fp32, or
// int8's int32). One k-block's batch stays in flight while the next is issued, and a stage is released once
// wait<1> says the batch that read it is done, as CUTLASS's mainloop keeps its MMAs going.
template <int BN, In I, class S, class Acc>
__device__ __forceinline__ void k_loop_direct(S& s, Acc* acc, uint32_t a_lo0, uint32_t b_lo0, int k_blocks, int& stage,
                                              uint32_t& phase, int lane) {
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = sizeof(s.full) / sizeof(s.full[0]);
  constexpr uint32_t kDescA = sizeof(s.a[0]) / 16, kDescB = sizeof(s.b[0]) / 16;  // a stage, in descriptor units
  int held = -1;  // the stage the batch in flight reads
  for (int kb = 0; kb < k_blocks; ++kb) {
    Barrier::wait(&s.full[stage], phase);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
    cute::warpgroup_arrive();
    const uint32_t da = a_lo0 + stage * kDescA, db = b_lo0 + stage * kDescB;
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk)  // +32 bytes along K: +2 in the descriptor
      mma_call<MmaDirect<I, BN>>(desc_of(da + 2 * kk), desc_of(db + 2 * kk), acc, true, std::make_index_sequence<BN / 2>{});
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<1>();
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
    if (held >= 0 && lane < 2) Barrier::arrive(&s.empty[held], lane, 1);  // lane r: cluster rank r's barrier
    held = stage;
    if (++stage == kStages) { stage = 0; phase ^= 1; }
  }
  cute::warpgroup_wait<0>();
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
  if (held >= 0 && lane < 2) Barrier::arrive(&s.empty[held], lane, 1);
}

// fp32 to the output element (fp32, bf16 or fp16), spelled out: torch's extension build defines
// __CUDA_NO_BF16_CONVERSIONS__ and __CUDA_NO_HALF_CONVERSIONS__.
template <class Out>
__device__ __forceinline__ Out to_out(float v) {
  if constexpr (std::is_same_v<Out, float>) return v;
  else if constexpr (std::is_same_v<Out, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

// Two adjacent 16-bit outputs in one word.
template <class Out>
__device__ __forceinline__ uint32_t pack2(float x, float y) {
  if constexpr (std::is_same_v<Out, __half>) {
    __half2 v = __floats2half2_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

template <class Out>
__device__ __forceinline__ void store_pair(Out* dst, float v0, float v1) {
  if constexpr (std::is_same_v<Out, float>) *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
  else *reinterpret_cast<uint32_t*>(dst) = pack2<Out>(v0, v1);
}

// A value as stored: times its row's and column's scales (1 but Row's), or, kBits (int8's int32 accumulator, in
// fp32 registers), the bits as they are: no fp32 arithmetic, which would quiet int32 values that are NaN patterns.
template <bool kBits>
__device__ __forceinline__ float scaled(float v, float row_scale, float col_scale) {
  if constexpr (kBits) return v;
  else return v * row_scale * col_scale;
}

// 16 bytes to global memory, with an L2 cache policy (createpolicy's form) or none (0).
__device__ __forceinline__ void store16(void* dst, uint4 v, uint64_t hint) {
  if (hint != 0)
    asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(hint) : "memory");
  else
    *reinterpret_cast<uint4*>(dst) = v;
}

// A whole tile's store in 16-byte pieces: the four lanes of a quad hold two adjacent columns of each 8-column
// chunk; exchanges between lanes (xor 1, then for 16-bit xor 2) give each lane 4 adjacent fp32 or 8 adjacent 16-bit
// values of one row, so each store writes whole 32-byte sectors (64 or 128 contiguous bytes per row and quad).
template <int BN, Recipe R, class Out, bool kBits>
__device__ __forceinline__ void store_tile_wide(const Params& p, const Tile& t, const float* acc, int r_lo, int lane,
                                                const float* row_scale, const float* sb_row) {
  const int q = lane % 4;
  const bool odd = q & 1, upper = q & 2;
  constexpr unsigned kAll = 0xffffffffu;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    Out* row = static_cast<Out*>(p.c) + static_cast<int64_t>(t.row0 + r_lo + 8 * h) * p.ldc + t.n0;
    auto value = [&](int j, int e) {  // column 8j + 2q + e of this row, scaled
      float v = scaled<kBits>(acc[4 * j + 2 * h + e], row_scale[h], 1.f);
      if constexpr (R == Recipe::Row) v *= __ldg(sb_row + t.n0 + 8 * j + 2 * q + e);
      return v;
    };
    if constexpr (std::is_same_v<Out, float>) {
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        const float a0 = value(j, 0), a1 = value(j, 1), b0 = value(j + 1, 0), b1 = value(j + 1, 1);
        const float r0 = __shfl_xor_sync(kAll, odd ? a0 : b0, 1), r1 = __shfl_xor_sync(kAll, odd ? a1 : b1, 1);
        const float4 o = odd ? make_float4(r0, r1, b0, b1) : make_float4(a0, a1, r0, r1);
        store16(row + 8 * (j + odd) + 4 * (q >> 1),
                make_uint4(__float_as_uint(o.x), __float_as_uint(o.y), __float_as_uint(o.z), __float_as_uint(o.w)), p.l2_c);
      }
    } else {
#pragma unroll
      for (int j = 0; j < BN / 8; j += 4) {
        uint32_t w[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) w[c] = pack2<Out>(value(j + c, 0), value(j + c, 1));
        const uint32_t ra = __shfl_xor_sync(kAll, odd ? w[0] : w[1], 1), rb = __shfl_xor_sync(kAll, odd ? w[2] : w[3], 1);
        const uint32_t A0 = odd ? ra : w[0], A1 = odd ? w[1] : ra, B0 = odd ? rb : w[2], B1 = odd ? w[3] : rb;
        const uint32_t s0 = __shfl_xor_sync(kAll, upper ? A0 : B0, 2), s1 = __shfl_xor_sync(kAll, upper ? A1 : B1, 2);
        const uint4 o = upper ? make_uint4(s0, s1, B0, B1) : make_uint4(A0, A1, s0, s1);
        store16(row + 8 * (j + (q & 1) + 2 * (q >> 1)), o, p.l2_c);
      }
    }
  }
}

// Epilogue, straight from the registers of an m64nBN accumulator (rows r_lo and r_lo + 8, two adjacent
// columns per 8-column chunk): rows past the group's end and columns past N are not stored.
template <int BN, Recipe R, class Out, bool kBits>
__device__ __forceinline__ void store_values(const Params& p, const Tile& t, const float* acc, int r_lo, int lane) {
  float row_scale[2] = {1.f, 1.f};
  if constexpr (R == Recipe::Row) {
    row_scale[0] = __ldg(a_scales(p, t.row0 + r_lo));
    row_scale[1] = __ldg(a_scales(p, t.row0 + r_lo + 8));
  }
  const float* sb_row = R == Recipe::Row ? p.sb + t.g * p.sb_stride : nullptr;
  // Whether every row of this warp group's m64 block (the 64 rows that hold r_lo) is in the group: a whole block,
  // stored without per-element bounds even where the tile's other half holds rows past the group's end.
  const bool rows_whole = t.m_local0 + (r_lo & ~63) + 64 <= t.m_g;
  if (p.vector_store == 2 && rows_whole && t.n0 + BN <= p.n) {  // a whole block, 16-byte stores
    store_tile_wide<BN, R, Out, kBits>(p, t, acc, r_lo, lane, row_scale, sb_row);
    return;
  }
  if (p.vector_store && rows_whole && t.n0 + BN <= p.n) {  // a whole block: no bounds per element
    const int col0 = t.n0 + 2 * (lane % 4);
    Out* lo = static_cast<Out*>(p.c) + static_cast<int64_t>(t.row0 + r_lo) * p.ldc + col0;
    Out* hi = lo + 8 * p.ldc;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      float cs0 = 1.f, cs1 = 1.f;
      if constexpr (R == Recipe::Row) { cs0 = __ldg(sb_row + col0 + 8 * j); cs1 = __ldg(sb_row + col0 + 8 * j + 1); }
      store_pair(lo + 8 * j, scaled<kBits>(acc[4 * j + 0], row_scale[0], cs0), scaled<kBits>(acc[4 * j + 1], row_scale[0], cs1));
      store_pair(hi + 8 * j, scaled<kBits>(acc[4 * j + 2], row_scale[1], cs0), scaled<kBits>(acc[4 * j + 3], row_scale[1], cs1));
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = t.n0 + j * 8 + 2 * (lane % 4);
    if (col >= p.n) continue;
    float cs0 = 1.f, cs1 = 1.f;
    if constexpr (R == Recipe::Row) {
      cs0 = __ldg(sb_row + col);
      cs1 = col + 1 < p.n ? __ldg(sb_row + col + 1) : 0.f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m_local = t.m_local0 + r_lo + 8 * h;
      if (m_local >= t.m_g) continue;
      const float v0 = scaled<kBits>(acc[4 * j + 2 * h], row_scale[h], cs0), v1 = scaled<kBits>(acc[4 * j + 2 * h + 1], row_scale[h], cs1);
      Out* dst = static_cast<Out*>(p.c) + static_cast<int64_t>(t.row0 + r_lo + 8 * h) * p.ldc + col;
      if (p.vector_store && col + 1 < p.n) {
        store_pair(dst, v0, v1);
      } else {
        dst[0] = to_out<Out>(v0);
        if (col + 1 < p.n) dst[1] = to_out<Out>(v1);
      }
    }
  }
}

// The epilogue of an output element: an int32 one (int8 operands, unscaled; an int32 accumulator) is stored as
// the fp32 one is, as bits.
template <int BN, Recipe R, class Out, class Acc>
__device__ __forceinline__ void store_tile(const Params& p, const Tile& t, const Acc* acc, int r_lo, int lane) {
  static_assert(std::is_same_v<Out, int32_t> == std::is_same_v<Acc, uint32_t>, "int32 output: an int32 accumulator");
  static_assert(!std::is_same_v<Out, int32_t> || R == Recipe::None, "int32 output: unscaled");
  constexpr bool kBits = std::is_same_v<Out, int32_t>;
  store_values<BN, R, std::conditional_t<kBits, float, Out>, kBits>(p, t, reinterpret_cast<const float*>(acc), r_lo, lane);
}

}  // namespace ckgemm::ws
