// ckgemm's own kernel, one row of csrc/cuda/instances.inc (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(f16_rc_ws_192x192x64_c1x2)
