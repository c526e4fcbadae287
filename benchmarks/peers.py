"""Peers timed in the same process as ckgemm: what a user would otherwise call.

Every peer takes the same packed inputs (``a`` [sum M, K], ``b`` [G, N, K] RC) and returns a callable,
or None with the reason it cannot run here. Sizes for host loops are read once, outside the timing.
"""
from __future__ import annotations

import torch


def _offsets(sizes: list[int], device) -> torch.Tensor:
    return torch.tensor(sizes, dtype=torch.int32, device=device).cumsum(0, dtype=torch.int32)


def matmul_loop(a, b, sizes):
    """A Python loop of torch.matmul per group (cuBLAS; fp8 via torch._scaled_mm with unit scales)."""
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    if a.dtype == torch.int8:
        return None, "see int_mm_loop"
    if a.element_size() == 1:
        one = torch.ones((), device=a.device)

        def run():
            return [torch._scaled_mm(a[s:s + m], b[g].t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
                    for g, (s, m) in enumerate(zip(starts, sizes)) if m]
        return _probe(run)

    def run():
        return [torch.matmul(a[s:s + m], b[g].t()) for g, (s, m) in enumerate(zip(starts, sizes)) if m]
    return _probe(run)


def grouped_mm(a, b, sizes):
    """torch._grouped_mm (PyTorch's CUTLASS grouped kernel for bf16; a host-synced loop otherwise)."""
    if a.element_size() == 1 or not hasattr(torch, "_grouped_mm"):
        return None, "no 8-bit torch._grouped_mm"
    offs = _offsets(sizes, a.device)
    bt = b.transpose(-2, -1)
    return _probe(lambda: torch._grouped_mm(a, bt, offs=offs))


def scaled_grouped_mm(a, b, sizes):
    """torch._scaled_grouped_mm with unit row-wise scales (fp8 in, bf16 out: an approximate peer)."""
    if a.dtype not in (torch.float8_e4m3fn, torch.float8_e4m3fnuz) or not hasattr(torch, "_scaled_grouped_mm"):
        return None, "fp8 only"
    offs = _offsets(sizes, a.device)
    bt = b.transpose(-2, -1)
    scale_a = torch.ones(a.shape[0], dtype=torch.float32, device=a.device)
    scale_b = torch.ones(b.shape[0], b.shape[1], dtype=torch.float32, device=a.device)
    return _probe(lambda: torch._scaled_grouped_mm(a, bt, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16))


def int_mm_loop(a, b, sizes):
    """A loop of torch._int_mm (int8 -> int32); it needs M > 16, so smaller groups are padded to 17 rows
    (extra work the peer does, counted against it)."""
    if a.dtype != torch.int8:
        return None, "int8 only"
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    padded = {g: torch.zeros(17, a.shape[1], dtype=torch.int8, device=a.device)
              for g, m in enumerate(sizes) if 0 < m <= 16}
    for g, (s, m) in enumerate(zip(starts, sizes)):
        if g in padded:
            padded[g][:m] = a[s:s + m]
    bt = [b[g].t() for g in range(len(sizes))]

    def run():
        return [torch._int_mm(padded.get(g, a[s:s + m]), bt[g]) for g, (s, m) in enumerate(zip(starts, sizes)) if m]
    return _probe(run)


def _probe(fn):
    try:
        fn()
        torch.cuda.synchronize()
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return fn, None


PEERS = {
    "matmul loop": matmul_loop,
    "torch._grouped_mm": grouped_mm,
    "torch._scaled_grouped_mm": scaled_grouped_mm,
    "torch._int_mm loop": int_mm_loop,
}
