// What ckgemm's own 8-bit RR grouped kernels (ws_s8_rr_rs.cuh, int8 and e4m3, the one the op launches; the experiments
// ws_s8_rr.cuh, ws_s8_rr_tma.cuh) take, in plain C++: the one statement of their rule, read by the router
// (rules.cpp, through instance_rejects_packed), by their launch (ws_s8_rr_launch.cuh) and by the benchmark's C
// entry. Packed calls only: int8 A [rows, k] through TMA (16-byte aligned base and leading dimension), B [groups,
// k, n] row-major read 16 bytes at a time along N, by TMA or the threads (N, ldb and B's group stride multiples of
// 16, a 16-byte aligned base), at most kMaxGroups groups, int32 C of any leading dimension aligned to its element.
// The op routes every packed unscaled int8 RR call this rule admits to the kernel: the register-operand form runs
// at the RC kernel's speed (0.93-1.05x RC with rs_block_m's tile on an H100, docs/PERF_2026-12-06.md), where the
// per-call transpose costs 1.2-2.9x.
// Packed unscaled e4m3 RR calls (fp32 out) take the same rule (rules.cpp): the register-operand form on e4m3, its
// 128 x 256 tile, bit-equal to RC and 0.98-1.04x RC's time on DeepSeek-V3 prefill, 0.95x on its decode (H100,
// graph replay, docs/PERF_2026-12-06g.md), where the per-call transpose cost 1.31x and 2.8x (06f).
#pragma once

#include <cstdint>
#include <string>

#include "../ckgemm.h"
#include "ws_fp8_schedule.h"

namespace ckgemm::ws::s8 {

// Which kernel the launch takes is the build switch CKGEMM_S8_FORM: 2 the register-operand form (ws_s8_rr_rs.cuh,
// the default: a ring of kRsStages steps, A and raw B), 1 the TMA form (ws_s8_rr_tma.cuh: a ring In of kIn steps,
// A and raw B, and a ring Bt of kBt transposed B tiles, 128 x 256 tiles; 1.4-1.5x RC on prefill,
// docs/PERF_2026-12-05f.md), 0 the register form (ws_s8_rr.cuh, a ring of kStages, 128 x 256 tiles; 2.7x RC on
// prefill, docs/PERF_2026-12-05e.md). Forms 0 and 1 are kept as the experiments those records measured.
#ifndef CKGEMM_S8_FORM
#define CKGEMM_S8_FORM 2
#endif
#ifndef CKGEMM_S8_TMA_IN
#define CKGEMM_S8_TMA_IN 2
#endif
#ifndef CKGEMM_S8_TMA_BT
#define CKGEMM_S8_TMA_BT 3
#endif
// The register-operand form's tile: 0 (default) by rs_block_m below, 128 or 256 forced (the benchmark's builds).
#ifndef CKGEMM_S8_RS_BM
#define CKGEMM_S8_RS_BM 0
#endif
static_assert(CKGEMM_S8_FORM >= 0 && CKGEMM_S8_FORM <= 2, "CKGEMM_S8_FORM: 0, 1 or 2");
static_assert(CKGEMM_S8_RS_BM == 0 || CKGEMM_S8_RS_BM == 128 || CKGEMM_S8_RS_BM == 256, "CKGEMM_S8_RS_BM: 0, 128 or 256");
constexpr int kTileN = 256, kStages = 4, kIn = CKGEMM_S8_TMA_IN, kBt = CKGEMM_S8_TMA_BT, kRsStages = 4;
constexpr int kLaunchedStages = CKGEMM_S8_FORM == 2 ? kRsStages : CKGEMM_S8_FORM == 1 ? kIn : kStages;  // what the op reports (stages.cu)

// The register-operand form's tile rows for a call: 256 (tiles of 256 x 128) where groups average more than
// kRsNarrowRows rows, else 128 (128 x 256). The 256-row tile issues twice the MMAs per byte of B, all of them
// whatever rows a group has, so on few rows a group the tensor cores pace it; with rows enough its shared-memory
// traffic is RC's. On an H100, the 256-row tile against the 128-row one, in RC's time: 16 rows a group
// (DeepSeek-V3 decode) 1.18x against 0.94x; 128 rows 0.93x against 1.01x; 1024 rows 0.94x against 0.98x; 2048
// rows 1.05x against 1.08x (docs/PERF_2026-12-06.md). The bound lies between the measured points 16 and 128.
constexpr int64_t kRsNarrowRows = 64;
inline int rs_block_m(const PackedArgs& e) {
  if (CKGEMM_S8_RS_BM != 0) return CKGEMM_S8_RS_BM;
  return e.rows > kRsNarrowRows * e.groups ? 256 : 128;
}

inline std::string rejects(const PackedArgs& e) {
  auto aligned = [](const void* ptr, int to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (e.groups < 1 || e.groups > kMaxGroups) return "takes 1 to " + std::to_string(kMaxGroups) + " groups";
  constexpr int64_t kIntMax = 2147483647;  // rows, N and K rounded up to whole tiles (256 rows at most) in int
  if (e.rows > kIntMax - 2 * kBlockM || e.n > kIntMax - 2 * kMaxTileN || e.k > kIntMax - kBlockK)
    return "a dimension is within a tile of 2^31";
  if (e.k % 16 != 0 || e.lda % 16 != 0 || !aligned(e.a, 16)) return "TMA needs K, lda and A's base 16-byte aligned";
  if (e.n % 16 != 0 || e.ldb % 16 != 0 || (e.groups > 1 && e.b_group_stride % 16 != 0) || !aligned(e.b, 16))
    return "B is read 16 bytes at a time along N: N, ldb, B's group stride and base must be 16-byte aligned";
  if (!aligned(e.c, 4)) return "C is not aligned to its element";
  return "";
}

}  // namespace ckgemm::ws::s8
