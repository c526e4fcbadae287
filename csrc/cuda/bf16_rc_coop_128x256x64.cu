// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): bfloat16_t -> bfloat16_t, accumulate float, B ColumnMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(bf16_rc_coop_128x256x64, GroupedGemmKernel<::cutlass::bfloat16_t, ::cutlass::bfloat16_t, float, ::cutlass::layout::ColumnMajor,
                                                   Shape<_128, _256, _64>, Shape<_1, _2, _1>, Cooperative>)
