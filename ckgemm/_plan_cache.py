"""A memo of planned packed calls, so a repeated ``grouped_gemm_packed`` call skips the Python
validation and planning and goes straight to the kernel launch.

Validation and planning depend only on metadata: dtypes, devices, shapes, strides, base addresses
(alignment, overlap), ``requires_grad`` with the grad mode, the layout, the backend asked for, and
group sizes when they are on the host (their values choose the config and are checked there). The
key holds exactly that, so a hit is a call that would have validated and planned the same way.
Sizes on a GPU are not part of the key: they are never read on the host, and the argument-building
kernel checks them on every launch.

Only calls the native backend launched on the caller's own tensors are remembered (no repack, no
staged output); calls that raise are never stored. The memo holds no tensors. It is on by default;
``CKGEMM_PLAN_CACHE=0`` turns it off.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

ENABLED = os.environ.get("CKGEMM_PLAN_CACHE", "1") != "0"
MAX_ENTRIES = 512
_MEMO: dict = {}


@dataclass(frozen=True)
class Plan:
    layout_code: int
    config: int
    rows: int
    n: int
    out_dtype: torch.dtype
    dispatch: object  # the ops.Dispatch record of the call that made the plan


def _meta(t: torch.Tensor) -> tuple:
    return (t.dtype, t.device, t.shape, t.stride(), t.data_ptr(), t.requires_grad)


def key(a, b, group_sizes, layout, out, backend, check_sizes) -> tuple | None:
    """The memo key of a packed call, or None when the call is not memoizable."""
    if not ENABLED or check_sizes:
        return None
    tensors = (a, b, group_sizes) if out is None else (a, b, group_sizes, out)
    if any(type(t) is not torch.Tensor for t in tensors):  # subclasses (fake, parameters, ...) take the full path
        return None
    sizes = tuple(group_sizes.tolist()) if group_sizes.device.type == "cpu" else None
    return (layout, backend, torch.is_grad_enabled(), sizes, *(_meta(t) for t in tensors), out is None)


def lookup(k) -> Plan | None:
    return _MEMO.get(k) if k is not None else None


def store(k, direct: list, problem, dispatch) -> None:
    """Remember the plan of a call the native backend launched as given (``direct`` holds its
    (layout code, config); empty otherwise)."""
    if k is None or not direct:
        return
    if len(_MEMO) >= MAX_ENTRIES:
        _MEMO.clear()
    layout_code, config = direct[0]
    _MEMO[k] = Plan(layout_code, config, problem.rows, problem.n, problem.rule.output, dispatch)


def replay(p: Plan, a, b, group_sizes, out) -> torch.Tensor:
    if out is None:
        out = torch.empty((p.rows, p.n), dtype=p.out_dtype, device=a.device)
    torch.ops.ckgemm.run_packed_out(a, b, group_sizes, out, p.layout_code, p.config)
    return out


def clear() -> None:
    _MEMO.clear()
