"""aiter's op_tests helpers (``aiter.test_common``) on ckgemm's harness: ``checkAllclose``, ``perftest``,
``run_perftest`` and ``benchmark``, with their signatures and units (a mismatch ratio, microseconds).

Where these differ from aiter's:

- ``checkAllclose`` **raises** ``AssertionError`` when more than ``tol_err_ratio`` of the compared elements
  mismatch. aiter's prints "failed" and returns the ratio, and scripts that ignore the return value pass
  (ROCm/aiter#5030, #5422: eleven failing cases went unnoticed). ``strict=False`` restores the ratio-only
  behaviour (and, with ``printLog=False``, aiter's quiet path: the ratio at or above ``tol_err_ratio``, else
  1.0 for a catastrophic result rather than the exception). Below the ratio it returns the ratio, with
  aiter's yellow "warning". The NaN/Inf and max|b| tests of ``catastrophic_check`` look only where ``mask``
  compares (aiter's look at masked-out padding too). It compares with the rule of
  ``ckgemm.testing.numeric`` in float64 (``|a - b| <= atol + rtol * |b|``, as ``torch.isclose``; NaN never
  passes; an infinity only against the same one), so tensors of different dtypes compare (a bf16 output
  against an fp32 reference) and shapes that differ are an error rather than broadcast.
- ``perftest`` / ``run_perftest`` time with ``ckgemm.testing.bench``: device events per call, the L2
  flushed outside the timed window (or ``num_rotate_args`` copies of the positional and keyword arguments
  cycled instead), the median in microseconds. aiter's sums the profiler's kernel times per call and takes the
  mean without outliers; ``ckgemm.testing.breakdown`` gives that kernel-only view. ``use_cuda_event`` is
  accepted (ckgemm always times with events); ``needTrace`` writes a Chrome trace to ``ckgemm_logs/``;
  ``perftest(device="cpu")`` times on the host on a machine with a GPU too. The output returned comes from a
  first, untimed call. On a GPU the warm-up runs ``num_warmup`` calls and then more until 25 ms of device time
  has passed (``bench``'s ``warmup_ms``), so ``num_warmup=0`` still warms up.
- ``benchmark`` returns the call's arguments by name, updated with the dict the test returns, as aiter's; it
  logs nothing.
"""
from __future__ import annotations

import functools
import inspect
import os
from dataclasses import dataclass

import torch

from .. import device_info, kineto
from ..bench import bench, rotating_copies
from ..numeric import mismatch_mask

__all__ = ["benchmark", "checkAllclose", "perftest", "run_perftest"]

_CATASTROPHIC_FRACTION = 0.5  # aiter's: one element off by more than half of max|b| (with catastrophic_check)


def _report(msg: str, verdict: str, rtol: float, atol: float, detail: str = "") -> None:
    colour = 32 if verdict == "passed~" else 33 if verdict.startswith(("warning", "skipped")) else 31
    print(f"{msg}[checkAllclose atol={atol} rtol={rtol} \033[{colour}m{verdict}\033[0m]{detail}")


