// One CUTLASS grouped-GEMM instance behind the ckgemm ABI: its argument arrays (problem shapes,
// pointers, strides, scale pointers and layouts) in one device buffer, written on the device by the
// shared builders (list form: descriptors as kernel parameters; packed form: from the device-resident
// sizes), and the launch. No host staging, no host-to-device copy: every launch is graph-capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "../ckgemm.h"
#include "../common/list_args.cuh"
#include "../common/packed_args.cuh"
#include "fp8_promotion.h"
#include "grouped_kernel.cuh"

namespace ckgemm::cuda {

// What the runner hands an instance. List form: host_groups (all routed to this instance). Packed
// form: packed is set and host_groups is null.
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
  size_t (*bytes)(int groups, int sm_count);                  // device scratch of a list launch
  size_t (*packed_bytes)(const PackedArgs& p, int sm_count);  // and of a packed one
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
template <class T, class = void>
struct HasPromotionInterval : std::false_type {};
template <class T>
struct HasPromotionInterval<T, std::void_t<decltype(std::declval<T&>().mma_promotion_interval)>> : std::true_type {};

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
  using LayoutSFA = typename K::LayoutSFA;
  using LayoutSFB = typename K::LayoutSFB;
  static constexpr Scaling kScaling = K::kScaling;
  static constexpr bool kScaled = kScaling != Scaling::None;
  static_assert(!std::is_same_v<ElementIn, cutlass::float_e4m3_t> || kScaling == Scaling::Block ||
                    HasPromotionInterval<typename Kernel::MainloopArguments>::value,
                "fp8 instances use CUTLASS's two-level (promoting) accumulation");

  struct Arrays {
    Shape3* shapes;
    const ElementIn** a;
    const ElementIn** b;
    ElementOut** d;
    StrideA* da;
    StrideB* db;
    StrideD* dd;
    const float** sa;  // per-group scale pointers (scaled instances) of the kernel's rows and columns
    const float** sb;
    LayoutSFA* lsfa;  // per-group scale layouts (block scales)
    LayoutSFB* lsfb;
  };

  static size_t arrays_bytes(int g) {
    size_t bytes = align_up(g * sizeof(Shape3), 16) + 3 * align_up(g * sizeof(void*), 16) +
                   align_up(g * sizeof(StrideA), 16) + align_up(g * sizeof(StrideB), 16) +
                   align_up(g * sizeof(StrideD), 16);
    if (kScaled) bytes += 2 * align_up(g * sizeof(void*), 16);
    if (kScaling == Scaling::Block) bytes += align_up(g * sizeof(LayoutSFA), 16) + align_up(g * sizeof(LayoutSFB), 16);
    return bytes;
  }

