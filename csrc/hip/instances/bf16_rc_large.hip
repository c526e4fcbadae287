// One CK-tile instance per translation unit, so they build in parallel (see ck_kernel.hpp).
#include "../ck_kernel.hpp"

template const ckgemm::ck::Instance*
ckgemm::ck::instance<ckgemm::DType::BF16, ckgemm::Layout::RC, ckgemm::Config::Large>();
