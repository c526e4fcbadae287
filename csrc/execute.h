// The native ops, one per public form: validate (common/validate.h), route (common/route.h), execute
// (copies, zero fills, launches, staged outputs), and record what ran. Declared here for the bindings.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace ckgemm {

// Meta = true: the Meta-key kernels (validation and output shapes only; also what fake tensors run).
template <bool Meta>
std::vector<at::Tensor> gemm_list(at::TensorList a, at::TensorList b, at::TensorList scale_a, at::TensorList scale_b,
                                  int64_t scales_given, int64_t layout, std::optional<at::ScalarType> out_dtype);
template <bool Meta>
void gemm_list_out(at::TensorList a, at::TensorList b, at::TensorList c, at::TensorList scale_a,
                   at::TensorList scale_b, int64_t scales_given, int64_t layout,
                   std::optional<at::ScalarType> out_dtype);
template <bool Meta>
at::Tensor gemm_packed(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes,
                       const std::optional<at::Tensor>& scale_a, const std::optional<at::Tensor>& scale_b,
                       int64_t layout, std::optional<at::ScalarType> out_dtype);
template <bool Meta>
void gemm_packed_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes, const at::Tensor& out,
                     const std::optional<at::Tensor>& scale_a, const std::optional<at::Tensor>& scale_b,
                     int64_t layout, std::optional<at::ScalarType> out_dtype);
// [..., K, N] -> contiguous [..., N, K] (ckgemm.prepack), with the repack kernel.
at::Tensor transpose_b(const at::Tensor& b);
at::Tensor transpose_b_meta(const at::Tensor& b);

// The SMs (CUs) a call's persistent kernels may use, as DeepGEMM's set_num_sms: 0 (default) every SM of the
// device; n > 0 at most n (the grid and the tile scheduler take n), leaving the rest to concurrent work such
// as a transpose or a collective on another stream. Process-wide, read at each call.
void set_num_sms(int64_t n);
int64_t num_sms();
// The SMs of the current device a call uses: num_sms() when set and smaller, else the device's count.
int call_sms();

// What this thread's last native call ran: (op, dtype, layout, recipe, out type) codes and one route
// code per group (common/route.h), for ckgemm.last_dispatch().
struct LastReport {
  int op = 0, dtype = 0, layout = 0, recipe = 0, out = 0;
  std::vector<int32_t> routes;
};
const LastReport& last_report();

}  // namespace ckgemm
