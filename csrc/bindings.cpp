// torch bindings: tensors -> ckgemm::GroupDesc / PackedArgs -> the backend linked into this build
// (CUTLASS on CUDA, CK-tile on ROCm; this file is hipified for ROCm). Python validates every call
// first (ckgemm/validate.py); the TORCH_CHECKs here are defence in depth.
#include <ATen/ATen.h>
#include <ATen/core/CachingHostAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "ckgemm.h"
#include "common/verify_op.h"

namespace {

ckgemm::DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf: return ckgemm::DType::F16;
    case at::kBFloat16: return ckgemm::DType::BF16;
    case at::kFloat8_e4m3fn: return ckgemm::DType::FP8_E4M3;
    case at::kFloat8_e4m3fnuz: return ckgemm::DType::FP8_E4M3_FNUZ;
    case at::kChar: return ckgemm::DType::I8;
    default: TORCH_CHECK(false, "ckgemm: unsupported input dtype ", t.scalar_type());
  }
}

at::ScalarType output_type(ckgemm::DType d) {
  switch (d) {
    case ckgemm::DType::F16: return at::kHalf;
    case ckgemm::DType::BF16: return at::kBFloat16;
    case ckgemm::DType::I8: return at::kInt;
    default: return at::kFloat;
  }
}

ckgemm::Problem problem_of(const at::Tensor& a, int64_t layout, int64_t config) {
  TORCH_CHECK(layout == 0 || layout == 1, "ckgemm: layout code must be 0 (RC) or 1 (RR), got ", layout);
  TORCH_CHECK(config == 0 || config == 1, "ckgemm: config code must be 0 (Large) or 1 (Small), got ", config);
  return {dtype_of(a), static_cast<ckgemm::Layout>(layout), static_cast<ckgemm::Config>(config)};
}

// Leading dimension in elements. A matrix with at most one row has no meaningful row stride; use
// its width so alignment rules and memsets see a sane value.
int64_t leading_dim(const at::Tensor& t) { return t.size(0) <= 1 ? t.size(1) : t.stride(0); }

// Innermost stride 1, as validate.py requires; a tensor with no element has no layout to check.
bool rows_contiguous(const at::Tensor& t) { return t.numel() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1; }

void check_2d(const at::Tensor& t, const char* name, size_t g) {
  TORCH_CHECK(t.is_cuda() && t.dim() == 2 && rows_contiguous(t), "ckgemm: ", name, "[", g,
              "] must be a 2-D GPU tensor with innermost stride 1");
}

// The list form stages its arguments in pinned host memory that is recycled after the call, so a
// captured graph would replay stale arguments: refuse capture (the packed form is capturable).
void check_not_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  TORCH_CHECK(status == cudaStreamCaptureStatusNone, "ckgemm::run_list cannot be captured in a CUDA/HIP graph "
              "(it stages arguments through host memory); use the packed form");
}

int sm_count(const at::Tensor& t) {
  int count = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, t.get_device()));
  return count;
}

// Scratch for one call: device bytes from the caching allocator on the current stream, pinned host
// bytes whose reuse the host allocator defers until the stream has consumed them.
struct Scratch {
  at::Tensor device, host;
  ckgemm::Buffers buffers{nullptr, 0, nullptr, 0};

