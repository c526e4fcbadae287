// at::Tensor -> what the native validator and router read (TensorMeta, GroupDesc), and the dtype maps
// between torch and the ABI. The only torch-aware translation of the dtype table: its values are
// ckgemm/dtypes.py's (DtypeRule.abi_code) and ckgemm/backends/routes.py's (OUT_DTYPES).
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include "ckgemm.h"
#include "common/tensor_meta.h"
#include "common/validate.h"

namespace ckgemm {

inline MetaType meta_type(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return MetaType::F16;
    case at::kBFloat16: return MetaType::BF16;
    case at::kFloat8_e4m3fn: return MetaType::FP8_E4M3;
    case at::kFloat8_e4m3fnuz: return MetaType::FP8_E4M3_FNUZ;
    case at::kChar: return MetaType::I8;
    case at::kFloat: return MetaType::F32;
    case at::kInt: return MetaType::I32;
    case at::kLong: return MetaType::I64;
    default: return MetaType::Other;
  }
}

inline at::ScalarType scalar_type(OutType t) {
  switch (t) {
    case OutType::F16: return at::kHalf;
    case OutType::BF16: return at::kBFloat16;
    case OutType::F32: return at::kFloat;
    default: return at::kInt;
  }
}

// out_dtype argument -> an OutType code, -1 when not given, 99 for a dtype no kernel writes.
inline int out_code(const std::optional<at::ScalarType>& t) {
  if (!t.has_value()) return -1;
  switch (*t) {
    case at::kHalf: return static_cast<int>(OutType::F16);
    case at::kBFloat16: return static_cast<int>(OutType::BF16);
    case at::kFloat: return static_cast<int>(OutType::F32);
    case at::kInt: return static_cast<int>(OutType::I32);
    default: return 99;
  }
}

// `addresses`: read data pointers (for the overlap rules). The Meta kernels pass false: meta and fake
// tensors have no memory to overlap, and a fake tensor's data_ptr() throws.
inline TensorMeta meta_of(const at::Tensor& t, bool addresses = true) {
  TensorMeta m{};
  m.ndim = static_cast<int32_t>(t.dim());
  for (int i = 0; i < m.ndim && i < 4; ++i) {
    m.sizes[i] = t.size(i);
    m.strides[i] = t.stride(i);
  }
  m.dtype = meta_type(t.scalar_type());
  m.element_size = static_cast<int32_t>(t.element_size());
  const c10::Device d = t.device();
  m.device = DeviceId{d.is_cpu() ? 0 : d.is_cuda() ? 1 : 2, d.has_index() ? d.index() : -1};
  m.data = addresses && t.numel() > 0 && !t.is_meta() ? reinterpret_cast<uint64_t>(t.data_ptr()) : 0;
  m.requires_grad = t.requires_grad();
  m.inference_locked = t.is_inference() && !c10::InferenceMode::is_enabled();
  return m;
}

inline std::vector<TensorMeta> metas_of(at::TensorList ts, bool addresses = true) {
  std::vector<TensorMeta> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(meta_of(t, addresses));
  return out;
}

inline bool grad_enabled() { return at::GradMode::is_enabled(); }

// Leading dimension in elements. A matrix with at most one row has no meaningful row stride; use its
// width so alignment rules see a sane value.
inline int64_t leading_dim(const at::Tensor& t) { return t.size(-2) <= 1 ? t.size(-1) : t.stride(-2); }

}  // namespace ckgemm
