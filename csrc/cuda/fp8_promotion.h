// CKGEMM_FP8_PROMOTION, read once per process: unscaled and row-scaled fp8 two-level accumulation, {4, 8, 16}
// wgmma k-blocks between promotions of the tensor-core partial sums into the fp32 accumulator (CUTLASS's
// default, 4, is one 128-deep k-tile, cuBLAS's precision). Larger intervals drain the tensor pipe less often
// and sum longer in the tensor core's narrower accumulator. The CUTLASS instances apply it (instance.cuh);
// ckgemm's own kernel promotes every 4 only, so its rule (rules.cpp) refuses calls while another is set. (The
// block recipe promotes once per 128-wide scale block, always.) Plain C++.
#pragma once

#include <cstdlib>

namespace ckgemm {

inline unsigned fp8_promotion_interval() {
  static const unsigned value = [] {
    const char* e = std::getenv("CKGEMM_FP8_PROMOTION");
    const int v = e != nullptr ? std::atoi(e) : 4;
    return static_cast<unsigned>(v == 8 || v == 16 ? v : 4);
  }();
  return value;
}

}  // namespace ckgemm
