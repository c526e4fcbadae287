"""Peers to time beside ckgemm, where they exist on this machine. Each peer is probed once (a real call on
the run's operands); one that raises is reported as "n/a" with the reason, never silently dropped.

- loop:    a Python loop of ``torch.matmul`` per group (fp16/bf16), or of ``torch._int_mm`` (int8)
- grouped: ``torch._grouped_mm`` (bf16; fused on CUDA sm90/sm100) or ``torch._scaled_grouped_mm`` with unit
           scales (fp8 e4m3fn -> bf16 output; an approximate peer for ckgemm's fp8 -> fp32)
Operand re-layouts the peers need (stacking, column-major copies) happen once, outside the timed calls.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Peer:
    name: str
    fn: object | None  # zero-argument callable, or None when not available
    reason: str = ""  # why not available


def _group_views(p):
    """(A_i, op(B_i) as [K, N]) per group with work to do, for the list and packed forms."""
    if p.form == "packed":
        ms = p.sizes.tolist()
        a_parts = list(torch.split(p.a, ms))
        b_parts = list(p.b)
    else:
        a_parts, b_parts = list(p.a), list(p.b)
    pairs = [(a, b.t() if p.layout == "RC" else b) for a, b in zip(a_parts, b_parts)]
    return [(a, bk) for a, bk in pairs if a.shape[0] and bk.shape[1]]


def _probe(name: str, fn) -> Peer:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - any refusal means the peer does not exist for this case
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Peer(name, None, first[:80])
    return Peer(name, fn)


def _loop_peer(p, dtype: torch.dtype) -> Peer:
    pairs = _group_views(p)
    if dtype == torch.int8:
        if not hasattr(torch, "_int_mm"):
            return Peer("loop _int_mm", None, "torch._int_mm missing")
        mats = [(a, bk.contiguous()) for a, bk in pairs]
        return _probe("loop _int_mm", lambda: [torch._int_mm(a, bk) for a, bk in mats])
    if dtype.itemsize == 1:
        return Peer("loop matmul", None, "torch.matmul has no fp8 kernel")
    return _probe("loop matmul", lambda: [torch.matmul(a, bk) for a, bk in pairs])


def _shared_nk(p, case):
    if not case.packable or case.groups == 0:
        return None
    if p.form == "packed":
        a, b = p.a, p.b
    else:
        a = torch.cat(list(p.a)) if p.a else None
        b = torch.stack(list(p.b)) if p.b else None
    bk = b.transpose(-2, -1) if p.layout == "RC" else b  # [G, K, N] view
    offs = torch.tensor(case.ms, device=a.device, dtype=torch.int32).cumsum(0).to(torch.int32)
    return a, bk, offs


def _grouped_peer(p, case, dtype: torch.dtype) -> Peer:
    if dtype not in (torch.bfloat16, torch.float16, torch.float8_e4m3fn):
        return Peer("grouped", None, f"no torch grouped op for {str(dtype).replace('torch.', '')}")
    shared = _shared_nk(p, case)
    if shared is None:
        return Peer("grouped", None, "groups differ in N or K")
    a, bk, offs = shared
    if dtype == torch.float8_e4m3fn:
        if not hasattr(torch, "_scaled_grouped_mm"):
            return Peer("_scaled_grouped_mm", None, "missing in this torch")
        b_col = bk.transpose(-2, -1).contiguous().transpose(-2, -1)  # column-major [G, K, N], as it requires
        scale_a = torch.ones(a.shape[0], device=a.device, dtype=torch.float32)
        scale_b = torch.ones(b_col.shape[0], b_col.shape[2], device=a.device, dtype=torch.float32)
        return _probe("_scaled_grouped_mm", lambda: torch._scaled_grouped_mm(
            a, b_col, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16))
    if not hasattr(torch, "_grouped_mm"):
        return Peer("_grouped_mm", None, "missing in this torch")
    return _probe("_grouped_mm", lambda: torch._grouped_mm(a, bk, offs=offs))


def peers_for(p, case, dtype: torch.dtype) -> list[Peer]:
    """The loop peer and the grouped peer of this run (each possibly n/a)."""
    return [_loop_peer(p, dtype), _grouped_peer(p, case, dtype)]
