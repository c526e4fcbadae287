// One CUTLASS instance of csrc/cuda/instances.inc per translation unit, so they build in parallel.
#include "../instance.cuh"

CKGEMM_CUDA_INSTANCE(e4m3_rc_block_bf16_coop_blockwise_swapab_32x256x128)
