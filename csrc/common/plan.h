// Host-side planning of a list-form call, shared by every backend: which groups are skipped
// (m == 0 or n == 0), which are zero-filled (k == 0), which are invalid, and which go to the
// kernel; kernel groups are further split by a backend predicate into those the chosen config
// supports and those it does not. Plain C++: unit-tested with g++ on a machine without a GPU.
#pragma once

#include <string>
#include <vector>

#include "../ckgemm.h"

namespace ckgemm {

struct ListPlan {
  std::vector<int> kernel;       // groups the configured kernel takes as they are
  std::vector<int> unsupported;  // groups it cannot take (backend reroutes or refuses)
  std::vector<int> zero_fill;    // k == 0 with m, n > 0: C is written with zeros
  std::vector<int> skipped;      // m == 0 or n == 0: nothing to write
  int invalid_group = -1;        // first group with a bad descriptor, or -1
  std::string invalid_reason;
};

// Why a descriptor is malformed (empty string when it is fine). Checked before anything else so a
// bad descriptor never reaches a kernel.
inline std::string descriptor_error(const GroupDesc& g, Layout layout) {
  if (g.m < 0 || g.n < 0 || g.k < 0) return "negative size";
  if (g.m == 0 || g.n == 0) return "";
  if (g.c == nullptr) return "null C pointer";
  if (g.ldc < g.n) return "ldc smaller than n";
  if (g.k == 0) return "";
  if (g.a == nullptr || g.b == nullptr) return "null A or B pointer";
  if (g.m > 1 && g.lda < g.k) return "lda smaller than k";
  const int64_t b_rows = layout == Layout::RC ? g.n : g.k;
  const int64_t b_cols = layout == Layout::RC ? g.k : g.n;
  if (b_rows > 1 && g.ldb < b_cols) return "ldb smaller than the stored row of B";
  return "";
}

// Bytes a row-major view of rows x cols with leading dimension ld spans.
inline int64_t view_bytes(int64_t rows, int64_t cols, int64_t ld, int elem_bytes) {
  return rows <= 0 || cols <= 0 ? 0 : ((rows - 1) * ld + cols) * elem_bytes;
}

// A group as large as any group of a packed call can be (all rows): checking it checks them all.
inline GroupDesc packed_envelope(const PackedArgs& p) {
  return GroupDesc{p.a, p.b, p.c, p.rows, p.n, p.k, p.lda, p.ldb, p.ldc};
}

// descriptor_error for the packed form: the envelope as a list-form group, plus what only the packed
// form has (the group sizes, and B's groups, which are separate matrices and must not overlap).
inline std::string packed_descriptor_error(const PackedArgs& p, Layout layout) {
  if (p.groups < 0) return "negative group count";
  if (p.groups > 0 && p.group_sizes == nullptr) return "null group_sizes";
  const std::string err = descriptor_error(packed_envelope(p), layout);
  if (!err.empty() || p.rows == 0 || p.n == 0 || p.k == 0) return err;
  const int64_t b_rows = layout == Layout::RC ? p.n : p.k, b_cols = layout == Layout::RC ? p.k : p.n;
  if (p.groups > 1 && p.b_group_stride < view_bytes(b_rows, b_cols, p.ldb, 1))
    return "b_group_stride smaller than one B";
  return "";
}

// supported(const GroupDesc&) -> bool says whether the chosen kernel config takes a group as is.
template <class Supported>
ListPlan plan_list(const GroupDesc* groups, int count, Layout layout, Supported&& supported) {
  ListPlan plan;
  for (int i = 0; i < count; ++i) {
    const GroupDesc& g = groups[i];
    std::string err = descriptor_error(g, layout);
    if (!err.empty()) {
      plan.invalid_group = i;
      plan.invalid_reason = err;
      return plan;
    }
    if (g.m == 0 || g.n == 0) {
      plan.skipped.push_back(i);
    } else if (g.k == 0) {
      plan.zero_fill.push_back(i);
    } else if (supported(g)) {
      plan.kernel.push_back(i);
    } else {
      plan.unsupported.push_back(i);
    }
  }
  return plan;
}

// Fills a RunReport's message without pulling in <cstdio> formatting at every call site.
inline void report_message(RunReport* report, int group, const std::string& text) {
  if (report == nullptr) return;
  report->group = group;
  const size_t n = text.size() < sizeof(report->message) - 1 ? text.size() : sizeof(report->message) - 1;
  for (size_t i = 0; i < n; ++i) report->message[i] = text[i];
  report->message[n] = '\0';
}

inline void report_counts(RunReport* report, const ListPlan& plan, int launched) {
  if (report == nullptr) return;
  report->launched_groups = launched;
  report->zero_filled = static_cast<int32_t>(plan.zero_fill.size());
  report->skipped = static_cast<int32_t>(plan.skipped.size());
}

}  // namespace ckgemm
