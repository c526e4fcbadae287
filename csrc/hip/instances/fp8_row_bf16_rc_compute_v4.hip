// One CK-tile instance per translation unit, so they build in parallel (ck_kernel.hpp).
#include "../ck_kernel.hpp"

CKGEMM_DEFINE_INSTANCE(FP8_E4M3_FNUZ, BF16, RC, Row, ComputeV4)
