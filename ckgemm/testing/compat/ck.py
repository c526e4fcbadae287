"""CK-tile's host-side checkers (``ck_tile/host/check_err.hpp`` and the grouped GEMM example's
``calculate_rtol_atol``) by their names, for tests of a CK kernel ported from its C++ example to PyTorch.
Template arguments become the leading dtype arguments: ``get_relative_threshold<F16, F16, F32>(K)`` is
``get_relative_threshold(torch.float16, torch.float16, torch.float32, K)``.

Where these differ from CK's:

- ``check_err`` raises ``AssertionError`` on a failure (CK's returns false, which a C++ example folds into its
  exit status and a ported Python test can drop); ``strict=False`` returns False instead. Tensors of different
  shapes are an error (CK reports a size mismatch and returns false).
- ``calculate_rtol_atol`` takes ``max|ref|`` (the grouped GEMM test's convention); the example passes the signed
  maximum, which is too small when the largest magnitude is negative.
- The thresholds are ``ckgemm.testing.numeric``'s: the newest CK formula (``e = floor(log2 max)``, a full
  output ulp), as ``tolerance`` and ``check`` use them.
"""
from __future__ import annotations

import torch

from ..numeric import ck_absolute_threshold, ck_relative_threshold, mismatch_mask, tolerance

__all__ = ["calculate_rtol_atol", "check_err", "get_absolute_threshold", "get_relative_threshold"]

ERROR_DETAIL_LIMIT = 5  # CK-tile's: mismatches printed before the summary line
_FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz)


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
    """The grouped GEMM example's ``calculate_rtol_atol<A, B, Acc, C>(K, kbatch, max)``: the compute type is the
    narrower of A and B, ``max_accumulated_value`` the largest |ref| of the group."""
    compute = a_dtype if a_dtype.itemsize <= b_dtype.itemsize else b_dtype
    return tolerance(compute, c_dtype, acc_dtype, K, abs(float(max_accumulated_value)), k_batch=kbatch)


def _default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    if not dtype.is_floating_point:
        return 0.0, 0.0
    if dtype in (torch.float32, torch.float64):
        return 1e-5, 3e-6
    return 1e-3, 1e-3  # half, bf16 and the fp8 types


def _mismatches(out: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float, allow_infinity_ref: bool,
                max_rounding_point_distance: int) -> torch.Tensor:
    """CK's rule per element: integers by ``|o - r| > atol``; floats by ``|o - r| > atol + rtol |r|`` or a
    non-finite value (equal infinities pass with ``allow_infinity_ref``); fp8 outputs also pass within
    ``max_rounding_point_distance`` codes of the reference with the same sign."""
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point:
        return (out.long() - ref.long()).abs() > atol  # exact: no float rounding of large integers
    bad = mismatch_mask(out, ref, rtol, atol)  # NaN never passes, equal infinities do
    if not allow_infinity_ref:
        bad |= torch.isinf(out.double()) | torch.isinf(ref.double())
    if out.dtype in _FP8 and ref.dtype == out.dtype:
        o, r = out.view(torch.uint8).int(), ref.view(torch.uint8).int()
        near = ((o - r).abs() <= max_rounding_point_distance) & ((o ^ r) & 0x80 == 0)
        bad &= ~(near & torch.isfinite(out.double()) & torch.isfinite(ref.double()))
    return bad


def check_err(out: torch.Tensor, ref: torch.Tensor, msg: str = "Error: Incorrect results!", rtol: float | None = None,
              atol: float | None = None, allow_infinity_ref: bool = False, *, max_rounding_point_distance: int = 1,
              strict: bool = True) -> bool:
    """True when every element of ``out`` passes against ``ref`` (CK's rule, see ``_mismatches``; default
    tolerances CK's per output type: fp32 1e-5 / 3e-6, 16-bit and fp8 1e-3 / 1e-3, integers exact). On a
    failure it prints ``msg``, the first mismatches and the summary, then raises ``AssertionError`` (or, with
    ``strict=False``, returns False)."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"check_err: {msg} out has shape {tuple(out.shape)} but ref has {tuple(ref.shape)}")
    default_rtol, default_atol = _default_tolerances(out.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    bad = _mismatches(out, ref, rtol, atol, allow_infinity_ref, max_rounding_point_distance).reshape(-1)
    errors = int(bad.sum())
    if errors == 0:
        return True
    o, r = out.reshape(-1), ref.reshape(-1)
    print(msg)
    for i in bad.nonzero()[:ERROR_DETAIL_LIMIT, 0].tolist():
        print(f"out[{i}] != ref[{i}]: {o[i].item()} != {r[i].item()}")
    diff = (o[bad].double() - r[bad].double()).abs().nan_to_num(nan=float("inf"))
    summary = (f"max err: {float(diff.max())}, number of errors: {errors}, {100.0 * errors / bad.numel():.4g}% wrong "
               f"values (rtol={rtol}, atol={atol})")
    print(summary)
    if strict:
        raise AssertionError(f"check_err: {msg} {summary}")
    return False
