// What the native validator knows of a tensor (no torch types, so it is g++-testable), and the exact
// memory-overlap model of ckgemm/_overlap.py, ported rule for rule: rows of a view are byte intervals
// [base + r*stride, base + r*stride + width); two views overlap when some pair of rows does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ckgemm {

// Element types the validator tells apart (anything else is Other).
enum class MetaType : int32_t { F16 = 0, BF16 = 1, FP8_E4M3 = 2, FP8_E4M3_FNUZ = 3, I8 = 4, F32 = 5, I32 = 6, I64 = 7, Other = 8 };

struct DeviceId {
  int32_t type;   // 0 cpu, 1 cuda (CUDA or HIP), 2 anything else
  int32_t index;  // -1 when the tensor has no device index
};
inline bool operator==(DeviceId x, DeviceId y) { return x.type == y.type && x.index == y.index; }
inline bool operator!=(DeviceId x, DeviceId y) { return !(x == y); }

struct TensorMeta {
  int32_t ndim;
  int64_t sizes[4];
  int64_t strides[4];
  MetaType dtype;
  int32_t element_size;
  DeviceId device;
  uint64_t data;  // address of the first element
  bool requires_grad;
  bool inference_locked;  // an inference tensor outside inference mode: torch forbids writing it

  int64_t size(int d) const { return sizes[d < 0 ? d + ndim : d]; }
  int64_t stride(int d) const { return strides[d < 0 ? d + ndim : d]; }
  bool has_zero() const {
    for (int i = 0; i < ndim; ++i)
      if (sizes[i] == 0) return true;
    return false;
  }
  // torch's is_contiguous: strides of non-unit dimensions are the row-major ones.
  bool contiguous() const {
    if (has_zero()) return true;
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (sizes[i] != 1 && strides[i] != expected) return false;
      expected *= sizes[i];
    }
    return true;
  }
};

struct Rows {
  int name;  // index into the caller's list of tensors, reported back on an overlap
  uint64_t base;
  int64_t count, stride, width;
  uint64_t start() const { return base; }
  uint64_t end() const { return base + (count - 1) * stride + width; }
};

// Row models of a 0-D .. 3-D tensor with innermost stride 1, appended to `out`: none when it holds no element
// or has no memory (a meta tensor: address 0); one per group for a 3-D tensor whose batch stride is not its
// rows' (a slice of fused weights), so memory between its groups stays free for outputs (_overlap.spans_of).
inline void append_rows(const TensorMeta& t, int name, std::vector<Rows>* out) {
  if (t.has_zero() || t.data == 0) return;
  const int64_t es = t.element_size;
  if (t.ndim == 0) {
    out->push_back(Rows{name, t.data, 1, 0, es});
  } else if (t.ndim == 1) {
    out->push_back(Rows{name, t.data, 1, 0, t.sizes[0] * es});
  } else if (t.ndim == 3) {
    const int64_t groups = t.sizes[0], rows = t.sizes[1], width = t.sizes[2];
    const bool regular = groups == 1 || t.strides[0] == rows * t.strides[1];
    const int64_t count = regular ? groups * rows : rows;
    for (int64_t g = 0; g < (regular ? 1 : groups); ++g)
      out->push_back(Rows{name, t.data + static_cast<uint64_t>(g * t.strides[0] * es), count,
                          count > 1 ? t.strides[1] * es : 0, width * es});
  } else {
    const int64_t count = t.sizes[0];
    out->push_back(Rows{name, t.data, count, count > 1 ? t.strides[0] * es : 0, t.sizes[1] * es});
  }
}

namespace detail {
inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

inline bool overlap_equal_stride(const Rows& x, const Rows& y) {
  const int64_t s = x.stride;
  const int64_t d = static_cast<int64_t>(y.base - x.base);
  if (s == 0) return -y.width < d && d < x.width;
  const int64_t q_lo = floor_div(d - x.width, s) + 1;
  const int64_t q_hi = -floor_div(-(d + y.width), s) - 1;
  return std::max(q_lo, -(y.count - 1)) <= std::min(q_hi, x.count - 1);
}

inline bool overlap_scan(Rows x, Rows y) {
  if (x.count > y.count) std::swap(x, y);
  for (int64_t r = 0; r < x.count; ++r) {
    const int64_t lo = static_cast<int64_t>(x.base) + r * x.stride, hi = lo + x.width;
    if (y.count == 1 || y.stride == 0) {
      if (lo < static_cast<int64_t>(y.base) + y.width && hi > static_cast<int64_t>(y.base)) return true;
      continue;
    }
    const int64_t r_lo = floor_div(lo - y.width - static_cast<int64_t>(y.base), y.stride) + 1;
    const int64_t r_hi = -floor_div(-(hi - static_cast<int64_t>(y.base)), y.stride) - 1;
    if (std::max<int64_t>(r_lo, 0) <= std::min<int64_t>(r_hi, y.count - 1)) return true;
  }
  return false;
}
}  // namespace detail

inline bool rows_overlap(const Rows& x, const Rows& y) {
  if (x.end() <= y.start() || y.end() <= x.start()) return false;
  if (x.stride == y.stride) return detail::overlap_equal_stride(x, y);
  return detail::overlap_scan(x, y);
}

// First pair (output, other) whose memory intersects: output vs output or output vs input, found by a
// sweep over start addresses (as _overlap.first_overlap). Returns false when there is none.
inline bool first_overlap(const std::vector<Rows>& outputs, const std::vector<Rows>& inputs, int* out_name,
                          int* other_name) {
  std::vector<std::pair<Rows, bool>> spans;
  spans.reserve(outputs.size() + inputs.size());
  for (const Rows& r : outputs) spans.emplace_back(r, true);
  for (const Rows& r : inputs) spans.emplace_back(r, false);
  std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.first.start() < b.first.start(); });
  std::vector<std::pair<Rows, bool>> active;
  for (const auto& span : spans) {
    const Rows& rows = span.first;
    const bool is_out = span.second;
    const uint64_t start = rows.start();
    active.erase(std::remove_if(active.begin(), active.end(), [start](const auto& a) { return a.first.end() <= start; }),
                 active.end());
    for (const auto& [other, other_out] : active) {
      if ((is_out || other_out) && rows_overlap(rows, other)) {
        *out_name = is_out ? rows.name : other.name;
        *other_name = is_out ? other.name : rows.name;
        return true;
      }
    }
    active.emplace_back(rows, is_out);
  }
  return false;
}

// A 2-D view whose rows share memory (leading stride smaller than the row).
inline bool rows_self_overlap(const TensorMeta& t) {
  return t.ndim == 2 && t.sizes[0] > 1 && t.sizes[1] > 0 && t.strides[0] < t.sizes[1];
}

}  // namespace ckgemm
