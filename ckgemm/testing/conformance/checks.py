"""Running one check of the catalogue on one kernel and dtype: the call, the sub-checks in order, the
verdict (``pass``, ``fail``, ``unsupported`` when the kernel refused by raising, ``n/a`` when the check
cannot apply here, ``error`` when the suite itself failed) and the numbers behind it.
"""
from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field

import torch

from . import guard, operands
from .catalogue import DETERMINISM_REPEATS, Check
from .judge import judge
from .kernel import Kernel, describe, is_fatal
from ..bench import capture_graph
from ..data import poisoned, unwritten
from ..shapes import Case

STATUSES = ("pass", "fail", "unsupported", "n/a", "error")
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Context:
    kernel: Kernel
    device: torch.device
    dtype: torch.dtype
    dtype_name: str
    recipe: str
    tier: dict
    seed: int
    out_dtype: torch.dtype | None = None  # None: by the dtype table (bf16 with scales)


@dataclass
class Row:
    check: str
    title: str
    purpose: str
    form: str
    layout: str
    dtype: str
    quant: str
    status: str
    failed: str = ""  # the sub-check that decided a failure: outputs, outside, inputs, unwritten, values, ...
    detail: str = ""
    case: str = ""
    seed: int | None = None
    metrics: dict = field(default_factory=dict)
    report: str = ""  # the full per-group report of a failed comparison


# Why a case is n/a in a form that cannot express it (a list op on a packed-only check, a packed op on per-group
# N and K), keyed by the op's form.
FORM_ONLY = {"list": "packed form only", "packed": "list form only (per-group N and K)"}


def _reasons(ctx: Context) -> dict:
    """Why each requirement of catalogue.Check.requires is unmet here (absent: it is met)."""
    k, cuda = ctx.kernel, ctx.device.type == "cuda"
    reasons = {
        "out": None if k.takes_out else "the op has no out= parameter, so it allocates its outputs: unwritten "
        "elements and writes outside them cannot be seen",
        "int8_plain": None if (ctx.dtype == torch.int8 and ctx.recipe == "none") else "int8 without scales only",
        "cuda": None if cuda else "needs a CUDA device",
        "packed": None if k.form == "packed" else FORM_ONLY["list"],
        "device_sizes": None if not k.host_sizes else "the op reads group sizes on the host "
        "(conformance_host_sizes), so a graph cannot replay new sizes",
        "host_checkable_sizes": None if not cuda else "on a GPU the sizes stay on the device, where a kernel "
        "that checks them can only trap (ending the process's CUDA context)",
        "scaled": None if ctx.recipe != "none" else "needs scales (--quant tensor|row|block)",
    }
    return {key: why for key, why in reasons.items() if why}


def case_seed(ctx: Context, check: Check) -> int:
    return ctx.seed * 1009 + zlib.crc32(check.id.encode()) % 1000


def run_check(ctx: Context, check: Check) -> Row:
    row = Row(check.id, check.title, check.purpose, ctx.kernel.form, ctx.kernel.layout, ctx.dtype_name, ctx.recipe,
              "n/a", seed=case_seed(ctx, check))
    unmet = {key: why for key, why in _reasons(ctx).items() if key in check.requires}
    try:
        case = check.build(ctx.tier, ctx.kernel.form, row.seed)
        if case is None:  # for a list op, the same reason as an unmet "packed" requirement: said once
            unmet.setdefault("packed" if ctx.kernel.form == "list" else "list", FORM_ONLY[ctx.kernel.form])
        if unmet:
            row.detail = "; ".join(unmet.values())
            return row
        row.case = case.id
        ops = operands.build(case, ctx.kernel.form, ctx.kernel.layout, ctx.dtype, ctx.recipe, row.seed, ctx.device,
                             out_dtype=ctx.out_dtype, values=check.values)
        RUNNERS[check.kind](ctx, check, ops, row)
    except Exception as exc:  # noqa: BLE001 - a failure of the suite itself, never the op's verdict
        row.status, row.failed, row.detail = "error", "suite", f"the suite failed: {describe(exc)}"
    return row


def _fail(row: Row, failed: str, detail: str, status: str = "fail") -> bool:
    row.status, row.failed, row.detail = status, failed, detail
    return False


def _refused(row: Row, exc: Exception, what: str = "") -> bool:
    if is_fatal(exc):
        return _fail(row, "crash", f"{what}the device faulted: {describe(exc)}")
    return _fail(row, "", f"{what}the op raised {describe(exc)}", status="unsupported")


