// Which CK-tile instances this build holds. The build defines CKGEMM_CK_<DTYPE> for each dtype it
// compiles (build_support/rocm.py, from CKGEMM_DTYPES); a dtype left out reports NotInstantiated.
#include "instance.h"

namespace ckgemm {
namespace ck {

namespace {

template <DType D>
const Instance* pick(Layout layout, Config config) {
  const bool large = config == Config::Large;
  if (layout == Layout::RC)
    return large ? instance<D, Layout::RC, Config::Large>() : instance<D, Layout::RC, Config::Small>();
  return large ? instance<D, Layout::RR, Config::Large>() : instance<D, Layout::RR, Config::Small>();
}

}  // namespace

const Instance* find_instance(DType dtype, Layout layout, Config config) {
  if (layout != Layout::RC && layout != Layout::RR) return nullptr;
  if (config != Config::Large && config != Config::Small) return nullptr;
  switch (dtype) {
#if defined(CKGEMM_CK_FP16)
    case DType::F16: return pick<DType::F16>(layout, config);
#endif
#if defined(CKGEMM_CK_BF16)
    case DType::BF16: return pick<DType::BF16>(layout, config);
#endif
#if defined(CKGEMM_CK_FP8)
    // One kernel for both flavours; runner.hip refuses the one the device does not decode.
    case DType::FP8_E4M3:
    case DType::FP8_E4M3_FNUZ: return pick<DType::FP8_E4M3_FNUZ>(layout, config);
#endif
#if defined(CKGEMM_CK_INT8)
    case DType::I8: return pick<DType::I8>(layout, config);
#endif
    default: return nullptr;
  }
}

}  // namespace ck
}  // namespace ckgemm
