// The native ops: validate (common/validate.h), route (common/route.h), execute, record. Everything is
// stream-ordered on the current stream with no host sync, so every form can be captured in a CUDA/HIP
// graph (the packed form with device sizes also replays with new sizes). Temporaries (copied operands,
// staged outputs, scratch) come from the caching allocator and are released at the end of the call,
// which the allocator orders after the work queued on the stream.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include "common/descriptor.h"
#include "common/message.h"
#include "common/route.h"
#include "execute.h"
#include "launch.h"
#include "list_work.h"
#include "torch_meta.h"

namespace ckgemm {
namespace {

thread_local LastReport g_last;
std::atomic<int64_t> g_num_sms{0};

[[noreturn]] void reject(const Verdict& v) {
  CKGEMM_CHECK(false, "[ckgemm-rejected rule=", static_cast<int>(v.rule), " group=", v.group,
               "] the native validator rejected this call");
}

Family family_of(const at::Tensor& t) {
#if defined(USE_ROCM)
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static Family cache[kMaxDevices];
  static bool known[kMaxDevices] = {};
  const int index = t.is_cuda() ? t.get_device() : -1;
  if (index < 0 || index >= kMaxDevices) return Family::Other;
  std::lock_guard<std::mutex> lock(mutex);
  if (!known[index]) {
    const std::string arch = at::cuda::getDeviceProperties(index)->gcnArchName;
    cache[index] = arch.rfind("gfx94", 0) == 0 ? Family::Gfx942 : arch.rfind("gfx95", 0) == 0 ? Family::Gfx950
                                                                                               : Family::RocmOther;
    known[index] = true;
  }
  return cache[index];
#else
  return t.is_cuda() ? Family::Nvidia : Family::Other;
#endif
}

void record(int op, const CallFacts& facts, std::vector<int32_t> routes) {
  g_last = LastReport{op, static_cast<int>(facts.dtype), static_cast<int>(facts.layout),
                      static_cast<int>(facts.recipe), static_cast<int>(facts.out), std::move(routes)};
}

void check_device(DType dtype) {
  const std::string why = device_rejects(dtype);
  CKGEMM_CHECK(why.empty(), "[ckgemm-unsupported] ", backend_name(), ": ", why);
}

// Group sizes of a packed call held on the CPU, as int64.
std::vector<int64_t> host_sizes_of(const at::Tensor& sizes) {
  const at::Tensor s = sizes.to(at::kLong).contiguous();
  const int64_t* p = s.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + s.numel());
}

// The packed call with its sizes on the device: one route for every group (they share N, K and strides).
void run_packed_on_device(const at::Tensor& a, const at::Tensor& b, const at::Tensor& sizes, const at::Tensor& out,
                          at::Tensor sa, at::Tensor sb, const CallFacts& facts, Work& work,
                          std::vector<int32_t>* routes) {
  const int64_t groups = b.size(0), rows = a.size(0), n = facts.n[0], k = facts.k[0];
  const at::Tensor dev_sizes = sizes.contiguous();
  PackedArgs p{a.data_ptr(), b.data_ptr(), out.data_ptr(), dev_sizes.data_ptr(), dev_sizes.scalar_type() == at::kLong,
               static_cast<int32_t>(groups), rows, n, k, leading_dim(a), leading_dim(b), leading_dim(out),
               groups <= 1 ? 0 : b.stride(0), nullptr, 0, nullptr, 0, /*sizes_ok=*/nullptr};
  const bool work_left = rows > 0 && n > 0 && k > 0;
  if (!work_left) {  // nothing for a kernel: still check the sizes on the device (a bad size traps)
    work.check(launch_size_check(p, work.stream), "group size check");
    if (rows > 0 && n > 0) work.zero_fill(out, rows, n);
    routes->assign(groups, route_code(rows > 0 && n > 0 ? kRouteZeroK : kRouteEmpty));
    return;
  }
  const Kind kind{facts.dtype, facts.out, facts.layout, scaling_of_recipe(facts.recipe)};
  bool expanded = false;
  if (facts.recipe == Recipe::Tensor) {  // one scale per matrix -> one per row and per column
    sa = sa.reshape({1}).expand({rows}).contiguous();
    sb = sb.reshape({groups, 1}).expand({groups, n}).contiguous();
    expanded = true;
  }
  if (kind.scaling != Scaling::None) {
    p.sa = sa.data_ptr<float>();
    p.sb = sb.data_ptr<float>();
    p.sa_row_stride = kind.scaling == Scaling::Row ? 1 : sa.size(1);
    p.sb_group_stride = sb[0].numel();
  }
  const GroupDesc envelope = packed_envelope(p);
  const Route r = route_packed(kind, p);
  CKGEMM_CHECK(r.ok(), "[ckgemm-unsupported] ", backend_name(), ": ", r.why);
  const int32_t flags = route_flags(r.code);
  const GroupDesc moved = work.apply_copies(r, envelope, a, b, out, sb, groups);
  p.a = moved.a, p.b = moved.b, p.c = moved.c, p.k = moved.k, p.n = moved.n;
  p.lda = moved.lda, p.ldb = moved.ldb, p.ldc = moved.ldc, p.sb = moved.sb;
  if (flags & kRepackB) p.b_group_stride = moved.n * moved.k;
  if (moved.sb != envelope.sb) p.sb_group_stride = moved.n;  // row scales padded with the staged N
  work.flush_copies();
  RunReport report{0, -1, {0}};
  const Status st = run_packed(route_instance(r.code), p,
                               work.scratch(packed_buffer_bytes(route_instance(r.code), p, work.sms)),
                               work.stream, work.sms, &report);
  CKGEMM_CHECK(st == Status::Ok, "ckgemm (", backend_name(), "): ", status_string(st), ": ", report.message);
  work.finish_staged();
  routes->assign(groups, r.code | (expanded ? route_code(0, 0, kExpandScales) : 0));
}

// `meta`: the Meta-key kernel (shape inference for meta and fake tensors): validate, allocate, return.
void packed_impl(int op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& sizes, at::Tensor* out,
                 bool allocate, const std::optional<at::Tensor>& scale_a, const std::optional<at::Tensor>& scale_b,
                 int64_t layout, std::optional<at::ScalarType> out_dtype, bool meta) {
  const bool addr = !meta;
  const TensorMeta ma = meta_of(a, addr), mb = meta_of(b, addr), ms = meta_of(sizes, addr);
  const TensorMeta mo = allocate ? TensorMeta{} : meta_of(*out, addr);
  const TensorMeta msa = scale_a ? meta_of(*scale_a, addr) : TensorMeta{};
  const TensorMeta msb = scale_b ? meta_of(*scale_b, addr) : TensorMeta{};
  std::vector<int64_t> host;
  const bool host_sizes = !meta && sizes.is_cpu();
  if (host_sizes && (sizes.scalar_type() == at::kInt || sizes.scalar_type() == at::kLong) && sizes.dim() == 1)
    host = host_sizes_of(sizes);
  CallFacts facts;
  const Verdict v = validate_packed(ma, mb, ms, allocate ? nullptr : &mo, scale_a ? &msa : nullptr,
                                    scale_b ? &msb : nullptr, static_cast<int>(layout), out_code(out_dtype),
                                    grad_enabled(), family_of(a), host_sizes ? host.data() : nullptr, &facts);
  if (!v.ok()) reject(v);
  if (allocate) *out = at::empty({a.size(0), facts.n[0]}, a.options().dtype(scalar_type(facts.out)));
  if (meta) return;
  c10::cuda::CUDAGuard guard(a.device());
  check_device(facts.dtype);
  Work work;
  std::vector<int32_t> routes;
  at::Tensor sa = scale_a ? *scale_a : at::Tensor(), sb = scale_b ? *scale_b : at::Tensor();
  if (!sizes.is_cpu()) {
    run_packed_on_device(a, b, sizes, *out, sa, sb, facts, work, &routes);
  } else {  // sizes known on the host: run it as the list of its groups (empty experts cost nothing)
    ListGroups groups;
    int64_t row = 0;
    for (size_t g = 0; g < host.size(); ++g) {
      const int64_t m = host[g];
      groups.a.push_back(a.narrow(0, row, m));
      groups.b.push_back(b[g]);
      groups.c.push_back(out->narrow(0, row, m));
      if (facts.recipe != Recipe::None) {
        groups.sa.push_back(facts.recipe == Recipe::Tensor ? sa : sa.narrow(0, row, m));
        groups.sb.push_back(sb[g]);
      }
      row += m;
    }
    CallFacts per_group = facts;
    per_group.m = host;
    per_group.n.assign(host.size(), facts.n[0]);
    per_group.k.assign(host.size(), facts.k[0]);
    routes = run_list_groups(groups, per_group, work);
  }
  record(op, facts, std::move(routes));
}

void list_impl(int op, at::TensorList a, at::TensorList b, std::vector<at::Tensor>& c, bool allocate,
               at::TensorList scale_a, at::TensorList scale_b, int64_t scales_given, int64_t layout,
               std::optional<at::ScalarType> out_dtype, bool meta) {
  const bool addr = !meta;
  const std::vector<TensorMeta> ma = metas_of(a, addr), mb = metas_of(b, addr), mc = metas_of(c, addr),
                                msa = metas_of(scale_a, addr), msb = metas_of(scale_b, addr);
  CallFacts facts;
  const Verdict v = validate_list(ma.data(), static_cast<int>(ma.size()), mb.data(), static_cast<int>(mb.size()),
                                  mc.data(), allocate ? -1 : static_cast<int>(mc.size()), msa.data(),
                                  static_cast<int>(msa.size()), msb.data(), static_cast<int>(msb.size()),
                                  static_cast<int>(scales_given), static_cast<int>(layout), out_code(out_dtype),
                                  grad_enabled(), a.empty() ? Family::Other : family_of(a[0]), &facts);
  if (!v.ok()) reject(v);
  if (allocate) {
    for (size_t g = 0; g < a.size(); ++g)
      c.push_back(at::empty({facts.m[g], facts.n[g]}, a[g].options().dtype(scalar_type(facts.out))));
  }
  if (meta) return;
  c10::cuda::CUDAGuard guard(a[0].device());
  check_device(facts.dtype);
  ListGroups groups{std::vector<at::Tensor>(a.begin(), a.end()), std::vector<at::Tensor>(b.begin(), b.end()), c,
                    facts.recipe == Recipe::None ? std::vector<at::Tensor>() : std::vector<at::Tensor>(scale_a.begin(), scale_a.end()),
                    facts.recipe == Recipe::None ? std::vector<at::Tensor>() : std::vector<at::Tensor>(scale_b.begin(), scale_b.end())};
  Work work;
  record(op, facts, run_list_groups(groups, facts, work));
}

}  // namespace

