// ckgemm's own int8 RR kernel, one row of csrc/cuda/instances.inc (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(s8_rr_ws_128x256x128_c1x2)
