"""The local checks of one step of the expert-parallel flow, in the order that localizes a bug: the first
stage that fails names it. Every rank runs them on its own trace against its own ``Expected`` (no
communication); ``verdict.py`` then makes one rank's failure every rank's.

| stage | passes when |
|---|---|
| handshake | every rank agreed on every split before data moved (and no exchange collective failed) |
| counts | rows sent per expert and rows received per (source, local expert) equal the regenerated routing |
| token order | the (source rank, token, slot) tag of every received row, after the reorder, is in canonical order |
| row contents | every received row (and its scales) is bit-equal to the token it claims to be |
| GEMM | exact: bit-equal to the reference; numeric: per-group tolerance and calc_diff bound (int8: exact) |
| returned rows | each (token, slot) got its expert's row back: exact bits, or per-expert tolerance |
| combine | exact: bit-equal; numeric: the per-element bound carried from the rows' tolerance, and calc_diff |
| rerun determinism | step 0 run again after the last step reproduces its rows and output bit for bit |
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ...dtypes import rule_for
from ..check import check, group_tolerance
from ..numeric import FP8_ACCUMULATOR_BITS, calc_diff, mantissa_bits, scaled_max_diff
from .config import MoEConfig
from .layer import Trace
from .reference import Expected

STAGES = ("handshake", "counts", "token order", "row contents", "GEMM", "returned rows", "combine",
          "rerun determinism")
FP32_EPS = 2.0**-24  # unit roundoff of the fp32 combine


@dataclass
class LocalVerdict:
    stage: str | None = None  # first failed stage on this rank
    detail: str = ""
    worst: dict = field(default_factory=dict)  # JSON-ready error numbers of the stages that ran

    @property
    def stage_index(self) -> int:
        return -1 if self.stage is None else STAGES.index(self.stage)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shape, dtype and bytes (NaN == NaN, -0.0 != 0.0): what "bit-equal" means here."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)) if a.numel() else True


def calc_diff_bound(out_dtype: torch.dtype, acc_dtype: torch.dtype, k: int, in_dtype: torch.dtype | None = None) -> float:
    """calc_diff allowed for a result rounded once to ``out_dtype`` after ``k`` accumulations in ``acc_dtype``
    (and an fp32 combine): (one output ulp + k accumulator ulps + one fp32 ulp)^2, relative. fp8 inputs add
    the tensor core's narrower accumulation between fp32 promotions (``numeric.FP8_ACCUMULATOR_BITS``, one
    per 32-deep MMA step, at most 4 steps per promotion; an H200 run showed calc_diff ~1e-9 at K=64, above
    the fp32-only bound). A routing or weight bug moves calc_diff to about 1."""
    eps_out = 2.0 ** -mantissa_bits(out_dtype) if out_dtype.is_floating_point else 0.0
    eps_acc = k * 2.0 ** -mantissa_bits(acc_dtype) if acc_dtype.is_floating_point else 0.0
    if in_dtype is not None and in_dtype.is_floating_point and in_dtype.itemsize == 1:
        eps_acc += min(-(-k // 32), 4) * 2.0 ** -FP8_ACCUMULATOR_BITS
    return (eps_out + eps_acc + 2 * FP32_EPS) ** 2


def diff_bound(cfg: MoEConfig, out_dtype: torch.dtype, in_dtype: torch.dtype) -> float:
    """The calc_diff bound of the GEMM's rows: the harness's for scaled recipes, else ``calc_diff_bound``."""
    if cfg.quant != "none":
        return scaled_max_diff(out_dtype)
    return calc_diff_bound(out_dtype, rule_for(in_dtype).accumulate, cfg.hidden, in_dtype)


def _mismatch(what: str, got: torch.Tensor, want: torch.Tensor) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{what}: got {tuple(got.shape)} {got.dtype}, expected {tuple(want.shape)} {want.dtype}"
    bad = (got != want) if not got.is_floating_point() else ~((got == want) | (got.isnan() & want.isnan()))
    where = bad.nonzero()
    first = where[0].tolist() if where.numel() else "bits"
    return f"{what}: {int(bad.sum())} element(s) differ, first at {first}"


def _check_counts(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    if trace.recv_counts is None:
        return "no counts (this rank skipped the exchange)" if trace.skipped else "counts never arrived"
    if not torch.equal(trace.send_counts.cpu(), exp.send_counts.cpu()):
        return (f"rows sent per expert {trace.send_counts.tolist()} differ from the routing's "
                f"{exp.send_counts.tolist()}")
    if not torch.equal(trace.recv_counts.cpu(), exp.recv_counts.cpu()):
        return (f"rows received per (source rank, local expert) {trace.recv_counts.tolist()} differ from "
                f"{exp.recv_counts.tolist()}")
    return None


def _check_order(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    if trace.tags is None:
        return "no rows were received"
    return None if torch.equal(trace.tags, exp.tags) else _mismatch("received (source, token, slot) tags",
                                                                    trace.tags, exp.tags)


def _check_rows(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    if not same_bits(trace.rows.data, exp.rows.data):
        return _mismatch("received rows", trace.rows.data.view(torch.uint8), exp.rows.data.view(torch.uint8))
    if exp.rows.scale is not None and not same_bits(trace.rows.scale, exp.rows.scale):
        return _mismatch("received row scales", trace.rows.scale, exp.rows.scale)
    return None


def _tolerance_check(outs, refs, cfg: MoEConfig, in_dtype: torch.dtype, name: str, worst: dict) -> str | None:
    bound = diff_bound(cfg, outs[0].dtype, in_dtype) if outs else 0.0
    try:
        report = check(outs, refs, in_dtype=in_dtype, k=cfg.hidden, max_diff=bound, name=name,
                       scaled=cfg.quant != "none")
    except AssertionError as exc:
        return str(exc)
    summary = report.summary()
    worst[f"{name} max_abs_err"] = summary["max_abs_err"]
    worst[f"{name} calc_diff"] = summary["calc_diff"]
    return None


def _check_gemm(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    if trace.gemm_error:
        return f"the GEMM raised {trace.gemm_error}"
    out, ref = trace.gemm_out, exp.gemm
    if cfg.mode == "exact":
        return None if same_bits(out, ref) else _mismatch("GEMM output", out, ref)
    if out.dtype != exp.gemm_dtype:  # the tolerance below follows the output's dtype: a wrong one must not set its own
        return (f"GEMM output: dtype {out.dtype}, expected {exp.gemm_dtype} (the dtype table's output, or the "
                "recipe's)")
    sizes = exp.group_sizes
    return _tolerance_check(list(out.split(sizes)), list(ref.split(sizes)), cfg, exp.rows.data.dtype, "GEMM",
                            worst)


def _slot_groups(exp: Expected) -> list[tuple[int, torch.Tensor]]:
    return [(e, exp.slot_experts == e) for e in torch.unique(exp.slot_experts).tolist()]


def _check_returned(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    got, ref = trace.returned, exp.returned
    if cfg.mode == "exact":
        return None if same_bits(got, ref) else _mismatch("returned rows [token, slot, n]", got, ref)
    if got.shape != ref.shape:
        return _mismatch("returned rows [token, slot, n]", got, ref)
    groups = _slot_groups(exp)
    return _tolerance_check([got[m] for _, m in groups], [ref[m] for _, m in groups], cfg, exp.rows.data.dtype,
                            "returned", worst)


def _combine_bound(trace: Trace, exp: Expected, cfg: MoEConfig) -> torch.Tensor:
    """Per element: sum over slots of |w| * (atol_e + rtol_e * |ref row|) of the slot's expert (the rows'
    own per-group tolerance), plus the fp32 rounding of the combine itself."""
    in_dtype = exp.rows.data.dtype
    atol = torch.zeros_like(exp.weights, dtype=torch.float64)
    rtol = torch.zeros_like(atol)
    for _, mask in _slot_groups(exp):
        r, a = group_tolerance(trace.returned[mask], exp.returned[mask], in_dtype, cfg.hidden,
                               scaled=cfg.quant != "none")
        rtol[mask], atol[mask] = r, a
    w = exp.weights.double().abs().unsqueeze(-1)
    ref_rows = exp.returned.double().abs()
    rows_term = (w * (atol.unsqueeze(-1) + rtol.unsqueeze(-1) * ref_rows)).sum(1)
    return rows_term + 2 * exp.weights.shape[1] * FP32_EPS * (w * ref_rows).sum(1)


def _check_combine(trace: Trace, exp: Expected, cfg: MoEConfig, worst: dict) -> str | None:
    out, ref = trace.out, exp.out
    if cfg.mode == "exact":
        return None if same_bits(out, ref.float()) else _mismatch("combined output", out, ref.float())
    if out.shape != ref.shape:
        return _mismatch("combined output", out, ref)
    err = (out.double() - ref).abs()
    bad = ~(err <= _combine_bound(trace, exp, cfg))  # NaN fails
    diff = calc_diff(out, ref) if out.numel() else 0.0
    limit = diff_bound(cfg, trace.returned.dtype, exp.rows.data.dtype) + 2 * FP32_EPS
    worst["combine max_abs_err"] = float(err[~err.isnan()].max()) if out.numel() else 0.0
    worst["combine calc_diff"] = diff
    if int(bad.sum()):
        where = bad.nonzero()[0].tolist()
        return (f"combined output: {int(bad.sum())} of {out.numel()} elements outside the bound, first at "
                f"{where}: got {float(out[tuple(where)]):.6g}, expected {float(ref[tuple(where)]):.6g}")
    if not diff <= limit:
        return f"combined output: calc_diff {diff:.3g} exceeds {limit:.3g}"
    return None


_STAGE_CHECKS = (("counts", _check_counts), ("token order", _check_order), ("row contents", _check_rows),
                 ("GEMM", _check_gemm), ("returned rows", _check_returned), ("combine", _check_combine))
_STAGE_INPUT = {"counts": "recv_counts", "token order": "tags", "row contents": "rows", "GEMM": "gemm_out",
                "returned rows": "returned", "combine": "out"}  # the trace field each stage judges


def check_step(trace: Trace, exp: Expected, cfg: MoEConfig) -> LocalVerdict:
    """Run the stages in order on one step's trace; stop at the first failure."""
    worst: dict = {}
    if trace.error is not None and trace.error[0] == "handshake":
        return LocalVerdict("handshake", trace.error[1])
    for stage, run in _STAGE_CHECKS:
        if trace.error is not None and trace.error[0] == stage:
            return LocalVerdict(stage, trace.error[1], worst)
        if trace.error is not None and getattr(trace, _STAGE_INPUT[stage]) is None:
            continue  # a phase failed before producing this stage's input: the failure names its own stage
        try:
            problem = run(trace, exp, cfg, worst)
        except Exception as exc:  # noqa: BLE001 - a check that cannot run on what arrived is that stage failing
            problem = f"the check raised {type(exc).__name__}: {exc}"
        if problem is not None:
            return LocalVerdict(stage, problem, worst)
    return LocalVerdict(None, "", worst)


def check_rerun(first: Trace, rerun: Trace) -> str | None:
    """None when the rerun reproduced the first run's returned rows and output bit for bit."""
    for what in ("returned", "out"):
        a, b = getattr(first, what), getattr(rerun, what)
        if not same_bits(a, b):
            return f"rerun of step 0: {_mismatch(what, b, a)}"
    return None
