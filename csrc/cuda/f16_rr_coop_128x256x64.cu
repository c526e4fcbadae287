// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): half_t -> half_t, accumulate float, B RowMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(f16_rr_coop_128x256x64, GroupedGemmKernel<::cutlass::half_t, ::cutlass::half_t, float, ::cutlass::layout::RowMajor,
                                                   Shape<_128, _256, _64>, Shape<_1, _2, _1>, Cooperative>)
