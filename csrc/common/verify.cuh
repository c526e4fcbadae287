// Fused on-device comparison of a kernel's output with a reference: one pass over both tensors that
// leaves only a few statistics in device memory (80 bytes cross to the host), after CK's gpu_verify.
//
// Portable CUDA/HIP C++, header-only: no runtime headers, no torch types. Included by the torch binding
// that registers   torch.ops.ckgemm.verify_stats(Tensor out, Tensor ref, float rtol, float atol) -> Tensor
//
// The comparison rule (identical to ckgemm/testing/numeric.py, evaluated in double precision with
// separately rounded operations, never fused, so the verdict equals the CPU path bit for bit):
//   NaN in out or ref                -> mismatch (NaN never passes)
//   an infinity in out or ref        -> mismatch unless out == ref (the same infinity)
//   finite pair                      -> mismatch when |out - ref| > atol + rtol * |ref|
//
// The stats tensor (float64, kStatsSize = 10 elements; counts and indices are exact below 2^53):
//   [0] kNumel         elements compared
//   [1] kMismatches    elements failing the rule
//   [2] kNanOut        NaNs in out
//   [3] kInfOut        infinities in out
//   [4] kNanRef        NaNs in ref
//   [5] kInfRef        infinities in ref
//   [6] kMaxAbsErr     max |out - ref| over finite pairs (0 when there is none)
//   [7] kMaxAbsIndex   smallest flat index of a finite pair reaching kMaxAbsErr; -1 when there is none
//   [8] kMaxAbsRef     max |ref| over finite ref elements (0 when there is none)
//   [9] kOutAllZero    1 when every out element equals 0 (often: the kernel never ran), else 0
//
// Element types: float, double, int32_t, int64_t (exact below 2^53), and fp16 / bf16 passed as raw
// 16-bit patterns (Half16 / BFloat16, same size and alignment as the storage). out and ref may differ in
// type (an fp16 output against a float reference). Instantiate what the binding dispatches, e.g.
// <Half16, Half16>, <Half16, float>, <BFloat16, BFloat16>, <BFloat16, float>, <float, float>,
// <float, double>, <int32_t, int32_t>, <int32_t, int64_t>.
//
// Use (the binding, on the current stream):
//   grid = ckgemm::verify::suggested_grid(n, multiprocessor_count)
//   scratch: device memory of grid * sizeof(ckgemm::verify::Partial) bytes; stats: device double[kStatsSize]
//   ckgemm::verify::launch_verify_stats(out_ptr, ref_ptr, n, rtol, atol, scratch, stats, grid, stream);
//
// One pass over the data (it is bandwidth-bound): each thread reads kVec consecutive elements of each
// tensor per step with 16-byte loads, keeps its counts and its (max error, first index) pair, and each
// block writes one Partial; a one-block kernel folds the partials. No atomics, no second pass.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ckgemm {
namespace verify {

enum StatsIndex : int {
  kNumel = 0,
  kMismatches = 1,
  kNanOut = 2,
  kInfOut = 3,
  kNanRef = 4,
  kInfRef = 5,
  kMaxAbsErr = 6,
  kMaxAbsIndex = 7,
  kMaxAbsRef = 8,
  kOutAllZero = 9,
  kStatsSize = 10,
};

constexpr int kThreads = 256;  // a power of two: the block reductions halve it
constexpr unsigned long long kNoIndex = ~0ull;

struct Half16 { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

// One block's statistics. Non-negative doubles are kept as their bit patterns, which order like
// unsigned integers.
struct Partial {
  unsigned long long count[7];  // mismatches, nan_out, inf_out, nan_ref, inf_ref, nonzero_out, finite_pairs
  unsigned long long max_err_bits;
  unsigned long long max_err_index;  // kNoIndex: no finite pair
  unsigned long long max_ref_bits;
};

constexpr int kVec = 8;  // elements per thread per step: 16-byte loads for 16-bit types, 2x16 for 32-bit

__host__ __device__ inline int suggested_grid(int64_t n, int multiprocessors) {
  const int64_t steps = (n + static_cast<int64_t>(kThreads) * kVec - 1) / (static_cast<int64_t>(kThreads) * kVec);
  const int64_t cap = 8 * static_cast<int64_t>(multiprocessors > 0 ? multiprocessors : 1);
  return static_cast<int>(steps < 1 ? 1 : (steps < cap ? steps : cap));
}

__device__ inline unsigned long long bits_of(double x) {
  return static_cast<unsigned long long>(__double_as_longlong(x));
}
__device__ inline double double_of(unsigned long long b) { return __longlong_as_double(static_cast<long long>(b)); }

constexpr unsigned long long kExpMask = 0x7ff0000000000000ull;
constexpr unsigned long long kMantMask = 0x000fffffffffffffull;

// Bit tests stay correct under fast-math flags, unlike x != x.
__device__ inline bool is_nan(double x) {
  const unsigned long long b = bits_of(x);
  return (b & kExpMask) == kExpMask && (b & kMantMask) != 0;
}
__device__ inline bool is_inf(double x) {
  const unsigned long long b = bits_of(x);
  return (b & kExpMask) == kExpMask && (b & kMantMask) == 0;
}

__device__ inline double to_double(float v) { return static_cast<double>(v); }
__device__ inline double to_double(double v) { return v; }
__device__ inline double to_double(int32_t v) { return static_cast<double>(v); }
__device__ inline double to_double(int64_t v) { return static_cast<double>(v); }

// Exact widening of a 16-bit float with `mant` mantissa bits, `exp_bits` exponent bits and bias `bias`.
__device__ inline double widen16(uint16_t h, int exp_bits, int mant, int bias) {
  const unsigned sign = h >> 15;
  const unsigned e = (h >> mant) & ((1u << exp_bits) - 1u);
  const unsigned long long m = h & ((1u << mant) - 1u);
  double mag;
  if (e == 0) {
    // subnormal: m * 2^(1 - bias - mant), a power-of-two product, exact in double
    mag = static_cast<double>(m) *
          double_of(static_cast<unsigned long long>(1023 + 1 - bias - mant) << 52);
  } else if (e == (1u << exp_bits) - 1u) {
    mag = double_of(m ? (kExpMask | (1ull << 51)) : kExpMask);
  } else {
    mag = double_of((static_cast<unsigned long long>(e - bias + 1023) << 52) | (m << (52 - mant)));
  }
  return sign ? -mag : mag;
}
__device__ inline double to_double(Half16 v) { return widen16(v.bits, 5, 10, 15); }
__device__ inline double to_double(BFloat16 v) { return widen16(v.bits, 8, 7, 127); }

struct Element {
  bool nan_out, inf_out, nan_ref, inf_ref, finite_pair, mismatch, zero_out;
  double err;      // |out - ref| for a finite pair
  double abs_ref;  // |ref| when ref is finite, else 0
};

__device__ inline Element classify(double o, double r, double rtol, double atol) {
  Element e;
  e.nan_out = is_nan(o);
  e.inf_out = is_inf(o);
  e.nan_ref = is_nan(r);
  e.inf_ref = is_inf(r);
  e.zero_out = (o == 0.0);
  e.finite_pair = !(e.nan_out || e.inf_out || e.nan_ref || e.inf_ref);
  e.abs_ref = (e.nan_ref || e.inf_ref) ? 0.0 : fabs(r);
  e.err = 0.0;
  if (e.nan_out || e.nan_ref) {
    e.mismatch = true;
  } else if (!e.finite_pair) {
    e.mismatch = !(o == r);
  } else {
    e.err = fabs(__dsub_rn(o, r));
    e.mismatch = e.err > __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
  }
  return e;
}

// Running statistics of one thread.
struct Tally {
  unsigned long long count[7] = {0, 0, 0, 0, 0, 0, 0};
  unsigned long long max_err = 0, max_err_index = kNoIndex, max_ref = 0;

