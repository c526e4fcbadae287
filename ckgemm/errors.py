"""Exception types. Every input error is a ValueError or TypeError subclass, so callers that catch
the built-in types keep working, and every one is a CkgemmError, so callers can catch ours alone."""
from __future__ import annotations

import torch


class CkgemmError(Exception):
    """Base of every error ckgemm raises on purpose."""


class InvalidArgumentError(CkgemmError, ValueError):
    """A value, shape, stride, device, layout or group size breaks a rule of the op."""


class InvalidTypeError(CkgemmError, TypeError):
    """An argument has the wrong Python type or an unsupported dtype."""


class BackendUnavailableError(CkgemmError, RuntimeError):
    """The requested backend cannot run here; the message says why."""


def describe(t: torch.Tensor) -> str:
    """Shape, dtype, stride and device of a tensor, as every error message prints them."""
    return f"shape {tuple(t.shape)}, dtype {t.dtype}, stride {tuple(t.stride())}, device {t.device}"