  static Arrays carve(void* base, int g) {
    char* p = static_cast<char*>(base);
    auto take = [&](size_t bytes) { char* q = p; p += align_up(bytes, 16); return q; };
    Arrays arr{};
    arr.shapes = reinterpret_cast<Shape3*>(take(g * sizeof(Shape3)));
    arr.a = reinterpret_cast<const ElementIn**>(take(g * sizeof(void*)));
    arr.b = reinterpret_cast<const ElementIn**>(take(g * sizeof(void*)));
    arr.d = reinterpret_cast<ElementOut**>(take(g * sizeof(void*)));
    arr.da = reinterpret_cast<StrideA*>(take(g * sizeof(StrideA)));
    arr.db = reinterpret_cast<StrideB*>(take(g * sizeof(StrideB)));
    arr.dd = reinterpret_cast<StrideD*>(take(g * sizeof(StrideD)));
    if (kScaled) {
      arr.sa = reinterpret_cast<const float**>(take(g * sizeof(void*)));
      arr.sb = reinterpret_cast<const float**>(take(g * sizeof(void*)));
    }
    if (kScaling == Scaling::Block) {
      arr.lsfa = reinterpret_cast<LayoutSFA*>(take(g * sizeof(LayoutSFA)));
      arr.lsfb = reinterpret_cast<LayoutSFB*>(take(g * sizeof(LayoutSFB)));
    }
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

  struct Sink {
    Arrays arr;
    __device__ void operator()(int i, const GroupDesc& g) const {
      const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
      arr.d[i] = static_cast<ElementOut*>(g.c);
      arr.dd[i] = with_ld<StrideD>(g.ldc);  // SwapAB: the column-major view of C, same leading dimension
      if constexpr (K::kSwapAB) {  // D^T = B A^T: the kernel's A is our B, its B our A, its rows our N
        arr.shapes[i] = cute::make_shape(n, m, k);
        arr.a[i] = static_cast<const ElementIn*>(g.b);
        arr.b[i] = static_cast<const ElementIn*>(g.a);
        arr.da[i] = with_ld<StrideA>(g.ldb);
        arr.db[i] = with_ld<StrideB>(g.lda);
      } else {
        arr.shapes[i] = cute::make_shape(m, n, k);
        arr.a[i] = static_cast<const ElementIn*>(g.a);
        arr.b[i] = static_cast<const ElementIn*>(g.b);
        arr.da[i] = with_ld<StrideA>(g.lda);
        arr.db[i] = with_ld<StrideB>(g.ldb);
      }
      if constexpr (kScaled) {  // sa scales the kernel's rows, sb its columns
        arr.sa[i] = K::kSwapAB ? g.sb : g.sa;
        arr.sb[i] = K::kSwapAB ? g.sa : g.sb;
      }
      if constexpr (kScaling == Scaling::Block) {
        const auto shape = K::kSwapAB ? cute::make_shape(n, m, k, 1) : cute::make_shape(m, n, k, 1);
        arr.lsfa[i] = K::BlockScale::tile_atom_to_shape_SFA(shape);
        arr.lsfb[i] = K::BlockScale::tile_atom_to_shape_SFB(shape);
      }
    }
  };

  // Resident clusters of this kernel per device, queried once per device (it does not change).
  static int max_active_clusters(int device) {
    constexpr int kMaxDevices = 64;
    static std::once_flag once[kMaxDevices];
    static int clusters[kMaxDevices] = {};
    if (device < 0 || device >= kMaxDevices) return 0;
    std::call_once(once[device], [&] { clusters[device] = cutlass::KernelHardwareInfo::query_device_max_active_clusters<Kernel>(); });
    return clusters[device];
  }

  static typename Gemm::Arguments arguments(const Arrays& arr, int groups, int sm_count) {
    int device = 0;
    cudaGetDevice(&device);
    typename Gemm::Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    args.problem_shape = {groups, arr.shapes, nullptr};  // sizes live on the device only
    if constexpr (kScaling == Scaling::Block) {
      args.mainloop = {arr.a, arr.da, arr.b, arr.db, arr.sa, arr.lsfa, arr.sb, arr.lsfb};
    } else {
      args.mainloop = {arr.a, arr.da, arr.b, arr.db};
    }
    args.epilogue.ptr_C = nullptr;
    args.epilogue.ptr_D = arr.d;
    args.epilogue.dD = arr.dd;
    if constexpr (kScaling == Scaling::Row) {
      // (acc * sA[m]) * sB[n], cast: {{{acc, scale A, *}, scale B, *}, cast}
      args.epilogue.thread = {{{{}, {arr.sa, 0.f, {}}, {}}, {arr.sb, 0.f, {}}, {}}, {}};
    } else {
      args.epilogue.thread.alpha = 1;
      args.epilogue.thread.beta = 0;
    }
    // CUTLASS's persistent scheduler launches sm_count / cluster-size clusters, so a cap below one cluster
    // (ckgemm.set_num_sms(1) on a 1x2 instance) would be an empty grid, which fails to launch: it gets one
    // cluster, as the own kernels' pair_grid gives.
    constexpr int kClusterCtas = cute::size(typename Kernel::DispatchPolicy::ClusterShape{});
    args.hw_info = {device, sm_count < kClusterCtas ? kClusterCtas : sm_count, max_active_clusters(device)};
    using Raster = decltype(args.scheduler.raster_order);
    args.scheduler.max_swizzle_size = scheduler_swizzle();
    args.scheduler.raster_order = scheduler_along_n() ? Raster::AlongN : Raster::AlongM;
    if constexpr (HasPromotionInterval<decltype(args.mainloop)>::value)
      args.mainloop.mma_promotion_interval = fp8_promotion_interval();
    return args;
  }

  static size_t bytes(int groups, int sm_count) {
    Arrays none{};
    return align_up(arrays_bytes(groups), 256) + Gemm::get_workspace_size(arguments(none, groups, sm_count));
  }

  static Status fail(const Launch& l, Status s, const std::string& text) {
    if (l.report != nullptr) {
      const std::string t = text.substr(0, sizeof(l.report->message) - 1);
      t.copy(l.report->message, t.size());
      l.report->message[t.size()] = '\0';
    }
    return s;
  }

  // The kernel's dynamic shared memory limit, raised once per process (GemmUniversalAdapter::initialize
  // raises it on every call).
  static cudaError_t raise_smem_limit() {
    static const cudaError_t result = [] {
      const int smem = static_cast<int>(Kernel::SharedStorageSize);
      return smem >= (48 << 10) ? cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem)
                                : cudaSuccess;
    }();
    return result;
  }

