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
  unsigned long long count[6];  // mismatches, nan_out, inf_out, nan_ref, inf_ref, threads that saw a nonzero out
  unsigned long long max_err_bits;
  unsigned long long max_err_index;  // kNoIndex: no finite pair
  unsigned long long max_ref_bits;
};
constexpr int kCounts = 6;

constexpr int kVec = 8;  // elements per thread per step: 16-byte loads for 16-bit types, 2x16 for 32-bit

// At most 8 blocks per multiprocessor, and enough blocks that no thread visits 2^30 elements (the
// per-thread counts are 32-bit). launch_verify_stats expects a grid of at least this size's lower bound.
__host__ __device__ inline int64_t min_grid(int64_t n) { return n / (static_cast<int64_t>(kThreads) << 30) + 1; }
__host__ __device__ inline int suggested_grid(int64_t n, int multiprocessors) {
  const int64_t steps = (n + static_cast<int64_t>(kThreads) * kVec - 1) / (static_cast<int64_t>(kThreads) * kVec);
  const int64_t cap = 8 * static_cast<int64_t>(multiprocessors > 0 ? multiprocessors : 1);
  const int64_t grid = steps < 1 ? 1 : (steps < cap ? steps : cap);
  return static_cast<int>(grid > min_grid(n) ? grid : min_grid(n));
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

// The finite test on the high word of a double: exact under any fast-math flag (unlike x != x).
__device__ inline unsigned exponent_field(double x) { return static_cast<unsigned>(bits_of(x) >> 32) & 0x7ff00000u; }
constexpr unsigned kExpAllOnes = 0x7ff00000u;

// The rule for one finite pair: separately rounded double operations, never fused.
__device__ inline double abs_err(double o, double r) { return fabs(__dsub_rn(o, r)); }
__device__ inline bool exceeds(double err, double r, double rtol, double atol) {
  return err > __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
}

// Running statistics of one thread. 32-bit counts suffice: with a grid of at least min_grid(n) blocks no
// thread visits 2^31 elements.
struct Tally {
  unsigned count[kCounts - 1] = {0, 0, 0, 0, 0};  // mismatches, nan_out, inf_out, nan_ref, inf_ref
  bool nonzero = false;                           // some out element is not 0 (NaN counts as nonzero)
  double max_err = -1.0;                          // -1: no finite pair yet
  unsigned long long max_err_index = kNoIndex;
  double max_ref = 0.0;

  // Any pair, NaN and Inf included (the path of vectors holding a special value, tails, unaligned data).
  __device__ void add(double o, double r, double rtol, double atol, unsigned long long index) {
    const bool nan_out = is_nan(o), inf_out = is_inf(o), nan_ref = is_nan(r), inf_ref = is_inf(r);
    count[1] += nan_out;
    count[2] += inf_out;
    count[3] += nan_ref;
    count[4] += inf_ref;
    nonzero = nonzero || !(o == 0.0);
    if (!(nan_ref || inf_ref)) max_ref = fmax(max_ref, fabs(r));
    if (nan_out || nan_ref) {
      count[0] += 1;
    } else if (inf_out || inf_ref) {
      count[0] += !(o == r);
    } else {
      const double err = abs_err(o, r);
      count[0] += exceeds(err, r, rtol, atol);
      // Indices grow along a thread's walk, so the first strict maximum is the smallest index.
      if (err > max_err) {
        max_err = err;
        max_err_index = index;
      }
    }
  }

  // kVec consecutive pairs starting at flat index `base`. When all are finite (the common case) the
  // NaN/Inf tests and the running maxima are taken once per vector instead of once per element.
  template <class V1, class V2>
  __device__ void add_vec(const V1& ov, const V2& rv, double rtol, double atol, unsigned long long base) {
    double o[kVec], r[kVec];
    unsigned exp_max = 0;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      o[j] = to_double(ov.v[j]);
      r[j] = to_double(rv.v[j]);
      exp_max = max(exp_max, max(exponent_field(o[j]), exponent_field(r[j])));
    }
    if (exp_max == kExpAllOnes) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) add(o[j], r[j], rtol, atol, base + j);
      return;
    }
    unsigned mismatches = 0;
    bool nz = false;
    double vec_err = -1.0, vec_ref = max_ref;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const double err = abs_err(o[j], r[j]);
      mismatches += exceeds(err, r[j], rtol, atol);
      nz = nz || !(o[j] == 0.0);
      vec_err = fmax(vec_err, err);
      vec_ref = fmax(vec_ref, fabs(r[j]));
    }
    count[0] += mismatches;
    nonzero = nonzero || nz;
    max_ref = vec_ref;
    if (vec_err > max_err) {  // rare after the first vectors: find the first element reaching it
      int first = kVec - 1;
#pragma unroll
      for (int j = kVec - 1; j >= 0; --j)
        if (abs_err(o[j], r[j]) == vec_err) first = j;
      max_err = vec_err;
      max_err_index = base + static_cast<unsigned long long>(first);
    }
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

// Reduces (err, index) pairs; every thread gets the result.
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

