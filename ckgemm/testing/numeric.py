"""Numbers for judging a kernel's output: DeepGEMM's ``calc_diff``, ``count_bytes`` and
``assert_bitwise_equal``, element-wise error statistics, and CK-tile's tolerance model.

The comparison rule shared by every path in this package (``error_stats``, ``check``, ``gpu_verify``
and the fused kernel in ``csrc/common/verify.cuh``), evaluated in float64:

- NaN in either tensor: mismatch (NaN never passes, not even against NaN);
- an infinity: passes only against the same infinity (same sign);
- finite pair: mismatch when ``|out - ref| > atol + rtol * |ref|``.

Integer tensors are compared exactly: with ``rtol = atol = 0`` the rule above is ``out != ref``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch

from ..dtypes import rule_for

_MAX_EXAMPLES = 8


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    """DeepGEMM's similarity error ``1 - 2*sum(x*y) / sum(x*x + y*y)`` in float64.

    Equals ``||x - y||^2 / (||x||^2 + ||y||^2)``: 0 for identical tensors, 1 against zeros, 2 for
    ``y = -x``; scale-aware (``calc_diff(x, 2x) = 0.2``). Returns 0.0 when both are all zeros."""
    if x.shape != y.shape:
        raise ValueError(f"calc_diff: shapes differ: {tuple(x.shape)} vs {tuple(y.shape)}")
    x, y = x.double(), y.double()
    scale = max(float(x.abs().max()) if x.numel() else 0.0, float(y.abs().max()) if y.numel() else 0.0)
    if math.isfinite(scale) and (scale > 1e150 or 0 < scale < 1e-150):  # x * x would over- or underflow:
        x, y = x / scale, y / scale  # the ratio does not change (in range, nothing is rescaled)
    denominator = (x * x + y * y).sum()
    if float(denominator) == 0.0:
        return 0.0
    return float(1.0 - 2.0 * (x * y).sum() / denominator)


def count_bytes(*tensors) -> int:
    """Bytes held by the tensors given (nested lists and tuples walked, ``None`` skipped), as DeepGEMM's
    ``count_bytes``: ``numel * element_size`` of each, the bytes a kernel reading or writing them moves.
    Anything else is an error rather than zero bytes."""
    total = 0
    for t in tensors:
        if isinstance(t, (list, tuple)):
            total += count_bytes(*t)
        elif isinstance(t, torch.Tensor):
            total += t.numel() * t.element_size()
        elif t is not None:
            raise TypeError(f"count_bytes: expected tensors, lists or tuples of them, or None; got {type(t).__name__}")
    return total


def mantissa_bits(dtype: torch.dtype) -> int:
    """Explicit mantissa bits of a floating dtype (fp16 10, bf16 7, e4m3 3, fp32 23); 0 for integers.

    Input dtypes come from ckgemm's dtype table; any other floating dtype from ``torch.finfo``."""
    rule = rule_for(dtype)
    if rule is not None:
        return rule.mantissa_bits
    if not dtype.is_floating_point:
        return 0
    return round(-math.log2(torch.finfo(dtype).eps))


def _floor_log2(value: float) -> int:
    # frexp is exact: value = m * 2**e with 0.5 <= m < 1, so floor(log2(value)) = e - 1.
    return math.frexp(value)[1] - 1


def ck_relative_threshold(compute: torch.dtype, out: torch.dtype, acc: torch.dtype, accumulations: int) -> float:
    """CK-tile ``get_relative_threshold<compute, out, acc>(n)``; 0 when any type is an integer."""
    if not (compute.is_floating_point and out.is_floating_point and acc.is_floating_point):
        return 0.0
    acc_term = 2.0 ** -mantissa_bits(acc) * 0.5 * accumulations
    return max(acc_term, 2.0 ** -mantissa_bits(compute) * 0.5, 2.0 ** -mantissa_bits(out) * 0.5)


def ck_absolute_threshold(compute: torch.dtype, out: torch.dtype, acc: torch.dtype, max_abs: float,
                          accumulations: int) -> float:
    """CK-tile's newest ``get_absolute_threshold<compute, out, acc>(max, n)``: with
    ``e = floor(log2 max)``, ``max(2^(e-m_acc)*0.5*n, 2^(e-m_compute)*0.5, 2^(e-m_out)*1.0)`` (a full
    output ulp, so hardware and software bf16 rounding both pass). 0 for integers or ``max = 0``."""
    if not (compute.is_floating_point and out.is_floating_point and acc.is_floating_point):
        return 0.0
    max_abs = abs(float(max_abs))
    if max_abs == 0.0 or not math.isfinite(max_abs):
        return 0.0
    e = _floor_log2(max_abs)
    return max(2.0 ** (e - mantissa_bits(acc)) * 0.5 * accumulations,
               2.0 ** (e - mantissa_bits(compute)) * 0.5,
               2.0 ** (e - mantissa_bits(out)) * 1.0)


