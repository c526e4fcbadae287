// One CK-tile instance per translation unit, so they build in parallel (ck_kernel.hpp).
#include "../ck_kernel.hpp"

CKGEMM_DEFINE_INSTANCE(I8, BF16, RC, Row, Padded)