def checkAllclose(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-2, atol: float = 1e-2,
                  tol_err_ratio: float = 0.05, msg: str = "", printNum: int = 8, printLog: bool = True,
                  max_abs_delta: float | None = None, catastrophic_check: bool = False, mask=None, *,
                  strict: bool = True) -> float:
    """The fraction of the compared elements of ``a`` (output) and ``b`` (reference) that mismatch: 0 when
    all are close. Raises ``AssertionError`` above ``tol_err_ratio`` (unless ``strict=False``) and on a
    catastrophic result: a delta above ``max_abs_delta``, or with ``catastrophic_check`` a NaN/Inf or a delta
    above half of max(|b|, 1). With ``strict=False`` and ``printLog=False`` a catastrophic result returns 1.0
    instead, as aiter's quiet (tuner) path does. ``mask`` (bool, broadcast to the shape): compare where True."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{msg}checkAllclose: shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    bad = mismatch_mask(a, b, rtol, atol)
    if mask is not None:
        keep = torch.as_tensor(mask, device=bad.device).to(torch.bool).broadcast_to(bad.shape)
        bad = bad & keep
        compared = int(keep.sum())
        a_in, b_in = a[keep], b[keep]  # masked-out padding may hold anything
    else:
        compared = bad.numel()
        a_in, b_in = a, b
    mismatches = int(bad.sum())
    if compared == 0 or mismatches == 0:
        if printLog:
            _report(msg, "passed~" if compared else "skipped: nothing to compare", rtol, atol)
        return 0.0
    ratio = mismatches / compared
    a_bad, b_bad = a[bad].double(), b[bad].double()
    delta = (a_bad - b_bad).abs()
    worst = float(delta.nan_to_num(nan=float("inf"), posinf=float("inf")).max())
    catastrophic = False
    if max_abs_delta is not None:
        catastrophic = worst > max_abs_delta
    elif catastrophic_check:
        a_in, b_in = a_in.double(), b_in.double()  # fp8 has no isfinite or abs
        finite = bool(torch.isfinite(a_in).all()) and bool(torch.isfinite(b_in).all())
        b_max = max(float(b_in.abs().max()), 1.0) if b.is_floating_point() else float("inf")
        catastrophic = not finite or worst > b_max * _CATASTROPHIC_FRACTION
    failed = catastrophic or ratio > tol_err_ratio
    if printLog:
        shown = min(printNum, mismatches)
        detail = (f"\n    a    : {tuple(a.shape)}\n           {a_bad[:shown]}\n    b    : {tuple(b.shape)}\n"
                  f"           {b_bad[:shown]}\n    delta:\n           {delta[:shown]}") if failed else ""
        _report(msg, "catastrophic!" if catastrophic else "failed!" if failed else "warning!", rtol, atol, detail)
        print(f"-->max abs delta:{worst}, delta details: {ratio:.1%} ({mismatches} of {compared}) elements")
    if not strict and not printLog:  # aiter's quiet (tuner) path: the ratio at or above tol_err_ratio, else 1.0
        return ratio if ratio >= tol_err_ratio or not catastrophic else 1.0  # for a catastrophic result
    if catastrophic or (strict and failed):
        kind = "catastrophic error" if catastrophic else "mismatch above tol_err_ratio"
        raise AssertionError(f"{msg}checkAllclose: {kind}: max abs delta {worst:.4g}, {ratio:.1%} ({mismatches} of "
                             f"{compared}) elements outside atol={atol} rtol={rtol} (tol_err_ratio={tol_err_ratio})")
    return ratio


@dataclass(frozen=True)
class _Timing:
    num_iters: int = 101
    num_warmup: int = 2
    testGraph: bool = False
    num_rotate_args: int = 0
    needTrace: bool = False
    device: object = None


def _perftest(func, args: tuple, kwargs: dict, t: _Timing):
    """``run_perftest``'s work, with the function's keyword arguments kept apart from the timing options (a
    function of its own with a ``num_iters`` or ``func`` argument gets it)."""
    if t.num_iters < 1 or t.num_warmup < 0:
        raise ValueError(f"run_perftest: need num_iters >= 1 and num_warmup >= 0, got {t.num_iters}, {t.num_warmup}")
    data = func(*args, **kwargs)
    # With num_rotate_args, copies of the positional and keyword arguments are cycled (cold inputs, no flush);
    # otherwise the L2 is flushed before each timed call.
    sets = [(args, kwargs)]
    if t.num_rotate_args > 1:  # exactly that many sets, however large (an unbounded budget)
        sets = rotating_copies((args, kwargs), budget_bytes=1 << 62, max_copies=t.num_rotate_args)
    result = bench(lambda a, kw: func(*a, **kw), warmup=t.num_warmup, iters=t.num_iters, graph=t.testGraph,
                   rotate=sets, flush=len(sets) == 1, telemetry=False, device=t.device)
    if t.needTrace:
        name = getattr(func, "__name__", "fn")
        os.makedirs("ckgemm_logs", exist_ok=True)
        path = os.path.join("ckgemm_logs", f"perftest_{name}_{os.getpid()}.json")
        gpu = device_info.runs_on_gpu(t.device)
        kineto.profile_table(lambda: func(*args, **kwargs), min(t.num_iters, 10), gpu=gpu, trace_path=path)
        print(f"perftest: trace of {name} written to {path}")
    return data, float(result) * 1e3


def run_perftest(func, *args, num_iters: int = 101, num_warmup: int = 2, testGraph: bool = False,
                 num_rotate_args: int = 0, needTrace: bool = False, use_cuda_event: bool = False, **kwargs):
    """``(output, microseconds)``: the output of one untimed call of ``func(*args, **kwargs)`` (a kernel that
    writes into an argument has written it again by the time this returns), then the median time of
    ``num_iters`` timed calls (graph replays with ``testGraph``), on the GPU where there is one."""
    del use_cuda_event  # always device events
    return _perftest(func, args, kwargs, _Timing(num_iters, num_warmup, testGraph, num_rotate_args, needTrace))


def perftest(num_iters: int = 101, num_warmup: int = 2, testGraph: bool = False, num_rotate_args: int = 0,
             needTrace: bool = False, use_cuda_event: bool = False, device=None):
    """Decorator: the decorated function returns ``(output, microseconds)`` (see ``run_perftest``); every
    argument of the call goes to the function. ``device`` (ckgemm's addition): ``"cpu"`` times on the host on a
    machine with a GPU too."""
    del use_cuda_event
    timing = _Timing(num_iters, num_warmup, testGraph, num_rotate_args, needTrace, device)

    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return _perftest(func, args, kwargs, timing)
        return wrapper
    return decorator


def benchmark():
    """Decorator: the decorated test returns its arguments by name (defaults filled in), updated with the dict
    it returns, so each call is one row of a results table (``pandas.DataFrame(rows)``)."""
    def decorator(func):
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            row = dict(bound.arguments)
            result = func(*args, **kwargs)
            if result is not None:
                try:
                    row.update(result)
                except (TypeError, ValueError):
                    raise TypeError(f"benchmark: {func.__name__} returned {type(result).__name__}; return a dict "
                                    "of the row's measured columns (or key-value pairs), or None") from None
            return row
        return wrapper
    return decorator
