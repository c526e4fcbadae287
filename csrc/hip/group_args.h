// The per-group argument record the CK-tile persistent kernel reads from device memory.
//
// ckgemm owns this layout (not CK's GemmTransKernelArg, whose layout changes between CK
// generations and even within G3): both forms write it on the device (runner.hip: the list forms
// through build_list_groups, descriptors passed by value; the packed (MoE) form through
// build_packed_groups) and the kernel turns it into CK's
// UniversalGemmKernelArgs in registers. Plain C++ when no HIP compiler is involved, so the host tests
// build it with g++.
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

// CK-tile indexes with 32-bit index_t; instance_rejects (rules.h) checks that every field fits
// before a group reaches a kernel, so the narrowing below never truncates.
struct GroupArgs {
  const void* a;
  const void* b;
  void* c;
  const float* sa;  // Scaling::Row: m row scales of A; unscaled instances never read it
  const float* sb;  // Scaling::Row: n column scales of C (B's rows for RC, columns for RR)
  int32_t m, n, k;
  int32_t lda, ldb, ldc;
};

CKGEMM_HOST_DEVICE inline GroupArgs pack_group(const GroupDesc& d) {
  GroupArgs g;
  g.a = d.a;
  g.b = d.b;
  g.c = d.c;
  g.sa = d.sa;
  g.sb = d.sb;
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
