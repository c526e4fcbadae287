// torch bindings: one torch.library op per public form (csrc/execute.h), the prepack transpose, the
// harness's verifier, their eager entry points (eager.cpp), and a few pybind functions the Python side reads once (backend kind, instance
// names) or on demand (the last call's routes). This file is hipified for ROCm.
#include <torch/extension.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "ckgemm.h"
#include "common/verify_op.h"
#include "eager.h"
#include "execute.h"
#include "instance_stages.h"
#if __has_include("ckgemm_build_info.h")
#include "ckgemm_build_info.h"  // build/generated: what this build was made from (build_support/__init__.py)
#endif

namespace {

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

std::vector<std::string> instance_names() {
  std::vector<std::string> names;
  for (int id = 0; id < ckgemm::instance_count(); ++id) names.emplace_back(ckgemm::instance_info(id).name);
  return names;
}

// Every instance as a dict, for benchmarks and the selftest report.
std::vector<py::dict> instances() {
  std::vector<py::dict> out;
  for (int id = 0; id < ckgemm::instance_count(); ++id) {
    const ckgemm::InstanceInfo& i = ckgemm::instance_info(id);
    py::dict d;
    d["id"] = id;
    d["name"] = std::string(i.name);
    d["dtype"] = static_cast<int>(i.kind.dtype);
    d["out"] = static_cast<int>(i.kind.out);
    d["layout"] = static_cast<int>(i.kind.layout);
    d["scaling"] = static_cast<int>(i.kind.scaling);
    d["tile"] = py::make_tuple(i.tile_m, i.tile_n, i.tile_k);
    d["cluster"] = py::make_tuple(i.cluster_m, i.cluster_n);
    d["any_output"] = i.any_output;
    d["packed_only"] = i.packed_only;
    d["stages"] = ckgemm::instance_stages(id);  // 0: not reported by this backend
    out.push_back(d);
  }
  return out;
}

py::tuple last_report() {
  const ckgemm::LastReport& r = ckgemm::last_report();
  return py::make_tuple(r.op, r.dtype, r.layout, r.recipe, r.out, r.routes);
}

}  // namespace

TORCH_LIBRARY(ckgemm, m) {
  m.def("gemm_list(Tensor[] a, Tensor[] b, Tensor[] scale_a, Tensor[] scale_b, int scales_given, int layout, "
        "ScalarType? out_dtype) -> Tensor[]");
  m.def("gemm_list_out(Tensor[] a, Tensor[] b, Tensor(a!)[] c, Tensor[] scale_a, Tensor[] scale_b, int scales_given, "
        "int layout, ScalarType? out_dtype) -> ()");
  m.def("gemm_packed(Tensor a, Tensor b, Tensor group_sizes, Tensor? scale_a, Tensor? scale_b, int layout, "
        "ScalarType? out_dtype) -> Tensor");
  m.def("gemm_packed_out(Tensor a, Tensor b, Tensor group_sizes, Tensor(a!) out, Tensor? scale_a, Tensor? scale_b, "
        "int layout, ScalarType? out_dtype) -> ()");
  m.def("transpose_b(Tensor b) -> Tensor");
  m.def("verify_stats(Tensor out, Tensor ref, float rtol, float atol) -> Tensor");
}

TORCH_LIBRARY_IMPL(ckgemm, CUDA, m) {
  m.impl("gemm_list", &ckgemm::gemm_list<false>);
  m.impl("gemm_list_out", &ckgemm::gemm_list_out<false>);
  m.impl("gemm_packed", &ckgemm::gemm_packed<false>);
  m.impl("gemm_packed_out", &ckgemm::gemm_packed_out<false>);
  m.impl("transpose_b", &ckgemm::transpose_b);
  m.impl("verify_stats", &ckgemm::verify_stats);
}

// Meta (and fake tensors, torch.compile): the same validation, then output shapes. A call mixing meta
// and GPU tensors lands here too, and is rejected like any device mismatch.
TORCH_LIBRARY_IMPL(ckgemm, Meta, m) {
  m.impl("gemm_list", &ckgemm::gemm_list<true>);
  m.impl("gemm_list_out", &ckgemm::gemm_list_out<true>);
  m.impl("gemm_packed", &ckgemm::gemm_packed<true>);
  m.impl("gemm_packed_out", &ckgemm::gemm_packed_out<true>);
  m.impl("transpose_b", &ckgemm::transpose_b_meta);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "ckgemm native extension: registers torch.ops.ckgemm.*";
  m.def("backend_kind", [] { return std::string(ckgemm::backend_name()); });
  m.def("built_archs", &built_archs, "GPU archs of a ROCm build (empty for CUDA builds)");
  m.def("instance_names", &instance_names, "display names of the instances, by id");
  m.def("instances", &instances, "every instance of this build, with its kind, tile, cluster and stages");
  m.def("last_report", &last_report, "(op, dtype, layout, recipe, out, routes) of this thread's last native call");
  m.def("set_num_sms", &ckgemm::set_num_sms, "cap the SMs a call's persistent kernels use (0: every SM)");
  m.def("num_sms", &ckgemm::num_sms, "the cap set by set_num_sms (0: none)");
  ckgemm::register_eager(m);
#ifdef CKGEMM_BUILD_INFO
  m.def("build_info", [] { return std::string(CKGEMM_BUILD_INFO); }, "this build's record (JSON; docs/SELFTEST.md)");
#endif
}