def _outputs(ops, ret, guarded) -> tuple[list | None, str]:
    """Per-group outputs of a call, or why what came back is wrong."""
    c = ops.case
    if guarded is not None:
        given = [guarded.out] if ops.form == "packed" else guarded.views
        got = [ret] if ops.form == "packed" else ret
        if ret is not None and (not isinstance(got, (list, tuple)) or len(got) != len(given) or any(
                not isinstance(r, torch.Tensor) or r.data_ptr() != v.data_ptr() or r.shape != v.shape
                for r, v in zip(got, given))):
            return None, "given out=, it returned other tensors instead of the outputs it was given"
        return guarded.views, ""
    if ops.form == "packed":
        want = [(sum(c.ms), c.ns[0])]
        got = [ret] if isinstance(ret, torch.Tensor) else None
    else:
        want = [(m, n) for m, n, _ in c.shapes]
        got = list(ret) if isinstance(ret, (list, tuple)) else None
    if got is None:
        return None, f"returned {type(ret).__name__}, expected " + ("a tensor" if ops.form == "packed" else "a list")
    if len(got) != len(want):
        return None, f"returned {len(got)} outputs for {len(want)} groups"
    for g, (r, shape) in enumerate(zip(got, want)):
        label = "out" if ops.form == "packed" else f"group {g}: output"
        if not isinstance(r, torch.Tensor) or tuple(r.shape) != shape:
            return None, f"{label} has shape {tuple(getattr(r, 'shape', ()))}, expected {shape}"
        if r.dtype != ops.out_dtype or r.device != ops.device:
            return None, f"{label} is {r.dtype} on {r.device}, expected {ops.out_dtype} on {ops.device}"
    return (list(torch.split(got[0], c.ms)) if ops.form == "packed" else got), ""


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(BITS[t.element_size()])


def _changed(ops, pristine) -> str:
    for i, (now, before) in enumerate(zip(ops.inputs(), pristine)):
        if not torch.equal(_bits(now), _bits(before)):
            return f"input tensor #{i} (shape {tuple(now.shape)}, {now.dtype}) was modified by the call"
    return ""


def _unwritten(guarded, case) -> str:
    counts = guarded.unwritten_counts()
    bad = [(g, c) for g, c in enumerate(counts) if c]
    if not bad:
        return ""
    g, count = bad[0]
    m, n, k = case.shapes[g]
    more = f" (and {len(bad) - 1} more group(s))" if len(bad) > 1 else ""
    return f"group {g} (M={m}, N={n}, K={k}): {count} of {m * n} output elements never written{more}"


def execute(ctx: Context, ops, row: Row, what: str = ""):
    """Call the op once and run the structural sub-checks. Returns the per-group outputs, or None after
    recording the failure (or refusal) in ``row``."""
    kernel = ctx.kernel
    pristine = [t.clone() for t in ops.inputs()]
    guarded = guard.allocate(ops.case, ops.form, ops.out_dtype, ctx.device) if kernel.takes_out else None
    try:
        ret = kernel(ops.args(), out=None if guarded is None else guarded.out,
                     out_dtype=ops.out_dtype if ops.scaled else None)
    except Exception as exc:  # noqa: BLE001 - a refusal (unsupported) or a device fault
        _refused(row, exc, what)
        return None
    outs, problem = _outputs(ops, ret, guarded)
    checks = [("outputs", problem)]
    if outs is not None:
        checks += [("outside", guarded.guard_writes() if guarded else ""), ("inputs", _changed(ops, pristine)),
                   ("unwritten", _unwritten(guarded, ops.case) if guarded else "")]
    for failed, detail in checks:
        if detail:
            _fail(row, failed, what + detail)
            return None
    return outs


def verdict(row: Row, outs, refs, ops, what: str = "") -> bool:
    ok, detail, metrics, report = judge(outs, refs, ops)
    row.metrics.update(metrics)
    if not ok:
        row.report = report
        return _fail(row, "values", what + detail)
    return True


def run_values(ctx, check, ops, row: Row) -> None:
    outs = execute(ctx, ops, row)
    if outs is not None and verdict(row, outs, ops.reference(), ops):
        row.status, row.detail = "pass", _summary(row.metrics)


def _summary(metrics: dict) -> str:
    parts = []
    if metrics.get("max_abs_err") is not None:
        parts.append(f"max abs err {metrics['max_abs_err']:.3g}")
    if metrics.get("calc_diff") is not None:
        parts.append(f"calc_diff {metrics['calc_diff']:.2g}")
    return ", ".join(parts) or "exact"


def _first_difference(outs, again) -> str:
    for g, (o, r) in enumerate(zip(outs, again)):
        differ = int((_bits(o) != _bits(r)).sum())
        if differ:
            return f"group {g}: {differ} of {o.numel()} elements differ"
    return ""


def run_determinism(ctx, check, ops, row: Row) -> None:
    outs = execute(ctx, ops, row)
    if outs is None or not verdict(row, outs, ops.reference(), ops):
        return
    first = [o.clone() for o in outs]
    for call in range(2, DETERMINISM_REPEATS + 1):
        again = execute(ctx, ops, row, f"call {call}: ")
        if again is None:
            return
        difference = _first_difference(first, again)
        if difference:
            _fail(row, "determinism", f"call {call} differs from call 1 bit for bit: {difference}")
            return
    row.status, row.detail = "pass", f"{DETERMINISM_REPEATS} calls bitwise equal; {_summary(row.metrics)}"


