// ckgemm::instance_stages for the CUTLASS backend: each instance's mainloop stage count, read from its
// kernel type (CUTLASS's builder picks it from the shared memory the tile and epilogue leave; ckgemm's own
// kernels from ws::Config and ws::s8). Types only: no kernel is instantiated here.
#include <type_traits>

#include "../instance_stages.h"
#include "instance.cuh"
#include "ws_fp8_types.cuh"
#include "ws_s8_rr_rules.h"

namespace ckgemm {
namespace {

template <class Spec>
constexpr int stages_of() {
  if constexpr (std::is_same_v<typename Spec::Schedule, cuda::OwnWarpSpecialized> && Spec::kLayout == Layout::RR)
    return ws::s8::kLaunchedStages;
  else if constexpr (std::is_same_v<typename Spec::Schedule, cuda::OwnWarpSpecialized>)
    return ws::Config<Spec::kTileN, Spec::kClusterM == 2, Spec::kTileM>::kStages;  // a 2x1 cluster shares B
  else
    return Spec::Kernel::CollectiveMainloop::DispatchPolicy::Stages;
}

}  // namespace

int instance_stages(int id) {
  static const int table[] = {
#define CKGEMM_INSTANCE(key, ...) stages_of<cuda::Spec_##key>(),
#include "instances.inc"
#undef CKGEMM_INSTANCE
  };
  return id >= 0 && id < static_cast<int>(sizeof(table) / sizeof(table[0])) ? table[id] : 0;
}

}  // namespace ckgemm
