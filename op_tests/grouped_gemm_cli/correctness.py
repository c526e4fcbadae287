"""Run one (case, dtype, layout, form) through ckgemm into NaN-poisoned outputs and judge it against
ckgemm.testing's reference with CK-tile's per-group tolerances (int8 exact)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

import ckgemm
from ckgemm.testing import check, data, gpu_verify, group_tolerance
from ckgemm.testing.reference import grouped_gemm_reference, grouped_gemm_reference_packed


@dataclass
class Prepared:
    """Operands and outputs of one run; ``call()`` runs the op again into the same outputs (for timing)."""

    form: str
    layout: str
    a: object  # list of tensors (list form) or one tensor (packed)
    b: object
    out: object
    sizes: torch.Tensor | None = None
    backend: str | None = None

    def call(self):
        if self.form == "packed":
            return ckgemm.grouped_gemm_packed(self.a, self.b, self.sizes, layout=self.layout, out=self.out,
                                              backend=self.backend)
        return ckgemm.grouped_gemm_out(self.a, self.b, self.out, layout=self.layout, backend=self.backend)


@dataclass
class Outcome:
    passed: bool
    summary: dict = field(default_factory=dict)
    report: str = ""  # the full check report when it failed
    dispatch: str = ""


def prepare(case, dtype: torch.dtype, layout: str, form: str, seed: int, device, backend) -> Prepared:
    out_dtype = ckgemm.rule_for(dtype).output
    if form == "packed":
        a, b, sizes = data.packed_inputs(case, dtype, layout, seed, device)
        out = data.poisoned((a.shape[0], case.ns[0]), out_dtype, device)
        return Prepared(form, layout, a, b, out, sizes, backend)
    a, b = data.group_inputs(case, dtype, layout, seed, device)
    outs = [data.poisoned((m, n), out_dtype, device) for m, n, _ in case.shapes]
    return Prepared(form, layout, a, b, outs, None, backend)


def _references(p: Prepared, case) -> tuple[list, list]:
    """Per-group (outputs, references) on the run device."""
    if p.form == "packed":
        ref = grouped_gemm_reference_packed(p.a, p.b, case.ms, layout=p.layout)
        return list(torch.split(p.out, case.ms)), list(torch.split(ref, case.ms))
    return list(p.out), grouped_gemm_reference(p.a, p.b, layout=p.layout)


def judge(outs, refs, dtype: torch.dtype, ks, name: str) -> Outcome:
    """On a GPU: gpu_verify per group (statistics only cross to the host); a failure, or any CPU run,
    goes through ``check`` for the full per-group report."""
    on_gpu = bool(outs) and outs[0].device.type == "cuda"
    if on_gpu:
        worst, paths, ok = 0.0, set(), True
        for o, r, k in zip(outs, refs, ks):
            rtol, atol = group_tolerance(o, r, dtype, k)
            stats = gpu_verify(o, r, rtol, atol)
            ok &= stats.passed
            worst = max(worst, stats.max_abs_err)
            paths.add(stats.path.split(" (")[0])
        if ok:
            return Outcome(True, {"mismatches": 0, "max_abs_err": worst, "verify": "/".join(sorted(paths))})
    try:
        report = check(outs, refs, in_dtype=dtype, k=list(ks), name=name)
    except AssertionError as exc:
        return Outcome(False, {"mismatches": "see report"}, str(exc))
    summary = {k: report.summary()[k] for k in ("mismatches", "max_abs_err")}
    if on_gpu:  # gpu_verify failed but the CPU check passed: the two paths disagree, which is a bug too
        return Outcome(False, summary, "gpu_verify and check disagree:\n" + str(report))
    return Outcome(True, summary)


def run_correctness(case, dtype, dtype_name: str, layout: str, form: str, seed: int, device, backend):
    """Returns (Outcome, Prepared). An exception from the op is a failure, reported with its message."""
    p = prepare(case, dtype, layout, form, seed, device, backend)
    name = f"{dtype_name} {layout} {form} {case}"
    try:
        p.call()
    except Exception as exc:  # noqa: BLE001 - any error of the op is a failed case, reported as such
        return Outcome(False, {"error": type(exc).__name__}, f"{name}: {type(exc).__name__}: {exc}"), p
    dispatch = str(ckgemm.last_dispatch())
    outs, refs = _references(p, case)
    outcome = judge(outs, refs, dtype, case.ks, name)
    outcome.dispatch = dispatch
    return outcome, p