// Block-wide fold of per-thread partials (64-bit counts); every thread gets the result.
__device__ inline Partial fold_block(const Partial& mine, unsigned long long* s1, unsigned long long* s2) {
  Partial p;
  for (int q = 0; q < kCounts; ++q) p.count[q] = block_sum(mine.count[q], s1);
  p.max_ref_bits = block_max(mine.max_ref_bits, s1);
  p.max_err_bits = mine.max_err_bits;
  p.max_err_index = mine.max_err_index;
  block_best(p.max_err_bits, p.max_err_index, s1, s2);
  return p;
}

__device__ inline Partial to_partial(const Tally& t) {
  Partial p;
  for (int q = 0; q < kCounts - 1; ++q) p.count[q] = t.count[q];
  p.count[kCounts - 1] = t.nonzero ? 1 : 0;
  p.max_err_bits = t.max_err_index == kNoIndex ? 0 : bits_of(t.max_err);
  p.max_err_index = t.max_err_index;
  p.max_ref_bits = bits_of(t.max_ref);
  return p;
}

// The single pass. kVectorized needs 16-byte aligned base pointers (torch allocations are) and reads
// the n % kVec tail element by element; otherwise every element is read on its own. Two vectors per
// thread are loaded before either is classified, so more loads are in flight.
template <class TOut, class TRef, bool kVectorized>
__global__ void __launch_bounds__(kThreads)
verify_stats_kernel(const TOut* __restrict__ out, const TRef* __restrict__ ref, int64_t n, double rtol, double atol,
                    Partial* partials) {
  __shared__ unsigned long long s1[kThreads];
  __shared__ unsigned long long s2[kThreads];
  Tally tally;
  const int64_t chunks = kVectorized ? n / kVec : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  const auto* ov = reinterpret_cast<const Vec<TOut>*>(out);
  const auto* rv = reinterpret_cast<const Vec<TRef>*>(ref);
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < chunks; c += 2 * step) {
    const int64_t c2 = c + step;
    const Vec<TOut> o1 = ov[c];
    const Vec<TRef> r1 = rv[c];
    Vec<TOut> o2;
    Vec<TRef> r2;
    if (c2 < chunks) {
      o2 = ov[c2];
      r2 = rv[c2];
    }
    tally.add_vec(o1, r1, rtol, atol, static_cast<unsigned long long>(c) * kVec);
    if (c2 < chunks) tally.add_vec(o2, r2, rtol, atol, static_cast<unsigned long long>(c2) * kVec);
  }
  if (kVectorized && blockIdx.x == 0) {
    for (int64_t i = chunks * kVec + threadIdx.x; i < n; i += kThreads)
      tally.add(to_double(out[i]), to_double(ref[i]), rtol, atol, static_cast<unsigned long long>(i));
  }
  if (!kVectorized) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step)
      tally.add(to_double(out[i]), to_double(ref[i]), rtol, atol, static_cast<unsigned long long>(i));
  }
  const Partial p = fold_block(to_partial(tally), s1, s2);
  if (threadIdx.x == 0) partials[blockIdx.x] = p;
}

// Folds the per-block partials (one block) and writes the stats tensor.
template <int kUnused = 0>
__global__ void __launch_bounds__(kThreads)
verify_finalize_kernel(const Partial* partials, int blocks, int64_t n, double* stats) {
  __shared__ unsigned long long s1[kThreads];
  __shared__ unsigned long long s2[kThreads];
  Partial mine = {{0, 0, 0, 0, 0, 0}, 0, kNoIndex, 0};
  for (int b = threadIdx.x; b < blocks; b += kThreads) {
    const Partial& p = partials[b];
    for (int q = 0; q < kCounts; ++q) mine.count[q] += p.count[q];
    if (p.max_ref_bits > mine.max_ref_bits) mine.max_ref_bits = p.max_ref_bits;
    if (better(p.max_err_bits, p.max_err_index, mine.max_err_bits, mine.max_err_index)) {
      mine.max_err_bits = p.max_err_bits;
      mine.max_err_index = p.max_err_index;
    }
  }
  const Partial total = fold_block(mine, s1, s2);
  if (threadIdx.x == 0) {
    const bool none = total.max_err_index == kNoIndex;
    stats[kNumel] = static_cast<double>(n);
    stats[kMismatches] = static_cast<double>(total.count[0]);
    stats[kNanOut] = static_cast<double>(total.count[1]);
    stats[kInfOut] = static_cast<double>(total.count[2]);
    stats[kNanRef] = static_cast<double>(total.count[3]);
    stats[kInfRef] = static_cast<double>(total.count[4]);
    stats[kMaxAbsErr] = none ? 0.0 : double_of(total.max_err_bits);
    stats[kMaxAbsIndex] = none ? -1.0 : static_cast<double>(total.max_err_index);
    stats[kMaxAbsRef] = double_of(total.max_ref_bits);
    stats[kOutAllZero] = total.count[5] == 0 ? 1.0 : 0.0;
  }
}

// Two launches on `stream` (cudaStream_t or hipStream_t), no host sync, no allocation: graph-capturable.
template <class TOut, class TRef, class Stream>
inline void launch_verify_stats(const TOut* out, const TRef* ref, int64_t n, double rtol, double atol,
                                Partial* scratch, double* stats, int grid, Stream stream) {
  // grid: suggested_grid(n, ...) or any value >= min_grid(n); scratch holds grid Partials.
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
