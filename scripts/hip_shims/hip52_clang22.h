// Force-included (-include) by scripts/check_hip_compile.py when a clang >= 21 compiles against
// Debian's HIP 5.2 headers (libamdhip64-dev 5.2.3), for the gfx950 compile check only: a ROCm
// install pairs its own clang with its own HIP headers and never sees this file. clang 21 dropped
// two things those headers use:
//   * the __AMDGCN_WAVEFRONT_SIZE macro (hip/amd_detail/amd_warp_functions.h); gfx9 runs wave64;
//   * __llvm_amdgcn_rcp_f16 / __llvm_amdgcn_rcp_2f16, which clang <= 20 declared in
//     __clang_hip_libdevice_declares.h as 1/x (hip/amd_detail/amd_hip_fp16.h uses them).
#pragma once
#if defined(__clang_major__) && __clang_major__ >= 21
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE 64
#endif
typedef _Float16 __ckgemm_shim_2f16 __attribute__((ext_vector_type(2)));
__attribute__((device)) static inline _Float16 __llvm_amdgcn_rcp_f16(_Float16 x) { return ((_Float16)1.0f) / x; }
__attribute__((device)) static inline __ckgemm_shim_2f16 __llvm_amdgcn_rcp_2f16(__ckgemm_shim_2f16 x) {
  return ((__ckgemm_shim_2f16)1.0f) / x;
}
#endif
