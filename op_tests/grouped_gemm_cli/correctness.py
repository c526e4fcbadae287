"""Run one (case, variant, layout, form) through ckgemm into NaN-poisoned outputs and judge it against
ckgemm.testing's reference (computed beforehand from the op's inputs, which must come back unchanged) with
CK-tile's per-group tolerances (int8 exact; fp8 by the accumulation model, its products being exact). Scaled
variants (``--quant``) are judged against the reference with the same quantization, under the scaled tolerance
and a calc_diff bound (``numeric.scaled_max_diff``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

import ckgemm
from ckgemm.testing import calc_diff, check, data, gpu_verify, group_tolerance
from ckgemm.testing.numeric import scaled_max_diff
from ckgemm.testing.reference import grouped_gemm_reference, grouped_gemm_reference_packed

from . import quantized
from .plan import Variant

SCALED_OUTPUT = torch.bfloat16  # the scaled ops' default out_dtype


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
    scale_a: object = None  # scaled variants: per-group lists (list form) or tensors (packed)
    scale_b: object = None
    refs: list | None = None  # the per-group references the outputs were judged against (peers are too)

    @property
    def scaled(self) -> bool:
        return self.scale_a is not None

    def poison(self) -> None:
        """Fill the outputs with the poison value again (before timing: a timed call that writes nothing, or
        only some groups, then fails the re-check instead of leaving the first call's results in place)."""
        for t in (self.out if isinstance(self.out, list) else [self.out]):
            t.copy_(data.poisoned(t.shape, t.dtype, t.device))

    def call(self):
        if self.form == "packed":
            return ckgemm.grouped_gemm_packed(self.a, self.b, self.sizes, layout=self.layout, out=self.out,
                                              backend=self.backend, scale_a=self.scale_a, scale_b=self.scale_b)
        return ckgemm.grouped_gemm_out(self.a, self.b, self.out, layout=self.layout, backend=self.backend,
                                       scale_a=self.scale_a, scale_b=self.scale_b)


@dataclass
class Outcome:
    passed: bool
    summary: dict = field(default_factory=dict)
    report: str = ""  # the full check report when it failed
    dispatch: str = ""
    kernel: str = ""  # the kernel config(s) the groups ran, from last_dispatch().paths


def output_dtype(variant: Variant) -> torch.dtype:
    return ckgemm.rule_for(variant.dtype).output if variant.quant == "none" else SCALED_OUTPUT


def prepare(case, variant: Variant, layout: str, form: str, seed: int, device, backend) -> Prepared:
    out_dtype = output_dtype(variant)
    scaled = variant.quant != "none"
    if form == "packed":
        if scaled:
            a, b, sizes, sa, sb = quantized.packed_inputs(case, variant.dtype, variant.quant, layout, seed, device)
        else:
            (a, b, sizes), sa, sb = data.packed_inputs(case, variant.dtype, layout, seed, device), None, None
        out = data.poisoned((a.shape[0], case.ns[0]), out_dtype, device)
        return Prepared(form, layout, a, b, out, sizes, backend, sa, sb)
    if scaled:
        a, b, sa, sb = quantized.group_inputs(case, variant.dtype, variant.quant, layout, seed, device)
    else:
        (a, b), sa, sb = data.group_inputs(case, variant.dtype, layout, seed, device), None, None
    outs = [data.poisoned((m, n), out_dtype, device) for m, n, _ in case.shapes]
    return Prepared(form, layout, a, b, outs, None, backend, sa, sb)


def _references(p: Prepared, case) -> tuple[list, list]:
    """Per-group (outputs, references) on the run device; scaled runs give the reference (codes, scale)."""
    if p.form == "packed":
        a, b = ((p.a, p.scale_a), (p.b, p.scale_b)) if p.scaled else (p.a, p.b)
        ref = grouped_gemm_reference_packed(a, b, case.ms, layout=p.layout)
        return list(torch.split(p.out, case.ms)), list(torch.split(ref, case.ms))
    a, b = (list(zip(p.a, p.scale_a)), list(zip(p.b, p.scale_b))) if p.scaled else (p.a, p.b)
    return list(p.out), grouped_gemm_reference(a, b, layout=p.layout)


def _gpu_passes(outs, refs, dtype, ks, scaled: bool, bound) -> tuple[bool, dict]:
    """gpu_verify per group (statistics only cross to the host), plus the calc_diff bound when scaled."""
    worst, paths, ok = 0.0, set(), True
    for o, r, k in zip(outs, refs, ks):
        rtol, atol = group_tolerance(o, r, dtype, k, scaled=scaled)
        stats = gpu_verify(o, r, rtol, atol)
        ok &= stats.passed and (bound is None or calc_diff(o, r) <= bound)
        worst = max(worst, stats.max_abs_err)
        paths.add(stats.path.split(" (")[0])
    return ok, {"mismatches": 0, "max_abs_err": worst, "verify": "/".join(sorted(paths))}


def judge(outs, refs, dtype: torch.dtype, ks, name: str, scaled: bool = False) -> Outcome:
    """On a GPU: gpu_verify per group; a failure, or any CPU run, goes through ``check`` for the full
    per-group report (first mismatches with indices)."""
    bound = scaled_max_diff(outs[0].dtype) if scaled and outs else None
    on_gpu = bool(outs) and outs[0].device.type == "cuda"
    if on_gpu:
        ok, summary = _gpu_passes(outs, refs, dtype, ks, scaled, bound)
        if ok:
            return Outcome(True, summary)
    report = check(outs, refs, in_dtype=dtype, k=list(ks), name=name, scaled=scaled, max_diff=bound,
                   raise_on_failure=False)
    summary = {k: report.summary()[k] for k in ("mismatches", "max_abs_err") + (("calc_diff",) if scaled else ())}
    if not report.passed:
        return Outcome(False, summary, str(report))
    if on_gpu:  # gpu_verify failed but the CPU check passed: the two paths disagree, which is a bug too
        return Outcome(False, summary, "gpu_verify and check disagree:\n" + str(report))
    return Outcome(True, summary)


def kernel_config(dispatch) -> str:
    """The distinct paths of a dispatch record with their group counts, e.g.
    'cutlass:coop_128x256x64_c1x2 (4 stages) x3, skip:empty x1', with each kernel's stages."""
    if dispatch is None:
        return "?"
    return dispatch.config_summary or "no groups"


def cell_row(variant: Variant, layout: str, item, outcome: Outcome, backend) -> dict:
    """The report row of one checked cell (timing columns are added to it when the cell is timed)."""
    return dict(op=f"grouped_gemm_{item.form}", backend=backend or "auto", dtype=variant.name, layout=layout,
                shape=item.case.id,
                config=item.case.purpose + ("" if variant.quant == "none" else f" [{variant.quant} scales]"),
                error=outcome.summary, passed=outcome.passed, form=item.form, quant=variant.quant,
                kernel=outcome.kernel)


def _inputs(p: Prepared) -> list:
    seq = (lambda x: list(x) if isinstance(x, (list, tuple)) else [x])
    return [t for x in (p.a, p.b, p.sizes, p.scale_a, p.scale_b) if x is not None for t in seq(x)]


def run_correctness(case, variant: Variant, layout: str, form: str, seed: int, device, backend):
    """Returns (Outcome, Prepared, recheck). The reference is computed before the op runs, from the inputs it
    is given, and the inputs are compared with copies afterwards: an op that writes its inputs fails. An
    exception from the op is a failure, reported with its message. ``recheck()`` judges the outputs again
    against the same reference (after timing: the timed calls' results are checked too)."""
    p = prepare(case, variant, layout, form, seed, device, backend)
    name = f"{variant.label} {layout} {form} {case}"
    try:
        outs, refs = _references(p, case)
    except Exception as exc:  # noqa: BLE001 - a reference that cannot be computed fails this cell, not the run
        return Outcome(False, {"error": "reference"}, f"{name}: the reference raised {type(exc).__name__}: {exc}"), \
            p, None
    p.refs = refs
    before = [t.clone() for t in _inputs(p)]
    try:
        p.call()
    except Exception as exc:  # noqa: BLE001 - any error of the op is a failed case, reported as such
        return Outcome(False, {"error": type(exc).__name__}, f"{name}: {type(exc).__name__}: {exc}"), p, None
    record = ckgemm.last_dispatch()
    bits = (lambda t: t.reshape(-1).view(torch.uint8))  # bit for bit: NaN codes compare equal to themselves
    changed = [i for i, (t, c) in enumerate(zip(_inputs(p), before)) if not torch.equal(bits(t), bits(c))]
    if changed:
        return Outcome(False, {"error": "input written"}, f"{name}: the op changed its inputs (tensors {changed} "
                       "of a, b, group sizes and scales, in that order)"), p, None

    def recheck() -> Outcome:
        return judge(outs, refs, variant.dtype, case.ks, name, scaled=p.scaled)
    outcome = recheck()
    outcome.dispatch, outcome.kernel = str(record), kernel_config(record)
    return outcome, p, recheck
