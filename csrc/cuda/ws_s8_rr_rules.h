// What ckgemm's own int8 RR grouped kernels (ws_s8_rr.cuh, ws_s8_rr_tma.cuh) take, in plain C++: the one
// statement of their rule, read by the router (rules.cpp, through instance_rejects_packed, on branch
// wip/s8-rr-op), by their launch (ws_s8_rr_launch.cuh) and by the benchmark's C entry. Packed calls only: int8
// A [rows, k] through TMA (16-byte aligned base and leading dimension), B [groups, k, n] row-major read 16 bytes
// at a time along N, by the threads or by TMA (N, ldb and B's group stride multiples of 16, a 16-byte aligned
// base), at most kMaxGroups groups, int32 C of any leading dimension aligned to its element.
#pragma once

#include <cstdint>
#include <string>

#include "../ckgemm.h"
#include "ws_fp8_schedule.h"

namespace ckgemm::ws::s8 {

// The tile: 128 rows (kBlockM) x 256 columns, 128 deep (kBlockK), in a ring of four stages of shared memory.
constexpr int kTileN = 256, kStages = 4;


inline std::string rejects(const PackedArgs& e) {
  auto aligned = [](const void* ptr, int to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (e.groups < 1 || e.groups > kMaxGroups) return "takes 1 to " + std::to_string(kMaxGroups) + " groups";
  constexpr int64_t kIntMax = 2147483647;
  if (e.rows > kIntMax - kBlockM || e.n > kIntMax - 2 * kMaxTileN || e.k > kIntMax - kBlockK)
    return "a dimension is within a tile of 2^31";
  if (e.k % 16 != 0 || e.lda % 16 != 0 || !aligned(e.a, 16)) return "TMA needs K, lda and A's base 16-byte aligned";
  if (e.n % 16 != 0 || e.ldb % 16 != 0 || (e.groups > 1 && e.b_group_stride % 16 != 0) || !aligned(e.b, 16))
    return "B is read 16 bytes at a time along N: N, ldb, B's group stride and base must be 16-byte aligned";
  if (!aligned(e.c, 4)) return "C is not aligned to its element";
  return "";
}

}  // namespace ckgemm::ws::s8