  __device__ void add(double o, double r, double rtol, double atol, unsigned long long index) {
    const Element e = classify(o, r, rtol, atol);
    count[0] += e.mismatch;
    count[1] += e.nan_out;
    count[2] += e.inf_out;
    count[3] += e.nan_ref;
    count[4] += e.inf_ref;
    count[5] += !e.zero_out;
    count[6] += e.finite_pair;
    // Indices grow along a thread's walk, so the first strict maximum is the smallest index.
    if (e.finite_pair && (max_err_index == kNoIndex || bits_of(e.err) > max_err)) {
      max_err = bits_of(e.err);
      max_err_index = index;
    }
    if (bits_of(e.abs_ref) > max_ref) max_ref = bits_of(e.abs_ref);
  }
};

template <class T>
struct alignas(16) Vec {
  T v[kVec];
};

// (err, index) pairs order by larger error, then by smaller index; kNoIndex loses to any pair.
__device__ inline bool better(unsigned long long err, unsigned long long idx, unsigned long long err2,
                              unsigned long long idx2) {
  if (idx == kNoIndex) return false;
  if (idx2 == kNoIndex) return true;
  return err > err2 || (err == err2 && idx < idx2);
}

__device__ inline unsigned long long block_sum(unsigned long long v, unsigned long long* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  const unsigned long long r = shared[0];
  __syncthreads();
  return r;
}

__device__ inline unsigned long long block_max(unsigned long long v, unsigned long long* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride && shared[threadIdx.x + stride] > shared[threadIdx.x])
      shared[threadIdx.x] = shared[threadIdx.x + stride];
    __syncthreads();
  }
  const unsigned long long r = shared[0];
  __syncthreads();
  return r;
}

// Reduces (err, index) pairs; thread 0 gets the result.
__device__ inline void block_best(unsigned long long& err, unsigned long long& idx, unsigned long long* se,
                                  unsigned long long* si) {
  se[threadIdx.x] = err;
  si[threadIdx.x] = idx;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    const int t = threadIdx.x;
    if (t < stride && better(se[t + stride], si[t + stride], se[t], si[t])) {
      se[t] = se[t + stride];
      si[t] = si[t + stride];
    }
    __syncthreads();
  }
  err = se[0];
  idx = si[0];
  __syncthreads();
}

