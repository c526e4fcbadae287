// One CK-tile instance per translation unit, so they build in parallel (ck_kernel.hpp).
#include "../ck_kernel.hpp"

CKGEMM_DEFINE_INSTANCE(F16, F16, RR, None, Padded)
