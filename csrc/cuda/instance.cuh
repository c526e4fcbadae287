// One CUTLASS grouped-GEMM instance behind the ckgemm ABI: its argument arrays (problem shapes,
// pointers, strides) in one device buffer, the list form's host staging and single H2D copy, the
// packed form's device-side builder sink, per-group alignment rules, and the launch.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

#include "../ckgemm.h"
#include "../common/packed_args.cuh"
#include "grouped_kernel.cuh"

namespace ckgemm::cuda {

// What the runner hands an instance. List form: host_groups holds only groups for the kernel
// (no empty or k == 0 groups). Packed form: packed is set and host_groups is null.
struct Launch {
  int groups;
  const GroupDesc* host_groups;
  const PackedArgs* packed;
  const Buffers* buffers;
  cudaStream_t stream;
  int sm_count;
  RunReport* report;
};

struct InstanceFns {
  BufferSizes (*sizes)(int groups, int sm_count, bool packed);
  bool (*supports)(const GroupDesc& group, std::string* why);
  Status (*run)(const Launch& launch);
};

inline size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Tile-scheduler tuning, read once from the environment: CKGEMM_SWIZZLE in {1, 2, 4, 8} and
// CKGEMM_RASTER in {m, n}. Defaults are CUTLASS's grouped defaults (no swizzle, along M).
inline int scheduler_swizzle() {
  static const int value = [] {
    const char* e = std::getenv("CKGEMM_SWIZZLE");
    const int v = e != nullptr ? std::atoi(e) : 1;
    return v == 2 || v == 4 || v == 8 ? v : 1;
  }();
  return value;
}
inline bool scheduler_along_n() {
  static const bool value = [] {
    const char* e = std::getenv("CKGEMM_RASTER");
    return e != nullptr && (e[0] == 'n' || e[0] == 'N');
  }();
  return value;
}
// fp8 two-level accumulation: CKGEMM_FP8_PROMOTION in {4, 8, 16} wgmma k-blocks between promotions of the
// tensor-core partial sums into the fp32 accumulator (CUTLASS's default, 4, is one 128-deep k-tile). Larger
// intervals drain the tensor pipe less often and sum longer in the tensor core's narrower accumulator.
inline unsigned fp8_promotion_interval() {
  static const unsigned value = [] {
    const char* e = std::getenv("CKGEMM_FP8_PROMOTION");
    const int v = e != nullptr ? std::atoi(e) : 4;
    return static_cast<unsigned>(v == 8 || v == 16 ? v : 4);
  }();
  return value;
}
template <class T, class = void>
struct HasPromotionInterval : std::false_type {};
template <class T>
struct HasPromotionInterval<T, std::void_t<decltype(std::declval<T&>().mma_promotion_interval)>> : std::true_type {};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class K>
struct Instance {
  using Gemm = typename K::Gemm;
  using Kernel = typename K::Kernel;
  using ElementIn = typename K::ElementIn;
  using ElementOut = typename K::ElementOut;
  using Shape3 = typename K::ProblemShape::UnderlyingProblemShape;
  using StrideA = typename Kernel::InternalStrideA;
  using StrideB = typename Kernel::InternalStrideB;
  using StrideD = typename Kernel::InternalStrideD;
  static constexpr bool kRowMajorB = std::is_same_v<typename K::LayoutB, cutlass::layout::RowMajor>;
  static_assert(!std::is_same_v<ElementIn, cutlass::float_e4m3_t> ||
                    HasPromotionInterval<typename Kernel::MainloopArguments>::value,
                "fp8 instances use CUTLASS's two-level (promoting) accumulation");

  struct Arrays {
    Shape3* shapes;
    const ElementIn** a;
    const ElementIn** b;
    ElementOut** d;
    StrideA* sa;
    StrideB* sb;
    StrideD* sd;
  };

  static size_t arrays_bytes(int g) {
    return align_up(g * sizeof(Shape3), 16) + 3 * align_up(g * sizeof(void*), 16) +
           align_up(g * sizeof(StrideA), 16) + align_up(g * sizeof(StrideB), 16) + align_up(g * sizeof(StrideD), 16);
  }

