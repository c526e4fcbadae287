// The executor's kernel launches (launch.h). Portable CUDA (hipified for ROCm); nothing here throws.
#include <cuda_runtime.h>

#include "common/packed_args.cuh"
#include "common/repack.cuh"
#include "launch.h"

namespace ckgemm {

int launch_repack(const RepackChunk& chunk, int64_t tiles, void* stream) {
  repack_kernel<<<static_cast<unsigned>(tiles), kRepackThreads, 0, static_cast<cudaStream_t>(stream)>>>(chunk);
  return static_cast<int>(cudaGetLastError());
}

int launch_size_check(const PackedArgs& args, void* stream) {
  build_packed_groups<<<1, packed_builder_threads(args.groups), 0, static_cast<cudaStream_t>(stream)>>>(args, 1, 1, NullSink{});
  return static_cast<int>(cudaGetLastError());
}

int launch_zero_fill(void* c, int64_t ldc, int64_t m, int64_t n, int elem, void* stream) {
  return static_cast<int>(cudaMemset2DAsync(c, ldc * elem, 0, n * elem, m, static_cast<cudaStream_t>(stream)));
}

const char* launch_error_string(int error) { return cudaGetErrorString(static_cast<cudaError_t>(error)); }

}  // namespace ckgemm
