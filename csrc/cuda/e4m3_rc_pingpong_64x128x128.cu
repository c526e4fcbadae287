// CUTLASS SM90 grouped GEMM instance (listed in instances.inc): float_e4m3_t -> float, accumulate float, B ColumnMajor.
#include "instance.cuh"

CKGEMM_CUDA_INSTANCE(e4m3_rc_pingpong_64x128x128, GroupedGemmKernel<::cutlass::float_e4m3_t, float, float, ::cutlass::layout::ColumnMajor,
                                                   Shape<_64, _128, _128>, Shape<_1, _1, _1>, PingpongDirectStore>)
