"""Exact memory-overlap tests for the row-major views ckgemm takes.

Outputs may be views of a larger buffer (padded leading dimension, or column blocks of one buffer),
so a test of address spans alone would reject valid calls. Rows of a view are byte intervals
``[base + r*stride, base + r*stride + width)``; two views overlap when some pair of rows does.
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class Rows(NamedTuple):
    """A tensor's memory as ``count`` rows of ``width`` bytes, ``stride`` bytes apart, in address ``space``
    (0: device addresses; a tensor without a data pointer, such as a fake tensor under torch.compile, counts
    bytes from the start of its storage, and its space is that storage)."""

    name: str
    base: int
    count: int
    stride: int
    width: int
    space: int = 0

    @property
    def start(self) -> int:
        return self.base

    @property
    def end(self) -> int:
        return self.base + (self.count - 1) * self.stride + self.width


def is_fake_tensor(t) -> bool:
    """A FakeTensor (callers test ``type(t) is not torch.Tensor`` first: plain tensors never get here)."""
    from torch._subclasses.fake_tensor import is_fake

    return is_fake(t)


def spans_of(name: str, t: torch.Tensor) -> list[Rows]:
    """The row models of a tensor: ``rows_of``'s one (none for a tensor without elements or memory), or, for a
    3-D tensor whose batch stride is not its rows' (a slice of fused weights, ``w[:, :n]``), one per group, so
    that memory between its groups stays free for outputs (as the native validator's ``append_rows``). Fake
    tensors (a compiled op's fake kernel) keep ``rows_of``'s one span over all the groups: a compiled graph
    reused with an output at another offset of the weights' storage is not written (a torch issue with views
    of one storage as a mutated argument and an input), so the trace refuses such outputs outright."""
    r = rows_of(name, t)
    if r is None or r.space or not _irregular(t.shape, t.stride()):  # (a space: a fake tensor's storage)
        return [] if r is None else [r]
    shape, stride = t.shape, t.stride()
    es, rows = t.element_size(), shape[1]  # real memory: each group's rows from the first's address
    row_stride, width = stride[1] * es if rows > 1 else 0, shape[2] * es
    return [Rows(name, r.base + g * stride[0] * es, rows, row_stride, width) for g in range(shape[0])]


def _irregular(shape, stride) -> bool:
    """A 3-D tensor of several groups whose batch stride is not its rows' (their rows are not evenly spaced)."""
    return len(shape) == 3 and shape[0] > 1 and stride[0] != shape[1] * stride[1]


def rows_of(name: str, t: torch.Tensor) -> Rows | None:
    """Row model of a 0-D, 1-D, 2-D or 3-D tensor whose innermost stride is 1 (a 3-D one whose batch stride
    is not its rows', and higher ranks: one conservative row over their span, which ``spans_of`` splits
    into groups); None if it holds no element or has no memory (a meta tensor: address 0). (Called on every
    validated call: few tensor attribute reads, no tensor ops.)"""
    shape = tuple(t.shape)
    if 0 in shape:
        return None
    es = t.element_size()
    space = 0
    try:
        if type(t) is not torch.Tensor and is_fake_tensor(t):  # its data_ptr() warns and gives 0 ("no memory")
            raise RuntimeError
        base = t.data_ptr()
        if base == 0:
            return None
    except RuntimeError:  # a fake or functional tensor: offsets inside its storage, which views of one base share
        space, base = t.untyped_storage()._cdata, t.storage_offset() * es
    stride = t.stride()
    if len(shape) == 0:  # a scalar (a tensor-recipe scale)
        return Rows(name, base, 1, 0, es, space)
    if len(shape) == 1:
        return Rows(name, base, 1, 0, shape[0] * es, space)
    if len(shape) > 3 or _irregular(shape, stride):
        # An irregular batch stride, or a rank no form takes (which validation refuses after this model's
        # callers in the compiled fake kernels): one conservative row covering the whole span.
        span = sum((n - 1) * st for n, st in zip(shape, stride)) + 1
        return Rows(name, base, 1, 0, span * es, space)
    if len(shape) == 3:
        groups, rows, width = shape
        count, row_stride = groups * rows, stride[1]
    else:
        (count, width), row_stride = shape, stride[0]
    return Rows(name, base, count, row_stride * es if count > 1 else 0, width * es, space)


def _rows_overlap(x: Rows, y: Rows) -> bool:
    if x.space != y.space or x.end <= y.start or y.end <= x.start:
        return False
    if x.count == 1 or y.count == 1 or x.stride == y.stride:
        return _overlap_equal_stride(x, y) if x.stride == y.stride else _overlap_scan(x, y)
    return _overlap_scan(x, y)


def _overlap_equal_stride(x: Rows, y: Rows) -> bool:
    # Row r of x and row r' of y intersect iff (r - r') * s lies in (d - wx, d + wy), d = by - bx.
    s = x.stride
    d = y.base - x.base
    if s == 0:  # both single rows
        return -y.width < d < x.width
    q_lo = (d - x.width) // s + 1
    q_hi = -((-(d + y.width)) // s) - 1
    return max(q_lo, -(y.count - 1)) <= min(q_hi, x.count - 1)


def _overlap_scan(x: Rows, y: Rows) -> bool:
    # Different strides: walk the rows of the shorter view, find candidate rows of the other.
    if x.count > y.count:
        x, y = y, x
    if x.space:  # fake tensors (a compiled op's fake kernel): the same scan on concrete ints, outside fake mode
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():
            return _overlap_scan(_concrete(x), _concrete(y))
    r = torch.arange(x.count, dtype=torch.int64)
    lo = x.base + r * x.stride
    hi = lo + x.width
    if y.count == 1 or y.stride == 0:
        return bool(((lo < y.base + y.width) & (hi > y.base)).any())
    r_lo = torch.div(lo - y.width - y.base, y.stride, rounding_mode="floor") + 1
    r_hi = -torch.div(-(hi - y.base), y.stride, rounding_mode="floor") - 1
    return bool((torch.clamp(r_lo, min=0) <= torch.clamp(r_hi, max=y.count - 1)).any())


def _concrete(r: Rows) -> Rows:
    """Rows with plain-int fields (SymInts under torch.compile specialise here) in address space 0."""
    return Rows(r.name, int(r.base), int(r.count), int(r.stride), int(r.width))


def first_overlap(outputs: list[Rows | None], inputs: list[Rows | None]) -> tuple[str, str] | None:
    """First pair (output, other) whose memory intersects: output vs output or output vs input."""
    spans = [(r, True) for r in outputs if r is not None] + [(r, False) for r in inputs if r is not None]
    spans.sort(key=lambda item: (item[0].space, item[0].start))
    active: list[tuple[Rows, bool]] = []
    for rows, is_out in spans:
        active = [a for a in active if a[0].space == rows.space and a[0].end > rows.start]
        for other, other_out in active:
            if (is_out or other_out) and _rows_overlap(rows, other):
                return (rows.name, other.name) if is_out else (other.name, rows.name)
        active.append((rows, is_out))
    return None


def rows_self_overlap(t: torch.Tensor) -> bool:
    """True when two rows of a 2-D view share memory (leading stride smaller than the row)."""
    return t.dim() == 2 and t.shape[0] > 1 and t.shape[1] > 0 and t.stride(0) < t.shape[1]
