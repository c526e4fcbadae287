// Error messages built without iostreams. A TORCH_CHECK with several message arguments formats through c10::str's
// std::ostringstream, whose numeric inserters this extension may carry its own copies of: a compiler whose
// libstdc++ headers are newer than the runtime library emits them, and a link with -Bsymbolic-functions (the
// LDSHARED of Debian's and Ubuntu's Python) binds the extension to those copies, which then read the runtime
// library's locale facets. On an H100 host building with /opt/gcc that crashed every rejected call (2026-12-05,
// docs/PERF_2026-12-05c.md). So every message of the native code is one std::string, built here with
// std::to_string, which TORCH_CHECK passes through without a stream.
#pragma once

#include <string>
#include <type_traits>

namespace ckgemm {

inline void append_to(std::string&) {}

template <class T, class... Rest>
void append_to(std::string& s, const T& x, const Rest&... rest) {
  if constexpr (std::is_arithmetic_v<T>) s += std::to_string(x);
  else s += x;
  append_to(s, rest...);
}

// The arguments (strings, C strings, integers) joined into one string.
template <class... Args>
std::string message(const Args&... args) {
  std::string s;
  append_to(s, args...);
  return s;
}

// "[2, 3]": sizes or strides (any sequence of integers, e.g. c10::IntArrayRef) for a message.
template <class Seq>
std::string dims(const Seq& values) {
  std::string s = "[";
  for (auto it = values.begin(); it != values.end(); ++it) s += (it == values.begin() ? "" : ", ") + std::to_string(*it);
  return s + "]";
}

}  // namespace ckgemm
