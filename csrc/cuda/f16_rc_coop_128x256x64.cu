// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): half_t -> half_t, accumulate float, B ColumnMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(f16_rc_coop_128x256x64, GroupedGemmKernel<::cutlass::half_t, ::cutlass::half_t, float, ::cutlass::layout::ColumnMajor,
                                                   Shape<_128, _256, _64>, Shape<_1, _2, _1>, Cooperative>)
