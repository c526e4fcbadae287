"""``gpu_verify``: compare an output with a reference where they live and bring back only statistics.

Two implementations, one rule (``numeric.mismatch_mask``, evaluated in float64):
- the fused kernel of ``csrc/common/verify.cuh``, used when the extension registers
  ``torch.ops.ckgemm.verify_stats`` and both tensors are on a GPU;
- a pure-torch fallback otherwise: a handful of element-wise kernels per chunk of ``chunk_elems``
  elements (temporaries bounded by the chunk), accumulated on the device, one copy to the host.
``VerifyStats.path`` says which ran.

The stats tensor both produce (float64, ``STATS_SIZE`` = 10 elements), as in verify.cuh:

    [0] numel           elements compared
    [1] mismatches      elements failing the rule
    [2] nan_out         NaNs in out
    [3] inf_out         infinities in out
    [4] nan_ref         NaNs in ref
    [5] inf_ref         infinities in ref
    [6] max_abs_err     max |out - ref| over finite pairs (0 when there is none)
    [7] max_abs_index   smallest flat index of a finite pair reaching max_abs_err; -1 when there is none
    [8] max_abs_ref     max |ref| over finite ref elements (0 when there is none)
    [9] out_all_zero    1 when every out element equals 0 (often: the kernel never ran), else 0
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .numeric import mismatch_mask

STATS_FIELDS = ("numel", "mismatches", "nan_out", "inf_out", "nan_ref", "inf_ref", "max_abs_err", "max_abs_index",
                "max_abs_ref", "out_all_zero")
STATS_SIZE = len(STATS_FIELDS)
FUSED = "fused kernel (torch.ops.ckgemm.verify_stats)"
FALLBACK = "torch fallback"


@dataclass
class VerifyStats:
    numel: int
    mismatches: int
    nan_out: int
    inf_out: int
    nan_ref: int
    inf_ref: int
    max_abs_err: float
    max_abs_index: int  # flat index; -1 when no finite pair
    max_abs_ref: float
    out_all_zero: bool
    rtol: float
    atol: float
    path: str  # FUSED or FALLBACK (with the reason the fused op was not used)

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    @classmethod
    def from_tensor(cls, stats: torch.Tensor, rtol: float, atol: float, path: str) -> "VerifyStats":
        values = stats.detach().to("cpu", torch.float64).tolist()
        if len(values) != STATS_SIZE:
            raise ValueError(f"verify_stats returned {len(values)} values, expected {STATS_SIZE}")
        v = dict(zip(STATS_FIELDS, values))
        ints = {k: int(v[k]) for k in STATS_FIELDS if k not in ("max_abs_err", "max_abs_ref", "out_all_zero")}
        return cls(**ints, max_abs_err=v["max_abs_err"], max_abs_ref=v["max_abs_ref"],
                   out_all_zero=bool(v["out_all_zero"]), rtol=float(rtol), atol=float(atol), path=path)

    def __str__(self) -> str:
        return (f"{self.mismatches} of {self.numel} mismatched under rtol={self.rtol:.3g} atol={self.atol:.3g}; "
                f"max abs err {self.max_abs_err:.4g} at flat index {self.max_abs_index}; max |ref| "
                f"{self.max_abs_ref:.4g}; NaN out/ref {self.nan_out}/{self.nan_ref}; Inf out/ref "
                f"{self.inf_out}/{self.inf_ref}" + ("; out is all zeros" if self.out_all_zero else "")
                + f" [{self.path}]")


_FAKE_REGISTERED = []


def registered_op():
    """``torch.ops.ckgemm.verify_stats`` when the extension registered it, else None (its fake kernel, for
    torch.compile, is registered here: the op is the harness's, not the GEMM's)."""
    try:
        op = getattr(torch.ops.ckgemm, "verify_stats")
    except (AttributeError, RuntimeError):
        return None
    if not _FAKE_REGISTERED:
        torch.library.register_fake("ckgemm::verify_stats")(
            lambda out, ref, rtol, atol: out.new_empty((STATS_SIZE,), dtype=torch.float64))
        _FAKE_REGISTERED.append(True)
    return op


def torch_verify_stats(out: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float, *,
                       chunk_elems: int = 1 << 22) -> torch.Tensor:
    """The stats tensor computed with torch ops on the tensors' device (the fallback of ``gpu_verify``)."""
    o_all, r_all = out.reshape(-1), ref.reshape(-1)
    dev = o_all.device
    n = o_all.numel()
    counts = torch.zeros(6, dtype=torch.int64, device=dev)  # mismatches, nan/inf out, nan/inf ref, nonzero out
    best = torch.full((), -1.0, dtype=torch.float64, device=dev)  # -1: no finite pair yet
    best_idx = torch.full((), -1, dtype=torch.int64, device=dev)
    max_ref = torch.zeros((), dtype=torch.float64, device=dev)
    for start in range(0, n, chunk_elems):
        o = o_all[start:start + chunk_elems].double()
        r = r_all[start:start + chunk_elems].double()
        finite_r = torch.isfinite(r)
        finite = torch.isfinite(o) & finite_r
        counts += torch.stack((mismatch_mask(o, r, rtol, atol).sum(), torch.isnan(o).sum(), torch.isinf(o).sum(),
                               torch.isnan(r).sum(), torch.isinf(r).sum(), (o != 0).sum()))
        err = torch.where(finite, (o - r).abs(), torch.full_like(o, -1.0))
        chunk_best, chunk_idx = err.max(), err.argmax()  # argmax returns the first of equal maxima
        better = chunk_best > best  # strictly: an earlier chunk keeps a tie
        best_idx = torch.where(better, chunk_idx + start, best_idx)
        best = torch.maximum(best, chunk_best)
        max_ref = torch.maximum(max_ref, torch.where(finite_r, r.abs(), torch.zeros_like(r)).max())
    f = counts.double()
    return torch.stack((torch.tensor(float(n), dtype=torch.float64, device=dev), f[0], f[1], f[2], f[3], f[4],
                        best.clamp(min=0.0), best_idx.double(), max_ref, (counts[5] == 0).double()))


