// A minimal check harness for the host tests (no test framework on the CI machine): every check is
// counted, failures print file:line and the values, and main() prints the summary line that
// tests/test_host_plan.py parses.
#pragma once

#include <cstdio>
#include <string>

namespace host_test {

inline int& checks() { static int n = 0; return n; }
inline int& failures() { static int n = 0; return n; }

inline void record(bool ok, const char* file, int line, const std::string& what) {
  ++checks();
  if (ok) return;
  ++failures();
  std::fprintf(stderr, "%s:%d: %s\n", file, line, what.c_str());
}
inline std::string text(long long v) { return std::to_string(v); }
inline std::string text(const std::string& v) { return "\"" + v + "\""; }
template <class A, class B>
void check_eq(const A& a, const B& b, const char* expr, const char* file, int line) {
  record(a == b, file, line, std::string("CHECK_EQ failed: ") + expr + ": " + text(a) + " vs " + text(b));
}

}  // namespace host_test

#define CHECK(cond) host_test::record((cond), __FILE__, __LINE__, "CHECK failed: " #cond)
#define CHECK_EQ(a, b) host_test::check_eq((a), (b), #a " == " #b, __FILE__, __LINE__)
#define CHECK_HAS(haystack, needle)                                                                \
  do {                                                                                             \
    const std::string hay_ = (haystack);                                                           \
    host_test::record(hay_.find(needle) != std::string::npos, __FILE__, __LINE__,                  \
                      "\"" + hay_ + "\" lacks \"" + std::string(needle) + "\"");                   \
  } while (0)
