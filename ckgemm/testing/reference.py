"""Grouped GEMM reference, independent of ckgemm's ops and backends (a bug there cannot hide here).

For each group: dequantize exactly the operands the kernel was given (a plain tensor is taken as it is;
a ``quant.Quantized``, or a ``(codes, scale)`` pair in one of ckgemm's scale layouts, is expanded as
``code * scale``), then multiply in float32 (TF32 off) or float64 (``precision="fp64"``). Plain integer
operands on both sides take an exact integer path, and so do int8 codes whose scales are constant along K
(the tensor and row recipes): the integer sums are exact and the scales are applied in float64, then the
result is rounded to the output precision. B's scales are indexed in the logical [N, K]
orientation whatever its storage layout, as ckgemm's scaled ops take them.

Layouts: ``"RC"``: b[i] stored [N, K] (C = A @ B^T); ``"RR"``: b[i] stored [K, N] (C = A @ B).
"""
from __future__ import annotations

import contextlib

import torch

from .._precision import ieee_fp32_matmul
from .quant import Quantized, dequant, expand_scale, from_pair

LAYOUTS = ("RC", "RR")
_PRECISIONS = {"fp32": torch.float32, "fp64": torch.float64}
_EXACT_IN_FP64 = 2.0**53


@contextlib.contextmanager
def _plain_matmul(device: torch.device):
    """TF32 off on GPUs (it would round the inputs to 10 mantissa bits). On the CPU, oneDNN off: it
    JIT-compiles a kernel for every new shape (about 10 ms each), while MKL's sgemm does not."""
    if device.type == "cpu":
        saved = torch.backends.mkldnn.enabled
        torch.backends.mkldnn.enabled = False
        try:
            yield
        finally:
            torch.backends.mkldnn.enabled = saved
        return
    with ieee_fp32_matmul(device):
        yield


def _shape(x) -> tuple[int, ...]:
    """The logical shape: a ``Quantized`` knows its own (fp4 codes pack two per byte); a (codes, scale) pair
    has its codes' shape."""
    if isinstance(x, Quantized):
        return tuple(x.shape)
    return tuple(x[0].shape) if isinstance(x, (tuple, list)) else tuple(x.shape)


def _operand(x, layout: str = "RC", is_b: bool = False):
    """A plain tensor or a ``Quantized`` over the stored operand; (codes, scale) pairs are read with
    ``quant.from_pair`` in the logical orientation ([N, K] for B), so RR B's scales index [N, K] as
    ckgemm's do, and are then turned to the storage orientation [K, N]."""
    if not isinstance(x, (tuple, list)) or isinstance(x, Quantized):
        return x
    codes, scale = x
    if not (is_b and layout == "RR"):
        return from_pair(codes, scale)
    logical = from_pair(codes.transpose(-1, -2), scale)
    block = (logical.block[1], logical.block[0])
    return Quantized(codes, logical.full_scale().transpose(-1, -2), block, logical.fmt, tuple(codes.shape))


def _values(x, dtype: torch.dtype) -> torch.Tensor:
    return dequant(x, dtype) if isinstance(x, Quantized) else x.to(dtype)


def _is_plain_int(x) -> bool:
    return isinstance(x, torch.Tensor) and not x.dtype.is_floating_point and not x.dtype.is_complex


def _exact_int_matmul(a: torch.Tensor, bk: torch.Tensor) -> torch.Tensor:
    """int64 A @ B: through float64 while every partial sum is below 2**53 (exact), else int64 on the CPU."""
    k = a.shape[1]
    bound = k * float(a.abs().max()) * float(bk.abs().max()) if a.numel() and bk.numel() else 0.0
    if bound < _EXACT_IN_FP64:
        with _plain_matmul(a.device):
            return (a.to(torch.float64) @ bk.to(torch.float64)).to(torch.int64)
    return (a.cpu().to(torch.int64) @ bk.cpu().to(torch.int64)).to(a.device)


def _k_constant_int(x, k: int, k_axis: int) -> bool:
    """An integer ``Quantized`` whose scale does not change along K (axis ``k_axis`` of its storage)."""
    return isinstance(x, Quantized) and x.fmt == "int8" and x.block[k_axis] >= k


def _scaled_int_matmul(a: Quantized, b: Quantized, layout: str, dtype: torch.dtype) -> torch.Tensor:
    """sA[m] * sB[n] * sum_k qa[m, k] qb[k, n]: the integer sum as the kernels' int32 accumulator holds it
    (exact, wrapped modulo 2**32 where it leaves int32's range: K >= 131072 with extreme codes, as the README
    says of int8), the scales in float64."""
    k = a.shape[-1]
    bk = b.data.t() if layout == "RC" else b.data
    exact = _exact_int_matmul(a.data, bk)
    total = (torch.remainder(exact + 2**31, 2**32) - 2**31).to(torch.float64)
    if k == 0:
        return total.to(dtype)
    sa = expand_scale(a.full_scale().to(torch.float64), a.block, a.shape)[:, :1]
    sb = expand_scale(b.full_scale().to(torch.float64), b.block, b.shape)
    sb = sb[:, :1].t() if layout == "RC" else sb[:1, :]
    return (total * sa * sb).to(dtype)


