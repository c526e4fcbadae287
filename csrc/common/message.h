// Error messages built without iostreams, and CKGEMM_CHECK, the native code's one way to raise a composed one.
//
// Why: TORCH_CHECK(cond, a, b, ...) formats through c10::str, an std::ostringstream instantiated in the calling
// translation unit; so does a single std::string message (c10's string shortcut never matches it). Only a
// single C string skips the stream. An extension that carries its own libstdc++ (libstdc++.a linked in) does
// not share the process's locale state, and the first number it streams goes wrong: on an H100 host whose
// CXX=/opt/gcc/bin/g++ links that way, every rejected call crashed in std::ostream::_M_insert<long>
// (2026-12-05, docs/PERF_2026-12-05c.md; cause found in docs/PERF_2026-12-05d.md). So every message is joined
// here with std::to_string and handed to TORCH_CHECK as a C string. The build now also probes the compiler and
// links the process's libstdc++.so.6 by name when it would not (build_support/toolchain.py); this file keeps
// ckgemm's own error paths safe where that cure is unavailable. Torch's inline code still formats numbers on
// some of its error paths (a bad device index in a CUDAGuard, say); a call the validator accepted does not
// reach them.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace ckgemm {

inline void append_to(std::string&) {}

// Strings (std::string, C strings, char arrays) and integers only: a char, a bool, a plain enum or a floating
// point value would print as something else than it reads, so they do not compile.
template <class T, class... Rest>
void append_to(std::string& s, const T& x, const Rest&... rest) {
  static_assert(!std::is_same_v<T, char> && !std::is_same_v<T, bool>, "message(): cast a char or bool to a string");
  if constexpr (std::is_integral_v<T>) {
    s += std::to_string(x);
  } else if constexpr (std::is_convertible_v<const T&, const char*>) {
    const char* p = x;
    s += p != nullptr ? p : "(null)";
  } else {
    static_assert(std::is_convertible_v<const T&, std::string_view>, "message(): strings and integers only");
    s += std::string_view(x);
  }
  append_to(s, rest...);
}

// The arguments joined into one string.
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

// TORCH_CHECK with a message of several parts, passed on as one C string (see above). The parts are evaluated only
// when the check fails, and the joined string lives until the exception has copied it.
#define CKGEMM_CHECK(cond, ...) TORCH_CHECK(cond, ::ckgemm::message(__VA_ARGS__).c_str())
