"""The native backends (``cutlass`` on CUDA sm_90, ``ck`` on ROCm gfx942/gfx950), both driven through the
compiled extension ``ckgemm._C``. Each public form is one native op (``torch.ops.ckgemm.gemm_*``) that
validates (csrc/common/validate.h), routes (csrc/common/route.h: kernel config, repacks, staging) and
launches in C++; this module only loads the extension, says whether it can run, calls the ops and
decodes what the last call ran (``routes``).
"""
from __future__ import annotations

import importlib

import torch

from . import routes

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


def device_reason(name: str, device: torch.device) -> str | None:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if name == "cutlass":
        major, minor = torch.cuda.get_device_capability(index)
        if (major, minor) != (9, 0):
            return f"it is built for sm_90a (Hopper); {torch.cuda.get_device_name(index)} is sm_{major}{minor}"
        return None
    arch = torch.cuda.get_device_properties(index).gcnArchName
    built = _C.built_archs()
    if arch.split(":")[0] not in built:
        return f"this build targets {built}; the device is {arch} (rebuild with GPU_ARCHS={arch.split(':')[0]})"
    return None


_NUM_SMS = 0  # the cap where no extension is built (the torch backend ignores it); else the extension holds it


def set_num_sms(n: int) -> None:
    """Cap the SMs (CUs) that ckgemm's persistent kernels use, as DeepGEMM's ``deep_gemm.set_num_sms``: ``n``
    at most (the kernels' grid and tile scheduler take ``n``), so work on another stream (a transpose, a
    collective) keeps the rest; 0 restores every SM of the device. Kernels that run clusters of two CTAs (ckgemm's
    own, and the CUTLASS tiles named ``_c1x2``) take two SMs where ``n`` is 1. Process-wide, read at each call,
    captured into a CUDA graph at capture time. The ``torch`` backend ignores it."""
    from ..errors import InvalidArgumentError, InvalidTypeError, Rule

    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidTypeError(f"set_num_sms: n must be an int, got {type(n).__name__}", rule=Rule.NONE)
    if n < 0:
        raise InvalidArgumentError(f"set_num_sms: n must be >= 0 (0: every SM), got {n}", rule=Rule.NONE)
    if _C is not None:
        _C.set_num_sms(n)
    else:
        global _NUM_SMS
        _NUM_SMS = n


def get_num_sms() -> int:
    """The cap ``set_num_sms`` set (0: every SM)."""
    return int(_C.num_sms()) if _C is not None else _NUM_SMS


_STAGES: tuple[int, ...] | None = None


def _stage_table() -> tuple[int, ...]:
    """Each instance's mainloop stages, by id (0 where the extension reports none)."""
    global _STAGES
    if _STAGES is None:
        _STAGES = tuple(int(i.get("stages", 0)) for i in _C.instances())
    return _STAGES


LAYOUT_CODES = {None: 0, "RC": 0, "RR": 1}  # anything else: -1, which the native validator rejects


def _layout_code(layout) -> int:
    """The ABI's layout code; -1 (refused by the native validator, then explained by validate.py) for
    anything else, unhashable values included."""
    return LAYOUT_CODES.get(layout, -1) if isinstance(layout, str) or layout is None else -1


