// The CK-tile backend of the ckgemm ABI (csrc/ckgemm.h). Decisions live in routing.h and
// arch_rules.h (host-tested with g++); this file checks the device, stages arguments and launches.
// No CK headers here: kernels are reached through the instance table (instance.h, registry.cpp).
#include <hip/hip_runtime.h>

#include <mutex>
#include <string>

#include "../ckgemm.h"
#include "../common/packed_args.cuh"
#include "arch_rules.h"
#include "group_args.h"
#include "instance.h"
#include "routing.h"

namespace ckgemm {
namespace ck {

// Packed form: writes each group's GroupArgs on the device from the device-resident sizes. (Kept
// out of the anonymous namespace: a kernel template over an internal-linkage type has an
// internal-linkage symbol, which HIP's non-RDC kernel registration does not promise to find.)
struct PackedSink {
  GroupArgs* out;
  __device__ void operator()(int group, const GroupDesc& desc) const { out[group] = pack_group(desc); }
};

}  // namespace ck

namespace {

using ck::GroupArgs;
using ck::Instance;

Status fail(RunReport* report, Status status, int group, const std::string& why) {
  report_message(report, group, why);
  return status;
}

Status hip_fail(RunReport* report, const char* what, hipError_t err) {
  return fail(report, Status::BackendError, -1, std::string(what) + ": " + hipGetErrorString(err));
}

void start_report(RunReport* report) {
  if (report == nullptr) return;
  report->launched_groups = report->zero_filled = report->skipped = 0;
  report->group = -1;
  report->message[0] = '\0';
}

// gcnArchName of the current device, cached per device ordinal (it cannot change in a process).
std::string current_arch(hipError_t* err) {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static std::string cache[kMaxDevices];
  int device = 0;
  *err = hipGetDevice(&device);
  if (*err != hipSuccess) return "";
  std::lock_guard<std::mutex> lock(mutex);
  if (device < kMaxDevices && !cache[device].empty()) return cache[device];
  hipDeviceProp_t prop;
  *err = hipGetDeviceProperties(&prop, device);
  if (*err != hipSuccess) return "";
  const std::string arch = prop.gcnArchName;
  if (device < kMaxDevices) cache[device] = arch;
  return arch;
}

// The instance for the problem (and the padded fallback when Large was asked for), after checking
// that this device runs the problem's dtype; NotInstantiated / Unsupported otherwise.
Status select(const Problem& p, const Instance** primary, const Instance** fallback, RunReport* report) {
  *primary = ck::find_instance(p.dtype, p.layout, p.config);
  *fallback = p.config == Config::Large ? ck::find_instance(p.dtype, p.layout, Config::Small) : nullptr;
  if (*primary == nullptr)
    return fail(report, Status::NotInstantiated, -1,
                "this build has no CK instance for this dtype, layout and config (CKGEMM_DTYPES at build time)");
  hipError_t err = hipSuccess;
  const std::string arch = current_arch(&err);
  if (err != hipSuccess) return hip_fail(report, "hipGetDeviceProperties", err);
  const std::string why = ck::arch_rejects(p.dtype, arch);
  return why.empty() ? Status::Ok : fail(report, Status::Unsupported, -1, why);
}

int compute_units(int sm_count) {
  if (sm_count > 0) return sm_count;
  int device = 0, cus = 0;
  if (hipGetDevice(&device) != hipSuccess) return 0;
  if (hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess) return 0;
  return cus;
}

// One persistent launch over `count` device-resident argument records holding at most `tiles`.
Status launch(const Instance& inst, const GroupArgs* device_args, int count, int64_t tiles, int sm_count,
              hipStream_t stream, RunReport* report) {
  if (count == 0 || tiles == 0) return Status::Ok;
  const int blocks = inst.blocks_per_cu();
  if (blocks <= 0)
    return fail(report, Status::BackendError, -1,
                std::string("no resident blocks for ") + inst.traits.name +
                    " on this device (is its arch among the GPU_ARCHS the extension was built for?)");
  const int grid = ck::persistent_grid(tiles, blocks, compute_units(sm_count));
  const int err = inst.launch(device_args, count, grid, stream);
  return err == 0 ? Status::Ok : hip_fail(report, inst.traits.name, static_cast<hipError_t>(err));
}

}  // namespace

const char* backend_name() { return "ck"; }

bool is_instantiated(const Problem& p) { return ck::find_instance(p.dtype, p.layout, p.config) != nullptr; }

BufferSizes list_buffer_sizes(const Problem&, int groups, int) {
  const size_t bytes = groups > 0 ? static_cast<size_t>(groups) * sizeof(GroupArgs) : 0;
  return BufferSizes{bytes, bytes};
}

BufferSizes packed_buffer_sizes(const Problem&, int groups, int) {
  return BufferSizes{groups > 0 ? static_cast<size_t>(groups) * sizeof(GroupArgs) : 0, 0};
}

Status run_list(const Problem& p, const GroupDesc* groups, int count, const Buffers& buffers, void* stream_ptr,
                int sm_count, RunReport* report) {
  start_report(report);
  const Instance* primary = nullptr;
  const Instance* fallback = nullptr;
  Status status = select(p, &primary, &fallback, report);
  if (status != Status::Ok) return status;

  const ck::ListLaunch plan = ck::plan_list_launch(groups, count, p.layout, *primary, fallback);
  if (plan.status != Status::Ok) return fail(report, plan.status, plan.group, plan.reason);
  const size_t staged_bytes = (plan.primary.size() + plan.fallback.size()) * sizeof(GroupArgs);
  if (staged_bytes > buffers.host_bytes || staged_bytes > buffers.device_bytes ||
      (staged_bytes > 0 && (buffers.host == nullptr || buffers.device == nullptr)))
    return fail(report, Status::InvalidArgument, -1, "scratch buffers smaller than list_buffer_sizes()");

  hipStream_t stream = static_cast<hipStream_t>(stream_ptr);
  for (int i : plan.zero_fill) {  // K == 0: C = 0, row by row so a padded ldc is honoured
    const GroupDesc& g = groups[i];
    const size_t c_bytes = output_bytes(p.dtype);
    const hipError_t err = hipMemset2DAsync(g.c, g.ldc * c_bytes, 0, g.n * c_bytes, g.m, stream);
    if (err != hipSuccess) return hip_fail(report, "hipMemset2DAsync", err);
  }
  if (staged_bytes > 0) {
    ck::stage_group_args(groups, plan, static_cast<GroupArgs*>(buffers.host));
    const hipError_t err = hipMemcpyAsync(buffers.device, buffers.host, staged_bytes, hipMemcpyHostToDevice, stream);
    if (err != hipSuccess) return hip_fail(report, "hipMemcpyAsync", err);
  }
  const GroupArgs* device_args = static_cast<const GroupArgs*>(buffers.device);
  const int n_primary = static_cast<int>(plan.primary.size());
  status = launch(*primary, device_args, n_primary, ck::tile_count(primary->traits, groups, plan.primary), sm_count,
                  stream, report);
  if (status == Status::Ok && !plan.fallback.empty())
    status = launch(*fallback, device_args + n_primary, static_cast<int>(plan.fallback.size()),
                    ck::tile_count(fallback->traits, groups, plan.fallback), sm_count, stream, report);
  if (report != nullptr) {
    if (status == Status::Ok) report_message(report, -1, ck::launch_summary(plan, *primary, fallback));
    report->launched_groups = static_cast<int32_t>(plan.primary.size() + plan.fallback.size());
    report->zero_filled = static_cast<int32_t>(plan.zero_fill.size());
    report->skipped = static_cast<int32_t>(plan.skipped.size());
  }
  return status;
}

Status run_packed(const Problem& p, const PackedArgs& args, const Buffers& buffers, void* stream_ptr, int sm_count,
                  RunReport* report) {
  start_report(report);
  const Instance* primary = nullptr;
  const Instance* fallback = nullptr;
  Status status = select(p, &primary, &fallback, report);
  if (status != Status::Ok) return status;
  const std::string bad = packed_descriptor_error(args, p.layout);
  if (!bad.empty()) return fail(report, Status::InvalidArgument, -1, bad);

  // N, K, strides and base pointers are shared by every group, so one instance takes all of them.
  const bool compute = args.rows > 0 && args.n > 0 && args.k > 0;
  const Instance* inst = primary;
  if (compute) {
    const std::string why = ck::packed_rejects(*primary, p.layout, args);
    if (!why.empty()) {
      const std::string fallback_why =
          fallback == nullptr ? std::string("no fallback config") : ck::packed_rejects(*fallback, p.layout, args);
      if (!fallback_why.empty())
        return fail(report, Status::Unsupported, 0, why + "; fallback: " + fallback_why + " (applies to every group)");
      inst = fallback;
    }
  }
  const size_t arg_bytes = static_cast<size_t>(args.groups) * sizeof(GroupArgs);
  if (arg_bytes > buffers.device_bytes || (arg_bytes > 0 && buffers.device == nullptr))
    return fail(report, Status::InvalidArgument, -1, "device scratch smaller than packed_buffer_sizes()");

  hipStream_t stream = static_cast<hipStream_t>(stream_ptr);
  GroupArgs* device_args = static_cast<GroupArgs*>(buffers.device);
  // Always run the builder: it checks the sizes on the device (writing sizes_ok when given, else
  // trapping on bad sizes), even when no GEMM work is left.
  hipLaunchKernelGGL((build_packed_groups<ck::PackedSink>), dim3(1), dim3(kPackedBuilderThreads), 0, stream, args,
                     element_bytes(p.dtype), output_bytes(p.dtype), ck::PackedSink{device_args});
  hipError_t err = hipGetLastError();
  if (err != hipSuccess) return hip_fail(report, "build_packed_groups", err);

  if (args.rows > 0 && args.n > 0 && args.k == 0) {  // every group's C is zeros
    const size_t c_bytes = output_bytes(p.dtype);
    err = hipMemset2DAsync(args.c, args.ldc * c_bytes, 0, args.n * c_bytes, args.rows, stream);
    if (err != hipSuccess) return hip_fail(report, "hipMemset2DAsync", err);
  }
  if (compute)
    status = launch(*inst, device_args, args.groups, ck::packed_tile_bound(inst->traits, args), sm_count, stream,
                    report);
  if (report != nullptr) {
    if (status == Status::Ok && compute) report_message(report, -1, std::string(inst->traits.name) + ": every group");
    report->launched_groups = compute ? args.groups : 0;
    report->zero_filled = args.rows > 0 && args.n > 0 && args.k == 0 ? args.groups : 0;
    report->skipped = args.rows == 0 || args.n == 0 ? args.groups : 0;
  }
  return status;
}

}  // namespace ckgemm
