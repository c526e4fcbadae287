"""Round-robin timing of several variants: one graph replay of each per round, in a Williams-design order
(``round_orders``), so that drift in clocks, power and temperature hits every variant alike within a few
milliseconds, not across the seconds that separate ``there_and_back``'s blocks.

On a power-capped Hopper a compute-bound kernel's time moves by 10-25% within seconds (the H100 of
docs/PERF_2026-12-06c.md: one instance at 1.44 ms and 1.86 ms in the two passes of one run), which is larger
than the differences between tiles. Paired per round, each variant's time divided by the reference's from the
same round has a far smaller spread than either time alone; the median of those ratios is the comparison.

    result = round_robin({"ours": f, "peer": g}, reference="ours", rounds=24)
    result.median_ms("peer"), result.ratio("peer")   # ratio: peer time / ours time, per round, median
    result.ratio_range("peer")                       # (p10, p90) of the per-round ratios

Each function is captured in a CUDA/HIP graph (``bench.capture_graph``); before every timed replay a
``device_info.flush_bytes`` buffer is zeroed outside the timed window, as ``bench`` does by default. With
``graph=False`` the functions are called as they are (host overhead included where it shows), and with
``sync=True`` each timed call starts after a device synchronisation, so the GPU is idle when it starts and the
whole call, host side included, is inside its window: end to end, as ``bench(sync=True)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import device_info
from ._stats import quantile
from .bench import _warm_up, capture_graph


def round_orders(labels: list[str], rounds: int) -> list[list[str]]:
    """The order of each round, from a Williams design: the rows of a Latin square (a label's position moves by
    one each round) whose first row interleaves the labels from both ends, with the reversed rows added for an
    odd count. Over each cycle of its rows (n rounds for n labels, 2n when n is odd) every label takes every
    position equally often and runs right after every other label equally often, so neither where a label
    sits in a round nor which label ran just before it favours one over another."""
    if rounds < 1 or not labels:
        raise ValueError(f"round_orders: need rounds >= 1 and at least one label, got {rounds}, {labels}")
    rows = williams_rows(len(labels))
    return [[labels[i] for i in rows[r % len(rows)]] for r in range(rounds)]


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design of n >= 1 items: first row 0, 1, n-1, 2, n-2, ...; row r adds r mod n."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 else rows


@dataclass
class RoundRobinResult:
    """Per-label times in ms, one per round (``times[label][r]``), and the label the ratios divide."""

    times: dict[str, list[float]]
    reference: str

    def __post_init__(self):
        if self.reference not in self.times:
            raise ValueError(f"reference {self.reference!r} is not one of {list(self.times)}")
        counts = {len(t) for t in self.times.values()}
        if len(counts) != 1 or 0 in counts:
            raise ValueError(f"every label needs the same non-zero number of rounds, got {counts}")

    def median_ms(self, label: str) -> float:
        return quantile(self.times[label], 0.5)

    def ratios(self, label: str, over: str | None = None) -> list[float]:
        """Per round: ``label``'s time / ``over``'s (default: the reference's)."""
        base = self.times[over if over is not None else self.reference]
        return [t / b for t, b in zip(self.times[label], base)]

    def ratio(self, label: str, over: str | None = None) -> float:
        """Median over rounds of ``label``'s time / ``over``'s: above 1, ``over`` is faster."""
        return quantile(self.ratios(label, over), 0.5)

    def ratio_range(self, label: str, over: str | None = None) -> tuple[float, float]:
        """p10 and p90 of the per-round ratios: the spread to read ``ratio`` against."""
        r = self.ratios(label, over)
        return quantile(r, 0.1), quantile(r, 0.9)


def round_robin(fns: dict, *, reference: str, rounds: int = 24, warmup_ms: float = 100.0, flush: bool = True,
                graph: bool = True, sync: bool = False, device=None) -> RoundRobinResult:
    """Time each of ``fns`` (label: callable) once per round for ``rounds`` rounds under graph replay (``graph``;
    else plain calls), in ``round_orders``' order, after each is run once and then all in turn for about
    ``warmup_ms`` more; ``sync``: each timed call after a device synchronisation (end to end)."""
    labels = list(fns)
    if reference not in fns:
        raise ValueError(f"round_robin: reference {reference!r} is not one of {labels}")
    device = torch.device(device) if device is not None else device_info.default_device()
    if not device_info.is_gpu(device):
        raise ValueError("round_robin: needs a GPU (CUDA events; graph replay by default)")
    with torch.cuda.device(device):
        calls = {label: capture_graph(fn).replay if graph else fn for label, fn in fns.items()}
        buffer = torch.empty(device_info.flush_bytes(device) // 4, dtype=torch.int32, device=device) if flush else None
        _warm_up(list(calls.values()), buffer, len(calls), warmup_ms)  # bench's warm-up, taking them in turn
        events = {label: [] for label in labels}
        for order in round_orders(labels, rounds):
            for label in order:
                if buffer is not None:
                    buffer.zero_()  # enqueued before the start event: never inside the timed window
                if sync:
                    torch.cuda.synchronize(device)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                calls[label]()
                end.record()
                events[label].append((start, end))
        torch.cuda.synchronize(device)
    return RoundRobinResult({label: [s.elapsed_time(e) for s, e in pairs] for label, pairs in events.items()},
                            reference)