const LastReport& last_report() { return g_last; }

template <bool Meta>
std::vector<at::Tensor> gemm_list(at::TensorList a, at::TensorList b, at::TensorList scale_a, at::TensorList scale_b,
                                  int64_t scales_given, int64_t layout, std::optional<at::ScalarType> out_dtype) {
  std::vector<at::Tensor> c;
  list_impl(0, a, b, c, true, scale_a, scale_b, scales_given, layout, out_dtype, Meta);
  return c;
}

template <bool Meta>
void gemm_list_out(at::TensorList a, at::TensorList b, at::TensorList c, at::TensorList scale_a,
                   at::TensorList scale_b, int64_t scales_given, int64_t layout,
                   std::optional<at::ScalarType> out_dtype) {
  std::vector<at::Tensor> outs(c.begin(), c.end());
  list_impl(1, a, b, outs, false, scale_a, scale_b, scales_given, layout, out_dtype, Meta);
}

template <bool Meta>
at::Tensor gemm_packed(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes,
                       const std::optional<at::Tensor>& scale_a, const std::optional<at::Tensor>& scale_b,
                       int64_t layout, std::optional<at::ScalarType> out_dtype) {
  at::Tensor out;
  packed_impl(2, a, b, group_sizes, &out, true, scale_a, scale_b, layout, out_dtype, Meta);
  return out;
}

