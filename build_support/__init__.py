"""Decides what setup.py builds. The torch build decides the backend: CUDA -> CUTLASS, ROCm -> CK-tile,
CPU -> nothing (pure Python, the reference backend). CKGEMM_NATIVE=0 forces the native build off;
CKGEMM_NATIVE=1 turns "cannot build" into an error instead of a pure-Python install."""
import os
import warnings

_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}


def native_mode() -> str:
    mode = os.environ.get("CKGEMM_NATIVE", "auto").strip().lower()
    if mode in _OFF:
        return "off"
    if mode in _ON:
        return "on"
    if mode != "auto":
        raise SystemExit(f"CKGEMM_NATIVE={mode!r}: expected 0, 1 or auto")
    return "auto"


def _skip(mode: str, why: str):
    if mode == "on":
        raise SystemExit(f"CKGEMM_NATIVE=1 but the native extension cannot be built: {why}")
    warnings.warn(f"ckgemm: building without the native extension: {why}")
    return [], {}


def native_extension():
    """(ext_modules, cmdclass) for setuptools.setup."""
    mode = native_mode()
    if mode == "off":
        return [], {}
    try:
        import torch
    except ImportError:
        return _skip(mode, "torch is not importable in the build environment (use --no-build-isolation)")
    if torch.version.cuda is not None:
        from .cuda import extension
    elif torch.version.hip is not None:
        from .rocm import extension
    else:
        if mode == "on":
            return _skip(mode, f"torch {torch.__version__} is a CPU build")
        return [], {}
    return extension(mode)