def tolerance(in_dtype: torch.dtype, out_dtype: torch.dtype, acc_dtype: torch.dtype, num_accumulations: int,
              max_abs_ref: float, *, k_batch: int = 1) -> tuple[float, float]:
    """(rtol, atol) for one GEMM group, as CK-tile's grouped GEMM tests derive them.

    ``num_accumulations`` is the group's K; ``max_abs_ref`` the largest finite |ref| of that group.
    With split-K (``k_batch > 1``) each split accumulates ceil(K / k_batch) products in ``acc_dtype`` and
    the splits are summed in ``out_dtype``, as CK's ``calculate_rtol_atol`` models it.
    Integer types give (0, 0): compare exactly.

    >>> tolerance(torch.float16, torch.float16, torch.float32, 4096, 64.0)
    (0.00048828125, 0.0625)
    """
    if k_batch < 1:
        raise ValueError(f"k_batch must be >= 1, got {k_batch}")
    if int(num_accumulations) < 0 or not float(max_abs_ref) >= 0:  # also refuses a NaN max|ref|
        raise ValueError(f"tolerance: need K >= 0 and a max|ref| >= 0, got K={num_accumulations}, "
                         f"max_abs_ref={max_abs_ref}")
    per_split = -(-int(num_accumulations) // k_batch)
    rtol = max(ck_relative_threshold(in_dtype, out_dtype, acc_dtype, per_split),
               ck_relative_threshold(out_dtype, out_dtype, out_dtype, k_batch))
    atol = max(ck_absolute_threshold(in_dtype, out_dtype, acc_dtype, float(max_abs_ref) / k_batch, per_split),
               ck_absolute_threshold(out_dtype, out_dtype, out_dtype, max_abs_ref, k_batch))
    return rtol, atol


# Scaled low precision (C = (A*sA) @ (B*sB), fp32 accumulation, one rounding to the output dtype). The
# reference gets the kernel's own quantized inputs, so quantization error is not part of the comparison;
# what remains is accumulation and the output rounding:
# - fp8: e4m3 x e4m3 products are exact, but the tensor core sums a K block of them in a narrower
#   accumulator before promoting into fp32: about 14 mantissa bits on Hopper (DeepSeek-V3 report 3.3.2),
#   FP8_PROMOTION_DEPTH products deep (CUTLASS's promotion interval; one 128-wide block of the block
#   recipe). Bound: 2^-14 * 0.5 * min(K, depth) relative to the largest partial, plus fp32 for the
#   ceil(K/depth) promoted adds. This is the worst case for any kernel (a rounding at every addition
#   inside a block) as long as the partial sums stay within max|ref|'s binade, which the bound takes for
#   them: heavy cancellation across K blocks (partials far above the outputs) can exceed it. How a tensor
#   core orders and rounds its internal sums is undocumented and differs between Hopper's wgmma and CK's
#   MFMA. ckgemm's own H200 tests use a tighter, measured model of CUTLASS on Hopper (one rounding per
#   32-deep MMA step: tests/support.py, distributed/checks.py).
# - int8: int32 sums are exact; one conversion to fp32 and two scale multiplies (3 fp32 roundings).
# - both: the output rounding: half an ulp relative (rtol); atol at max|ref|'s binade, the larger of twice
#   the accumulation bound and one output ulp, and at least the output's subnormal step (fp16: 2^-24).
FP8_ACCUMULATOR_BITS = 14
FP8_PROMOTION_DEPTH = 128


def scaled_tolerance(in_dtype: torch.dtype, out_dtype: torch.dtype, num_accumulations: int,
                     max_abs_ref: float) -> tuple[float, float]:
    """(rtol, atol) for one group of a scaled fp8/int8 GEMM against a reference with the same quantization
    (model above). ``num_accumulations`` is the group's K."""
    k = int(num_accumulations)
    if in_dtype.is_floating_point:
        rel_acc = 2.0 ** -FP8_ACCUMULATOR_BITS * 0.5 * min(k, FP8_PROMOTION_DEPTH) \
            + 2.0 ** -23 * 0.5 * -(-k // FP8_PROMOTION_DEPTH)
    else:
        rel_acc = 2.0 ** -23 * 0.5 * 3
    out_bits = mantissa_bits(out_dtype)
    rtol = max(rel_acc, 2.0 ** -out_bits * 0.5)
    max_abs = abs(float(max_abs_ref))
    if max_abs == 0.0 or not math.isfinite(max_abs):
        return rtol, 0.0
    e = _floor_log2(max_abs)
    spacing = torch.finfo(out_dtype).tiny * torch.finfo(out_dtype).eps  # below tiny: a fixed step (fp16: 2^-24)
    return rtol, max(2.0 ** e * rel_acc * 2, 2.0 ** (e - out_bits), spacing)


def scaled_max_diff(out_dtype: torch.dtype) -> float:
    """calc_diff bound for a scaled GEMM against its same-quantization reference. Rounding every element to
    the output (m mantissa bits) moves it by at most 2^-(m+1) relative, so the rounding alone gives calc_diff
    at most 2^(-2m-3) (measured ~1.4e-6 for bf16 on random data; worst case 7.6e-6); the tensor core's fp8
    accumulation adds ~1e-8 (H200). The bound is twice the rounding's worst case plus 1e-7."""
    return 2.0 ** (-2 * mantissa_bits(out_dtype) - 2) + 1e-7


def mismatch_mask(out: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Boolean mask of the elements that fail the comparison rule of this module (float64)."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"mismatch_mask: out shape {tuple(out.shape)} differs from ref shape {tuple(ref.shape)}")
    if not (rtol >= 0 and atol >= 0):  # also refuses NaN
        raise ValueError(f"mismatch_mask: tolerances must be >= 0, got rtol={rtol}, atol={atol}")
    o, r = out.double(), ref.double()
    finite = torch.isfinite(o) & torch.isfinite(r)
    diff = (o - r).abs()
    bound = r.abs().mul(rtol).add(atol)  # mul then add, never fused: the same rounding everywhere
    bad_finite = finite & (diff > bound)
    bad_special = ~finite & ~((o == r) & ~torch.isnan(o))  # equal infinities pass, NaN never does
    return bad_finite | bad_special


@dataclass
class ErrorStats:
    """Element-wise comparison of ``out`` against ``ref`` (indices are into ``out``'s shape)."""

    shape: tuple[int, ...]
    numel: int
    rtol: float
    atol: float
    mismatches: int
    max_abs_err: float  # over finite pairs; 0.0 when there are none
    max_abs_index: tuple[int, ...] | None
    max_rel_err: float  # |out - ref| / |ref| over finite pairs with ref != 0
    max_rel_index: tuple[int, ...] | None
    max_abs_ref: float  # largest finite |ref|
    nan_out: int
    inf_out: int
    nan_ref: int
    inf_ref: int
    out_all_zero: bool  # every element of out equals 0: often a kernel that never ran
    examples: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)  # first mismatches

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    def to_dict(self) -> dict:
        """JSON-ready dict (non-finite floats become strings)."""
        d = asdict(self)
        d["passed"] = self.passed
        return _json_ready(d)

    def __str__(self) -> str:
        pct = 100.0 * self.mismatches / self.numel if self.numel else 0.0
        lines = [
            f"shape {self.shape}: {self.mismatches} of {self.numel} mismatched ({pct:.3g}%) "
            f"under rtol={self.rtol:.3g} atol={self.atol:.3g}",
            f"  max abs err {self.max_abs_err:.4g} at {self.max_abs_index}; "
            f"max rel err {self.max_rel_err:.4g} at {self.max_rel_index}; max |ref| {self.max_abs_ref:.4g}",
            f"  NaN out/ref {self.nan_out}/{self.nan_ref}; Inf out/ref {self.inf_out}/{self.inf_ref}"
            + ("; out is all zeros" if self.out_all_zero and self.numel else ""),
        ]
        if self.examples:
            lines.append(f"  first mismatches: {self.examples_text()}")
        return "\n".join(lines)

    def examples_text(self) -> str:
        """The first mismatches as ``index: out X ref Y``, each pair with enough digits to tell them apart (6
        significant digits, more where those print the two alike)."""
        def pair(o: float, r: float) -> str:
            digits = next((d for d in (6, 9, 12) if f"{o:.{d}g}" != f"{r:.{d}g}"), 17)
            return f"out {o:.{digits}g} ref {r:.{digits}g}"
        return ", ".join(f"{idx}: {pair(o, r)}" for idx, o, r in self.examples)


def _json_ready(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def _index(flat: int, shape) -> tuple[int, ...]:
    """Row-major unravel of a flat index (plain integers: torch.unravel_index is slow per call)."""
    index = []
    for size in reversed(tuple(shape)):
        flat, i = divmod(flat, size) if size else (flat, 0)
        index.append(i)
    return tuple(reversed(index))


def assert_bitwise_equal(x: torch.Tensor, y: torch.Tensor, label: str = "") -> None:
    """Raise ``AssertionError`` unless the two tensors hold the same bytes element by element (same shape and
    dtype; strides may differ): NaN equals NaN only with the same payload, -0.0 differs from 0.0. The message
    names the first differing byte and element, its index and both values with their bits, and how many
    elements differ (DeepGEMM's signature, a fuller message). For run-to-run determinism, a graph replay
    against an eager call, a padded path against the plain one; two outputs that both kept the same NaN
    poison are bitwise equal, so check one of them against a reference too (``torch.equal`` fails on any NaN,
    which the poison check needs)."""
    where = f"{label}: " if label else ""
    if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
        raise AssertionError(f"{where}assert_bitwise_equal: {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}")
    a = x.detach().contiguous().reshape(-1).view(torch.uint8)
    e = y.detach().contiguous().reshape(-1).view(torch.uint8).to(a.device)
    differ = a != e
    if not bool(differ.any()):
        return
    size = x.element_size()
    first_byte = int(differ.nonzero()[0, 0])
    element = first_byte // size
    elements = int(differ.view(-1, size).any(dim=1).sum())

    def bits(t: torch.Tensor) -> str:
        return "".join(f"{b:02x}" for b in t[element * size:(element + 1) * size].flip(0).tolist())
    got, want = x.detach().reshape(-1)[element].item(), y.detach().reshape(-1)[element].item()
    raise AssertionError(f"{where}assert_bitwise_equal: {elements} of {x.numel()} elements differ; the first at "
                         f"byte {first_byte} (element {element}, index {_index(element, x.shape)}): {got!r} "
                         f"(0x{bits(a)}) vs {want!r} (0x{bits(e)})")


def error_stats(out: torch.Tensor, ref: torch.Tensor, rtol: float = 0.0, atol: float = 0.0, *,
                max_examples: int = _MAX_EXAMPLES) -> ErrorStats:
    """Compare ``out`` with ``ref`` element-wise (on the CPU, in float64) under ``rtol``/``atol``."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"error_stats: out shape {tuple(out.shape)} differs from ref shape {tuple(ref.shape)}")
    if out.is_complex() or ref.is_complex():
        raise TypeError(f"error_stats: complex tensors ({out.dtype}, {ref.dtype}) are not compared; compare "
                        "torch.view_as_real of each")
    shape = tuple(out.shape)
    o = out.detach().cpu().double().reshape(-1)
    r = ref.detach().cpu().double().reshape(-1)
    finite = torch.isfinite(o) & torch.isfinite(r)
    diff = torch.where(finite, (o - r).abs(), torch.full_like(o, -1.0))  # -1: never the argmax
    bad = mismatch_mask(o, r, rtol, atol)
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point:  # exact past float64's 2^53
        bad |= out.detach().cpu().reshape(-1).long() != ref.detach().cpu().reshape(-1).long()
    ref_abs = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
    rel_ok = finite & (r != 0)
    rel = torch.where(rel_ok, diff / torch.where(rel_ok, r.abs(), torch.ones_like(r)), torch.zeros_like(r))
    has_finite = bool(finite.any())
    bad_idx = bad.nonzero().flatten()[:max_examples].tolist()
    return ErrorStats(
        shape=shape,
        numel=o.numel(),
        rtol=float(rtol),
        atol=float(atol),
        mismatches=int(bad.sum()),
        max_abs_err=float(diff.max()) if has_finite else 0.0,
        max_abs_index=_index(int(diff.argmax()), shape) if has_finite else None,
        max_rel_err=float(rel.max()) if bool(rel_ok.any()) else 0.0,
        max_rel_index=_index(int(rel.argmax()), shape) if bool(rel_ok.any()) else None,
        max_abs_ref=float(ref_abs.max()) if r.numel() else 0.0,
        nan_out=int(torch.isnan(o).sum()),
        inf_out=int(torch.isinf(o).sum()),
        nan_ref=int(torch.isnan(r).sum()),
        inf_ref=int(torch.isinf(r).sum()),
        out_all_zero=bool((o == 0).all()),
        examples=[(_index(i, shape), float(o[i]), float(r[i])) for i in bad_idx],
    )