  static Arrays carve(void* base, int g) {
    char* p = static_cast<char*>(base);
    auto take = [&](size_t bytes) { char* q = p; p += align_up(bytes, 16); return q; };
    Arrays arr;
    arr.shapes = reinterpret_cast<Shape3*>(take(g * sizeof(Shape3)));
    arr.a = reinterpret_cast<const ElementIn**>(take(g * sizeof(void*)));
    arr.b = reinterpret_cast<const ElementIn**>(take(g * sizeof(void*)));
    arr.d = reinterpret_cast<ElementOut**>(take(g * sizeof(void*)));
    arr.sa = reinterpret_cast<StrideA*>(take(g * sizeof(StrideA)));
    arr.sb = reinterpret_cast<StrideB*>(take(g * sizeof(StrideB)));
    arr.sd = reinterpret_cast<StrideD*>(take(g * sizeof(StrideD)));
    return arr;
  }

  // A stride has one dynamic mode (the leading dimension) and unit/zero static modes.
  template <class Stride>
  CUTE_HOST_DEVICE static Stride with_ld(int64_t ld) {
    Stride s{};
    if constexpr (cute::is_static<std::remove_reference_t<decltype(cute::get<0>(s))>>::value) {
      cute::get<1>(s) = ld;
    } else {
      cute::get<0>(s) = ld;
    }
    return s;
  }

  CUTE_HOST_DEVICE static void write(const Arrays& arr, int i, const GroupDesc& g) {
    arr.shapes[i] = cute::make_shape(static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k));
    arr.a[i] = static_cast<const ElementIn*>(g.a);
    arr.b[i] = static_cast<const ElementIn*>(g.b);
    arr.d[i] = static_cast<ElementOut*>(g.c);
    arr.sa[i] = with_ld<StrideA>(g.lda);
    arr.sb[i] = with_ld<StrideB>(g.ldb);
    arr.sd[i] = with_ld<StrideD>(g.ldc);
  }

  struct Sink {
    Arrays arr;
    __device__ void operator()(int i, const GroupDesc& g) const { write(arr, i, g); }
  };

