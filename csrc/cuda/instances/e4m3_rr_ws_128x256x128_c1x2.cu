// ckgemm's own fp8 RR kernel (unscaled e4m3 to fp32: ws_s8_rr_rs.cuh's register-operand form on e4m3, its 128 x 256
// tile), one row of csrc/cuda/instances.inc (its own translation unit, as every instance).
#include "../ws_instance.cuh"

CKGEMM_WS_INSTANCE(e4m3_rr_ws_128x256x128_c1x2)
