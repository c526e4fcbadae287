// The native validator: ckgemm/validate.py and validate_scales.py ported rule for rule, over TensorMeta
// (no torch types: g++-tested against the Python validator by tests/test_native_rules.py). It returns
// the first rule a call breaks and the group, checked in validate.py's order; it never formats a message:
// on a rejection the Python wrapper re-runs validate.py, which raises the user-facing text.
// Rules that only Python can see (a non-list argument, a non-tensor element) are caught by the op's
// schema before this runs, and then validate.py explains them too.
#pragma once

#include <cstdint>
#include <vector>

#include "../ckgemm.h"
#include "tensor_meta.h"

namespace ckgemm {

enum class Rule : int32_t {
#define CKGEMM_RULE(name, value) name = value,
#include "rules.inc"
#undef CKGEMM_RULE
};

struct Verdict {
  Rule rule = Rule::NONE;
  int group = -1;  // -1: the call as a whole
  bool ok() const { return rule == Rule::NONE; }
};

enum class Family : int32_t { Cpu = 0, Nvidia = 1, Gfx942 = 2, Gfx950 = 3, RocmOther = 4, Other = 5 };
enum class Recipe : int32_t { None = 0, Tensor = 1, Row = 2, Block = 3 };

// What a valid call is, for the router.
struct CallFacts {
  DType dtype = DType::F16;
  Layout layout = Layout::RC;
  Recipe recipe = Recipe::None;
  OutType out = OutType::F16;
  std::vector<int64_t> m, n, k;  // per group (packed: one entry each for rows, n, k)
};

namespace validate_detail {

inline Verdict bad(Rule r, int group = -1) { return Verdict{r, group}; }

inline bool input_dtype(MetaType t, DType* out) {
  switch (t) {
    case MetaType::F16: *out = DType::F16; return true;
    case MetaType::BF16: *out = DType::BF16; return true;
    case MetaType::FP8_E4M3: *out = DType::FP8_E4M3; return true;
    case MetaType::FP8_E4M3_FNUZ: *out = DType::FP8_E4M3_FNUZ; return true;
    case MetaType::I8: *out = DType::I8; return true;
    default: return false;
  }
}

// dtypes.DTYPE_TABLE families: e4m3fn on cpu/nvidia/gfx950/other, e4m3fnuz on cpu/gfx942, the rest everywhere.
inline bool family_takes(DType d, Family f) {
  if (d == DType::FP8_E4M3) return f == Family::Cpu || f == Family::Nvidia || f == Family::Gfx950 || f == Family::Other;
  if (d == DType::FP8_E4M3_FNUZ) return f == Family::Cpu || f == Family::Gfx942;
  return true;
}

inline OutType out_type(MetaType t, bool* ok) {
  *ok = true;
  switch (t) {
    case MetaType::F16: return OutType::F16;
    case MetaType::BF16: return OutType::BF16;
    case MetaType::F32: return OutType::F32;
    case MetaType::I32: return OutType::I32;
    default: *ok = false; return OutType::F32;
  }
}

// _checks.check_tensor (the NOT_A_TENSOR part is the schema's).
inline Verdict check_tensor(const TensorMeta& t, int ndim, bool grad, int group) {
  if (t.ndim != ndim) return bad(Rule::NDIM, group);
  if (ndim > 0 && t.size(-1) > 1 && t.stride(-1) != 1 && !t.has_zero()) return bad(Rule::INNER_STRIDE, group);
  if (t.requires_grad && grad) return bad(Rule::REQUIRES_GRAD, group);
  return {};
}

// validate._check_dtype
inline Verdict check_dtype(const TensorMeta& t, Family family, int group, DType* dtype) {
  if (!input_dtype(t.dtype, dtype)) return bad(Rule::DTYPE_UNSUPPORTED, group);
  if (!family_takes(*dtype, family)) return bad(Rule::FP8_FLAVOUR, group);
  return {};
}

inline int64_t blocks(int64_t x) { return (x + kScaleBlock - 1) / kScaleBlock; }

// validate_scales._check_scale_tensor
inline Verdict check_scale_tensor(const TensorMeta& s, DeviceId device, bool grad, int group) {
  if (s.dtype != MetaType::F32) return bad(Rule::SCALE_DTYPE, group);
  if (s.device != device) return bad(Rule::DEVICE, group);
  if (s.requires_grad && grad) return bad(Rule::REQUIRES_GRAD, group);
  return {};
}

// validate_scales._check_layout_of
inline Verdict check_scale_layout(const TensorMeta& s, std::initializer_list<int64_t> expected, int group) {
  bool same = s.ndim == static_cast<int>(expected.size());
  int i = 0;
  for (int64_t e : expected) same = same && s.sizes[i++] == e;
  if (!same) return bad(Rule::SCALE_SHAPE, group);
  if (!s.contiguous()) return bad(Rule::SCALE_STRIDE, group);
  return {};
}

// validate_scales._recipe_of: rank -> recipe (list form and packed A: 0, 1, 2; packed B: 1, 2, 3).
inline Recipe recipe_of_rank(int rank, int first_rank) {
  const int r = rank - first_rank;
  return r == 0 ? Recipe::Tensor : r == 1 ? Recipe::Row : r == 2 ? Recipe::Block : Recipe::None;
}

// validate_scales._check_recipe
inline Verdict check_recipe(Recipe ra, Recipe rb, Recipe first, bool first_known, DType dtype, int group) {
  if (ra != rb) return bad(Rule::SCALE_RECIPE, group);
  if (first_known && ra != first) return bad(Rule::SCALE_RECIPE, group);
  if (ra == Recipe::Block && dtype == DType::I8) return bad(Rule::SCALE_RECIPE_DTYPE, group);
  return {};
}

// validate_scales._common: 1 = scaled, 0 = unscaled, or a rejection.
inline Verdict check_scaled(bool given_a, bool given_b, DType dtype, bool* scaled) {
  *scaled = given_a || given_b;
  if (!*scaled) return {};
  if (!given_a || !given_b) return bad(Rule::SCALES_PAIR);
  if (element_bytes(dtype) != 1) return bad(Rule::SCALES_UNEXPECTED);
  return {};
}

// validate_scales.output_dtype; out_dtype < 0: not given. Sets *settled = false when the outputs decide.
inline Verdict check_out_dtype(DType dtype, bool scaled, int out_dtype, bool outputs_given, OutType* out,
                               bool* settled) {
  *settled = true;
  if (!scaled) {
    *out = unscaled_out(dtype);
    if (out_dtype >= 0 && static_cast<OutType>(out_dtype) != *out) return bad(Rule::OUT_DTYPE);
    return {};
  }
  if (out_dtype < 0) {
    *out = OutType::BF16;
    *settled = !outputs_given;
    return {};
  }
  const OutType o = static_cast<OutType>(out_dtype);
  if (o != OutType::BF16 && o != OutType::F16 && o != OutType::F32) return bad(Rule::OUT_DTYPE);
  *out = o;
  return {};
}

// validate._check_output
inline Verdict check_output(const TensorMeta& c, int64_t m, int64_t n, OutType dtype, DeviceId device, bool grad,
                            int group) {
  Verdict v = check_tensor(c, 2, grad, group);
  if (!v.ok()) return v;
  if (c.sizes[0] != m || c.sizes[1] != n) return bad(Rule::OUT_SHAPE, group);
  bool known = false;
  if (out_type(c.dtype, &known) != dtype || !known) return bad(Rule::OUT_DTYPE, group);
  if (c.device != device) return bad(Rule::DEVICE, group);
  if (rows_self_overlap(c)) return bad(Rule::ROWS_OVERLAP, group);
  if (c.inference_locked) return bad(Rule::INFERENCE_OUTPUT, group);
  return {};
}

// validate._output_dtype_of / scaled_output_of: a scaled call writing given outputs without out_dtype
// takes the first output's dtype if the scaled kernels write it.
inline OutType settle_output(const TensorMeta& first, OutType fallback) {
  bool known = false;
  const OutType t = out_type(first.dtype, &known);
  return known && (t == OutType::BF16 || t == OutType::F16 || t == OutType::F32) ? t : fallback;
}

// grouped_outputs: outs are the list forms' c[0..] (the verdict names the output's group); else the packed out.
inline Verdict check_overlap(const std::vector<const TensorMeta*>& outs, const std::vector<const TensorMeta*>& ins,
                             bool grouped_outputs) {
  std::vector<Rows> o, i;
  for (size_t x = 0; x < outs.size(); ++x) append_rows(*outs[x], static_cast<int>(x), &o);
  for (size_t x = 0; x < ins.size(); ++x) append_rows(*ins[x], static_cast<int>(outs.size() + x), &i);
  int a = 0, b = 0;
  if (!first_overlap(o, i, &a, &b)) return Verdict{};
  return bad(Rule::OVERLAP, grouped_outputs ? a : -1);
}

}  // namespace validate_detail

// The list forms. nc < 0 for grouped_gemm (it allocates; `c` unused). scales_given: bit 0 scale_a, bit 1
// scale_b. layout: 0 RC, 1 RR, anything else unknown. out_dtype: an OutType, or < 0 when not given.
Verdict validate_list(const TensorMeta* a, int na, const TensorMeta* b, int nb, const TensorMeta* c, int nc,
                      const TensorMeta* sa, int nsa, const TensorMeta* sb, int nsb, int scales_given, int layout,
                      int out_dtype, bool grad, Family family, CallFacts* facts);

// The packed form. `out`, `sa`, `sb` may be null (not given); `host_sizes` holds the group sizes when
// they are on the CPU (else null: they are checked on the device).
Verdict validate_packed(const TensorMeta& a, const TensorMeta& b, const TensorMeta& sizes, const TensorMeta* out,
                        const TensorMeta* sa, const TensorMeta* sb, int layout, int out_dtype, bool grad,
                        Family family, const int64_t* host_sizes, CallFacts* facts);

}  // namespace ckgemm

#include "validate_impl.h"
