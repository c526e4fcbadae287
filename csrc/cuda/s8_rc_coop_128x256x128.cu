// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): int8_t -> int32_t, accumulate int32_t, B ColumnMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(s8_rc_coop_128x256x128, GroupedGemmKernel<int8_t, int32_t, int32_t, ::cutlass::layout::ColumnMajor,
                                                   Shape<_128, _256, _128>, Shape<_1, _2, _1>, Cooperative>)
