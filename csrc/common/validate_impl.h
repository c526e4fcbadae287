// validate_list / validate_packed of validate.h: the order of validate.validate_list + validate_outputs
// and validate.validate_packed, check for check.
#pragma once

namespace ckgemm {

inline Verdict validate_list(const TensorMeta* a, int na, const TensorMeta* b, int nb, const TensorMeta* c, int nc,
                             const TensorMeta* sa, int nsa, const TensorMeta* sb, int nsb, int scales_given,
                             int layout, int out_dtype, bool grad, Family family, CallFacts* facts) {
  using namespace validate_detail;
  if (layout != 0 && layout != 1) return bad(Rule::LAYOUT);
  if (na == 0 || nb == 0) return bad(Rule::LIST_EMPTY);
  if (na != nb) return bad(Rule::LIST_LENGTH);
  const bool rc = layout == 0;
  facts->layout = static_cast<Layout>(layout);
  facts->m.assign(na, 0);
  facts->n.assign(na, 0);
  facts->k.assign(na, 0);
  DType dtype = DType::F16;
  DeviceId device{};
  for (int g = 0; g < na; ++g) {
    Verdict v = check_tensor(a[g], 2, grad, g);
    if (v.ok()) v = check_tensor(b[g], 2, grad, g);
    DType group_dtype;
    if (v.ok()) v = check_dtype(a[g], family, g, &group_dtype);
    if (!v.ok()) return v;
    if (g == 0) dtype = group_dtype, device = a[0].device;
    if (a[g].device != device || b[g].device != device) return bad(Rule::DEVICE, g);
    if (b[g].dtype != a[g].dtype || group_dtype != dtype) return bad(Rule::DTYPE_MISMATCH, g);
    const int64_t kb = rc ? b[g].sizes[1] : b[g].sizes[0];
    if (kb != a[g].sizes[1]) return bad(Rule::K_MISMATCH, g);
    facts->m[g] = a[g].sizes[0];
    facts->n[g] = rc ? b[g].sizes[0] : b[g].sizes[1];
    facts->k[g] = a[g].sizes[1];
  }
  facts->dtype = dtype;
  bool scaled = false;
  Verdict v = check_scaled(scales_given & 1, scales_given & 2, dtype, &scaled);
  if (!v.ok()) return v;
  facts->recipe = Recipe::None;
  if (scaled) {
    if (nsa == 0) return bad(Rule::LIST_EMPTY);
    if (nsa != na) return bad(Rule::LIST_LENGTH);
    if (nsb == 0) return bad(Rule::LIST_EMPTY);
    if (nsb != na) return bad(Rule::LIST_LENGTH);
    bool first_known = false;
    Recipe first = Recipe::None;
    for (int g = 0; g < na; ++g) {
      v = check_scale_tensor(sa[g], device, grad, g);
      if (v.ok()) v = check_scale_tensor(sb[g], device, grad, g);
      if (!v.ok()) return v;
      const Recipe ra = recipe_of_rank(sa[g].ndim, 0), rb = recipe_of_rank(sb[g].ndim, 0);
      if (ra == Recipe::None || rb == Recipe::None) return bad(Rule::SCALE_SHAPE, g);
      v = check_recipe(ra, rb, first, first_known, dtype, g);
      if (!v.ok()) return v;
      first = ra, first_known = true;
      const int64_t m = facts->m[g], n = facts->n[g], k = facts->k[g];
      if (ra == Recipe::Row) {
        v = check_scale_layout(sa[g], {m}, g);
        if (v.ok()) v = check_scale_layout(sb[g], {n}, g);
      } else if (ra == Recipe::Block) {
        v = check_scale_layout(sa[g], {m, blocks(k)}, g);
        if (v.ok()) v = check_scale_layout(sb[g], {blocks(n), blocks(k)}, g);
      }
      if (!v.ok()) return v;
    }
    facts->recipe = first;
  }
  bool settled = true;
  v = check_out_dtype(dtype, scaled, out_dtype, nc >= 0, &facts->out, &settled);
  if (!v.ok() || nc < 0) return v;
  // validate_outputs
  if (nc == 0) return bad(Rule::LIST_EMPTY);
  if (nc != na) return bad(Rule::LIST_LENGTH);
  if (!settled) facts->out = settle_output(c[0], OutType::BF16);
  std::vector<const TensorMeta*> outs, ins;
  for (int g = 0; g < nc; ++g) {
    v = check_output(c[g], facts->m[g], facts->n[g], facts->out, device, grad, g);
    if (!v.ok()) return v;
    outs.push_back(&c[g]);
  }
  for (int g = 0; g < na; ++g) ins.push_back(&a[g]);
  for (int g = 0; g < nb; ++g) ins.push_back(&b[g]);
  if (scaled) {
    for (int g = 0; g < nsa; ++g) ins.push_back(&sa[g]);
    for (int g = 0; g < nsb; ++g) ins.push_back(&sb[g]);
  }
  return check_overlap(outs, ins, true);
}

inline Verdict validate_packed(const TensorMeta& a, const TensorMeta& b, const TensorMeta& sizes,
                               const TensorMeta* out, const TensorMeta* sa, const TensorMeta* sb, int layout,
                               int out_dtype, bool grad, Family family, const int64_t* host_sizes,
                               CallFacts* facts) {
  using namespace validate_detail;
  if (layout != 0 && layout != 1) return bad(Rule::LAYOUT);
  Verdict v = check_tensor(a, 2, grad, -1);
  if (v.ok()) v = check_tensor(b, 3, grad, -1);
  DType dtype = DType::F16;
  if (v.ok()) v = check_dtype(a, family, -1, &dtype);
  if (!v.ok()) return v;
  const DeviceId device = a.device;
  if (b.device != device) return bad(Rule::DEVICE);
  if (b.dtype != a.dtype) return bad(Rule::DTYPE_MISMATCH);
  const bool rc = layout == 0;
  const int64_t rows = a.sizes[0], k = a.sizes[1], groups = b.sizes[0];
  const int64_t n = rc ? b.sizes[1] : b.sizes[2], kb = rc ? b.sizes[2] : b.sizes[1];
  if (kb != k) return bad(Rule::K_MISMATCH);
  if (sizes.dtype != MetaType::I32 && sizes.dtype != MetaType::I64) return bad(Rule::SIZES_DTYPE);
  if (sizes.ndim != 1 || sizes.sizes[0] != groups) return bad(Rule::SIZES_SHAPE);
  if (sizes.device.type != 0 && sizes.device != device) return bad(Rule::DEVICE);
  if (groups == 0) return bad(Rule::GROUPS_ZERO);
  facts->dtype = dtype;
  facts->layout = static_cast<Layout>(layout);
  facts->m.assign(1, rows);
  facts->n.assign(1, n);
  facts->k.assign(1, k);
  bool scaled = false;
  v = check_scaled(sa != nullptr, sb != nullptr, dtype, &scaled);
  if (!v.ok()) return v;
  facts->recipe = Recipe::None;
  if (scaled) {
    v = check_scale_tensor(*sa, device, grad, -1);
    if (v.ok()) v = check_scale_tensor(*sb, device, grad, -1);
    if (!v.ok()) return v;
    const Recipe ra = recipe_of_rank(sa->ndim, 0), rb = recipe_of_rank(sb->ndim, 1);
    if (ra == Recipe::None || rb == Recipe::None) return bad(Rule::SCALE_SHAPE);
    v = check_recipe(ra, rb, Recipe::None, false, dtype, -1);
    if (!v.ok()) return v;
    if (ra == Recipe::Tensor) {
      v = check_scale_layout(*sa, {}, -1);
      if (v.ok()) v = check_scale_layout(*sb, {groups}, -1);
    } else if (ra == Recipe::Row) {
      v = check_scale_layout(*sa, {rows}, -1);
      if (v.ok()) v = check_scale_layout(*sb, {groups, n}, -1);
    } else {
      v = check_scale_layout(*sa, {rows, blocks(k)}, -1);
      if (v.ok()) v = check_scale_layout(*sb, {groups, blocks(n), blocks(k)}, -1);
    }
    if (!v.ok()) return v;
    facts->recipe = ra;
  }
  bool settled = true;
  v = check_out_dtype(dtype, scaled, out_dtype, out != nullptr, &facts->out, &settled);
  if (!v.ok()) return v;
  if (out != nullptr) {
    if (!settled) facts->out = settle_output(*out, OutType::BF16);
    v = check_output(*out, rows, n, facts->out, device, grad, -1);
    if (!v.ok()) return v;
    std::vector<const TensorMeta*> ins{&a, &b};
    if (scaled) ins.push_back(sa), ins.push_back(sb);
    if (sizes.device == device) ins.push_back(&sizes);  // read by the kernels on the device while they write out
    v = check_overlap({out}, ins, false);
    if (!v.ok()) return v;
  }
  if (host_sizes != nullptr) {
    int64_t total = 0;
    bool over = false;  // a size above rows cannot sum to rows; stop adding before int64 could wrap
    for (int64_t g = 0; g < groups; ++g) {
      if (host_sizes[g] < 0) return bad(Rule::SIZE_NEGATIVE, static_cast<int>(g));
      over = over || host_sizes[g] > rows - total;
      if (!over) total += host_sizes[g];
    }
    if (over || total != rows) return bad(Rule::SIZES_SUM);
  }
  return {};
}

}  // namespace ckgemm
