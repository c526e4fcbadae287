// What the host runner knows about one compiled CK-tile kernel instance: its tile shape and
// alignment rules (read from the CK types in the instance's own translation unit) and three entry
// points. Plain C++, no HIP or CK headers: the runner and the host tests include only this.
#pragma once

#include "group_args.h"

namespace ckgemm {
namespace ck {

struct TileTraits {
  const char* name;            // e.g. "compute_v4_256x256x32" (see docs/ROCM.md for the table)
  int m_tile, n_tile, k_tile;  // block tile
  int vec_a, vec_b, vec_c;     // vector widths in elements of the A/B loads and the C store
  bool pad_n, pad_k;           // N / K tails handled in-kernel (otherwise N, K must be tile multiples)
  bool double_lds;             // CompV4 ping-pong pipeline (see routing.h: compute_v4_loop_ok)
  int a_bytes, c_bytes;        // element sizes of A/B and of C
};

struct Instance {
  TileTraits traits;
  // CK's own UniversalGemmKernel::IsSupportedArgument for this group (host-side, no launch).
  bool (*ck_accepts)(const GroupArgs& group);
  // Resident blocks per CU for the persistent kernel on the current device; 0 when the query fails.
  int (*blocks_per_cu)();
  // Launches the persistent kernel over `count` device-resident GroupArgs with `grid` blocks on a
  // hipStream_t; returns the hipError_t of the launch (0 = hipSuccess).
  int (*launch)(const GroupArgs* device_args, int count, int grid, void* stream);
};

// Defined (explicitly instantiated) in csrc/hip/instances/<dtype>_<layout>_<config>.hip. The fp8
// instances are instantiated once, for DType::FP8_E4M3_FNUZ: the kernel code is the same for both
// fp8 flavours, and the MFMA unit of the device decides the encoding (see registry.cpp).
template <DType D, Layout L, Config C>
const Instance* instance();

// The instance compiled into this build for a problem, or nullptr (dtype dropped by CKGEMM_DTYPES).
const Instance* find_instance(DType dtype, Layout layout, Config config);

}  // namespace ck
}  // namespace ckgemm