class NativeBackend:
    native = True

    def __init__(self, name: str):
        self.NAME = name
        self._ops = None

    def unavailable_reason(self, device: torch.device | None) -> str | None:
        if _C is None:
            return _not_built_reason()
        if built_kind() != self.NAME:
            return f"this build of ckgemm holds the {built_kind()!r} backend, not {self.NAME!r}"
        if device is None:
            if not torch.cuda.is_available():
                return "no GPU is visible"
            reasons = [device_reason(self.NAME, torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
            return None if any(r is None for r in reasons) else reasons[0]
        if device.type != "cuda":
            return f"it runs on GPU tensors only, and the inputs are on {device}"
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            return "no GPU is visible"
        if (device.index or 0) >= count:
            return f"{device} is not a visible GPU ({count} visible)"
        return device_reason(self.NAME, device)

    @property
    def ops(self):
        if self._ops is None:  # OpOverloads resolved once: the packet lookup costs on every call
            ns = torch.ops.ckgemm
            self._ops = (ns.gemm_list.default, ns.gemm_list_out.default, ns.gemm_packed.default,
                         ns.gemm_packed_out.default)
        return self._ops

    # Each call runs the native validator first; a rejected call raises RuntimeError carrying the rule
    # id (routes.REJECTED_MARK) before anything is written, and ckgemm.ops then raises validate.py's message.
    # Eager calls on plain tensors enter the op through _C.eager_* (csrc/eager.cpp: the C++ dispatcher,
    # without Python's boxed operator call); those return None/False for anything else (tensor subclasses,
    # torch-function modes), which then takes torch.ops.ckgemm.*. None of these runs under Dynamo: there
    # ckgemm.ops hands every form to its own custom ops (_compile.py), which run this eager path inside.
    def grouped_gemm(self, a_list, b_list, scale_a, scale_b, layout, out_dtype):
        sa, sb, given = _scale_lists(scale_a, scale_b)
        code = _layout_code(layout)
        outs = _C.eager_gemm_list(a_list, b_list, sa, sb, given, code, out_dtype)
        return outs if outs is not None else self.ops[0](a_list, b_list, sa, sb, given, code, out_dtype)

    def grouped_gemm_out(self, a_list, b_list, c_list, scale_a, scale_b, layout, out_dtype):
        sa, sb, given = _scale_lists(scale_a, scale_b)
        code = _layout_code(layout)
        if not _C.eager_gemm_list_out(a_list, b_list, c_list, sa, sb, given, code, out_dtype):
            self.ops[1](a_list, b_list, c_list, sa, sb, given, code, out_dtype)

    def grouped_gemm_packed(self, a, b, group_sizes, scale_a, scale_b, layout, out_dtype):
        code = _layout_code(layout)
        out = _C.eager_gemm_packed(a, b, group_sizes, scale_a, scale_b, code, out_dtype)
        return out if out is not None else self.ops[2](a, b, group_sizes, scale_a, scale_b, code, out_dtype)

    def grouped_gemm_packed_out(self, a, b, group_sizes, out, scale_a, scale_b, layout, out_dtype):
        code = _layout_code(layout)
        if not _C.eager_gemm_packed_out(a, b, group_sizes, out, scale_a, scale_b, code, out_dtype):
            self.ops[3](a, b, group_sizes, out, scale_a, scale_b, code, out_dtype)

    def transpose_b(self, b: torch.Tensor) -> torch.Tensor:
        """[..., K, N] -> contiguous [..., N, K] with the native tiled transpose kernel (prepack)."""
        return torch.ops.ckgemm.transpose_b(b)

    def needs_transpose(self, dtype: torch.dtype, layout: str) -> bool:
        """Whether this backend's kernels read B of this dtype and layout only after a transpose."""
        return self.NAME == "cutlass" and dtype.itemsize == 1 and layout == "RR"

    def last_dispatch_fields(self):
        """(op, dtype name, layout, recipe, out dtype, paths, stages) of this thread's last native call."""
        return routes.decode_report(self.NAME, _C.last_report(), _C.instance_names(), _stage_table())


def _scale_lists(scale_a, scale_b):
    """The list forms' scales as the op takes them: two lists and a bitmask of which were given (an empty
    list is given, None is not: validate.py tells them apart, so the native validator must too)."""
    sa = () if scale_a is None else scale_a
    sb = () if scale_b is None else scale_b
    if type(sa) not in (list, tuple) or type(sb) not in (list, tuple):
        raise TypeError("ckgemm: scale lists must be lists or tuples")  # validate.py explains it
    return sa, sb, (scale_a is not None) | (scale_b is not None) << 1


_BACKENDS = {name: NativeBackend(name) for name in NAMES}


def backend(name: str) -> NativeBackend:
    return _BACKENDS[name]
