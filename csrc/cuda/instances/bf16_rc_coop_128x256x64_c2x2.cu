// One CUTLASS instance of csrc/cuda/instances.inc per translation unit, so they build in parallel.
#include "../instance.cuh"

CKGEMM_CUDA_INSTANCE(bf16_rc_coop_128x256x64_c2x2)
