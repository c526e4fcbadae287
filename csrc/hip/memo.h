// A bounded, thread-safe memo of one instance's CK IsSupportedArgument answers, keyed by group shape.
// Why: CK-tile's IsSupportedArgument calls is_wave32(), which queries hipGetDeviceProperties on every
// call -- far more than the routing it takes part in (the router asks once per group and candidate
// instance, the runner once more). Its answer reads only M, N, K and k_batch (always 1 here), and
// cannot change within a process (every device the backend runs on is wave64: arch_rules.h), so one
// query per shape and instance is enough. Plain C++ (g++-tested).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace ckgemm {
namespace ck {

class ShapeMemo {
 public:
  static constexpr size_t kMaxShapes = 4096;  // then it starts over: a bound, not an eviction policy

  template <class Compute>
  bool get(int32_t m, int32_t n, int32_t k, Compute&& compute) {
    const Key key{m, n, k};
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = answers_.find(key);
    if (it != answers_.end()) return it->second;
    if (answers_.size() >= kMaxShapes) answers_.clear();
    const bool answer = compute();
    answers_.emplace(key, answer);
    return answer;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return answers_.size();
  }

 private:
  struct Key {
    int32_t m, n, k;
    bool operator==(const Key& o) const { return m == o.m && n == o.n && k == o.k; }
  };
  struct Hash {
    size_t operator()(const Key& s) const {
      const uint64_t mn = uint64_t(uint32_t(s.m)) << 32 | uint32_t(s.n);
      return static_cast<size_t>(mn * 0x9E3779B97F4A7C15ull ^ uint32_t(s.k));
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, bool, Hash> answers_;
};

}  // namespace ck
}  // namespace ckgemm
