"""aiter's op_tests helpers (``aiter.test_common``) on ckgemm's harness: ``checkAllclose``, ``perftest``,
``run_perftest`` and ``benchmark``, with their signatures and units (a mismatch ratio, microseconds).

Where these differ from aiter's:

- ``checkAllclose`` **raises** ``AssertionError`` when more than ``tol_err_ratio`` of the compared elements
  mismatch. aiter's prints "failed" and returns the ratio, and scripts that ignore the return value pass
  (ROCm/aiter#5030, #5422: eleven failing cases went unnoticed). ``strict=False`` restores the ratio-only
  behaviour. Below the ratio it returns the ratio, with aiter's yellow "warning". It compares with the rule of
  ``ckgemm.testing.numeric`` in float64 (``|a - b| <= atol + rtol * |b|``, as ``torch.isclose``; NaN never
  passes; an infinity only against the same one), so tensors of different dtypes compare (a bf16 output
  against an fp32 reference) and shapes that differ are an error rather than broadcast.
- ``perftest`` / ``run_perftest`` time with ``ckgemm.testing.bench``: device events per call, the L2
  flushed outside the timed window (or ``num_rotate_args`` copies of the positional arguments cycled
  instead), the median in microseconds. aiter's sums the profiler's kernel times per call and takes the mean
  without outliers; ``ckgemm.testing.breakdown`` gives that kernel-only view. ``use_cuda_event`` is accepted
  (ckgemm always times with events); ``needTrace`` writes a Chrome trace to ``ckgemm_logs/``. The output
  returned is the first, untimed call's.
- ``benchmark`` returns the call's arguments by name, updated with the dict the test returns, as aiter's; it
  logs nothing.
"""
from __future__ import annotations

import functools
import inspect
import os

import torch

from .. import kineto
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
    all are close. Raises ``AssertionError`` above ``tol_err_ratio`` (unless ``strict=False``) and, as aiter's,
    on a catastrophic result: a delta above ``max_abs_delta``, or with ``catastrophic_check`` a NaN/Inf or a
    delta above half of max|b|. ``mask`` (bool, broadcast to the shape): compare where True only."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{msg}checkAllclose: shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    bad = mismatch_mask(a, b, rtol, atol)
    keep = None
    if mask is not None:
        keep = torch.as_tensor(mask, device=bad.device).to(torch.bool).broadcast_to(bad.shape)
        bad = bad & keep
        compared = int(keep.sum())
    else:
        compared = bad.numel()
    mismatches = int(bad.sum())
    if compared == 0 or mismatches == 0:
        if printLog:
            _report(msg, "passed~" if compared else "skipped: nothing to compare", rtol, atol)
        return 0.0
    ratio = mismatches / compared
    a64, b64 = a.double()[bad], b.double()[bad]
    delta = (a64 - b64).abs()
    worst = float(delta.nan_to_num(nan=float("inf")).max())
    catastrophic = False
    if max_abs_delta is not None:
        catastrophic = worst > max_abs_delta
    elif catastrophic_check:
        a_in, b_in = (a, b) if keep is None else (a[keep], b[keep])  # masked-out padding may hold anything
        finite = bool(torch.isfinite(a_in.double()).all()) and bool(torch.isfinite(b_in.double()).all())
        b_max = max(float(b.double().abs().max()), 1.0) if b.is_floating_point() else float("inf")
        catastrophic = not finite or worst > b_max * _CATASTROPHIC_FRACTION
    failed = catastrophic or ratio > tol_err_ratio
    if printLog:
        shown = min(printNum, mismatches)
        detail = (f"\n    a    : {tuple(a.shape)}\n           {a64[:shown]}\n    b    : {tuple(b.shape)}\n"
                  f"           {b64[:shown]}\n    delta:\n           {delta[:shown]}") if failed else ""
        _report(msg, "catastrophic!" if catastrophic else "failed!" if failed else "warning!", rtol, atol, detail)
        print(f"-->max abs delta:{worst}, delta details: {ratio:.1%} ({mismatches} of {compared}) elements")
    if catastrophic or (strict and failed):
        kind = "catastrophic error" if catastrophic else "mismatch above tol_err_ratio"
        raise AssertionError(f"{msg}checkAllclose: {kind}: max abs delta {worst:.4g}, {ratio:.1%} ({mismatches} of "
                             f"{compared}) elements outside atol={atol} rtol={rtol} (tol_err_ratio={tol_err_ratio})")
    return ratio


def run_perftest(func, *args, num_iters: int = 101, num_warmup: int = 2, testGraph: bool = False,
                 num_rotate_args: int = 0, needTrace: bool = False, use_cuda_event: bool = False, **kwargs):
    """``(output, microseconds)``: the output of one untimed call of ``func(*args, **kwargs)``, then the median
    time of ``num_iters`` timed calls (graph replays with ``testGraph``)."""
    del use_cuda_event  # always device events
    if num_iters < 1 or num_warmup < 0:
        raise ValueError(f"run_perftest: need num_iters >= 1 and num_warmup >= 0, got {num_iters}, {num_warmup}")
    data = func(*args, **kwargs)
    rotate = rotating_copies(args, max_copies=num_rotate_args) if num_rotate_args > 1 else None
    result = bench(lambda *a: func(*a, **kwargs), warmup=num_warmup, iters=num_iters, graph=testGraph,
                   rotate=rotate or [args], flush=None if rotate else True, telemetry=False)
    if needTrace:
        os.makedirs("ckgemm_logs", exist_ok=True)
        path = os.path.join("ckgemm_logs", f"perftest_{getattr(func, '__name__', 'fn')}_{os.getpid()}.json")
        kineto.profile_table(lambda: func(*args, **kwargs), min(num_iters, 10), gpu=torch.cuda.is_available(),
                             trace_path=path)
        print(f"perftest: trace of {getattr(func, '__name__', 'fn')} written to {path}")
    return data, float(result) * 1e3


def perftest(num_iters: int = 101, num_warmup: int = 2, testGraph: bool = False, num_rotate_args: int = 0,
             needTrace: bool = False, use_cuda_event: bool = False):
    """Decorator: the decorated function returns ``(output, microseconds)`` (see ``run_perftest``)."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return run_perftest(func, *args, num_iters=num_iters, num_warmup=num_warmup, testGraph=testGraph,
                                num_rotate_args=num_rotate_args, needTrace=needTrace, use_cuda_event=use_cuda_event,
                                **kwargs)
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
                if not isinstance(result, dict):
                    raise TypeError(f"benchmark: {func.__name__} returned {type(result).__name__}; return a dict "
                                    "of the row's measured columns, or None")
                row.update(result)
            return row
        return wrapper
    return decorator
