"""The ``torch`` backend: a plain PyTorch reference, correct on any device PyTorch supports.

Unscaled: fp16/bf16/fp8 inputs are multiplied in fp32 (TF32 off) and rounded once to the output dtype.
int8 is exact: products and sums of int8 values are integers below 2**53, so a float64 product is
exact for any K below 2**39; the int64 result is then wrapped to int32 as an int32 accumulator wraps.

Scaled (``C = (A * sA) @ op(B * sB)``, rounded once to the output dtype), in the order the native kernels
compute it: tensor and row recipes multiply the exact-input product (fp8 values and their products are
exact in fp32; int8 sums are exact integers) by sA per row, then by sB per column; the block recipe sums,
over each 128-wide K block, the block's fp32 product times sA[m, kb] * sB[nb, kb].
On a GPU the packed form reads group sizes back to the host (one sync); the native backends do not.
"""
from __future__ import annotations

import torch

from .._precision import ieee_fp32_matmul
from ..dtypes import DtypeRule
from ..validate_scales import BLOCK

NAME = "torch"


def unavailable_reason(device: torch.device) -> str | None:
    """None wherever torch runs: any device but a GPU that torch cannot see."""
    if device is not None and device.type == "cuda" and not torch.cuda.is_available():
        return "no GPU is visible (torch.cuda.is_available() is False)"
    return None


def _product(a: torch.Tensor, bk: torch.Tensor, rule: DtypeRule) -> torch.Tensor:
    """A @ B (B as a [K, N] view): exact int64 for integer inputs, fp32 otherwise."""
    if rule.exact:
        return (a.to(torch.float64) @ bk.to(torch.float64)).to(torch.int64)
    with ieee_fp32_matmul(a.device):
        return a.to(torch.float32) @ bk.to(torch.float32)


def matmul(a: torch.Tensor, b: torch.Tensor, layout: str, rule: DtypeRule) -> torch.Tensor:
    """One unscaled group: C = A @ op(B) with the dtype table's accumulate and output dtypes."""
    return _product(a, b.t() if layout == "RC" else b, rule).to(rule.output)


def scaled_matmul(a, b, layout: str, rule: DtypeRule, recipe: str, sa: torch.Tensor, sb: torch.Tensor,
                  out_dtype: torch.dtype) -> torch.Tensor:
    """One scaled group. ``sa``/``sb`` per the recipe: tensor [] / []; row [M] / [N]; block
    [M, ceil(K/128)] / [ceil(N/128), ceil(K/128)]."""
    bk = b.t() if layout == "RC" else b  # [K, N] view
    if a.shape[1] == 0:  # K = 0: exact zeros whatever the scales (0 * inf would be NaN), as the native ops write
        return torch.zeros((a.shape[0], bk.shape[1]), dtype=out_dtype, device=a.device)
    if recipe != "block":
        acc = _product(a, bk, rule)
        acc = (acc.to(torch.int32) if rule.exact else acc).to(torch.float32)  # the int32 accumulator, then fp32
        row = sa.reshape(-1, 1) if recipe == "row" else sa
        col = sb.reshape(1, -1) if recipe == "row" else sb
        return ((acc * row) * col).to(out_dtype)
    m, n, k = a.shape[0], bk.shape[1], a.shape[1]
    acc = torch.zeros((m, n), dtype=torch.float32, device=a.device)
    sb_cols = sb.repeat_interleave(BLOCK, dim=0)[:n]  # [N, ceil(K/128)]
    for kb, k0 in enumerate(range(0, k, BLOCK)):
        part = _product(a[:, k0:k0 + BLOCK], bk[k0:k0 + BLOCK], rule)
        acc += part * (sa[:, kb:kb + 1] * sb_cols[:, kb].reshape(1, -1))
    return acc.to(out_dtype)


def _group(problem, a, b, sa, sb) -> torch.Tensor:
    if problem.recipe == "none":
        return matmul(a, b, problem.layout, problem.rule)
    return scaled_matmul(a, b, problem.layout, problem.rule, problem.recipe, sa, sb, problem.output)


def run_list(problem, a_list, b_list, c_list, scale_a=None, scale_b=None) -> tuple[str, ...]:
    scale_a = scale_a or [None] * len(a_list)
    scale_b = scale_b or [None] * len(a_list)
    for a, b, c, sa, sb, (m, n, _) in zip(a_list, b_list, c_list, scale_a, scale_b, problem.shapes):
        if m and n:
            c.copy_(_group(problem, a, b, sa, sb))
    return tuple(_path(shape) for shape in problem.shapes)


def _group_scales(recipe: str, scale_a, scale_b, g: int, start: int, m: int):
    if recipe == "none":
        return None, None
    if recipe == "tensor":
        return scale_a, scale_b[g]
    return scale_a[start:start + m], scale_b[g]


def run_packed(problem, a, b, group_sizes, out, scale_a=None, scale_b=None) -> tuple[str, ...]:
    sizes = problem.sizes
    if sizes is None:
        from ..errors import InvalidArgumentError
        from ..validate import check_group_size_values

        if group_sizes.is_cuda and torch.cuda.is_current_stream_capturing():
            raise InvalidArgumentError("grouped_gemm_packed: the torch backend reads group sizes back to the "
                                       "host, which graph capture forbids; capture a native backend instead")

        sizes = tuple(int(s) for s in group_sizes.tolist())  # host sync: the reference needs the split
        check_group_size_values("grouped_gemm_packed", sizes, problem.rows)
    start = 0
    for g, m in enumerate(sizes):
        if m and problem.n:
            sa, sb = _group_scales(problem.recipe, scale_a, scale_b, g, start, m)
            out[start:start + m].copy_(_group(problem, a[start:start + m], b[g], sa, sb))
        start += m
    return tuple(_path((m, problem.n, problem.k)) for m in sizes)


def _path(shape) -> str:
    m, n, k = shape
    if m == 0 or n == 0:
        return "skip:empty"
    return "zero-k" if k == 0 else "torch"
