"""Outputs handed to a kernel through ``out=``: NaN-poisoned (an unreachable sentinel for integers) and
cut from one flat buffer with guard bands before, between and after them, so that both an element the
kernel never wrote and a write outside the outputs (one row past a group's end, before its start) show.

Packed form: one ``[sum M, N]`` view with ``GUARD_ROWS`` poisoned rows on each side. List form: one
``[M_i, N_i]`` view per group, each followed by a guard of ``GUARD_ROWS`` rows of its widest N.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data import poisoned, unwritten

GUARD_ROWS = 2
MIN_GUARD = 64  # elements, so that outputs with N = 0 still have a band around them


@dataclass
class Guarded:
    buffer: torch.Tensor  # flat, poisoned
    views: list[torch.Tensor]  # per-group outputs (packed: row slices of the one view)
    out: object  # what ``out=`` receives: the packed view, or the list of views
    spans: list[tuple[int, int]]  # element ranges of the outputs in the buffer
    ms: list[int]

    def reset(self) -> None:
        """Poison everything again (before another call into the same outputs)."""
        self.buffer.copy_(poisoned(self.buffer.shape, self.buffer.dtype, self.buffer.device))

    def guard_writes(self) -> str | None:
        """Where the first write outside the outputs landed, or None when every guard is intact."""
        bad = ~unwritten(self.buffer)
        for start, end in self.spans:
            bad[start:end] = False
        if not bool(bad.any()):
            return None
        flat = int(bad.nonzero()[0])
        count = int(bad.sum())
        return f"{count} element(s) outside the outputs were written; the first {_where(flat, self.spans, self.ms)}"

    def unwritten_counts(self) -> list[int]:
        """Elements of each group's output still holding the poison."""
        return [int(unwritten(v).sum()) for v in self.views]


def _where(flat: int, spans, ms) -> str:
    """Say where a flat buffer index lies relative to the outputs (before the first, after group g)."""
    before = [g for g, (start, _) in enumerate(spans) if start > flat]
    if not before:
        end = spans[-1][1] if spans else 0
        return f"{flat - end} element(s) after the end of the last output"
    g = before[0]
    if g == 0:
        return f"{spans[0][0] - flat} element(s) before the start of the first output"
    return f"{flat - spans[g - 1][1]} element(s) past the end of group {g - 1}'s output (M={ms[g - 1]})"


def allocate(case, form: str, dtype: torch.dtype, device) -> Guarded:
    """Poisoned, guarded outputs for ``case`` in ``form``."""
    if form == "packed":
        rows, n = sum(case.ms), case.ns[0]
        guard = max(GUARD_ROWS * n, MIN_GUARD)
        buffer = poisoned((rows * n + 2 * guard,), dtype, device)
        view = buffer[guard:guard + rows * n].view(rows, n)
        views = list(torch.split(view, case.ms))
        return Guarded(buffer, views, view, [(guard, guard + rows * n)], list(case.ms))
    guard = max(GUARD_ROWS * max(case.ns, default=0), MIN_GUARD)
    sizes = [m * n for m, n, _ in case.shapes]
    buffer = poisoned((sum(sizes) + guard * (len(sizes) + 1),), dtype, device)
    views, spans, start = [], [], guard
    for (m, n, _), size in zip(case.shapes, sizes):
        views.append(buffer[start:start + size].view(m, n))
        spans.append((start, start + size))
        start += size + guard
    return Guarded(buffer, views, list(views), spans, list(case.ms))
