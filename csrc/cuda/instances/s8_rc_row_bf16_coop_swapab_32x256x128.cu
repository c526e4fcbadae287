// One CUTLASS instance of csrc/cuda/instances.inc per translation unit, so they build in parallel.
#include "../instance.cuh"

CKGEMM_CUDA_INSTANCE(s8_rc_row_bf16_coop_swapab_32x256x128)
