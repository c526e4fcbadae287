"""The ``torch`` backend: a plain PyTorch reference, correct on any device PyTorch supports.

fp16/bf16/fp8 inputs are multiplied in fp32 (TF32 off) and rounded once to the output dtype.
int8 is exact: products and sums of int8 values are integers below 2**53, so a float64 product is
exact for any K below 2**39; the int64 result is then wrapped to int32 as an int32 accumulator wraps.
On a GPU the packed form reads group sizes back to the host (one sync); the native backends do not.
"""
from __future__ import annotations

import contextlib

import torch

from ..dtypes import DtypeRule

NAME = "torch"


def unavailable_reason(device: torch.device) -> str | None:
    return None  # runs wherever torch runs


@contextlib.contextmanager
def _no_tf32():
    if not torch.cuda.is_available():
        yield
        return
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def matmul(a: torch.Tensor, b: torch.Tensor, layout: str, rule: DtypeRule) -> torch.Tensor:
    """One group: C = A @ op(B) with the dtype table's accumulate and output dtypes."""
    bk = b.t() if layout == "RC" else b  # [K, N] view
    if rule.exact:
        product = a.to(torch.float64) @ bk.to(torch.float64)
        return product.to(torch.int64).to(rule.output)
    with _no_tf32():
        product = a.to(torch.float32) @ bk.to(torch.float32)
    return product.to(rule.output)


def run_list(problem, a_list, b_list, c_list) -> tuple[str, ...]:
    for a, b, c, (m, n, _) in zip(a_list, b_list, c_list, problem.shapes):
        if m and n:
            c.copy_(matmul(a, b, problem.layout, problem.rule))
    return tuple(_path(shape) for shape in problem.shapes)


def run_packed(problem, a, b, group_sizes, out, direct: list | None = None) -> tuple[str, ...]:
    """``direct`` is the native backends' report of a launch on the given tensors; never filled here."""
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
            out[start:start + m].copy_(matmul(a[start:start + m], b[g], problem.layout, problem.rule))
        start += m
    return tuple(_path((m, problem.n, problem.k)) for m in sizes)


def _path(shape) -> str:
    m, n, k = shape
    if m == 0 or n == 0:
        return "skip:empty"
    return "torch:zero-k" if k == 0 else "torch"
