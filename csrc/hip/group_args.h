// The per-group argument record the CK-tile persistent kernel reads from device memory.
//
// ckgemm owns this layout (not CK's GemmTransKernelArg, whose layout changes between CK
// generations): the list forms pack it on the host, the packed (MoE) form writes it on the device
// through build_packed_groups, and the kernel turns it into CK's UniversalGemmKernelArgs in
// registers. Plain C++ when no HIP compiler is involved, so the host tests build it with g++.
#pragma once

#include <cstdint>

#include "../ckgemm.h"

#if defined(__HIPCC__)
#define CKGEMM_HOST_DEVICE __host__ __device__
#else
#define CKGEMM_HOST_DEVICE
#endif

namespace ckgemm {
namespace ck {

// CK-tile indexes with 32-bit index_t; the host checks that every field fits before packing
// (routing.h: tile_rejects / packed_rejects), so the narrowing below never truncates.
struct GroupArgs {
  const void* a;
  const void* b;
  void* c;
  int32_t m, n, k;
  int32_t lda, ldb, ldc;
};

CKGEMM_HOST_DEVICE inline GroupArgs pack_group(const GroupDesc& d) {
  GroupArgs g;
  g.a = d.a;
  g.b = d.b;
  g.c = d.c;
  g.m = static_cast<int32_t>(d.m);
  g.n = static_cast<int32_t>(d.n);
  g.k = static_cast<int32_t>(d.k);
  g.lda = static_cast<int32_t>(d.lda);
  g.ldb = static_cast<int32_t>(d.ldb);
  g.ldc = static_cast<int32_t>(d.ldc);
  return g;
}

}  // namespace ck
}  // namespace ckgemm
