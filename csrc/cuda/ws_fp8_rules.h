// What ckgemm's own fp8 grouped kernel (ws_fp8.cuh) takes, in plain C++: the one statement of its rule,
// read by the router (rules.cpp, through instance_rejects_packed) and by the benchmark's C entry
// (benchmarks/native/ws_fp8_capi.cu). Packed RC calls only: e4m3 A [rows, k] and B [groups, n, k] through
// TMA (16-byte aligned bases, leading dimensions and B's group stride; k % 16 == 0), at most kMaxGroups
// groups, 32-bit sizes; C of any leading dimension, aligned to its element.
#pragma once

#include <cstdint>
#include <string>

#include "ws_fp8_schedule.h"

namespace ckgemm::ws {

struct Extent {
  const void* a;
  const void* b;
  const void* c;
  int64_t groups, rows, n, k, lda, ldb, b_group_stride;  // elements (one byte each)
  int out_bytes;
};

// Why the kernel cannot take this call ("" when it can).
inline std::string rejects(const Extent& e) {
  auto aligned = [](const void* ptr, int to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (e.groups < 1 || e.groups > kMaxGroups) return "takes 1 to " + std::to_string(kMaxGroups) + " groups";
  if (e.rows >= (int64_t{1} << 31) || e.n >= (int64_t{1} << 31) || e.k >= (int64_t{1} << 31))
    return "a dimension exceeds 2^31-1";
  if (e.k % 16 != 0 || e.lda % 16 != 0 || e.ldb % 16 != 0 || (e.groups > 1 && e.b_group_stride % 16 != 0))
    return "TMA needs K, lda, ldb and B's group stride to be multiples of 16 bytes";
  if (!aligned(e.a, 16) || !aligned(e.b, 16)) return "TMA needs 16-byte aligned A and B";
  if (!aligned(e.c, e.out_bytes)) return "C is not aligned to its element";
  return "";
}

}  // namespace ckgemm::ws