template <bool Meta>
void gemm_packed_out(const at::Tensor& a, const at::Tensor& b, const at::Tensor& group_sizes, const at::Tensor& out,
                     const std::optional<at::Tensor>& scale_a, const std::optional<at::Tensor>& scale_b,
                     int64_t layout, std::optional<at::ScalarType> out_dtype) {
  at::Tensor o = out;
  packed_impl(3, a, b, group_sizes, &o, false, scale_a, scale_b, layout, out_dtype, Meta);
}

template std::vector<at::Tensor> gemm_list<false>(at::TensorList, at::TensorList, at::TensorList, at::TensorList,
                                                  int64_t, int64_t, std::optional<at::ScalarType>);
template std::vector<at::Tensor> gemm_list<true>(at::TensorList, at::TensorList, at::TensorList, at::TensorList,
                                                 int64_t, int64_t, std::optional<at::ScalarType>);
template void gemm_list_out<false>(at::TensorList, at::TensorList, at::TensorList, at::TensorList, at::TensorList,
                                   int64_t, int64_t, std::optional<at::ScalarType>);
template void gemm_list_out<true>(at::TensorList, at::TensorList, at::TensorList, at::TensorList, at::TensorList,
                                  int64_t, int64_t, std::optional<at::ScalarType>);
template at::Tensor gemm_packed<false>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, int64_t,
                                       std::optional<at::ScalarType>);
