"""IEEE fp32 matmuls on CUDA for the references: TF32 would round fp32 inputs to 10 mantissa bits.

One place for the rule, used by the ``torch`` backend (``backends/reference.py``) and the harness's reference
(``testing/reference.py``).
"""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def ieee_fp32_matmul(device: torch.device):
    """CUDA matmuls in IEEE fp32 (no TF32) inside the block; torch's setting is restored after.

    Nothing is touched for other devices. Where torch has ``torch.backends.cuda.matmul.fp32_precision``
    (2.9 on) that is what is saved and set: there, reading the legacy ``allow_tf32`` after a user set the new
    API raises, and writing it back would turn their setting into a legacy one. The setting is process-wide,
    so a matmul on another thread inside the block runs without TF32 too.
    """
    if device.type != "cuda":
        yield
        return
    flags = torch.backends.cuda.matmul
    name, ieee = ("fp32_precision", "ieee") if hasattr(flags, "fp32_precision") else ("allow_tf32", False)
    saved = getattr(flags, name)
    setattr(flags, name, ieee)
    try:
        yield
    finally:
        setattr(flags, name, saved)
