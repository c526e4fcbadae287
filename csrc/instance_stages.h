// The mainloop pipeline depth of each instance, for the dispatch record's configs (ckgemm._C.instances()).
// A separate declaration (not in ckgemm.h): the CUTLASS count is a property of the compiled kernel type, so
// only a CUDA translation unit that instantiates the types can know it.
#pragma once

namespace ckgemm {

// Shared-memory stages of instance `id`'s mainloop; 0 when the backend does not report one.
int instance_stages(int id);

}  // namespace ckgemm
