// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): bfloat16_t -> bfloat16_t, accumulate float, B ColumnMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(bf16_rc_pingpong_64x128x128, GroupedGemmKernel<::cutlass::bfloat16_t, ::cutlass::bfloat16_t, float, ::cutlass::layout::ColumnMajor,
                                                   Shape<_64, _128, _128>, Shape<_1, _1, _1>, PingpongDirectStore>)
