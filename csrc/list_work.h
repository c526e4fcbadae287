// Executing routes (common/route.h) on torch tensors: the copies a route asks for (one repack launch
// for all of a call), zero fills, staged outputs, scratch, and the list forms' per-instance launches.
// Included by execute.cpp only; the launches themselves are csrc/launch.cu's.
#pragma once

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "ckgemm.h"
#include "common/message.h"
#include "common/repack.h"
#include "launch.h"
#include "common/route.h"
#include "common/validate.h"
#include "execute.h"
#include "torch_meta.h"

namespace ckgemm {

struct ListGroups {
  std::vector<at::Tensor> a, b, c, sa, sb;  // sa, sb empty when unscaled
};

// The temporaries and deferred work of one call.
struct Work {
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  int sms = call_sms();
  std::vector<at::Tensor> keep;  // alive until the call returns (stream-ordered reuse after that)
  std::vector<c10::DataPtr> raw;  // scratch, the same
  std::vector<CopyJob> jobs;
  std::vector<std::pair<at::Tensor, at::Tensor>> staged;  // (caller's output, the kernel's [:, :n] view)

  void check(int error, const char* what) {
    CKGEMM_CHECK(error == 0, "ckgemm (", backend_name(), "): ", what, ": ", launch_error_string(error));
  }

  void zero_fill(const at::Tensor& c, int64_t m, int64_t n) {
    check(launch_zero_fill(c.data_ptr(), leading_dim(c), m, n, static_cast<int>(c.element_size()), stream), "zero fill");
  }

  void copy(const CopyJob& job) { jobs.push_back(job); }

  void flush_copies() {
    for (size_t first = 0; first < jobs.size(); first += kRepackJobs) {
      RepackChunk chunk{};
      chunk.count = static_cast<int>(std::min<size_t>(kRepackJobs, jobs.size() - first));
      int64_t tiles = 0;
      for (int i = 0; i < chunk.count; ++i) {
        chunk.jobs[i] = jobs[first + i];
        chunk.first_tile[i] = tiles;
        tiles += repack_tiles(chunk.jobs[i]);
      }
      chunk.first_tile[chunk.count] = tiles;
      if (tiles == 0) continue;
      TORCH_CHECK(tiles < (int64_t(1) << 31), "ckgemm: a repack of more than 2^31 tiles; split the call");
      check(launch_repack(chunk, tiles, stream), "repack");
    }
    jobs.clear();
  }

  // Device scratch straight from the caching allocator (no tensor around it), on the current device and
  // stream; like `keep`, released when the call returns, stream-ordered.
  Buffers scratch(size_t bytes) {
    raw.push_back(at::cuda::getCUDADeviceAllocator()->allocate(bytes > 0 ? bytes : 1));
    return Buffers{raw.back().get(), bytes};
  }

  void finish_staged() {
    for (auto& [final_out, kernel_out] : staged) final_out.copy_(kernel_out);
    staged.clear();
  }