  // TMA needs 16-byte aligned bases and leading dimensions, and a contiguous extent that is a
  // multiple of 16 bytes; the direct-store epilogue lifts those rules for D.
  static bool supports(const GroupDesc& g, std::string* why) {
    constexpr int64_t in = sizeof(ElementIn), out = sizeof(ElementOut);
    const char* fail = nullptr;
    if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) fail = "a dimension exceeds 2^31-1";
    else if (!aligned16(g.a) || (g.lda * in) % 16) fail = "A base or lda not 16-byte aligned";
    else if (!aligned16(g.b) || (g.ldb * in) % 16) fail = "B base or ldb not 16-byte aligned";
    else if ((g.k * in) % 16) fail = "K is not a multiple of 16 bytes";
    else if (kRowMajorB && (g.n * in) % 16) fail = "N (contiguous in RR B) is not a multiple of 16 bytes";
    else if (!K::Schedule::kDirectStore && (!aligned16(g.c) || (g.ldc * out) % 16 || (g.n * out) % 16))
      fail = "C base, ldc or N not 16-byte aligned for the TMA-store epilogue";
    if (fail != nullptr && why != nullptr) *why = fail;
    return fail == nullptr;
  }

  static cutlass::KernelHardwareInfo hardware(int sm_count) {
    int device = 0;
    cudaGetDevice(&device);
    static int clusters[64] = {};  // per device; occupancy of this kernel does not change
    if (device < 64 && clusters[device] == 0)
      clusters[device] = cutlass::KernelHardwareInfo::query_device_max_active_clusters<Kernel>();
    return {device, sm_count, device < 64 ? clusters[device] : 0};
  }

  static typename Gemm::Arguments arguments(const Arrays& arr, const Shape3* host_shapes, int groups, int sm_count) {
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGrouped,
        {groups, arr.shapes, const_cast<Shape3*>(host_shapes)},
        {arr.a, arr.sa, arr.b, arr.sb},
        {{}, nullptr, nullptr, arr.d, arr.sd},
        hardware(sm_count)};
    args.epilogue.thread.alpha = 1;
    args.epilogue.thread.beta = 0;
    using Raster = decltype(args.scheduler.raster_order);
    args.scheduler.max_swizzle_size = scheduler_swizzle();
    args.scheduler.raster_order = scheduler_along_n() ? Raster::AlongN : Raster::AlongM;
    if constexpr (HasPromotionInterval<decltype(args.mainloop)>::value)
      args.mainloop.mma_promotion_interval = fp8_promotion_interval();
    return args;
  }

  static size_t cutlass_workspace(int groups, int sm_count) {
    Arrays none{};
    return Gemm::get_workspace_size(arguments(none, nullptr, groups, sm_count));
  }

  static BufferSizes sizes(int groups, int sm_count, bool packed) {
    const size_t arrays = align_up(arrays_bytes(groups), 256);
    return {arrays + cutlass_workspace(groups, sm_count), packed ? 0 : arrays_bytes(groups)};
  }

  static Status fail(const Launch& l, Status s, const std::string& text) {
    if (l.report != nullptr) {
      std::string t = text.substr(0, sizeof(l.report->message) - 1);
      t.copy(l.report->message, t.size());
      l.report->message[t.size()] = '\0';
    }
    return s;
  }

  static Status run(const Launch& l) {
    const size_t arrays = align_up(arrays_bytes(l.groups), 256);
    Arrays dev = carve(l.buffers->device, l.groups);
    const Shape3* host_shapes = nullptr;
    if (l.host_groups != nullptr) {
      Arrays host = carve(l.buffers->host, l.groups);
      for (int i = 0; i < l.groups; ++i) write(host, i, l.host_groups[i]);
      // Device pointers inside the staged arrays point at `dev`'s layout: same offsets, one copy.
      cudaError_t e = cudaMemcpyAsync(l.buffers->device, l.buffers->host, arrays_bytes(l.groups),
                                      cudaMemcpyHostToDevice, l.stream);
      if (e != cudaSuccess) return fail(l, Status::BackendError, cudaGetErrorString(e));
      host_shapes = host.shapes;  // lets CUTLASS size the grid and check alignment per group
    } else {
      build_packed_groups<<<1, kPackedBuilderThreads, 0, l.stream>>>(
          *l.packed, static_cast<int>(sizeof(ElementIn)), static_cast<int>(sizeof(ElementOut)), Sink{dev});
    }
    typename Gemm::Arguments args = arguments(dev, host_shapes, l.groups, l.sm_count);
    Gemm gemm;
    cutlass::Status st = gemm.can_implement(args);
    if (st != cutlass::Status::kSuccess)
      return fail(l, Status::Unsupported, std::string("CUTLASS can_implement: ") + cutlassGetStatusString(st));
    const size_t ws = Gemm::get_workspace_size(args);
    if (arrays + ws > l.buffers->device_bytes) return fail(l, Status::BackendError, "workspace too small");
    st = gemm.initialize(args, static_cast<char*>(l.buffers->device) + arrays, l.stream);
    if (st != cutlass::Status::kSuccess)
      return fail(l, Status::BackendError, std::string("CUTLASS initialize: ") + cutlassGetStatusString(st));
    st = gemm.run(l.stream);
    cudaError_t e = cudaGetLastError();
    if (st != cutlass::Status::kSuccess || e != cudaSuccess)
      return fail(l, Status::BackendError,
                  std::string("CUTLASS run: ") + cutlassGetStatusString(st) + " / " + cudaGetErrorString(e));
    return Status::Ok;
  }

  static InstanceFns fns() { return {&sizes, &supports, &run}; }
};

}  // namespace ckgemm::cuda

// Defines `ckgemm::cuda::InstanceFns ckgemm::cuda::instance_<name>()` for one kernel type.
#define CKGEMM_CUDA_INSTANCE(name, ...)                                                    \
  namespace ckgemm::cuda {                                                                 \
  InstanceFns instance_##name() { return Instance<__VA_ARGS__>::fns(); }                   \
  }
