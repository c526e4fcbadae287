// The eager entry points of ckgemm._C (eager.cpp): the registered ops through a typed dispatcher handle.
#pragma once

#include <pybind11/pybind11.h>

namespace ckgemm {

void register_eager(pybind11::module_& m);

}  // namespace ckgemm
