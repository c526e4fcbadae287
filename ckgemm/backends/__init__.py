"""Backend registry: which backends exist, which can run on a device, and why not.

``torch`` (the reference) runs everywhere. ``cutlass`` (CUDA build, sm_90) and ``ck`` (ROCm build,
gfx942/gfx950) are the native extension; each says why it cannot run when it cannot.
"""
from __future__ import annotations

import torch

from ..errors import BackendUnavailableError, InvalidArgumentError, InvalidTypeError
from . import native, reference

BACKEND_NAMES = ("cutlass", "ck", "torch")


def _module(name: str, op: str | None = None):
    if name == "torch":
        return reference
    if name in native.NAMES:
        return native.backend(name)
    hint = " (names are lower case)" if name.lower() in BACKEND_NAMES else ""
    raise InvalidArgumentError(f"{_where(op)}unknown backend {name!r}{hint}; known backends: {BACKEND_NAMES}")


def _where(op: str | None) -> str:
    return f"{op}: " if op else ""


def unavailable_reason(name: str, device: torch.device | None = None) -> str | None:
    """None when backend ``name`` can run on ``device`` (or on some device here, if None)."""
    return _module(name).unavailable_reason(device)


def available_backends(device: torch.device | str | None = None) -> list[str]:
    """Backends that can run here (on ``device`` if given), best first."""
    dev = torch.device(device) if device is not None else None
    return [n for n in BACKEND_NAMES if unavailable_reason(n, dev) is None]


_SELECTED: dict = {}


def check_backend_type(backend, op: str | None = None) -> None:
    if backend is not None and not isinstance(backend, str):
        raise InvalidTypeError(f"{_where(op)}backend must be a str (one of {BACKEND_NAMES}) or None, got "
                               f"{type(backend).__name__}")


def select(backend: str | None, device: torch.device, op: str | None = None):
    """The backend module to run on ``device``: the one asked for, or the best available (errors name
    ``op``). What a device can run does not change within a process, so successful choices are cached."""
    check_backend_type(backend, op)  # (unhashable values never reach the cache)
    key = (backend, device)
    module = _SELECTED.get(key)
    if module is None:
        module = _SELECTED[key] = _select(backend, device, op)
    return module


def native_for(backend: str | None, probe):
    """The native backend that would run a call whose first tensor is ``probe``, or None when the call
    goes to the torch reference, or when the backend cannot be told without validating (a bad
    ``probe`` or backend name): then the caller validates first, so errors keep their order."""
    if probe.is_cuda and (backend is None or type(backend) is str):  # the hot path: no torch.device built
        key = (backend, probe.get_device())
        found = _NATIVE_FOR.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            found = _NATIVE_FOR[key] = _native_or_none(backend, probe)
        return found
    return _native_or_none(backend, probe)


_NATIVE_FOR: dict = {}
_UNKNOWN = object()


def _native_or_none(backend, probe):
    try:
        module = select(backend, probe.device)
    except Exception:  # noqa: BLE001 - any failure here is reported by the validating path
        return None
    return module if getattr(module, "native", False) else None


def _select(backend: str | None, device: torch.device, op: str | None = None):
    if backend is not None:
        module = _module(backend, op)
        reason = module.unavailable_reason(device)
        if reason is not None:
            raise BackendUnavailableError(f"{_where(op)}backend {backend!r} cannot run on {device}: {reason}")
        return module
    for name in BACKEND_NAMES:
        module = _module(name)
        if module.unavailable_reason(device) is None:
            return module
    raise BackendUnavailableError(f"no backend can run on {device}")  # unreachable: torch runs everywhere
