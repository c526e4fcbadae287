// Eager entry points for ckgemm.ops: each calls the registered op (torch.ops.ckgemm.*) through the C++
// dispatcher with a typed handle found once, instead of Python's boxed operator call (which parses every
// argument into an IValue and scans it for __torch_function__ overrides: several µs for a list call).
// They take a call only when every tensor argument is a plain torch.Tensor or nn.Parameter and no torch
// function mode is active; otherwise they return NotHandled and the caller goes through torch.ops, so
// subclasses and modes see the op exactly as before. Dispatch-key semantics are the dispatcher's either
// way (Meta, fake tensors, __torch_dispatch__ subclasses). This file is hipified for ROCm.
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

#include <optional>
#include <vector>

#include "eager.h"

namespace ckgemm {
namespace {

// Tensors of a list or tuple of plain tensors; false for anything else (the caller falls back).
bool plain_list(py::handle seq, std::vector<at::Tensor>* out) {
  PyObject* obj = seq.ptr();
  const bool list = PyList_CheckExact(obj);
  if (!list && !PyTuple_CheckExact(obj)) return false;
  const Py_ssize_t n = list ? PyList_GET_SIZE(obj) : PyTuple_GET_SIZE(obj);
  out->reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = list ? PyList_GET_ITEM(obj, i) : PyTuple_GET_ITEM(obj, i);
    if (!THPVariable_CheckExact(item)) return false;
    out->push_back(THPVariable_Unpack(item));
  }
  return true;
}

bool plain(py::handle x, at::Tensor* out) {
  if (!THPVariable_CheckExact(x.ptr())) return false;
  *out = THPVariable_Unpack(x.ptr());
  return true;
}

// None or a plain tensor.
bool plain_optional(py::handle x, std::optional<at::Tensor>* out) {
  if (x.is_none()) return true;
  at::Tensor t;
  if (!plain(x, &t)) return false;
  *out = std::move(t);
  return true;
}

std::optional<at::ScalarType> dtype_of(py::handle x) {
  if (x.is_none()) return std::nullopt;
  return x.cast<at::ScalarType>();
}

template <class Signature>
c10::TypedOperatorHandle<Signature> op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// The op's result (or nothing), called with the GIL released.
template <class Signature, class... Args>
auto call_without_gil(const c10::TypedOperatorHandle<Signature>& op, const Args&... args) {
  py::gil_scoped_release no_gil;
  return op.call(args...);
}

using ListSig = std::vector<at::Tensor>(at::TensorList, at::TensorList, at::TensorList, at::TensorList, int64_t,
                                        int64_t, std::optional<at::ScalarType>);
using ListOutSig = void(at::TensorList, at::TensorList, at::TensorList, at::TensorList, at::TensorList, int64_t,
                        int64_t, std::optional<at::ScalarType>);
using PackedSig = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                             const std::optional<at::Tensor>&, int64_t, std::optional<at::ScalarType>);
using PackedOutSig = void(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                          const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, int64_t,
                          std::optional<at::ScalarType>);

}  // namespace

void register_eager(py::module& m) {
  // gemm_list: the outputs, or None when the call must take torch.ops.
  m.def("eager_gemm_list", [](py::handle a, py::handle b, py::handle sa, py::handle sb, int64_t given, int64_t layout,
                               py::handle out_dtype) -> py::object {
    HANDLE_TH_ERRORS
    std::vector<at::Tensor> ta, tb, tsa, tsb;
    if (at::impl::torch_function_mode_enabled() || !plain_list(a, &ta) || !plain_list(b, &tb) ||
        !plain_list(sa, &tsa) || !plain_list(sb, &tsb))
      return py::none();
    const std::optional<at::ScalarType> dt = dtype_of(out_dtype);
    static const auto op = op_handle<ListSig>("ckgemm::gemm_list");
    return py::cast(call_without_gil(op, ta, tb, tsa, tsb, given, layout, dt));
    END_HANDLE_TH_ERRORS_PYBIND
  });
  // The in-place forms: True when the call ran here, False when it must take torch.ops.
  m.def("eager_gemm_list_out", [](py::handle a, py::handle b, py::handle c, py::handle sa, py::handle sb,
                                   int64_t given, int64_t layout, py::handle out_dtype) {
    HANDLE_TH_ERRORS
    std::vector<at::Tensor> ta, tb, tc, tsa, tsb;
    if (at::impl::torch_function_mode_enabled() || !plain_list(a, &ta) || !plain_list(b, &tb) ||
        !plain_list(c, &tc) || !plain_list(sa, &tsa) || !plain_list(sb, &tsb))
      return false;
    const std::optional<at::ScalarType> dt = dtype_of(out_dtype);
    static const auto op = op_handle<ListOutSig>("ckgemm::gemm_list_out");
    call_without_gil(op, ta, tb, tc, tsa, tsb, given, layout, dt);
    return true;
    END_HANDLE_TH_ERRORS_PYBIND
  });
  m.def("eager_gemm_packed", [](py::handle a, py::handle b, py::handle sizes, py::handle sa, py::handle sb,
                                 int64_t layout, py::handle out_dtype) -> py::object {
    HANDLE_TH_ERRORS
    at::Tensor ta, tb, ts;
    std::optional<at::Tensor> tsa, tsb;
    if (at::impl::torch_function_mode_enabled() || !plain(a, &ta) || !plain(b, &tb) || !plain(sizes, &ts) ||
        !plain_optional(sa, &tsa) || !plain_optional(sb, &tsb))
      return py::none();
    const std::optional<at::ScalarType> dt = dtype_of(out_dtype);
    static const auto op = op_handle<PackedSig>("ckgemm::gemm_packed");
    return py::cast(call_without_gil(op, ta, tb, ts, tsa, tsb, layout, dt));
    END_HANDLE_TH_ERRORS_PYBIND
  });
  m.def("eager_gemm_packed_out", [](py::handle a, py::handle b, py::handle sizes, py::handle out, py::handle sa,
                                     py::handle sb, int64_t layout, py::handle out_dtype) {
    HANDLE_TH_ERRORS
    at::Tensor ta, tb, ts, to;
    std::optional<at::Tensor> tsa, tsb;
    if (at::impl::torch_function_mode_enabled() || !plain(a, &ta) || !plain(b, &tb) || !plain(sizes, &ts) ||
        !plain(out, &to) || !plain_optional(sa, &tsa) || !plain_optional(sb, &tsb))
      return false;
    const std::optional<at::ScalarType> dt = dtype_of(out_dtype);
    static const auto op = op_handle<PackedOutSig>("ckgemm::gemm_packed_out");
    call_without_gil(op, ta, tb, ts, to, tsa, tsb, layout, dt);
    return true;
    END_HANDLE_TH_ERRORS_PYBIND
  });
}

}  // namespace ckgemm
