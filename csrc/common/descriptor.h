// Sanity of the descriptors a backend is handed, shared by every backend and the router: a malformed
// descriptor (negative size, null pointer, leading dimension below the row) never reaches a kernel.
// Plain C++: unit-tested with g++ on a machine without a GPU.
#pragma once

#include <string>

#include "../ckgemm.h"

namespace ckgemm {

// Why a descriptor is malformed (empty string when it is fine).
inline std::string descriptor_error(const GroupDesc& g, Layout layout, Scaling scaling = Scaling::None) {
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
  if (scaling != Scaling::None && (g.sa == nullptr || g.sb == nullptr)) return "null scale pointer";
  return "";
}

// Bytes a row-major view of rows x cols with leading dimension ld spans.
inline int64_t view_bytes(int64_t rows, int64_t cols, int64_t ld, int elem_bytes) {
  return rows <= 0 || cols <= 0 ? 0 : ((rows - 1) * ld + cols) * elem_bytes;
}

// A group as large as any group of a packed call can be (all rows): checking it checks them all.
inline GroupDesc packed_envelope(const PackedArgs& p) {
  return GroupDesc{p.a, p.b, p.c, p.rows, p.n, p.k, p.lda, p.ldb, p.ldc, p.sa, p.sb};
}

// descriptor_error for the packed form: the envelope as a list-form group, plus what only the packed
// form has (the group sizes, and B's groups, which are separate matrices and must not overlap).
inline std::string packed_descriptor_error(const PackedArgs& p, Layout layout, int elem_bytes,
                                           Scaling scaling = Scaling::None) {
  if (p.groups < 0) return "negative group count";
  if (p.groups > 0 && p.group_sizes == nullptr) return "null group_sizes";
  const std::string err = descriptor_error(packed_envelope(p), layout, scaling);
  if (!err.empty() || p.rows == 0 || p.n == 0 || p.k == 0) return err;
  const int64_t b_rows = layout == Layout::RC ? p.n : p.k, b_cols = layout == Layout::RC ? p.k : p.n;
  if (p.groups > 1 && p.b_group_stride * elem_bytes < view_bytes(b_rows, b_cols, p.ldb, elem_bytes))
    return "b_group_stride smaller than one B";
  return "";
}

// Fills a RunReport's message (truncated to its buffer).
inline void report_message(RunReport* report, int group, const std::string& text) {
  if (report == nullptr) return;
  report->group = group;
  const size_t n = text.size() < sizeof(report->message) - 1 ? text.size() : sizeof(report->message) - 1;
  for (size_t i = 0; i < n; ++i) report->message[i] = text[i];
  report->message[n] = '\0';
}

}  // namespace ckgemm
