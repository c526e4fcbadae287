"""The native backends (``cutlass`` on CUDA sm_90, ``ck`` on ROCm gfx942/gfx950), both driven
through the compiled extension ``ckgemm._C``. This module only loads it and says whether it can run;
``native_run`` turns validated calls into launches."""
from __future__ import annotations

import importlib

import torch

NAMES = ("cutlass", "ck")

try:
    _C = importlib.import_module("ckgemm._C")
    _LOAD_ERROR = None
except ImportError as exc:  # CPU build, CKGEMM_NATIVE=0, or a build for another torch
    _C = None
    _LOAD_ERROR = exc


def built_kind() -> str | None:
    """'cutlass', 'ck', or None when no extension is built."""
    return _C.backend_kind() if _C is not None else None


def _not_built_reason() -> str:
    if torch.version.cuda is None and torch.version.hip is None:
        return (f"the native extension is not built: torch {torch.__version__} is a CPU build "
                "(install a CUDA or ROCm build of torch, then reinstall ckgemm)")
    return (f"the native extension is not built or failed to load ({_LOAD_ERROR}); reinstall with "
            "`pip install --no-build-isolation -e .` and check that CKGEMM_NATIVE is not 0")


class NativeBackend:
    def __init__(self, name: str):
        self.NAME = name

    def unavailable_reason(self, device: torch.device | None) -> str | None:
        if _C is None:
            return _not_built_reason()
        if built_kind() != self.NAME:
            return f"this build of ckgemm holds the {built_kind()!r} backend, not {self.NAME!r}"
        if device is None:
            if not torch.cuda.is_available():
                return "no GPU is visible"
            reasons = [self._device_reason(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
            return None if any(r is None for r in reasons) else reasons[0]
        if device.type != "cuda":
            return f"it runs on GPU tensors only, and the inputs are on {device}"
        return self._device_reason(device)

    def _device_reason(self, device: torch.device) -> str | None:
        from . import native_run

        return native_run.device_reason(self.NAME, device)

    def run_list(self, problem, a_list, b_list, c_list):
        from . import native_run

        return native_run.run_list(problem, a_list, b_list, c_list)

    def run_packed(self, problem, a, b, group_sizes, out, direct: list | None = None):
        from . import native_run

        return native_run.run_packed(problem, a, b, group_sizes, out, direct)


_BACKENDS = {name: NativeBackend(name) for name in NAMES}


def backend(name: str) -> NativeBackend:
    return _BACKENDS[name]
