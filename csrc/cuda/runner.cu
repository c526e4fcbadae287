// The CUTLASS backend behind csrc/ckgemm.h: picks the instance for (dtype, layout, config), plans
// list-form calls (skip empty groups, zero-fill k == 0, refuse misaligned groups — the Python layer
// repacks those before calling), and launches.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "../ckgemm.h"
#include "../common/packed_args.cuh"
#include "../common/plan.h"
#include "instance.cuh"

namespace ckgemm::cuda {

#define CKGEMM_INSTANCE(dtype, layout, config, name) InstanceFns instance_##name();
#include "instances.inc"
#undef CKGEMM_INSTANCE

namespace {

struct Entry {
  DType dtype;
  Layout layout;
  Config config;
  InstanceFns (*make)();
};

const Entry kInstances[] = {
#define CKGEMM_INSTANCE(dtype, layout, config, name) {DType::dtype, Layout::layout, Config::config, &instance_##name},
#include "instances.inc"
#undef CKGEMM_INSTANCE
};

const InstanceFns* find(const Problem& p) {
  static std::vector<InstanceFns> cache(sizeof(kInstances) / sizeof(kInstances[0]));
  for (size_t i = 0; i < sizeof(kInstances) / sizeof(kInstances[0]); ++i) {
    const Entry& e = kInstances[i];
    if (e.dtype == p.dtype && e.layout == p.layout && e.config == p.config) {
      if (cache[i].run == nullptr) cache[i] = e.make();
      return &cache[i];
    }
  }
  return nullptr;
}

Status zero_fill(const GroupDesc& g, DType dtype, cudaStream_t stream, RunReport* report) {
  const size_t es = output_bytes(dtype);
  cudaError_t e = cudaMemset2DAsync(g.c, g.ldc * es, 0, g.n * es, g.m, stream);
  if (e != cudaSuccess) {
    report_message(report, -1, std::string("zero-fill: ") + cudaGetErrorString(e));
    return Status::BackendError;
  }
  return Status::Ok;
}

Status not_instantiated(const Problem& p, RunReport* report) {
  report_message(report, -1, "no CUTLASS instance for dtype " + std::to_string(static_cast<int>(p.dtype)) +
                                 ", layout " + std::to_string(static_cast<int>(p.layout)) + ", config " +
                                 std::to_string(static_cast<int>(p.config)) + " in this build");
  return Status::NotInstantiated;
}

}  // namespace
}  // namespace ckgemm::cuda

namespace ckgemm {

const char* backend_name() { return "cutlass"; }

bool is_instantiated(const Problem& p) { return cuda::find(p) != nullptr; }

BufferSizes list_buffer_sizes(const Problem& p, int groups, int sm_count) {
  const cuda::InstanceFns* inst = cuda::find(p);
  return inst == nullptr ? BufferSizes{0, 0} : inst->sizes(groups, sm_count, false);
}

BufferSizes packed_buffer_sizes(const Problem& p, int groups, int sm_count) {
  const cuda::InstanceFns* inst = cuda::find(p);
  return inst == nullptr ? BufferSizes{0, 0} : inst->sizes(groups, sm_count, true);
}

Status run_list(const Problem& p, const GroupDesc* groups, int count, const Buffers& buffers, void* stream,
                int sm_count, RunReport* report) {
  const cuda::InstanceFns* inst = cuda::find(p);
  if (inst == nullptr) return cuda::not_instantiated(p, report);
  std::string why;
  int why_group = -1;
  ListPlan plan = plan_list(groups, count, p.layout, [&](const GroupDesc& g) {
    std::string reason;
    const bool ok = inst->supports(g, &reason);
    if (!ok && why_group < 0) {
      why_group = static_cast<int>(&g - groups);
      why = reason;
    }
    return ok;
  });
  if (plan.invalid_group >= 0) {
    report_message(report, plan.invalid_group, plan.invalid_reason);
    return Status::InvalidArgument;
  }
  if (!plan.unsupported.empty()) {
    report_message(report, why_group, why);
    return Status::Unsupported;
  }
  auto s = static_cast<cudaStream_t>(stream);
  for (int i : plan.zero_fill) {
    Status st = cuda::zero_fill(groups[i], p.dtype, s, report);
    if (st != Status::Ok) return st;
  }
  report_counts(report, plan, static_cast<int>(plan.kernel.size()));
  if (plan.kernel.empty()) return Status::Ok;
  std::vector<GroupDesc> kernel_groups;
  kernel_groups.reserve(plan.kernel.size());
  for (int i : plan.kernel) kernel_groups.push_back(groups[i]);
  cuda::Launch launch{static_cast<int>(kernel_groups.size()), kernel_groups.data(), nullptr, &buffers, s, sm_count,
                      report};
  return inst->run(launch);
}

Status run_packed(const Problem& p, const PackedArgs& args, const Buffers& buffers, void* stream, int sm_count,
                  RunReport* report) {
  const cuda::InstanceFns* inst = cuda::find(p);
  if (inst == nullptr) return cuda::not_instantiated(p, report);
  auto s = static_cast<cudaStream_t>(stream);
  const GroupDesc whole = packed_envelope(args);
  const std::string bad = packed_descriptor_error(args, p.layout);
  if (!bad.empty()) {
    report_message(report, -1, bad);
    return Status::InvalidArgument;
  }
  if (args.k == 0 || args.n == 0 || args.rows == 0) {
    // Nothing for the GEMM kernel; the sizes are still checked on the device.
    build_packed_groups<<<1, kPackedBuilderThreads, 0, s>>>(args, 1, 1, NullSink{});
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      report_message(report, -1, std::string("build_packed_groups: ") + cudaGetErrorString(e));
      return Status::BackendError;
    }
    if (args.k == 0 && args.n > 0 && args.rows > 0) {
      return cuda::zero_fill(whole, p.dtype, s, report);
    }
    return Status::Ok;
  }
  // Offsets of later groups keep 16-byte alignment iff the leading dimensions and B's group
  // stride do, so one representative descriptor decides for every group.
  GroupDesc first{args.a, args.b, args.c, 1, args.n, args.k, args.lda, args.ldb, args.ldc};
  std::string why;
  if (!inst->supports(first, &why) || (args.b_group_stride * element_bytes(p.dtype)) % 16 != 0) {
    report_message(report, 0, why.empty() ? "B group stride not 16-byte aligned" : why);
    return Status::Unsupported;
  }
  if (report != nullptr) report->launched_groups = args.groups;
  cuda::Launch launch{args.groups, nullptr, &args, &buffers, s, sm_count, report};
  return inst->run(launch);
}

}  // namespace ckgemm