def gpu_verify(out: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float, *, op=None,
               chunk_elems: int = 1 << 22) -> VerifyStats:
    """Compare ``out`` with ``ref`` on their device; only the 10-value stats tensor crosses to the host.

    ``op`` overrides the fused operator (default: ``torch.ops.ckgemm.verify_stats`` when registered).
    The fused op runs only when both tensors are on a GPU; otherwise, or if it refuses the dtypes, the
    torch fallback runs. The verdict is the same either way (see ``numeric`` for the rule). Values compare
    as float64: integers exactly up to 2^53 (``check`` compares integers exactly at any size)."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"gpu_verify: out shape {tuple(out.shape)} differs from ref shape {tuple(ref.shape)}")
    if out.is_complex() or ref.is_complex():
        raise TypeError(f"gpu_verify: complex tensors ({out.dtype}, {ref.dtype}) are not compared; compare "
                        "torch.view_as_real of each")
    if out.device != ref.device:
        raise ValueError(f"gpu_verify: out is on {out.device} but ref is on {ref.device}")
    op = op if op is not None else registered_op()
    path = FALLBACK
    if op is None:
        path = f"{FALLBACK} (no fused op registered)"
    elif out.device.type != "cuda":
        path = f"{FALLBACK} (tensors on {out.device})"
    else:
        try:
            stats = op(out.contiguous(), ref.contiguous(), float(rtol), float(atol))
            return VerifyStats.from_tensor(stats, rtol, atol, FUSED)
        except RuntimeError as exc:
            path = f"{FALLBACK} (fused op refused: {str(exc).splitlines()[0]})"
    stats = torch_verify_stats(out, ref, rtol, atol, chunk_elems=chunk_elems)
    return VerifyStats.from_tensor(stats, rtol, atol, path)
