"""CK-tile's host-side checkers (``ck_tile/host/check_err.hpp`` and the grouped GEMM example's
``calculate_rtol_atol``) by their names, for tests of a CK kernel ported from its C++ example to PyTorch.
Template arguments become the leading dtype arguments: ``get_relative_threshold<F16, F16, F32>(K)`` is
``get_relative_threshold(torch.float16, torch.float16, torch.float32, K)``.

Where these differ from CK's:

- ``check_err`` raises ``AssertionError`` on a failure (CK's returns false, which a C++ example folds into its
  exit status and a ported Python test can drop); ``strict=False`` returns False instead. Tensors of different
  shapes are an error (CK reports a size mismatch and returns false). Floating tensors of different dtypes
  compare in float64 with the rule and defaults of ``out``'s type (CK takes one element type for both), except
  e4m3, whose rounding-point rule compares codes and needs ``ref`` in the same dtype. For e4m3 the fourth
  argument is ``max_rounding_point_distance``, as in CK's fp8 overload (also by that keyword).
- ``calculate_rtol_atol`` takes ``max|ref|`` (the grouped GEMM test's convention); the example passes the signed
  maximum, which is too small when the largest magnitude is negative.
- The thresholds are ``ckgemm.testing.numeric``'s: the newest CK formula (``e = floor(log2 max)``, a full
  output ulp), as ``tolerance`` and ``check`` use them.
"""
from __future__ import annotations

import sys

import torch

from ..numeric import ck_absolute_threshold, ck_relative_threshold, tolerance

__all__ = ["calculate_rtol_atol", "check_err", "get_absolute_threshold", "get_relative_threshold"]

ERROR_DETAIL_LIMIT = 4  # CK-tile's: mismatches printed before the summary line
_E4M3 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)  # CK's fp8_t; its bf8_t (e5m2) takes the float rule


def get_relative_threshold(compute: torch.dtype, out: torch.dtype, acc: torch.dtype | None = None,
                           number_of_accumulations: int = 1) -> float:
    """``get_relative_threshold<compute, out, acc>(n)`` (``acc`` defaults to ``compute``, as in CK)."""
    return ck_relative_threshold(compute, out, acc or compute, number_of_accumulations)


def get_absolute_threshold(compute: torch.dtype, out: torch.dtype, acc: torch.dtype | None,
                           max_possible_num: float, number_of_accumulations: int = 1) -> float:
    """``get_absolute_threshold<compute, out, acc>(max, n)`` (``acc`` None: ``compute``)."""
    return ck_absolute_threshold(compute, out, acc or compute, max_possible_num, number_of_accumulations)


def calculate_rtol_atol(K: int, kbatch: int, max_accumulated_value: float, a_dtype: torch.dtype,
                        b_dtype: torch.dtype, acc_dtype: torch.dtype, c_dtype: torch.dtype) -> tuple[float, float]:
    """The grouped GEMM example's ``calculate_rtol_atol<A, B, Acc, C>(K, kbatch, max)``: the compute type is A
    where it is narrower than B, else B (as CK picks it); ``max_accumulated_value`` the largest |ref| of the
    group."""
    compute = a_dtype if a_dtype.itemsize < b_dtype.itemsize else b_dtype
    return tolerance(compute, c_dtype, acc_dtype, K, abs(float(max_accumulated_value)), k_batch=kbatch)


def _infinity_error(o: torch.Tensor, r: torch.Tensor, allow_infinity_ref: bool) -> torch.Tensor:
    """CK's rule for special values: a non-finite value on either side fails, except equal infinities where
    ``allow_infinity_ref`` is set (NaN always fails)."""
    either = ~torch.isfinite(o) | ~torch.isfinite(r)
    same_infinity = torch.isinf(o) & torch.isinf(r) & (o == r)
    return either & ~(same_infinity & allow_infinity_ref)