  Scratch(ckgemm::BufferSizes sizes, const at::Tensor& like) {
    if (sizes.device_bytes > 0) {
      device = at::empty({static_cast<int64_t>(sizes.device_bytes)}, like.options().dtype(at::kByte));
      buffers.device = device.data_ptr();
      buffers.device_bytes = sizes.device_bytes;
    }
    if (sizes.host_bytes > 0) {
      host = at::empty({static_cast<int64_t>(sizes.host_bytes)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      buffers.host = host.data_ptr();
      buffers.host_bytes = sizes.host_bytes;
    }
  }

  void release(c10::cuda::CUDAStream stream) {
    if (host.defined())
      at::getHostAllocator(at::kCUDA)->record_event(host.data_ptr(), host.storage().data_ptr().get_context(), stream.unwrap());
  }
};

void check_status(ckgemm::Status st, const ckgemm::RunReport& report, const char* op) {
  TORCH_CHECK(st == ckgemm::Status::Ok, "ckgemm::", op, " (", ckgemm::backend_name(), "): ",
              ckgemm::status_string(st), report.group >= 0 ? " at group " + std::to_string(report.group) : "",
              ": ", report.message);
}

void run_list(at::TensorList a, at::TensorList b, at::TensorList c, int64_t layout, int64_t config) {
  TORCH_CHECK(!a.empty() && a.size() == b.size() && a.size() == c.size(), "ckgemm::run_list: list lengths differ");
  const ckgemm::Problem p = problem_of(a[0], layout, config);
  c10::cuda::CUDAGuard guard(a[0].device());
  std::vector<ckgemm::GroupDesc> groups(a.size());
  for (size_t g = 0; g < a.size(); ++g) {
    check_2d(a[g], "a", g);
    check_2d(b[g], "b", g);
    check_2d(c[g], "c", g);
    TORCH_CHECK(dtype_of(a[g]) == p.dtype && b[g].scalar_type() == a[g].scalar_type() &&
                    c[g].scalar_type() == output_type(p.dtype) && a[g].device() == a[0].device() &&
                    b[g].device() == a[0].device() && c[g].device() == a[0].device(),
                "ckgemm::run_list: group ", g, " dtype or device differs");
    const int64_t n = layout == 0 ? b[g].size(0) : b[g].size(1);
    const int64_t kb = layout == 0 ? b[g].size(1) : b[g].size(0);
    TORCH_CHECK(kb == a[g].size(1) && c[g].size(0) == a[g].size(0) && c[g].size(1) == n,
                "ckgemm::run_list: group ", g, " shapes do not match");
    groups[g] = {a[g].data_ptr(), b[g].data_ptr(), c[g].data_ptr(), a[g].size(0), n, a[g].size(1),
                 leading_dim(a[g]), leading_dim(b[g]), leading_dim(c[g])};
  }
  const int sms = sm_count(a[0]);
  auto stream = c10::cuda::getCurrentCUDAStream(a[0].get_device());
  check_not_capturing(stream.stream());
  Scratch scratch(ckgemm::list_buffer_sizes(p, static_cast<int>(groups.size()), sms), a[0]);
  ckgemm::RunReport report{0, 0, 0, -1, {0}};
  ckgemm::Status st = ckgemm::run_list(p, groups.data(), static_cast<int>(groups.size()), scratch.buffers,
                                       stream.stream(), sms, &report);
  scratch.release(stream);
  check_status(st, report, "run_list");
}

void run_packed_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes, const at::Tensor& out,
                    int64_t layout, int64_t config) {
  const ckgemm::Problem p = problem_of(a, layout, config);
  c10::cuda::CUDAGuard guard(a.device());
  check_2d(a, "a", 0);
  check_2d(out, "out", 0);
  TORCH_CHECK(b.is_cuda() && b.dim() == 3 && rows_contiguous(b) && b.device() == a.device() &&
                  b.scalar_type() == a.scalar_type() && out.device() == a.device() &&
                  out.scalar_type() == output_type(p.dtype),
              "ckgemm::run_packed: b must be a 3-D tensor like a, out the output dtype, all on one device");
  TORCH_CHECK(group_sizes.dim() == 1 && group_sizes.size(0) == b.size(0) &&
                  (group_sizes.scalar_type() == at::kInt || group_sizes.scalar_type() == at::kLong),
              "ckgemm::run_packed: group_sizes must be int32/int64 of length G");
  const int64_t n = layout == 0 ? b.size(1) : b.size(2);
  const int64_t k = a.size(1);
  TORCH_CHECK((layout == 0 ? b.size(2) : b.size(1)) == k && out.size(0) == a.size(0) && out.size(1) == n,
              "ckgemm::run_packed: shapes do not match");
  at::Tensor sizes = group_sizes.device() == a.device() ? group_sizes.contiguous()
                                                        : group_sizes.to(a.device(), /*non_blocking=*/true);
  const int64_t ldb = b.size(1) <= 1 ? b.size(2) : b.stride(1);
  ckgemm::PackedArgs args{a.data_ptr(), b.data_ptr(), out.data_ptr(), sizes.data_ptr(),
                          sizes.scalar_type() == at::kLong, static_cast<int32_t>(b.size(0)), a.size(0), n, k,
                          leading_dim(a), ldb, leading_dim(out), b.size(0) <= 1 ? 0 : b.stride(0),
                          /*sizes_ok=*/nullptr};  // bad device-side sizes trap the builder: no host sync
  const int sms = sm_count(a);
  Scratch scratch(ckgemm::packed_buffer_sizes(p, args.groups, sms), a);
  auto stream = c10::cuda::getCurrentCUDAStream(a.get_device());
  ckgemm::RunReport report{0, 0, 0, -1, {0}};
  ckgemm::Status st = ckgemm::run_packed(p, args, scratch.buffers, stream.stream(), sms, &report);
  check_status(st, report, "run_packed");
}

at::Tensor run_packed(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes, int64_t layout,
                      int64_t config) {
  const ckgemm::DType d = dtype_of(a);
  const int64_t n = layout == 0 ? b.size(1) : b.size(2);
  at::Tensor out = at::empty({a.size(0), n}, a.options().dtype(output_type(d)));
  run_packed_out(a, b, group_sizes, out, layout, config);
  return out;
}

bool is_instantiated(int64_t dtype, int64_t layout, int64_t config) {
  return ckgemm::is_instantiated({static_cast<ckgemm::DType>(dtype), static_cast<ckgemm::Layout>(layout),
                                  static_cast<ckgemm::Config>(config)});
}

// GPU archs a ROCm build compiled kernels for (set by build_support/rocm.py); empty for CUDA builds.
std::vector<std::string> built_archs() {
  std::vector<std::string> archs;
#ifdef CKGEMM_ARCH_GFX942
  archs.push_back("gfx942");
#endif
#ifdef CKGEMM_ARCH_GFX950
  archs.push_back("gfx950");
#endif
  return archs;
}

}  // namespace

TORCH_LIBRARY(ckgemm, m) {
  m.def("run_list(Tensor[] a, Tensor[] b, Tensor(a!)[] c, int layout, int config) -> ()");
  m.def("run_packed_out(Tensor a, Tensor b, Tensor group_sizes, Tensor(a!) out, int layout, int config) -> ()");
  m.def("run_packed(Tensor a, Tensor b, Tensor group_sizes, int layout, int config) -> Tensor");
  m.def("verify_stats(Tensor out, Tensor ref, float rtol, float atol) -> Tensor");
}

TORCH_LIBRARY_IMPL(ckgemm, CUDA, m) {
  m.impl("run_list", &run_list);
  m.impl("run_packed_out", &run_packed_out);
  m.impl("run_packed", &run_packed);
  m.impl("verify_stats", &ckgemm::verify_stats);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "ckgemm native extension: registers torch.ops.ckgemm.*";
  m.def("backend_kind", [] { return std::string(ckgemm::backend_name()); });
  m.def("is_instantiated", &is_instantiated, "Whether this build holds an instance for (dtype, layout, config)");
  m.def("built_archs", &built_archs, "GPU archs of a ROCm build (empty for CUDA builds)");
}
