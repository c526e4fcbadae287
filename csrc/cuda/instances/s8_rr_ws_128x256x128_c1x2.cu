// ckgemm's own int8 RR kernel, one row of csrc/cuda/instances.inc (its own translation unit, as every instance).
// The name is its 128 x 256 tile; calls averaging more than 64 rows a group run 256 x 128 (ws_s8_rr_rules.h).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(s8_rr_ws_128x256x128_c1x2)
