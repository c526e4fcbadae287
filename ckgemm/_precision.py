"""IEEE fp32 matmuls on CUDA for the references: TF32 would round fp32 inputs to 10 mantissa bits.

One place for the rule, used by the ``torch`` backend (``backends/reference.py``) and the harness's reference
(``testing/reference.py``).
"""
from __future__ import annotations

import contextlib
import threading

import torch

_LOCK = threading.RLock()  # the flags are process-wide: one block at a time, so each restores what it found


def _legacy_precision() -> str | None:
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:  # the user set the new API in a way the legacy getter refuses to read
        return None


@contextlib.contextmanager
def ieee_fp32_matmul(device: torch.device):
    """CUDA matmuls in IEEE fp32 (no TF32) inside the block; torch's settings are restored after.

    Nothing is touched for other devices. Where torch has ``torch.backends.cuda.matmul.fp32_precision``
    (2.9 on) that is what is saved and set, together with the legacy ``float32_matmul_precision`` when the
    user set that one ("high"/"medium", or ``allow_tf32 = True``): setting only the new flag would leave the
    two APIs disagreeing inside the block, where anything reading the legacy flag raises. Writing the legacy
    flag alone, as before, raised for users of the new API and turned their setting into a legacy one.
    The settings are process-wide: blocks on different threads take turns, and a matmul on another thread
    inside a block runs without TF32 too.
    """
    if device.type != "cuda":
        yield
        return
    flags = torch.backends.cuda.matmul
    with _LOCK:
        if not hasattr(flags, "fp32_precision"):
            saved_flag = flags.allow_tf32
            flags.allow_tf32 = False
            try:
                yield
            finally:
                flags.allow_tf32 = saved_flag
            return
        saved, legacy = flags.fp32_precision, _legacy_precision()
        if legacy not in (None, "highest"):
            torch.set_float32_matmul_precision("highest")
        flags.fp32_precision = "ieee"
        try:
            yield
        finally:
            flags.fp32_precision = saved
            if legacy not in (None, "highest"):
                torch.set_float32_matmul_precision(legacy)