def _check_options(layout: str, precision: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
    if precision not in _PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {tuple(_PRECISIONS)}")


def gemm_reference(a, b, *, layout: str = "RC", precision: str = "fp32") -> torch.Tensor:
    """One group: A @ op(B) from plain or quantized operands (float32/float64, or int64 when exact)."""
    _check_options(layout, precision)
    a, b = _operand(a), _operand(b, layout, True)
    if _is_plain_int(a) and _is_plain_int(b):
        return _exact_int_matmul(a, b.t() if layout == "RC" else b)
    dtype = _PRECISIONS[precision]
    k = _shape(a)[-1]
    if _k_constant_int(a, k, 1) and _k_constant_int(b, k, 1 if layout == "RC" else 0):
        return _scaled_int_matmul(a, b, layout, dtype)
    av, bv = _values(a, dtype), _values(b, dtype)
    bk = bv.t() if layout == "RC" else bv
    with _plain_matmul(av.device):
        return av @ bk


def _check_pair(g, a, b, layout) -> None:
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise ValueError(f"group {g}: a and b must be 2-D, got a {sa} and b {sb}")
    kb = sb[1] if layout == "RC" else sb[0]
    if sa[1] != kb:
        raise ValueError(f"group {g}: K mismatch: a is {sa} (K={sa[1]}) but b ({layout}) is {sb} (K={kb})")


def grouped_gemm_reference(a_list, b_list, *, layout: str = "RC", precision: str = "fp32",
                           out_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """C[i] = A[i] @ op(B[i]) for each group, on the operands' device.

    Returns float32 (float64 with ``precision="fp64"``), or exact int64 when both operands of a group are
    plain integer tensors; ``out_dtype`` casts the results (int64 -> int32 wraps as an int32 accumulator)."""
    _check_options(layout, precision)
    if len(a_list) != len(b_list):
        raise ValueError(f"a_list has {len(a_list)} groups but b_list has {len(b_list)}")
    outs = []
    for g, (a, b) in enumerate(zip(a_list, b_list)):
        a, b = _operand(a), _operand(b, layout, True)
        _check_pair(g, a, b, layout)
        c = gemm_reference(a, b, layout=layout, precision=precision)
        outs.append(c if out_dtype is None else c.to(out_dtype))
    return outs


def grouped_gemm_reference_packed(a, b, group_sizes, *, layout: str = "RC", precision: str = "fp32",
                                  out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """MoE form: ``a`` [sum(M_i), K], ``b`` [G, N, K] (RC) or [G, K, N] (RR), ``group_sizes`` [G] (any
    int sequence or tensor; read on the host). Quantized operands are dequantized whole first."""
    _check_options(layout, precision)
    sizes = [int(s) for s in (group_sizes.tolist() if isinstance(group_sizes, torch.Tensor) else group_sizes)]
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2 or len(sb) != 3 or sb[0] != len(sizes):
        raise ValueError(f"packed reference: expected a [rows, K], b [G, ., .] and G sizes; got a {sa}, "
                         f"b {sb}, {len(sizes)} sizes")
    if any(s < 0 for s in sizes) or sum(sizes) != sa[0]:
        raise ValueError(f"packed reference: sizes {sizes} must be >= 0 and sum to a's {sa[0]} rows")
    a, b = _operand(a), _operand(b, layout, True)
    exact = _is_plain_int(a) and _is_plain_int(b)
    dtype = _PRECISIONS[precision]
    if _k_constant_int(a, sa[1], 1) and _k_constant_int(b, sa[1], 1 if layout == "RC" else 0) \
            and (a.block[0] == 1 or a.block[0] >= sa[0]):
        return _packed_scaled_int(a, b, sizes, layout, dtype, out_dtype)
    av = a if exact or isinstance(a, torch.Tensor) else _values(a, dtype)
    bv = b if exact or isinstance(b, torch.Tensor) else _values(b, dtype)
    n = sb[1] if layout == "RC" else sb[2]
    result_dtype = torch.int64 if exact else dtype
    out = torch.zeros((sa[0], n), dtype=result_dtype, device=av.device)
    start = 0
    for g, m in enumerate(sizes):
        if m:
            _check_pair(g, av[start:start + m], bv[g], layout)
            out[start:start + m] = gemm_reference(av[start:start + m], bv[g], layout=layout, precision=precision)
        start += m
    return out if out_dtype is None else out.to(out_dtype)


def _packed_scaled_int(a: Quantized, b: Quantized, sizes, layout: str, dtype, out_dtype) -> torch.Tensor:
    """The packed form of ``_scaled_int_matmul``, group by group (A's rows and B's experts sliced with their
    scales, which are per tensor or per row here)."""
    rows, k = a.shape
    n = b.shape[1] if layout == "RC" else b.shape[2]
    out = torch.zeros((rows, n), dtype=dtype, device=a.data.device)
    # [rows] or [rows, 1] scales; else one per tensor (a 0-D scale, whose block is (1, K) when there is one row)
    per_row = a.scale.dim() > 0 and a.block[0] == 1
    start = 0
    for g, m in enumerate(sizes):
        if m:
            a_scale = a.scale[start:start + m] if per_row else a.scale
            a_block = a.block if per_row else (m, a.block[1])
            a_g = Quantized(a.data[start:start + m], a_scale, a_block, a.fmt, (m, k), a.squeezed)
            b_g = Quantized(b.data[g], b.scale[g], b.block, b.fmt, tuple(b.data.shape[1:]), b.squeezed)
            _check_pair(g, a_g, b_g, layout)
            out[start:start + m] = _scaled_int_matmul(a_g, b_g, layout, dtype)
        start += m
    return out if out_dtype is None else out.to(out_dtype)
