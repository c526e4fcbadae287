// torch op ckgemm::verify_stats: dispatches (out, ref) dtypes onto the fused verifier of verify.cuh.
// Only the 10-value float64 stats tensor is produced; nothing crosses to the host here.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "message.h"
#include "verify.cuh"
#include "verify_op.h"

namespace ckgemm {
namespace {

template <class T>
const T* typed(const at::Tensor& t) {
  return reinterpret_cast<const T*>(t.const_data_ptr());
}

template <class TOut>
void launch_for_ref(const at::Tensor& out, const at::Tensor& ref, double rtol, double atol, verify::Partial* scratch,
                    double* stats, int grid, cudaStream_t stream) {
  const int64_t n = out.numel();
  switch (ref.scalar_type()) {
    case at::kFloat: return verify::launch_verify_stats(typed<TOut>(out), typed<float>(ref), n, rtol, atol, scratch, stats, grid, stream);
    case at::kDouble: return verify::launch_verify_stats(typed<TOut>(out), typed<double>(ref), n, rtol, atol, scratch, stats, grid, stream);
    case at::kHalf: return verify::launch_verify_stats(typed<TOut>(out), typed<verify::Half16>(ref), n, rtol, atol, scratch, stats, grid, stream);
    case at::kBFloat16: return verify::launch_verify_stats(typed<TOut>(out), typed<verify::BFloat16>(ref), n, rtol, atol, scratch, stats, grid, stream);
    case at::kInt: return verify::launch_verify_stats(typed<TOut>(out), typed<int32_t>(ref), n, rtol, atol, scratch, stats, grid, stream);
    case at::kLong: return verify::launch_verify_stats(typed<TOut>(out), typed<int64_t>(ref), n, rtol, atol, scratch, stats, grid, stream);
    default: CKGEMM_CHECK(false, "ckgemm::verify_stats: unsupported ref dtype ", c10::toString(ref.scalar_type()));
  }
}

}  // namespace

at::Tensor verify_stats(const at::Tensor& out, const at::Tensor& ref, double rtol, double atol) {
  TORCH_CHECK(out.is_cuda() && ref.device() == out.device(), "ckgemm::verify_stats: tensors must be on one GPU");
  CKGEMM_CHECK(out.sizes() == ref.sizes(), "ckgemm::verify_stats: shapes differ: ", dims(out.sizes()), " vs ", dims(ref.sizes()));
  TORCH_CHECK(out.is_contiguous() && ref.is_contiguous(), "ckgemm::verify_stats: tensors must be contiguous");
  c10::cuda::CUDAGuard guard(out.device());
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, out.get_device()));
  const int grid = verify::suggested_grid(out.numel(), sms);
  at::Tensor scratch = at::empty({static_cast<int64_t>(grid * sizeof(verify::Partial))}, out.options().dtype(at::kByte));
  at::Tensor stats = at::empty({verify::kStatsSize}, out.options().dtype(at::kDouble));
  auto* res = reinterpret_cast<verify::Partial*>(scratch.data_ptr());
  double* st = stats.data_ptr<double>();
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(out.get_device()).stream();
  switch (out.scalar_type()) {
    case at::kFloat: launch_for_ref<float>(out, ref, rtol, atol, res, st, grid, stream); break;
    case at::kDouble: launch_for_ref<double>(out, ref, rtol, atol, res, st, grid, stream); break;
    case at::kHalf: launch_for_ref<verify::Half16>(out, ref, rtol, atol, res, st, grid, stream); break;
    case at::kBFloat16: launch_for_ref<verify::BFloat16>(out, ref, rtol, atol, res, st, grid, stream); break;
    case at::kInt: launch_for_ref<int32_t>(out, ref, rtol, atol, res, st, grid, stream); break;
    case at::kLong: launch_for_ref<int64_t>(out, ref, rtol, atol, res, st, grid, stream); break;
    default: CKGEMM_CHECK(false, "ckgemm::verify_stats: unsupported out dtype ", c10::toString(out.scalar_type()));
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return stats;
}

}  // namespace ckgemm
