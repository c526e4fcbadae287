// What ckgemm's own int8 RR grouped kernels (ws_s8_rr.cuh, ws_s8_rr_tma.cuh) take, in plain C++: the one
// statement of their rule, read by the router (rules.cpp, through instance_rejects_packed, with the speed rule
// slower_than_transpose below), by their launch (ws_s8_rr_launch.cuh) and by the benchmark's C entry. Packed calls only: int8
// A [rows, k] through TMA (16-byte aligned base and leading dimension), B [groups, k, n] row-major read 16 bytes
// at a time along N, by the threads or by TMA (N, ldb and B's group stride multiples of 16, a 16-byte aligned
// base), at most kMaxGroups groups, int32 C of any leading dimension aligned to its element.
#pragma once

#include <cstdint>
#include <string>

#include "../ckgemm.h"
#include "ws_fp8_schedule.h"

namespace ckgemm::ws::s8 {

// The tile: 128 rows (kBlockM) x 256 columns, 128 deep (kBlockK). Which kernel the launch takes is the build switch
// CKGEMM_S8_FORM: 0 the register form (ws_s8_rr.cuh, a ring of kStages), 1 the TMA form (ws_s8_rr_tma.cuh, the
// default: a ring In of kIn steps, A and raw B, and a ring Bt of kBt transposed B tiles; In 2 / Bt 3 beat In 3 /
// Bt 2 on three of four cases on an H100, docs/PERF_2026-12-05f.md), 2 the register-operand form
// (ws_s8_rr_rs.cuh, a ring of kRsStages steps, A and raw B) with tiles of CKGEMM_S8_RS_BM rows (128: 128 x 256,
// 256: 256 x 128).
#ifndef CKGEMM_S8_FORM
#define CKGEMM_S8_FORM 1
#endif
#ifndef CKGEMM_S8_TMA_IN
#define CKGEMM_S8_TMA_IN 2
#endif
#ifndef CKGEMM_S8_TMA_BT
#define CKGEMM_S8_TMA_BT 3
#endif
#ifndef CKGEMM_S8_RS_BM
#define CKGEMM_S8_RS_BM 128
#endif
static_assert(CKGEMM_S8_FORM >= 0 && CKGEMM_S8_FORM <= 2, "CKGEMM_S8_FORM: 0, 1 or 2");
constexpr int kTileN = 256, kStages = 4, kIn = CKGEMM_S8_TMA_IN, kBt = CKGEMM_S8_TMA_BT, kRsStages = 4;
// The launched kernel's tile: rows (M-blocks of the schedule) and columns.
constexpr int kLaunchedBlockM = CKGEMM_S8_FORM == 2 ? CKGEMM_S8_RS_BM : kBlockM;
constexpr int kLaunchedTileN = CKGEMM_S8_FORM == 2 ? 128 * (256 / CKGEMM_S8_RS_BM) : kTileN;
constexpr int kLaunchedStages = CKGEMM_S8_FORM == 2 ? kRsStages : CKGEMM_S8_FORM == 1 ? kIn : kStages;  // what the op reports (stages.cu)

// Where the op takes the kernel (rules.cpp): calls averaging at most kMaxRowsPerGroup rows a group. Above that
// the op's per-call transpose and RC kernel are faster: the kernel runs compute-bound shapes at about 1.4x the RC
// kernel's time, and the transpose costs a fixed time per weight byte, which fewer rows a group amortize worse.
// On an H100: 128 rows a group 1.08x RC against 2.58x per call, 1024 rows (DeepSeek-V3 prefill) 1.39x against
// 1.44x, 2048 rows (Mixtral prefill) 1.45x against 1.21x; on the H200 the transpose is relatively cheaper
// (per call 1.30x at 1024 rows), hence the bound below 1024.
constexpr int64_t kMaxRowsPerGroup = 768;

inline std::string slower_than_transpose(const PackedArgs& e) {
  if (e.rows > kMaxRowsPerGroup * e.groups)
    return "more than " + std::to_string(kMaxRowsPerGroup) +
           " rows a group on average: the per-call transpose and the RC kernel are faster";
  return "";
}


inline std::string rejects(const PackedArgs& e) {
  auto aligned = [](const void* ptr, int to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (e.groups < 1 || e.groups > kMaxGroups) return "takes 1 to " + std::to_string(kMaxGroups) + " groups";
  constexpr int64_t kIntMax = 2147483647;
  if (e.rows > kIntMax - 2 * kBlockM || e.n > kIntMax - 2 * kMaxTileN || e.k > kIntMax - kBlockK)
    return "a dimension is within a tile of 2^31";
  if (e.k % 16 != 0 || e.lda % 16 != 0 || !aligned(e.a, 16)) return "TMA needs K, lda and A's base 16-byte aligned";
  if (e.n % 16 != 0 || e.ldb % 16 != 0 || (e.groups > 1 && e.b_group_stride % 16 != 0) || !aligned(e.b, 16))
    return "B is read 16 bytes at a time along N: N, ldb, B's group stride and base must be 16-byte aligned";
  if (!aligned(e.c, 4)) return "C is not aligned to its element";
  return "";
}

}  // namespace ckgemm::ws::s8
