// The device-facing half of the CK backend's ckgemm ABI (csrc/ckgemm.h): device_rejects, run_list and
// run_packed. The router (the bindings) chose the instance of every group with the table and the
// acceptance rule (registry.cpp, rules.h); this file re-checks that rule defensively, builds the
// per-group records on the device and launches exactly that instance, so the dispatch record names
// the kernel each group really ran on. No CK headers here: kernels are reached through the table.
#include <hip/hip_runtime.h>

#include <mutex>
#include <string>
#include <vector>

#include "../ckgemm.h"
#include "../common/list_args.cuh"
#include "../common/packed_args.cuh"
#include "arch_rules.h"
#include "group_args.h"
#include "rules.h"
#include "table.h"

namespace ckgemm {
namespace ck {

// Sink of build_list_groups and build_packed_groups: each group's descriptor becomes its record.
// (Not in an anonymous namespace: a kernel template over an internal-linkage type gets an
// internal-linkage symbol, which HIP's non-RDC kernel registration does not promise to find.)
struct GroupArgsSink {
  GroupArgs* out;
  __device__ void operator()(int group, const GroupDesc& desc) const { out[group] = pack_group(desc); }
};

}  // namespace ck

namespace {

using ck::Entry;
using ck::GroupArgs;

Status fail(RunReport* report, Status status, int group, const std::string& why) {
  report_message(report, group, why);
  return status;
}

Status hip_fail(RunReport* report, const char* what, hipError_t err) {
  return fail(report, Status::BackendError, -1, std::string(what) + ": " + hipGetErrorString(err));
}

void start_report(RunReport* report) {
  if (report == nullptr) return;
  report->launched_groups = 0;
  report->group = -1;
  report->message[0] = '\0';
}

// What cannot change for a device within a process, queried once per device ordinal.
constexpr int kMaxDevices = 64;
struct DeviceFacts {
  std::string arch;              // gcnArchName, e.g. "gfx942:sramecc+:xnack-"
  int compute_units = 0;
  std::vector<int> blocks_per_cu;  // per instance id; 0 = not queried yet
};
std::mutex g_mutex;
DeviceFacts g_devices[kMaxDevices];

// The current device's facts (arch and CU count filled), or a HIP error.
hipError_t current_device(DeviceFacts** facts) {
  int device = 0;
  hipError_t err = hipGetDevice(&device);
  if (err != hipSuccess) return err;
  if (device < 0 || device >= kMaxDevices) return hipErrorInvalidDevice;
  DeviceFacts& f = g_devices[device];
  if (f.arch.empty()) {
    hipDeviceProp_t prop;
    err = hipGetDeviceProperties(&prop, device);
    if (err != hipSuccess) return err;
    f.arch = prop.gcnArchName;
    f.compute_units = prop.multiProcessorCount;
  }
  *facts = &f;
  return hipSuccess;
}

// Why the current device cannot run `dtype` ("" when it can), or the HIP error that stopped the query.
std::string device_reason(DType dtype, hipError_t* err) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceFacts* facts = nullptr;
  *err = current_device(&facts);
  return *err == hipSuccess ? ck::arch_rejects(dtype, facts->arch) : "";
}

// Grid of a persistent launch of instance `id` over `tiles` tiles on the current device (0 on error).
int launch_grid(int id, const Entry& e, int64_t tiles, int sm_count) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceFacts* facts = nullptr;
  if (current_device(&facts) != hipSuccess) return 0;
  if (facts->blocks_per_cu.size() != static_cast<size_t>(ck::instance_table().count))
    facts->blocks_per_cu.assign(ck::instance_table().count, 0);
  int& blocks = facts->blocks_per_cu[id];
  if (blocks <= 0) blocks = e.inst->blocks_per_cu();
  if (blocks <= 0) return 0;
  return ck::persistent_grid(tiles, blocks, sm_count > 0 ? sm_count : facts->compute_units);
}

// Checks shared by both forms: the instance exists and the device runs its dtype.
Status check_instance_and_device(int id, const Entry** entry, RunReport* report) {
  *entry = ck::instance_table().at(id);
  if (*entry == nullptr)
    return fail(report, Status::NotInstantiated, -1,
                "no CK instance with id " + std::to_string(id) + " in this build");
  hipError_t err = hipSuccess;
  const std::string why = device_reason((*entry)->info.kind.dtype, &err);
  if (err != hipSuccess) return hip_fail(report, "querying the current device", err);
  return why.empty() ? Status::Ok : fail(report, Status::Unsupported, -1, why);
}

Status check_scratch(size_t bytes, const Buffers& buffers, RunReport* report) {
  if (bytes <= buffers.device_bytes && (bytes == 0 || buffers.device != nullptr)) return Status::Ok;
  return fail(report, Status::InvalidArgument, -1, "device scratch smaller than the buffer_bytes() of this call");
}