  // The descriptor after the route's copies: A into [M, Kp], B into RC [G x] [Np, Kp] (transposed from RR,
  // zero rows up to a staged N), C through a fresh [M, Np] of the kernel's output type; `groups` is 0 for
  // a 2-D b (list form) or the expert count of a packed call.
  GroupDesc apply_copies(const Route& r, const GroupDesc& given, const at::Tensor& a, const at::Tensor& b,
                         const at::Tensor& c, const at::Tensor& sb, int64_t groups) {
    GroupDesc d = given;
    const int32_t flags = route_flags(r.code);
    const int64_t m = given.m, n = given.n, k = given.k, kp = r.k_padded, np = r.n_padded;
    const int32_t es = static_cast<int32_t>(a.element_size());
    if (flags & kRepackA) {
      keep.push_back(at::empty({m, kp}, a.options()));
      copy(CopyJob{static_cast<const char*>(a.data_ptr()), static_cast<char*>(keep.back().data_ptr()), m, k,
                   given.lda, kp, m, kp, 1, 0, 0, 0, es});
      d.a = keep.back().data_ptr(), d.lda = kp;
    }
    if (flags & kRepackB) {
      const int64_t rows = (flags & kStageC) ? np : n;
      keep.push_back(groups ? at::empty({groups, rows, kp}, b.options()) : at::empty({rows, kp}, b.options()));
      copy(CopyJob{static_cast<const char*>(b.data_ptr()), static_cast<char*>(keep.back().data_ptr()), n, k,
                   given.ldb, kp, rows, kp, groups ? groups : 1, groups > 1 ? b.stride(0) : 0, rows * kp,
                   (flags & kTransposeB) ? 1 : 0, es});
      d.b = keep.back().data_ptr(), d.ldb = kp;
    }
    d.k = kp;
    if (flags & kStageC) {
      keep.push_back(at::empty({m, np}, c.options().dtype(scalar_type(r.kind.out))));
      staged.emplace_back(c, keep.back().narrow(1, 0, n));
      d.c = keep.back().data_ptr(), d.ldc = np, d.n = np;
      if (r.kind.scaling == Scaling::Row && np != n) {  // scales of the zero columns: zeros
        keep.push_back(groups ? at::zeros({groups, np}, sb.options()) : at::zeros({np}, sb.options()));
        keep.back().narrow(-1, 0, n).copy_(sb);
        d.sb = keep.back().data_ptr<float>();
      }
    }
    return d;
  }
};

inline Scaling scaling_of_recipe(Recipe r) {
  return r == Recipe::None ? Scaling::None : r == Recipe::Block ? Scaling::Block : Scaling::Row;
}

// Route and run the groups of a list-form call (or of a packed call whose sizes are on the host);
// returns one route code per group.
inline std::vector<int32_t> run_list_groups(ListGroups& groups, const CallFacts& facts, Work& work) {
  const Kind kind{facts.dtype, facts.out, facts.layout, scaling_of_recipe(facts.recipe)};
  const size_t count = groups.a.size();
  std::vector<int32_t> routes(count, route_code(kRouteEmpty));
  std::map<int, std::vector<GroupDesc>> per_instance;
  const auto rejects = [](int id, const GroupDesc& g) { return instance_rejects(id, g); };
  int64_t with_work = 0;  // groups with work: with N, the selection rule's estimate of the call's tiles
  for (size_t g = 0; g < count; ++g) with_work += facts.m[g] > 0 && facts.n[g] > 0 && facts.k[g] > 0;
  for (size_t g = 0; g < count; ++g) {
    const int64_t m = facts.m[g], n = facts.n[g], k = facts.k[g];
    if (m == 0 || n == 0) continue;
    const at::Tensor &a = groups.a[g], &b = groups.b[g], &c = groups.c[g];
    if (k == 0) {
      work.zero_fill(c, m, n);
      routes[g] = route_code(kRouteZeroK);
      continue;
    }
    at::Tensor sa, sb;
    int32_t expand = 0;
    if (kind.scaling != Scaling::None) {
      sa = groups.sa[g], sb = groups.sb[g];
      if (facts.recipe == Recipe::Tensor) {  // one scale per matrix -> one per row and per column
        sa = sa.reshape({1}).expand({m}).contiguous(), sb = sb.reshape({1}).expand({n}).contiguous();
        work.keep.push_back(sa), work.keep.push_back(sb);
        expand = route_code(0, 0, kExpandScales);
      }
    }
    const GroupDesc d{a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, leading_dim(a), leading_dim(b), leading_dim(c),
                      sa.defined() ? sa.data_ptr<float>() : nullptr, sb.defined() ? sb.data_ptr<float>() : nullptr};
    const Route r = route_group(kind, d, m, with_work, rejects);
    CKGEMM_CHECK(r.ok(), "[ckgemm-unsupported] ", backend_name(), " group ", g, ": ", r.why);
    routes[g] = r.code | expand;
    per_instance[route_instance(r.code)].push_back(work.apply_copies(r, d, a, b, c, sb, 0));
  }
  work.flush_copies();
  for (auto& [id, descs] : per_instance) {
    const int n = static_cast<int>(descs.size());
    RunReport report{0, -1, {0}};
    const Status st = run_list(id, descs.data(), n, work.scratch(list_buffer_bytes(id, n, work.sms)), work.stream,
                               work.sms, &report);
    CKGEMM_CHECK(st == Status::Ok, "ckgemm (", backend_name(), "): ", status_string(st),
                 report.group >= 0 ? " at routed group " + std::to_string(report.group) : std::string(), ": ",
                 report.message);
  }
  work.finish_staged();
  return routes;
}

}  // namespace ckgemm
