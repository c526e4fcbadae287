// One CUTLASS instance of csrc/cuda/instances.inc per translation unit, so they build in parallel.
#include "../instance.cuh"

CKGEMM_CUDA_INSTANCE(e4m3_rc_row_bf16_coop_128x192x128_c1x2)
