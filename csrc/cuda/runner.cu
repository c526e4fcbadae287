// The CUTLASS backend's launch half of the ckgemm ABI (the instance table, acceptance and selection
// rules are rules.cpp): scratch sizes, and launching the groups the router sent to an instance.
#include <cuda_runtime.h>

#include <string>

#include "../ckgemm.h"
#include "../common/descriptor.h"
#include "instance.cuh"

namespace ckgemm::cuda {
namespace {

const InstanceFns& fns(int id) {
  static const InstanceFns table[] = {
#define CKGEMM_INSTANCE(key, ...) instance_fns_##key(),
#include "instances.inc"
#undef CKGEMM_INSTANCE
  };
  return table[id];
}

Status check_id(int id, RunReport* report) {
  if (id >= 0 && id < instance_count()) return Status::Ok;
  report_message(report, -1, "no CUTLASS instance with id " + std::to_string(id));
  return Status::NotInstantiated;
}

}  // namespace
}  // namespace ckgemm::cuda

namespace ckgemm {
namespace {

// A failed launch leaves its (non-sticky) error as the thread's last CUDA error, where torch's next launch check
// would find it and blame its own op; the run's report already carries it, so it is cleared here.
Status cleared(Status st) {
  if (st == Status::BackendError) (void)cudaGetLastError();
  return st;
}

}  // namespace

std::string device_rejects(DType dtype) {
  if (dtype == DType::FP8_E4M3_FNUZ) return "float8_e4m3fnuz is not the fp8 of NVIDIA GPUs (they use float8_e4m3fn)";
  return "";
}

size_t list_buffer_bytes(int id, int groups, int sm_count) {
  return id >= 0 && id < instance_count() ? cuda::fns(id).bytes(groups, sm_count) : 0;
}

size_t packed_buffer_bytes(int id, const PackedArgs& args, int sm_count) {
  return id >= 0 && id < instance_count() ? cuda::fns(id).packed_bytes(args, sm_count) : 0;
}

Status run_list(int id, const GroupDesc* groups, int count, const Buffers& buffers, void* stream, int sm_count,
                RunReport* report) {
  Status st = cuda::check_id(id, report);
  if (st != Status::Ok || count == 0) return st;
  const Layout layout = instance_info(id).kind.layout;
  for (int i = 0; i < count; ++i) {  // defence in depth: the router sent only groups this instance takes
    std::string why = descriptor_error(groups[i], layout, instance_info(id).kind.scaling);
    if (why.empty() && (groups[i].m == 0 || groups[i].n == 0 || groups[i].k == 0)) why = "empty group routed to a kernel";
    if (why.empty()) why = instance_rejects(id, groups[i]);
    if (!why.empty()) {
      report_message(report, i, why);
      return Status::Unsupported;
    }
  }
  if (report != nullptr) report->launched_groups = count;
  cuda::Launch launch{count, groups, nullptr, &buffers, static_cast<cudaStream_t>(stream), sm_count, report};
  return cleared(cuda::fns(id).run(launch));
}

Status run_packed(int id, const PackedArgs& args, const Buffers& buffers, void* stream, int sm_count,
                  RunReport* report) {
  Status st = cuda::check_id(id, report);
  if (st != Status::Ok) return st;
  const InstanceInfo& info = instance_info(id);
  std::string why = packed_descriptor_error(args, info.kind.layout, element_bytes(info.kind.dtype), info.kind.scaling);
  if (why.empty() && (args.rows == 0 || args.n == 0 || args.k == 0)) why = "no work routed to a kernel";
  if (why.empty()) why = instance_rejects_packed(id, args);
  if (!why.empty()) {
    report_message(report, -1, why);
    return Status::Unsupported;
  }
  if (report != nullptr) report->launched_groups = args.groups;
  cuda::Launch launch{args.groups, nullptr, &args, &buffers, static_cast<cudaStream_t>(stream), sm_count, report};
  return cleared(cuda::fns(id).run(launch));
}

}  // namespace ckgemm
