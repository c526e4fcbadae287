// ckgemm::instance_stages for the CUTLASS backend: each instance's mainloop stage count, read from its
// kernel type (CUTLASS's builder picks it from the shared memory the tile and epilogue leave). Types only:
// no kernel is instantiated here.
#include "../instance_stages.h"
#include "instance.cuh"

namespace ckgemm {

int instance_stages(int id) {
  static const int table[] = {
#define CKGEMM_INSTANCE(key, ...) cuda::Spec_##key::Kernel::CollectiveMainloop::DispatchPolicy::Stages,
#include "instances.inc"
#undef CKGEMM_INSTANCE
  };
  return id >= 0 && id < static_cast<int>(sizeof(table) / sizeof(table[0])) ? table[id] : 0;
}

}  // namespace ckgemm
