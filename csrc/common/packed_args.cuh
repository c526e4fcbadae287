// Device-side argument building for the packed (MoE) form, shared by every backend: one block
// scans the group sizes and hands each group's descriptor to a backend "sink" functor that writes
// the backend's own argument format (CUTLASS pointer/shape/stride arrays, CK-tile kernel args).
// No host sync, so the whole call can be captured in a CUDA/HIP graph and replayed with new sizes.
//
// Portable CUDA/HIP C++ (no runtime headers): included by the CUDA runner and by the HIP runner.
#pragma once

#include <cstdio>

#include "../ckgemm.h"

namespace ckgemm {

constexpr int kPackedBuilderThreads = 1024;

// The builder's block width for `groups` groups: a power of two from 32 to kPackedBuilderThreads (its scans
// take log2(width) steps, so a few experts do not pay for 1024 threads).
inline int packed_builder_threads(int groups) {
  int threads = 32;
  while (threads < groups && threads < kPackedBuilderThreads) threads <<= 1;
  return threads;
}

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#define CKGEMM_DEVICE_TRAP() __builtin_trap()
#else
#define CKGEMM_DEVICE_TRAP() __trap()
#endif

// A sink that writes nothing: only the size check runs (calls with no GEMM work left).
struct NullSink {
  __device__ void operator()(int, const GroupDesc&) const {}
};

__device__ inline int64_t packed_size_at(const PackedArgs& p, int g) {
  return p.sizes_are_int64 ? static_cast<const int64_t*>(p.group_sizes)[g]
                           : static_cast<int64_t>(static_cast<const int32_t*>(p.group_sizes)[g]);
}

// Sink: __device__ void operator()(int group, const GroupDesc& desc) const.
// Launch with one block of packed_builder_threads(p.groups) threads (any power of two up to
// kPackedBuilderThreads works).
template <class Sink>
__global__ void __launch_bounds__(kPackedBuilderThreads)
build_packed_groups(PackedArgs p, int a_bytes, int c_bytes, Sink sink) {
  __shared__ int64_t scan[kPackedBuilderThreads];
  __shared__ int64_t carry;
  __shared__ int invalid;
  const int tid = threadIdx.x;
  const int threads = blockDim.x;

  // Pass 1: total and sign check.
  int64_t local_sum = 0;
  int local_negative = 0;
  for (int g = tid; g < p.groups; g += threads) {
    const int64_t s = packed_size_at(p, g);
    local_sum += s;
    // A size above `rows` (or above the kernels' 32-bit M) is invalid on its own; checking it here also
    // keeps the int64 sum from wrapping around to `rows` with huge entries.
    local_negative |= s < 0 || s > p.rows || s > 2147483647;
  }
  scan[tid] = local_sum;
  if (tid == 0) invalid = 0;
  __syncthreads();
  if (local_negative) invalid = 1;  // benign race: every writer stores 1
  for (int stride = threads / 2; stride > 0; stride >>= 1) {
    if (tid < stride) scan[tid] += scan[tid + stride];
    __syncthreads();
  }
  if (tid == 0) {
    if (scan[0] != p.rows) invalid = 1;
    if (p.sizes_ok != nullptr) {
      *p.sizes_ok = invalid ? 0 : 1;
    } else if (invalid) {
      // No flag to report through: fail loudly here (the stream's next sync raises), never compute.
      printf("ckgemm: group_sizes has a negative entry or sums to %lld, not a's %lld rows\n",
             static_cast<long long>(scan[0]), static_cast<long long>(p.rows));
      CKGEMM_DEVICE_TRAP();
    }
    carry = 0;
  }
  __syncthreads();

  // Pass 2: exclusive prefix sum, one chunk of `threads` groups at a time. Invalid sizes make every
  // group empty at offset 0, so nothing is read or written out of bounds.
  const char* a = static_cast<const char*>(p.a);
  const char* b = static_cast<const char*>(p.b);
  char* c = static_cast<char*>(p.c);
  for (int base = 0; base < p.groups; base += threads) {
    const int g = base + tid;
    const int64_t s = (g < p.groups && !invalid) ? packed_size_at(p, g) : 0;
    scan[tid] = s;
    __syncthreads();
    for (int offset = 1; offset < threads; offset <<= 1) {
      const int64_t add = tid >= offset ? scan[tid - offset] : 0;
      __syncthreads();
      scan[tid] += add;
      __syncthreads();
    }
    if (g < p.groups) {
      const int64_t row = carry + scan[tid] - s;
      GroupDesc d;
      d.a = a + row * p.lda * a_bytes;
      d.b = b + static_cast<int64_t>(g) * p.b_group_stride * a_bytes;
      d.c = c + row * p.ldc * c_bytes;
      d.m = s;
      d.n = p.n;
      d.k = p.k;
      d.lda = p.lda;
      d.ldb = p.ldb;
      d.ldc = p.ldc;
      d.sa = p.sa != nullptr ? p.sa + row * p.sa_row_stride : nullptr;
      d.sb = p.sb != nullptr ? p.sb + static_cast<int64_t>(g) * p.sb_group_stride : nullptr;
      sink(g, d);
    }
    __syncthreads();
    if (tid == threads - 1) carry += scan[tid];
    __syncthreads();
  }
}

}  // namespace ckgemm