def run_poison(ctx, check, ops, row: Row) -> None:
    run_values(ctx, check, ops, row)
    if row.status == "pass":
        row.detail = f"every element written, guard bands intact; {row.detail}"


def _poison_(t: torch.Tensor) -> None:
    t.copy_(poisoned(t.shape, t.dtype, t.device))


def run_graph(ctx, check, ops, row: Row) -> None:
    """Capture one call with the case's sizes; replay after copying rolled sizes in, then the originals."""
    kernel = ctx.kernel
    sizes = ops.sizes.clone()
    guarded = guard.allocate(ops.case, ops.form, ops.out_dtype, ctx.device) if kernel.takes_out else None
    kwargs = kernel.keyword_args(None if guarded is None else guarded.out, ops.out_dtype if ops.scaled else None)
    returned = []
    try:
        graph = capture_graph(lambda: returned.append(kernel.fn(*ops.args(sizes), **kwargs)))
    except Exception as exc:  # noqa: BLE001 - it cannot be captured (a host sync, say): not a wrong answer
        _fail(row, "", f"capture: the op cannot be captured: {describe(exc)}", status="unsupported")
        return
    ms = list(ops.case.ms)
    n, k = ops.case.ns[0], ops.case.ks[0]
    for new in (ms[1:] + ms[:1], ms):
        sizes.copy_(torch.tensor(new, dtype=sizes.dtype))
        out = guarded.out if guarded is not None else returned[-1]
        _poison_(guarded.buffer if guarded is not None else out)
        what = f"replay with sizes {new}: "
        try:
            graph.replay()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001
            _refused(row, exc, what)
            return
        if guarded is not None and (guarded.guard_writes() or _unwritten_any(out)):
            _fail(row, "graph", what + (guarded.guard_writes() or "output elements left unwritten"))
            return
        replayed = dataclasses.replace(ops, case=Case(tuple((m, n, k) for m in new), ops.case.purpose))
        if not verdict(row, list(torch.split(out, new)), ops.reference(new), replayed, what):
            row.failed = "graph"
            return
    row.status, row.detail = "pass", f"replayed with sizes {ms[1:] + ms[:1]} and {ms}; {_summary(row.metrics)}"


def _unwritten_any(out: torch.Tensor) -> bool:
    return bool(unwritten(out).any())


def _bad_operands(check_id: str, ops):
    """The case's valid operands with the one thing ``check_id`` breaks."""
    def shorter(x):
        return x.reshape(1).repeat(2) if x.dim() == 0 else x[:-1].contiguous()
    if check_id == "bad_k":
        narrow = (lambda x: x[:, :-8].contiguous())
        a = narrow(ops.a) if ops.form == "packed" else [ops.a[0], narrow(ops.a[1]), *ops.a[2:]]
        return dataclasses.replace(ops, a=a)
    if check_id == "bad_groups":
        b = ops.b[:-1] if ops.form == "packed" else list(ops.b[:-1])
        sb = None if not ops.scaled else (ops.scale_b[:-1] if ops.form == "packed" else list(ops.scale_b[:-1]))
        return dataclasses.replace(ops, b=b, scale_b=sb)
    if check_id == "bad_scale":
        sa = shorter(ops.scale_a) if ops.form == "packed" else [shorter(ops.scale_a[0]), *ops.scale_a[1:]]
        return dataclasses.replace(ops, scale_a=sa)
    ms = list(ops.case.ms)
    if check_id == "bad_sizes":
        ms[-1] += 8
    else:  # bad_negative: -1 in the middle, the sum unchanged
        ms[2] += ms[1] + 1
        ms[1] = -1
    return dataclasses.replace(ops, sizes=torch.tensor(ms, dtype=ops.sizes.dtype, device=ops.sizes.device))


def run_bad_input(ctx, check, ops, row: Row) -> None:
    bad = _bad_operands(check.id, ops)
    guarded = guard.allocate(ops.case, ops.form, ops.out_dtype, ctx.device) if ctx.kernel.takes_out else None
    try:
        ctx.kernel(bad.args(), out=None if guarded is None else guarded.out,
                   out_dtype=ops.out_dtype if ops.scaled else None)
    except Exception as exc:  # noqa: BLE001 - raising is what this check wants
        if is_fatal(exc):
            _fail(row, "crash", f"the device faulted instead of a clear error: {describe(exc)}")
        elif not str(exc).strip():
            _fail(row, "message", f"raised {type(exc).__name__} without a message")
        elif guarded is not None and not bool(unwritten(guarded.buffer).all()):
            _fail(row, "wrote", f"raised ({describe(exc)}) but wrote into out= first")
        else:
            row.status, row.detail = "pass", f"raised {describe(exc)}"
        return
    _fail(row, "accepted", "returned a result for an invalid call instead of raising")


RUNNERS = {"values": run_values, "poison": run_poison, "determinism": run_determinism, "graph": run_graph,
           "bad_input": run_bad_input}