  // The cluster launch GemmUniversalAdapter::run makes, less its per-call cudaFuncSetAttribute
  // (ClusterLauncher::init allows non-portable cluster sizes on every launch; ours are at most 2).
  static cudaError_t launch_gemm(typename Kernel::Params& params, cudaStream_t stream) {
    using Cluster = typename Kernel::DispatchPolicy::ClusterShape;
    static_assert(cute::size(Cluster{}) <= 8, "a non-portable cluster size needs cudaFuncAttributeNonPortableClusterSizeAllowed");
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = cute::size<0>(Cluster{});
    attribute[0].val.clusterDim.y = cute::size<1>(Cluster{});
    attribute[0].val.clusterDim.z = cute::size<2>(Cluster{});
    cudaLaunchConfig_t config{};
    config.gridDim = Kernel::get_grid_shape(params);
    config.blockDim = Kernel::get_block_shape();
    config.dynamicSmemBytes = Kernel::SharedStorageSize;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    void* kernel_params[] = {&params};
    return cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(cutlass::device_kernel<Kernel>), kernel_params);
  }

  static Status run(const Launch& l) {
    const size_t arrays = align_up(arrays_bytes(l.groups), 256);
    Arrays dev = carve(l.buffers->device, l.groups);
    cudaError_t e = cudaSuccess;
    if (l.host_groups != nullptr) {
      const int err = for_each_list_chunk(l.host_groups, l.groups, [&](const ListChunk& chunk) {
        build_list_groups<<<1, kListChunk, 0, l.stream>>>(chunk, Sink{dev});
        return static_cast<int>(cudaGetLastError());
      });
      e = static_cast<cudaError_t>(err);
    } else {
      build_packed_groups<<<1, packed_builder_threads(l.groups), 0, l.stream>>>(
          *l.packed, static_cast<int>(sizeof(ElementIn)), static_cast<int>(sizeof(ElementOut)), Sink{dev});
      e = cudaGetLastError();
    }
    if (e != cudaSuccess) return fail(l, Status::BackendError, std::string("argument builder: ") + cudaGetErrorString(e));
    typename Gemm::Arguments args = arguments(dev, l.groups, l.sm_count);
    const size_t ws = Gemm::get_workspace_size(args);
    if (arrays + ws > l.buffers->device_bytes) return fail(l, Status::BackendError, "workspace too small");
    void* workspace = static_cast<char*>(l.buffers->device) + arrays;
    cutlass::Status st = Kernel::initialize_workspace(args, workspace, l.stream);
    if (st != cutlass::Status::kSuccess)
      return fail(l, Status::BackendError, std::string("CUTLASS workspace: ") + cutlassGetStatusString(st));
    e = raise_smem_limit();
    if (e != cudaSuccess) return fail(l, Status::BackendError, std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(e));
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, workspace);
    e = launch_gemm(params, l.stream);
    if (e != cudaSuccess) return fail(l, Status::BackendError, std::string("GEMM launch: ") + cudaGetErrorString(e));
    return Status::Ok;
  }

  static size_t packed_bytes(const PackedArgs& p, int sm_count) { return bytes(p.groups, sm_count); }

  static InstanceFns fns() { return {&bytes, &packed_bytes, &run}; }
};

// ---- the instance types of instances.inc ----
template <DType D> struct InType;
template <> struct InType<DType::F16> { using T = cutlass::half_t; };
template <> struct InType<DType::BF16> { using T = cutlass::bfloat16_t; };
template <> struct InType<DType::FP8_E4M3> { using T = cutlass::float_e4m3_t; };
template <> struct InType<DType::I8> { using T = int8_t; };
template <OutType O> struct OutTypeOf;
template <> struct OutTypeOf<OutType::F16> { using T = cutlass::half_t; };
template <> struct OutTypeOf<OutType::BF16> { using T = cutlass::bfloat16_t; };
template <> struct OutTypeOf<OutType::F32> { using T = float; };
template <> struct OutTypeOf<OutType::I32> { using T = int32_t; };
template <Layout L>
using LayoutBOf = std::conditional_t<L == Layout::RC, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
template <DType D>
using AccOf = std::conditional_t<D == DType::I8, int32_t, float>;

// ckgemm's own kernels in a table row's schedule column (RC: ws_fp8.cuh; 8-bit RR: ws_s8_rr_rs.cuh): its Spec's
// Kernel type is named and never instantiated (ws_instance.cuh launches them; stages.cu reads their ring depth).
struct OwnWarpSpecialized {};

#define CKGEMM_INSTANCE(key, dtype, out, layout, scaling, schedule, tm, tn, tk, cm, cn)                     \
  struct Spec_##key {                                                                                       \
    using Schedule = schedule;                                                                              \
    static constexpr DType kDType = DType::dtype;                                                           \
    static constexpr Layout kLayout = Layout::layout;                                                       \
    using Out = typename OutTypeOf<OutType::out>::T;                                                        \
    static constexpr Scaling kScaling = Scaling::scaling;                                                   \
    static constexpr int kTileM = tm, kTileN = tn, kClusterM = cm;                                          \
    using Kernel = GroupedGemmKernel<typename InType<DType::dtype>::T, typename OutTypeOf<OutType::out>::T, \
                                     AccOf<DType::dtype>, LayoutBOf<Layout::layout>,                       \
                                     Shape<Int<tm>, Int<tn>, Int<tk>>, Shape<Int<cm>, Int<cn>, _1>, schedule, \
                                     Scaling::scaling>;                                                     \
  };                                                                                                        \
  InstanceFns instance_fns_##key();
#include "instances.inc"
#undef CKGEMM_INSTANCE

}  // namespace ckgemm::cuda

// Defines `ckgemm::cuda::InstanceFns ckgemm::cuda::instance_fns_<key>()` (one per translation unit).
#define CKGEMM_CUDA_INSTANCE(key)                                                       \
  namespace ckgemm::cuda {                                                              \
  InstanceFns instance_fns_##key() { return Instance<Spec_##key::Kernel>::fns(); }      \
  }