__device__ inline void store_partial(const Tally& t, Partial* out, unsigned long long* s1, unsigned long long* s2) {
  Partial p;
  for (int q = 0; q < 7; ++q) p.count[q] = block_sum(t.count[q], s1);
  p.max_ref_bits = block_max(t.max_ref, s1);
  unsigned long long err = t.max_err, idx = t.max_err_index;
  block_best(err, idx, s1, s2);
  p.max_err_bits = err;
  p.max_err_index = idx;
  if (threadIdx.x == 0) *out = p;
}

// The single pass. kVectorized needs 16-byte aligned base pointers (torch allocations are) and reads
// the n % kVec tail element by element; otherwise every element is read on its own.
template <class TOut, class TRef, bool kVectorized>
__global__ void __launch_bounds__(kThreads)
verify_stats_kernel(const TOut* out, const TRef* ref, int64_t n, double rtol, double atol, Partial* partials) {
  __shared__ unsigned long long s1[kThreads];
  __shared__ unsigned long long s2[kThreads];
  Tally tally;
  const int64_t chunks = kVectorized ? n / kVec : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < chunks; c += step) {
    const Vec<TOut> o = reinterpret_cast<const Vec<TOut>*>(out)[c];
    const Vec<TRef> r = reinterpret_cast<const Vec<TRef>*>(ref)[c];
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      tally.add(to_double(o.v[j]), to_double(r.v[j]), rtol, atol, static_cast<unsigned long long>(c * kVec + j));
  }
  if (kVectorized && blockIdx.x == 0) {
    for (int64_t i = chunks * kVec + threadIdx.x; i < n; i += kThreads)
      tally.add(to_double(out[i]), to_double(ref[i]), rtol, atol, static_cast<unsigned long long>(i));
  }
  if (!kVectorized) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step)
      tally.add(to_double(out[i]), to_double(ref[i]), rtol, atol, static_cast<unsigned long long>(i));
  }
  store_partial(tally, partials + blockIdx.x, s1, s2);
}

// Folds the per-block partials (one block) and writes the stats tensor.
template <int kUnused = 0>
__global__ void __launch_bounds__(kThreads)
verify_finalize_kernel(const Partial* partials, int blocks, int64_t n, double* stats) {
  __shared__ unsigned long long s1[kThreads];
  __shared__ unsigned long long s2[kThreads];
  Tally t;
  for (int b = threadIdx.x; b < blocks; b += kThreads) {
    const Partial& p = partials[b];
    for (int q = 0; q < 7; ++q) t.count[q] += p.count[q];
    if (p.max_ref_bits > t.max_ref) t.max_ref = p.max_ref_bits;
    if (better(p.max_err_bits, p.max_err_index, t.max_err, t.max_err_index)) {
      t.max_err = p.max_err_bits;
      t.max_err_index = p.max_err_index;
    }
  }
  Partial total;
  for (int q = 0; q < 7; ++q) total.count[q] = block_sum(t.count[q], s1);
  total.max_ref_bits = block_max(t.max_ref, s1);
  unsigned long long err = t.max_err, idx = t.max_err_index;
  block_best(err, idx, s1, s2);
  if (threadIdx.x == 0) {
    stats[kNumel] = static_cast<double>(n);
    stats[kMismatches] = static_cast<double>(total.count[0]);
    stats[kNanOut] = static_cast<double>(total.count[1]);
    stats[kInfOut] = static_cast<double>(total.count[2]);
    stats[kNanRef] = static_cast<double>(total.count[3]);
    stats[kInfRef] = static_cast<double>(total.count[4]);
    stats[kMaxAbsErr] = idx == kNoIndex ? 0.0 : double_of(err);
    stats[kMaxAbsIndex] = idx == kNoIndex ? -1.0 : static_cast<double>(idx);
    stats[kMaxAbsRef] = double_of(total.max_ref_bits);
    stats[kOutAllZero] = total.count[5] == 0 ? 1.0 : 0.0;
  }
}

// Two launches on `stream` (cudaStream_t or hipStream_t), no host sync, no allocation: graph-capturable.
template <class TOut, class TRef, class Stream>
inline void launch_verify_stats(const TOut* out, const TRef* ref, int64_t n, double rtol, double atol,
                                Partial* scratch, double* stats, int grid, Stream stream) {
  grid = grid < 1 ? 1 : grid;
  const bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0 && reinterpret_cast<uintptr_t>(ref) % 16 == 0;
  if (aligned)
    verify_stats_kernel<TOut, TRef, true><<<grid, kThreads, 0, stream>>>(out, ref, n, rtol, atol, scratch);
  else
    verify_stats_kernel<TOut, TRef, false><<<grid, kThreads, 0, stream>>>(out, ref, n, rtol, atol, scratch);
  verify_finalize_kernel<><<<1, kThreads, 0, stream>>>(scratch, grid, n, stats);
}

}  // namespace verify
}  // namespace ckgemm
