// ckgemm's own fp8 kernel with DeepGEMM's block scales on its 256-wide tile, one row of csrc/cuda/instances.inc
// (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(e4m3_rc_block_bf16_ws_128x256x128_c1x2)
