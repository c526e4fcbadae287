// torch-facing entry of the fused GPU verifier (csrc/common/verify.cuh): compares out with ref on the
// device and returns a small float64 statistics tensor (layout in ckgemm/testing/verify.py).
#pragma once

#include <ATen/ATen.h>

namespace ckgemm {
at::Tensor verify_stats(const at::Tensor& out, const at::Tensor& ref, double rtol, double atol);
}
