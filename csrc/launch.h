// The executor's kernel launches (csrc/launch.cu), as plain functions that return the launch's error
// and never throw: every torch error is raised by the host-compiled executor (execute.cpp).
#pragma once

#include <cstdint>

#include "ckgemm.h"
#include "common/repack.h"

namespace ckgemm {

// One launch of the repack kernel over `tiles` tiles of `chunk`'s jobs; returns a cudaError_t / hipError_t.
int launch_repack(const RepackChunk& chunk, int64_t tiles, void* stream);
// The device-side check of a packed call's group sizes when no GEMM runs (a bad size traps the kernel).
int launch_size_check(const PackedArgs& args, void* stream);
// C[m, n] (leading dimension ldc elements of `elem` bytes) = 0, as a 2-D memset.
int launch_zero_fill(void* c, int64_t ldc, int64_t m, int64_t n, int elem, void* stream);
const char* launch_error_string(int error);

}  // namespace ckgemm
