"""The verdict on a kernel's values against the reference built from the same (quantized) operands.

Per group, two criteria (``check``'s): every element within the harness's tolerance for that group, from
the dtypes, the group's K and its own max|ref| (CK-tile's model; with scales ``numeric.scaled_tolerance``;
integers exactly), and ``calc_diff`` within a bound: with scales ``numeric.scaled_max_diff`` of the output
dtype; without, ``MAX_DIFF``, DeepGEMM's bounds for a reference that shares the kernel's inputs (5e-6, or
3e-5 when bf16 is involved; DeepGEMM compares its fp8 kernels with 1e-3 only against unquantized inputs).

On a GPU the comparison runs where the tensors are (``gpu_verify``, statistics only); a failure is
re-run through ``check`` on the CPU for its per-group report when the outputs are small enough to copy.
"""
from __future__ import annotations

import math

import torch

from ..check import check, group_tolerance
from ..numeric import calc_diff, scaled_max_diff
from ..verify import gpu_verify

MAX_DIFF = {torch.bfloat16: 3e-5, torch.float16: 5e-6, torch.float32: 5e-6}
CPU_REPORT_LIMIT = 1 << 24  # output elements: beyond this a GPU failure is described by its statistics alone


def max_diff(ops) -> float:
    return scaled_max_diff(ops.out_dtype) if ops.scaled else MAX_DIFF.get(ops.out_dtype, 5e-6)


def judge(outs, refs, ops, *, on_device: bool | None = None) -> tuple[bool, str, dict, str]:
    """(passed, one-line reason when not, metrics, the full per-group report when not). ``on_device``:
    compare with ``gpu_verify`` where the tensors are (default: when they are on a GPU)."""
    if on_device is None:
        on_device = bool(outs) and outs[0].is_cuda
    if on_device:
        ok, detail, metrics = _on_device(outs, refs, ops)
        if ok or sum(o.numel() for o in outs) > CPU_REPORT_LIMIT:
            return ok, detail, metrics, ""
        outs, refs = [o.cpu() for o in outs], [r.cpu() for r in refs]
    criteria = {} if ops.exact else dict(in_dtype=ops.dtype, k=list(ops.case.ks), scaled=ops.scaled,
                                         max_diff=max_diff(ops))
    report = check(outs, refs, name=str(ops.case), raise_on_failure=False, **criteria)
    summary = report.summary()
    metrics = {key: summary[key] for key in ("max_abs_err", "worst_group", "calc_diff", "mismatches")}
    if report.passed:
        return True, "", metrics, ""
    return False, _reason(report, ops.case), metrics, str(report)


def _reason(report, case) -> str:
    failed = [g for g in report.groups if not g.passed]
    g = failed[0]
    s = g.stats
    m, n, k = case.shapes[g.group]
    where = f"group {g.group} (M={m}, N={n}, K={k})"
    if s.mismatches:
        extra = f"; {s.nan_out} NaN" if s.nan_out else ""
        text = (f"{where}: {s.mismatches} of {s.numel} elements outside rtol {s.rtol:.3g}, atol {s.atol:.3g}; "
                f"max abs err {s.max_abs_err:.4g} at {s.max_abs_index}{extra}")
    else:
        text = f"{where}: calc_diff {g.diff:.3g} exceeds {g.max_diff:.3g}"
    return text + (f" ({len(failed)} of {len(report.groups)} groups fail)" if len(failed) > 1 else "")


def _on_device(outs, refs, ops) -> tuple[bool, str, dict]:
    bound = None if ops.exact else max_diff(ops)
    worst, first_bad, diffs, mismatches = None, None, [], 0
    for g, (o, r, k) in enumerate(zip(outs, refs, ops.case.ks)):
        rtol, atol = (0.0, 0.0) if ops.exact else group_tolerance(o, r, ops.dtype, k, scaled=ops.scaled)
        stats = gpu_verify(o, r, rtol, atol)
        diff = None if bound is None else calc_diff(o, r)
        diffs += [] if diff is None else [diff]
        mismatches += stats.mismatches
        if worst is None or stats.max_abs_err > worst[1].max_abs_err:
            worst = (g, stats)
        bad_diff = diff is not None and not (diff <= bound)  # a NaN diff fails
        if first_bad is None and (not stats.passed or bad_diff):
            m, n, _ = ops.case.shapes[g]
            first_bad = (f"group {g} (M={m}, N={n}, K={k}): {stats}" if not stats.passed
                         else f"group {g} (M={m}, N={n}, K={k}): calc_diff {diff:.3g} exceeds {bound:.3g}")
    metrics = {"max_abs_err": worst[1].max_abs_err if worst else 0.0, "worst_group": worst[0] if worst else None,
               "calc_diff": max(diffs, key=lambda d: d if math.isfinite(d) else math.inf) if diffs else None,
               "mismatches": mismatches}
    return first_bad is None, first_bad or "", metrics