// The persistent GEMM over `count` records already built in device scratch.
Status launch_gemm(int id, const Entry& e, const GroupArgs* records, int count, int64_t tiles, int sm_count,
                   hipStream_t stream, RunReport* report) {
  const int grid = launch_grid(id, e, tiles, sm_count);
  if (grid <= 0)
    return fail(report, Status::BackendError, -1,
                std::string("no resident blocks for ") + e.info.name +
                    " on this device (is its arch among the GPU_ARCHS the extension was built for?)");
  const int err = e.inst->launch(records, count, grid, stream);
  return err == 0 ? Status::Ok : hip_fail(report, e.info.name, static_cast<hipError_t>(err));
}

void finish_report(RunReport* report, const Entry& e, int launched) {
  if (report == nullptr) return;
  report->launched_groups = launched;
  report_message(report, -1, e.info.name);
}

}  // namespace

std::string device_rejects(DType dtype) {
  hipError_t err = hipSuccess;
  const std::string why = device_reason(dtype, &err);
  return err == hipSuccess ? why : std::string("cannot query the current device: ") + hipGetErrorString(err);
}

Status run_list(int id, const GroupDesc* groups, int count, const Buffers& buffers, void* stream_ptr, int sm_count,
                RunReport* report) {
  start_report(report);
  if (count < 0 || (count > 0 && groups == nullptr))
    return fail(report, Status::InvalidArgument, -1, "negative group count or null descriptor array");
  const Entry* known = ck::instance_table().at(id);
  for (int i = 0; known != nullptr && i < count; ++i) {  // the router's choice, re-checked
    const std::string bad = descriptor_error(groups[i], known->info.kind.layout, known->info.kind.scaling);
    if (!bad.empty()) return fail(report, Status::InvalidArgument, i, bad);
    const std::string why = ck::entry_rejects(*known, groups[i]);
    if (!why.empty()) return fail(report, Status::Unsupported, i, why);
  }
  const Entry* e = nullptr;
  Status status = check_instance_and_device(id, &e, report);
  if (status != Status::Ok) return status;
  const int64_t tiles = ck::tile_count(e->inst->traits, groups, count);
  if (tiles > ck::kMaxIndex)
    return fail(report, Status::Unsupported, -1, "more than 2^31 output tiles in one call; split it");
  status = check_scratch(static_cast<size_t>(count) * sizeof(GroupArgs), buffers, report);
  if (status != Status::Ok) return status;
  if (tiles == 0) {  // every group is empty (M or N is 0): nothing to launch
    finish_report(report, *e, 0);
    return Status::Ok;
  }

  hipStream_t stream = static_cast<hipStream_t>(stream_ptr);
  GroupArgs* records = static_cast<GroupArgs*>(buffers.device);
  const int err = for_each_list_chunk(groups, count, [&](const ListChunk& chunk) {
    hipLaunchKernelGGL((build_list_groups<ck::GroupArgsSink>), dim3(1), dim3(kListChunk), 0, stream, chunk,
                       ck::GroupArgsSink{records});
    return static_cast<int>(hipGetLastError());
  });
  if (err != 0) return hip_fail(report, "build_list_groups", static_cast<hipError_t>(err));
  status = launch_gemm(id, *e, records, count, tiles, sm_count, stream, report);
  if (status == Status::Ok) finish_report(report, *e, count);
  return status;
}

Status run_packed(int id, const PackedArgs& args, const Buffers& buffers, void* stream_ptr, int sm_count,
                  RunReport* report) {
  start_report(report);
  const Entry* known = ck::instance_table().at(id);
  if (known != nullptr) {  // the router's choice, re-checked
    const Kind& kind = known->info.kind;
    const std::string bad = packed_descriptor_error(args, kind.layout, known->inst->traits.a_bytes, kind.scaling);
    if (!bad.empty()) return fail(report, Status::InvalidArgument, -1, bad);
    const std::string why = ck::entry_rejects_packed(*known, args);
    if (!why.empty()) return fail(report, Status::Unsupported, -1, why + " (applies to every group)");
  }
  const Entry* e = nullptr;
  Status status = check_instance_and_device(id, &e, report);
  if (status != Status::Ok) return status;
  status = check_scratch(args.groups > 0 ? static_cast<size_t>(args.groups) * sizeof(GroupArgs) : 0, buffers, report);
  if (status != Status::Ok) return status;

  hipStream_t stream = static_cast<hipStream_t>(stream_ptr);
  GroupArgs* records = static_cast<GroupArgs*>(buffers.device);
  // Always run the builder: it checks the sizes on the device (writing sizes_ok when given, else
  // trapping on bad sizes), even when no GEMM work is left.
  hipLaunchKernelGGL((build_packed_groups<ck::GroupArgsSink>), dim3(1), dim3(packed_builder_threads(args.groups)), 0, stream, args,
                     e->inst->traits.a_bytes, e->inst->traits.c_bytes, ck::GroupArgsSink{records});
  const hipError_t err = hipGetLastError();
  if (err != hipSuccess) return hip_fail(report, "build_packed_groups", err);
  const bool compute = args.groups > 0 && args.rows > 0 && args.n > 0;
  if (compute) {
    status = launch_gemm(id, *e, records, args.groups, ck::packed_tile_bound(e->inst->traits, args), sm_count, stream,
                         report);
  }
  if (status == Status::Ok) finish_report(report, *e, compute ? args.groups : 0);
  return status;
}

}  // namespace ckgemm