template at::Tensor gemm_packed<true>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, int64_t,
                                      std::optional<at::ScalarType>);
template void gemm_packed_out<false>(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, int64_t,
                                     std::optional<at::ScalarType>);
template void gemm_packed_out<true>(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, int64_t,
                                    std::optional<at::ScalarType>);

at::Tensor transpose_b_meta(const at::Tensor& b) {
  std::vector<int64_t> shape(b.sizes().begin(), b.sizes().end());
  TORCH_CHECK(shape.size() >= 2, "ckgemm::transpose_b: b must be 2-D or 3-D");
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return at::empty(shape, b.options());
}

at::Tensor transpose_b(const at::Tensor& b) {
  CKGEMM_CHECK(b.is_cuda() && b.dim() >= 2 && b.dim() <= 3 && (b.size(-1) <= 1 || b.stride(-1) == 1),
               "ckgemm::transpose_b: b must be a 2-D or 3-D GPU tensor with innermost stride 1, got ", dims(b.sizes()),
               " stride ", dims(b.strides()));
  c10::cuda::CUDAGuard guard(b.device());
  std::vector<int64_t> shape(b.sizes().begin(), b.sizes().end());
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  at::Tensor out = at::empty(shape, b.options());
  if (out.numel() == 0) return out;
  Work work;
  const int64_t batch = b.dim() == 3 ? b.size(0) : 1;
  const int64_t rows = b.size(-1), cols = b.size(-2);  // destination [N, K] from source [K, N]
  work.copy(CopyJob{static_cast<const char*>(b.data_ptr()), static_cast<char*>(out.data_ptr()), rows, cols,
                    leading_dim(b), cols, rows, cols, batch, b.dim() == 3 ? b.stride(0) : 0, rows * cols, 1,
                    static_cast<int32_t>(b.element_size())});
  work.flush_copies();
  return out;
}

void set_num_sms(int64_t n) {
  CKGEMM_CHECK(n >= 0, "ckgemm.set_num_sms: n must be >= 0 (0: every SM), got ", n);
  g_num_sms.store(n, std::memory_order_relaxed);
}

int64_t num_sms() { return g_num_sms.load(std::memory_order_relaxed); }

int call_sms() {
  const int device = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t n = num_sms();
  return n > 0 && n < device ? static_cast<int>(n) : device;
}

}  // namespace ckgemm
