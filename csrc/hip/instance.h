// What the host side knows about one compiled CK-tile kernel instance: its tile shape and alignment
// rules (read from the CK types in the instance's own translation unit) and three entry points.
// Plain C++, no HIP or CK headers: the registry, the runner and the host tests include only this.
#pragma once

#include "group_args.h"

namespace ckgemm {
namespace ck {

// The two tiles of every kind (ck_gemm.hpp defines them; docs/ROCM.md has the table).
enum class TileId : int32_t {
  ComputeV4 = 0,  // compute_v4_128x128x64: CompV4 double-LDS pipeline, no padding
  Padded = 1,     // padded_16x64x128: CompV3, kPadN + kPadK, any N and K (vector rules aside)
};

struct TileTraits {
  const char* name;            // e.g. "compute_v4_128x128x64"
  int m_tile, n_tile, k_tile;  // block tile
  int vec_a, vec_b, vec_c;     // vector widths in elements of the A/B loads and the C store
  bool pad_n, pad_k;           // N / K tails handled in-kernel (otherwise N, K must be tile multiples)
  bool double_lds;             // CompV4 ping-pong pipeline (see rules.h: compute_v4_loop_ok)
  int a_bytes, c_bytes;        // element sizes of A/B and of C
};

struct Instance {
  TileTraits traits;
  // CK's own UniversalGemmKernel::IsSupportedArgument for this group (host-side, no launch).
  bool (*ck_accepts)(const GroupArgs& group);
  // Resident blocks per CU of the persistent kernel on the current device; 0 when the query fails.
  int (*blocks_per_cu)();
  // Launches the persistent kernel over `count` device-resident GroupArgs with `grid` blocks on a
  // hipStream_t; returns the hipError_t of the launch (0 = hipSuccess).
  int (*launch)(const GroupArgs* device_args, int count, int grid, void* stream);
};

// Defined (explicitly instantiated) in csrc/hip/instances/*.hip, one per translation unit, listed in
// csrc/hip/instances.inc. fp8 instances are instantiated once, for DType::FP8_E4M3_FNUZ: the kernel
// code is the same for both fp8 flavours and the device's MFMA unit decides the encoding (the
// registry lists each under both fp8 kinds; arch_rules.h refuses the one a device does not decode).
template <DType D, OutType O, Layout L, Scaling S, TileId T>
const Instance* instance();

}  // namespace ck
}  // namespace ckgemm
