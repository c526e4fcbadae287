"""``check``: one call that compares a kernel's outputs with a reference and hard-fails with a report.

Tolerances are explicit; or derived per group from the dtypes, that group's K and its max|ref| (CK-tile's
model, see ``numeric.tolerance``) when ``in_dtype`` and ``k`` are given; or, with neither, the defaults of
``torch.testing.assert_close`` for the two dtypes (``ASSERT_CLOSE_DEFAULTS``), so ``check(out, ref)`` works
for comparisons that are not GEMMs. Integer outputs are compared exactly. NaN never passes. An optional
``calc_diff`` bound is a second criterion that every group must also meet.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from tabulate import tabulate

from ..dtypes import rule_for
from .numeric import ErrorStats, calc_diff, error_stats, scaled_tolerance, tolerance


@dataclass
class GroupCheck:
    group: int
    k: int | None
    stats: ErrorStats
    diff: float | None  # calc_diff(out, ref), when a bound was asked for
    max_diff: float | None

    @property
    def passed(self) -> bool:
        diff_ok = self.max_diff is None or (self.diff is not None and self.diff <= self.max_diff)
        return self.stats.passed and diff_ok  # a NaN diff fails: NaN <= bound is False


@dataclass
class CheckReport:
    name: str
    groups: list[GroupCheck]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.groups)

    @property
    def mismatches(self) -> int:
        return sum(g.stats.mismatches for g in self.groups)

    def summary(self) -> dict:
        """A few JSON-ready numbers for a report row."""
        worst = max(self.groups, key=lambda g: g.stats.max_abs_err, default=None)
        diffs = [g.diff for g in self.groups if g.diff is not None]
        return {
            "passed": self.passed,
            "groups": len(self.groups),
            "failed_groups": sum(not g.passed for g in self.groups),
            "mismatches": self.mismatches,
            "max_abs_err": worst.stats.max_abs_err if worst else 0.0,
            "worst_group": worst.group if worst else None,
            "calc_diff": max(diffs) if diffs else None,
        }

    def __str__(self) -> str:
        failed = [g for g in self.groups if not g.passed]
        numel = sum(g.stats.numel for g in self.groups)
        verdict = "passed" if not failed else f"FAILED: {len(failed)} of {len(self.groups)} groups fail"
        head = f"check {self.name!r} {verdict} ({self.mismatches} mismatches in {numel} elements)"
        rows = [_row(g) for g in self.groups]
        headers = ["group", "shape", "K", "rtol", "atol", "max|ref|", "mismatch", "max abs err @ index",
                   "NaN o/r", "Inf o/r", "calc_diff", "ok"]
        parts = [head, tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)]
        for g in failed[:4]:
            if g.stats.examples:
                parts.append(f"group {g.group}: first mismatches: {g.stats.examples_text()}")
            if g.max_diff is not None and not (g.diff is not None and g.diff <= g.max_diff):
                parts.append(f"group {g.group}: calc_diff {g.diff:.4g} exceeds the bound {g.max_diff:.4g}")
            if g.stats.out_all_zero and g.stats.numel:
                parts.append(f"group {g.group}: the output is all zeros (did the kernel run?)")
        return "\n".join(parts)


def _row(g: GroupCheck) -> list[str]:
    s = g.stats
    return [str(g.group), "x".join(map(str, s.shape)), "-" if g.k is None else str(g.k), f"{s.rtol:.3g}",
            f"{s.atol:.3g}", f"{s.max_abs_ref:.4g}", str(s.mismatches), f"{s.max_abs_err:.4g} @ {s.max_abs_index}",
            f"{s.nan_out}/{s.nan_ref}", f"{s.inf_out}/{s.inf_ref}",
            "-" if g.diff is None else f"{g.diff:.3g}", "ok" if g.passed else "FAIL"]


# torch.testing.assert_close's default (rtol, atol) per dtype; dtypes not listed (integers, bool, the fp8
# formats) compare exactly, as there. When out and ref differ in dtype, the looser of the two applies.
ASSERT_CLOSE_DEFAULTS = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def default_tolerance(out_dtype: torch.dtype, ref_dtype: torch.dtype) -> tuple[float, float]:
    """``torch.testing.assert_close``'s default (rtol, atol) for comparing these two dtypes."""
    pairs = [ASSERT_CLOSE_DEFAULTS.get(d, (0.0, 0.0)) for d in (out_dtype, ref_dtype)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _per_group(value, count: int, what: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"check: {what} has {len(value)} entries for {count} groups")
        return list(value)
    return [value] * count


def _finite_max_abs(ref: torch.Tensor) -> float:
    r = ref.detach().double().abs()
    if not r.numel():
        return 0.0
    return float(torch.where(torch.isfinite(r), r, torch.zeros_like(r)).max())  # no boolean indexing: cheap


_FP8 = tuple(getattr(torch, name) for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
             if hasattr(torch, name))


def group_tolerance(out: torch.Tensor, ref: torch.Tensor, in_dtype: torch.dtype, k: int,
                    acc_dtype: torch.dtype | None = None, k_batch: int = 1, scaled: bool = False) -> tuple[float, float]:
    """(rtol, atol) for one group from the dtypes, its K and its own max|ref| (0, 0 for integers);
    ``scaled``: a scaled fp8/int8 GEMM (``numeric.scaled_tolerance``). Unscaled fp8 (no ``acc_dtype`` given) takes
    the scaled model too, with scales of 1: fp8 products are exact, so CK-tile's term for 3 compute mantissa
    bits (rtol 2^-4, which let an output off by 8% or rounded to e4m3 pass) models no rounding that happens."""
    if scaled or (acc_dtype is None and k_batch == 1 and in_dtype in _FP8):
        return scaled_tolerance(in_dtype, out.dtype, k, _finite_max_abs(ref))
    if acc_dtype is None:
        rule = rule_for(in_dtype)
        acc_dtype = rule.accumulate if rule is not None else (
            torch.float32 if in_dtype.is_floating_point else torch.int32)
    return tolerance(in_dtype, out.dtype, acc_dtype, k, _finite_max_abs(ref), k_batch=k_batch)


def check(out, ref, *, rtol=None, atol=None, in_dtype: torch.dtype | None = None, k=None,
          acc_dtype: torch.dtype | None = None, k_batch: int = 1, max_diff: float | None = None,
          name: str = "check", max_examples: int = 8, scaled: bool = False,
          raise_on_failure: bool = True) -> CheckReport:
    """Compare ``out`` with ``ref`` (tensors, or lists of per-group tensors) and raise AssertionError with
    a readable report (per-group table, first mismatches with indices) when any group fails.

    Tolerances, per group:
      - integer outputs: exact (any non-zero ``rtol``/``atol`` is an error); an int32 output against an int64
        reference (``grouped_gemm_reference``'s) is compared with the reference wrapped to
        int32, as int8 GEMMs' int32 accumulators wrap (README: from K = 131072 with extreme codes);
      - ``rtol`` and ``atol`` given (floats, or one per group): used as given;
      - ``in_dtype`` and ``k`` given: derived from ``in_dtype``, ``out.dtype``, ``acc_dtype`` (default: the
        dtype table's accumulator), the group's ``k`` (int, or one per group) and the group's max|ref|;
      - none of these: ``torch.testing.assert_close``'s defaults for out's and ref's dtypes
        (``default_tolerance``; fp8 outputs, like integers, then compare exactly).
    ``max_diff``: also require ``calc_diff(out, ref) <= max_diff`` in every group.
    ``scaled``: the outputs are of a scaled fp8/int8 GEMM (``numeric.scaled_tolerance``; ``in_dtype`` is the
    quantized input dtype, the reference must carry the same quantization; it needs ``in_dtype`` and ``k``,
    or explicit ``rtol`` and ``atol``).
    Returns the ``CheckReport`` when everything passes (always, with ``raise_on_failure=False``).
    """
    single = isinstance(out, torch.Tensor)
    if single != isinstance(ref, torch.Tensor):
        raise ValueError(f"check: out and ref must both be tensors or both be lists of per-group tensors, got "
                         f"{type(out).__name__} and {type(ref).__name__}")
    outs, refs = ([out], [ref]) if single else (list(out), list(ref))
    for what, seq in (("out", outs), ("ref", refs)):
        kinds = {type(t).__name__ for t in seq if not isinstance(t, torch.Tensor)}
        if kinds:
            raise TypeError(f"check: every {what} must be a torch.Tensor, got {', '.join(sorted(kinds))}")
    if in_dtype is not None and not isinstance(in_dtype, torch.dtype):
        raise TypeError(f"check: in_dtype must be a torch.dtype (e.g. torch.bfloat16), got {in_dtype!r}")
    if len(outs) != len(refs):
        raise ValueError(f"check: {len(outs)} outputs but {len(refs)} references")
    if (rtol is None) != (atol is None):
        raise ValueError("check: give both rtol and atol, or neither (then in_dtype and k derive them)")
    if (in_dtype is None) != (k is None) and rtol is None:
        raise ValueError("check: give in_dtype and k together (the GEMM-aware tolerance needs both), or neither "
                         "for torch.testing.assert_close's defaults")
    if scaled and rtol is None and (in_dtype is None or k is None):
        raise ValueError("check: scaled=True derives the scaled-GEMM tolerance from in_dtype (the quantized input "
                         "dtype) and k; give both, or rtol and atol")
    n = len(outs)
    rtols, atols, ks = _per_group(rtol, n, "rtol"), _per_group(atol, n, "atol"), _per_group(k, n, "k")
    groups = []
    for g, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape):
            raise AssertionError(f"check {name!r}: group {g}: out shape {tuple(o.shape)} differs from "
                                 f"ref shape {tuple(r.shape)}")
        if o.dtype == torch.int32 and r.dtype == torch.int64:  # the accumulator's modulo-2^32 sum
            r = (torch.remainder(r + 2**31, 2**32) - 2**31).to(torch.int32)
        rt, at = _group_tolerances(name, g, o, r, rtols[g], atols[g], in_dtype, ks[g], acc_dtype, k_batch, scaled)
        stats = error_stats(o, r, rt, at, max_examples=max_examples)
        diff = calc_diff(o, r) if max_diff is not None else None
        groups.append(GroupCheck(g, ks[g], stats, diff, max_diff))
    report = CheckReport(name, groups)
    if raise_on_failure and not report.passed:
        raise AssertionError(str(report))
    return report


def _group_tolerances(name, g, o, r, rt, at, in_dtype, k, acc_dtype, k_batch, scaled=False) -> tuple[float, float]:
    if not o.dtype.is_floating_point:
        if (rt or 0.0) != 0.0 or (at or 0.0) != 0.0:
            raise ValueError(f"check {name!r}: group {g}: integer outputs ({o.dtype}) are compared exactly; "
                             f"rtol={rt}, atol={at} is not allowed")
        return 0.0, 0.0
    if rt is not None:
        if not (math.isfinite(rt) and math.isfinite(at)) or rt < 0 or at < 0:
            raise ValueError(f"check {name!r}: group {g}: tolerances must be finite and >= 0, got {rt}, {at}")
        return float(rt), float(at)
    if in_dtype is None and k is None:
        return default_tolerance(o.dtype, r.dtype)
    if in_dtype is None or k is None:
        raise ValueError(f"check {name!r}: group {g}: k is missing for this group (give one K per group)")
    return group_tolerance(o, r, in_dtype, int(k), acc_dtype, k_batch, scaled)
