// The group table of ckgemm's own grouped kernels (ws_fp8.cuh, ws_s8_rr.cuh): per-group prefix sums of rows and
// tile units built in shared memory from the device-resident group sizes at the start of each CTA, and the
// decoding of a unit into its tile (the arithmetic is ws_fp8_schedule.h's).
#pragma once

#include <cstdint>

#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

// Prefix sums of rows and units per group, the sizes checked as the packed builder checks them. One warp reads
// the sizes and scans them, and only its lane 0 traps: a loop over the sizes by every thread, or a trap that all
// threads may reach, made ptxas treat the rest of the kernel as divergent and keep the consumers' k-loop (stage,
// descriptors, barrier addresses) out of uniform registers, an R2UR in front of every wgmma operand (the
// thirteenth session: 1.02-1.12x on 17 of 18 prefill pairs, docs/PERF_2026-12-03c.md).
// S: the kernel's shared storage (row_start, unit_start, bad); P: its parameters (sizes, sizes_int64, groups,
// rows, sizes_ok).
template <bool McastB, int BM = kBlockM, bool Quad = false, class S, class P>
__device__ void build_table(S& s, const P& p, int n_blocks) {
  const int tid = threadIdx.x;
  if (tid < 32) {
    // The sizes into shared memory first (a size outside [0, rows], int64 ones too, stored as -1), then the
    // scan. Each lane issues four loads before it stores any, so they are in flight together.
    for (int base = tid; base < p.groups; base += 4 * 32) {
      const auto* s64 = static_cast<const int64_t*>(p.sizes) + base;
      const auto* s32 = static_cast<const int*>(p.sizes) + base;
      int64_t m[4];
      if (p.sizes_int64) {
#pragma unroll
        for (int j = 0; j < 4; ++j) m[j] = base + 32 * j < p.groups ? s64[32 * j] : 0;
      } else {  // int32 loads into their own registers, widened after all four were issued
        int m32[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) m32[j] = base + 32 * j < p.groups ? s32[32 * j] : 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) m[j] = m32[j];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (base + 32 * j < p.groups)
          s.row_start[base + 32 * j + 1] = m[j] < 0 || m[j] > p.rows ? -1 : static_cast<int>(m[j]);
    }
    __syncwarp();
    int64_t rows = 0;  // 32 sizes of up to 2^31 - 1 each can pass int
    int units = 0;
    bool bad = false;
    for (int base = 0; base < p.groups; base += 32) {
      const int i = base + tid;
      int64_t m = i < p.groups ? s.row_start[i + 1] : 0;
      bad |= m < 0;
      m = m < 0 ? 0 : m;
      int u = units_of<McastB, BM, Quad>(static_cast<int>(m), n_blocks);
      for (int d = 1; d < 32; d <<= 1) {
        const int64_t mu = __shfl_up_sync(0xffffffffu, m, d);
        const int uu = __shfl_up_sync(0xffffffffu, u, d);
        if (tid >= d) { m += mu; u += uu; }
      }
      __syncwarp();
      if (i < p.groups) { s.row_start[i + 1] = static_cast<int>(rows + m); s.unit_start[i + 1] = units + u; }
      rows += __shfl_sync(0xffffffffu, m, 31);
      units += __shfl_sync(0xffffffffu, u, 31);
    }
    bad = __any_sync(0xffffffffu, bad) || rows != p.rows;
    if (tid == 0) {
      s.row_start[0] = s.unit_start[0] = 0;
      s.bad = bad;
      if (bad) s.unit_start[p.groups] = 0;
      if (bad && p.sizes_ok == nullptr) asm volatile("trap;");  // no sizes_ok to report to: stop the launch
    }
  }
  __syncthreads();
  if (blockIdx.x == 0 && tid == 0 && p.sizes_ok != nullptr) *p.sizes_ok = s.bad ? 0 : 1;
  // No printf here: a call in the kernel makes ptxas serialise the wgmmas (C7510). The host wrapper passes
  // sizes_ok and reports bad sizes; without it, bad sizes trap the launch (above).
}

template <int BN, bool McastB, int BM = kBlockM, bool Quad = false, class S>
__device__ __forceinline__ Tile decode(const S& s, int groups, int u, int rank) {
  return decode_unit<BN, McastB, BM, Quad>(s.row_start, s.unit_start, groups, u, rank);
}

}  // namespace ckgemm::ws
