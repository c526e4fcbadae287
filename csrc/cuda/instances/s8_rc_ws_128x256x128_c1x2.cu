// ckgemm's own kernel, int8 to int32 on its 256-wide tile (the decode tile, rules.cpp), one row of
// csrc/cuda/instances.inc (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(s8_rc_ws_128x256x128_c1x2)