def _e4m3_distance(out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Codes between two e4m3 values of the same sign (CK's rounding-point distance); a huge one across signs."""
    o, r = out.view(torch.int8).int(), ref.view(torch.int8).int()
    return torch.where((o ^ r) < 0, torch.full_like(o, 1 << 30), (o - r).abs())


def _mismatches(out, ref, rtol, atol, allow_infinity_ref, rounding_points) -> torch.Tensor:
    """CK-tile's rule for ``out``'s element type: integers ``|o - r| > atol`` (exact); e4m3 outside ``atol``
    and more than ``rounding_points`` codes away (or across signs); other floats ``|o - r| > atol + rtol |r|``;
    and for every float type CK's special-value rule."""
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point:
        return (out.long() - ref.long()).abs() > atol
    o, r = out.double(), ref.double()
    err = (o - r).abs()
    if out.dtype in _E4M3:
        far = ~((err <= atol) | (_e4m3_distance(out, ref) <= rounding_points))
    else:
        far = err > atol + rtol * r.abs()  # NaN (inf - inf) is not far: the special-value rule decides it
    return far | _infinity_error(o, r, allow_infinity_ref)


def _tolerances(out: torch.Tensor, ref: torch.Tensor, rtol, atol, rounding_points) -> tuple[float, float, int]:
    """(rtol, atol, rounding points) with CK's defaults for ``out``'s element type. For e4m3, as in CK's fp8
    overload, the fourth argument is the rounding-point distance (default 1) and atol defaults to 0.1."""
    if out.dtype in _E4M3:
        if ref.dtype != out.dtype:
            raise ValueError(f"check_err: CK's fp8 check compares codes: ref must be {out.dtype} too, got {ref.dtype}")
        if rtol is not None and rounding_points is not None:
            raise ValueError("check_err: for e4m3 the fourth argument is max_rounding_point_distance; give it once")
        points = rounding_points if rounding_points is not None else (1 if rtol is None else rtol)
        if isinstance(points, bool) or int(points) != points or points < 0:
            raise ValueError(f"check_err: max_rounding_point_distance must be an integer >= 0, got {points!r}")
        return 0.0, 0.1 if atol is None else atol, int(points)
    if not out.dtype.is_floating_point:
        default = (0.0, 0.0)
    elif out.dtype in (torch.float32, torch.float64):
        default = (1e-5, 3e-6)
    else:
        default = (1e-3, 1e-3)  # half, bf16, bf8
    return (default[0] if rtol is None else rtol), (default[1] if atol is None else atol), 0


def check_err(out: torch.Tensor, ref: torch.Tensor, msg: str = "Error: Incorrect results!", rtol: float | None = None,
              atol: float | None = None, allow_infinity_ref: bool = False, *,
              max_rounding_point_distance: int | None = None, strict: bool = True) -> bool:
    """True when every element of ``out`` passes against ``ref`` under CK-tile's rule for its element type
    (``_mismatches``) and CK's default tolerances (fp32 1e-5 / 3e-6; half, bf16 and bf8 1e-3 / 1e-3; integers
    exact; e4m3: one rounding point or 0.1). On a failure it writes CK's report to stderr (``msg`` and the
    first four mismatches, then the summary) and raises ``AssertionError`` (``strict=False``: returns False)."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"check_err: {msg} out has shape {tuple(out.shape)} but ref has {tuple(ref.shape)}")
    rtol, atol, points = _tolerances(out, ref, rtol, atol, max_rounding_point_distance)
    bad = _mismatches(out, ref, rtol, atol, allow_infinity_ref, points).reshape(-1)
    errors = int(bad.sum())
    if errors == 0:
        return True
    o, r = out.reshape(-1), ref.reshape(-1)
    for i in bad.nonzero()[:ERROR_DETAIL_LIMIT, 0].tolist():
        print(f"{msg} out[{i}] != ref[{i}]: {o[i].item()} != {r[i].item()}", file=sys.stderr)
    diff = (o[bad].double() - r[bad].double()).abs().nan_to_num(nan=float("inf"))
    summary = f"max err: {float(diff.max())}, number of errors: {errors}, {100.0 * errors / bad.numel():.4g}% wrong values"
    print(summary, file=sys.stderr)
    if strict:
        raise AssertionError(f"check_err: {msg} {summary} (rtol={rtol}, atol={atol})")
    return False
