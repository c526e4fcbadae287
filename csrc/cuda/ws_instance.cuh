// ckgemm's own grouped kernels as rows of the CUTLASS backend's instance table (schedule OwnWarpSpecialized in
// instances.inc): the fp8 kernel (ws_fp8.cuh: unscaled to fp32, block-scaled to bf16; also bf16/fp16 operands
// to their own type, and int8 to int32) and the 8-bit RR kernel
// (ws_s8_rr_rs.cuh: B row-major, read as stored into the wgmmas' register operand; int8 to int32, unscaled e4m3
// to fp32), the packed form's launch. Their acceptance rules are ws_fp8_rules.h and ws_s8_rr_rules.h, applied by rules.cpp; list groups are
// refused there, so the router gives them to CUTLASS (8-bit RR list groups through the transpose).
//
// Two launches, as the CUTLASS instances make: the shared builder checks the device-resident group sizes
// first (a bad size prints a "group_sizes" message and traps the stream, or sets sizes_ok), then the kernel,
// which reads the sizes itself (no argument arrays; block-scaled calls fed as DeepGEMM feeds them add a
// transpose of A's scales into the workspace, ws_fp8_launch.cuh). The kernel cannot print (a call in it makes
// ptxas serialise the wgmmas, C7510): without the check, a bad size would trap it with no message.
#pragma once

#include <string>
#include <type_traits>

#include "../common/descriptor.h"
#include "../common/packed_args.cuh"
#include "instance.cuh"
#include "ws_fp8_launch.cuh"
#include "ws_s8_rr_launch.cuh"

namespace ckgemm::cuda {

// The shared builder's check of the device-resident group sizes, unless the caller asked for sizes_ok (the
// kernel then reports bad sizes itself): false, reported, when it could not be launched.
inline bool sizes_checked(const Launch& l) {
  const PackedArgs& p = *l.packed;
  if (p.sizes_ok != nullptr) return true;
  build_packed_groups<<<1, packed_builder_threads(p.groups), 0, l.stream>>>(p, 1, 4, NullSink{});
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return true;
  report_message(l.report, -1, std::string("group size check: ") + cudaGetErrorString(e));
  return false;
}

// A kernel launch's result: its error and the launch's reason reported.
inline Status launched(const Launch& l, cudaError_t e, const std::string& why) {
  if (e == cudaSuccess) return Status::Ok;
  report_message(l.report, -1, why);
  return Status::BackendError;
}

template <class Spec>
struct WsInstance {
  static constexpr ws::Recipe kRecipe = Spec::kScaling == Scaling::Block ? ws::Recipe::Block
                                        : Spec::kScaling == Scaling::Row ? ws::Recipe::Row
                                                                         : ws::Recipe::None;
  static constexpr ws::In kIn = Spec::kDType == DType::BF16 ? ws::In::BF16
                                : Spec::kDType == DType::F16  ? ws::In::F16
                                : Spec::kDType == DType::I8   ? ws::In::S8
                                                              : ws::In::E4M3;
  // The kernel's output element: CUTLASS's bfloat16_t and half_t are stored as CUDA's __nv_bfloat16 and __half
  // (same bits).
  using Out = std::conditional_t<std::is_same_v<typename Spec::Out, cutlass::bfloat16_t>, __nv_bfloat16,
                                 std::conditional_t<std::is_same_v<typename Spec::Out, cutlass::half_t>, __half,
                                                    typename Spec::Out>>;
  static_assert(std::is_same_v<Out, float> || std::is_same_v<Out, __nv_bfloat16> || std::is_same_v<Out, __half> ||
                    std::is_same_v<Out, int32_t>,
                "fp32, bf16, fp16 or (int8) int32 output");

  static size_t bytes(int, int) { return 0; }  // list calls are refused (rules.cpp)
  static size_t packed_bytes(const PackedArgs& p, int) { return ws::workspace_bytes<kRecipe, kIn, Spec::kClusterM == 2>(p, ws::block_feed()); }

  static Status run(const Launch& l) {
    const PackedArgs& p = *l.packed;  // the runner sends only what rules.cpp accepts: packed calls
    if (!sizes_checked(l)) return Status::BackendError;
    std::string why;
    const cudaError_t e = ws::launch<Spec::kTileN, Spec::kClusterM == 2, kRecipe, Out, kIn, Spec::kTileM>(
        p, ws::block_feed(), l.buffers->device, l.buffers->device_bytes, l.sm_count, l.stream, &why);
    return launched(l, e, why);
  }

  static InstanceFns fns() { return {&bytes, &packed_bytes, &run}; }
};

// The own 8-bit RR kernel's rows (ws_s8_rr_launch.cuh picks the form and tile; F8: e4m3 to fp32, else int8 to
// int32): no workspace; the sizes checked first as for the fp8 kernel.
template <bool F8>
struct WsRrInstance {
  static size_t bytes(int, int) { return 0; }
  static size_t packed_bytes(const PackedArgs&, int) { return 0; }

  static Status run(const Launch& l) {
    const PackedArgs& p = *l.packed;
    if (!sizes_checked(l)) return Status::BackendError;
    std::string why;
    const cudaError_t e = ws::s8::launch<F8>(p, l.sm_count, l.stream, &why);
    return launched(l, e, why);
  }

  static InstanceFns fns() { return {&bytes, &packed_bytes, &run}; }
};

template <class Spec>
InstanceFns ws_fns() {
  if constexpr (Spec::kLayout == Layout::RR) {
    static_assert(Spec::kDType == DType::I8 || (Spec::kDType == DType::FP8_E4M3 && Spec::kScaling == Scaling::None),
                  "the own RR kernel: int8, or unscaled e4m3");
    return WsRrInstance<Spec::kDType == DType::FP8_E4M3>::fns();
  } else {
    return WsInstance<Spec>::fns();
  }
}

}  // namespace ckgemm::cuda

// Defines `ckgemm::cuda::InstanceFns ckgemm::cuda::instance_fns_<key>()` for an own-kernel row.
#define CKGEMM_WS_INSTANCE(key)                                                                       \
  namespace ckgemm::cuda {                                                                            \
  static_assert(std::is_same_v<Spec_##key::Schedule, OwnWarpSpecialized>, "not an own-kernel row");  \
  InstanceFns instance_fns_##key() { return ws_fns<Spec_##key>(); }                                   \
  }
