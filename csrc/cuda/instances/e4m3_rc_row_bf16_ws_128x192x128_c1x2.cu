// ckgemm's own fp8 kernel with per-token A and per-channel B scales (applied in the epilogue, bf16 out), one row
// of csrc/cuda/instances.inc (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(e4m3_rc_row_bf16_ws_128x192x128_c1x2)
