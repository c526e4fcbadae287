"""Timing: per-iteration device events, warmup, cold caches outside the timed window, robust statistics,
optional CUDA/HIP graph replay, telemetry before and after, and paired A/B runs against peers.

``bench(fn)`` on a GPU first warms up: ``warmup`` calls, then more until ``warmup_ms`` of device time has
passed (as ``triton.testing.do_bench`` counts its warm-up in milliseconds). On the H200 a memory-bound
kernel ran ~10% slower for its first ~7 ms of back-to-back replays (DeepSeek-V3 decode: 267 us, then
242 us; docs/PERF.md), so a warm-up counted in calls alone timed the ramp. Then, for each timed iteration::

    flush buffer memset (or pick the next rotated input copy)   <- not timed
    start.record(); fn(); end.record()                          <- timed, one event pair per iteration

and reports the median, p10, p90 and min over the iterations. Without a GPU it times ``fn`` with
``time.perf_counter`` (no cache flush), so the same code runs, slower and coarser, on a CPU box.

Graph mode (``graph=True``) captures ``fn`` once per rotated argument set and times ``graph.replay()``:
launch overhead disappears, which is what a serving loop under graph capture sees.

A ``BenchResult`` stands for its median in milliseconds wherever a number is expected, as the number
``triton.testing.do_bench`` returns does: ``float(r)``, ``r * 1e3`` (µs), ``a / b``, ``r < 0.5``,
``min(results)``, ``sum(results)``, ``f"{r:.3f}"``; ``str(r)`` keeps the full summary. DeepGEMM's ``bench`` and
``bench_kineto`` return seconds: a script ported from them multiplies by 1e3 less (``float(r) / 1e3`` is their
number).
"""
from __future__ import annotations

import contextlib
import copy
import math
import operator
import time
from dataclasses import dataclass, field

import torch

from . import device_info, kineto
from ._stats import arith, compare, quantile
from .kineto import Breakdown, breakdown  # noqa: F401 - the per-kernel breakdown, also as bench(..., breakdown=True)


@dataclass(eq=False)
class BenchResult:
    """Timings of one ``bench`` run. Usable as a float: its median in ms (see the module docstring)."""

    times_ms: list[float]
    method: str  # "cuda-events", "cuda-graph" or "perf_counter"
    cold: str  # how caches were made cold: "flush <n> MiB", "rotate <n> copies", or "warm"
    warmup: int
    device: str
    telemetry_before: dict | None = None
    telemetry_after: dict | None = None
    notes: list[str] = field(default_factory=list)
    breakdown: Breakdown | None = None  # bench(..., breakdown=True): kernels and host gap of an eager call

    @property
    def median_ms(self) -> float:
        return quantile(self.times_ms, 0.5)

    @property
    def p10_ms(self) -> float:
        return quantile(self.times_ms, 0.1)

    @property
    def p90_ms(self) -> float:
        return quantile(self.times_ms, 0.9)

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def mean_ms(self) -> float:
        return sum(self.times_ms) / len(self.times_ms)

    @property
    def throttled(self) -> bool:
        return device_info.throttled(self.telemetry_before, self.telemetry_after)

    def stats(self) -> dict:
        """The summary numbers, JSON-ready (what a report row stores)."""
        return {"median_ms": self.median_ms, "p10_ms": self.p10_ms, "p90_ms": self.p90_ms, "min_ms": self.min_ms,
                "mean_ms": self.mean_ms, "iters": len(self.times_ms), "method": self.method, "cold": self.cold}

    def to_dict(self) -> dict:
        return {**self.stats(), "warmup": self.warmup, "device": self.device, "times_ms": list(self.times_ms),
                "telemetry_before": self.telemetry_before, "telemetry_after": self.telemetry_after,
                "throttled": self.throttled, "notes": list(self.notes),
                "breakdown": self.breakdown.rows() if self.breakdown is not None else None}

    def __str__(self) -> str:
        return (f"median {self.median_ms:.4g} ms (p10 {self.p10_ms:.4g}, p90 {self.p90_ms:.4g}, min {self.min_ms:.4g}; "
                f"{len(self.times_ms)} iters, {self.method}, {self.cold})" + (" THROTTLED" if self.throttled else "")
                + (f"; eager call: {self.breakdown}" if self.breakdown is not None else ""))

    # A timing is its median in ms wherever a number is expected.
    def __float__(self) -> float:
        return self.median_ms

    def __format__(self, spec: str) -> str:
        return format(self.median_ms, spec) if spec else str(self)

    def __round__(self, ndigits=None):
        return round(self.median_ms, ndigits)

    __add__, __radd__ = arith(operator.add)
    __sub__, __rsub__ = arith(operator.sub)
    __mul__, __rmul__ = arith(operator.mul)
    __truediv__, __rtruediv__ = arith(operator.truediv)
    __floordiv__, __rfloordiv__ = arith(operator.floordiv)
    __pow__, __rpow__ = arith(operator.pow)

    def __int__(self) -> int:
        return int(self.median_ms)

    def __abs__(self) -> float:
        return abs(self.median_ms)

    def __neg__(self) -> float:
        return -self.median_ms

    __eq__ = compare(operator.eq)
    __ne__ = compare(operator.ne)
    __lt__ = compare(operator.lt)
    __le__ = compare(operator.le)
    __gt__ = compare(operator.gt)
    __ge__ = compare(operator.ge)
    __hash__ = None  # equal to a float, so not hashable (like a mutable float would be)


def _storages(obj, found: dict) -> dict:
    """{(device, address): bytes} of the storages under ``obj``: one entry for tensors that alias (a copy by
    ``copy.deepcopy`` keeps them aliased, so a shared storage is one copy's bytes once)."""
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        found[(str(obj.device), storage.data_ptr())] = storage.nbytes()
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _storages(x, found)
    elif isinstance(obj, dict):
        for v in obj.values():
            _storages(v, found)
    return found


def rotating_copies(args: tuple, *, device=None, budget_bytes: int | None = None, max_copies: int = 64) -> list[tuple]:
    """Copies of an argument tuple whose total size exceeds the cold budget (default
    ``device_info.flush_bytes``), so cycling through them reads inputs from memory, not cache. The original
    comes first. Each copy is ``copy.deepcopy``'s, as aiter's ``perftest`` makes them: tensors keep their
    sizes, strides (an expanded one included), storage offsets and aliasing, and any argument type copies by
    its own protocol (named tuples, the casts' ``(x_q, scale)`` pairs, dataclasses). Graph-compatible,
    unlike a memset between replays."""
    device = device if device is not None else device_info.default_device()
    budget = budget_bytes if budget_bytes is not None else device_info.flush_bytes(device)
    per_copy = max(sum(_storages(args, {}).values()), 1)
    count = min(max_copies, max(1, math.ceil(budget / per_copy) + 1))
    return [args] + [copy.deepcopy(args) for _ in range(count - 1)]


def capture_graph(call):
    """A CUDA/HIP graph of ``call()``: two warm-up calls on a side stream (allocators, lazy initialisation
    and JIT compilers run outside the capture), then one captured call. Replay with ``graph.replay()``."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm up allocators and lazy initialisation outside the capture
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return graph


def bench(fn, *, warmup: int = 5, iters: int = 30, rotate: list | None = None, flush: bool | None = None,
          graph: bool = False, device=None, telemetry: bool = True, sync: bool = False,
          warmup_ms: float = 25.0, breakdown: bool = False) -> BenchResult:
    """Time ``fn`` per iteration and summarise.

    fn:        a callable; with ``rotate`` it is called as ``fn(*rotate[i % len(rotate)])``.
    warmup:    untimed calls first (at least one on a GPU when ``warmup_ms`` > 0, to time the call).
    warmup_ms: then keep calling, untimed, until the calls after those have taken this much stream time
               (flushes included; GPU only; 0 turns it off).
    rotate:    argument tuples to cycle through (see ``rotating_copies``): cold inputs without a flush.
    flush:     memset a ``device_info.flush_bytes`` buffer before each timed iteration, outside the
               timed window. Default: on for GPUs unless ``rotate`` is given. Ignored on the CPU.
    graph:     capture ``fn`` in a CUDA/HIP graph (one per argument set) and time replays.
    telemetry: read clocks/power before and after (nvidia-smi / amd-smi, when present).
    sync:      synchronise the device before each timed call, so the GPU is idle when ``fn`` starts and
               its whole host-side cost (Python, argument building, launches) is inside the timed
               window. Without it calls are queued back to back behind the flush, and host time shows
               only where it exceeds the device work already queued: kernel time, roughly.
    breakdown: also time ``fn`` eagerly and run it under the PyTorch profiler (``kineto.breakdown``: each
               call between two synchronisations) and keep, in ``result.breakdown``, its per-kernel device time and the
               host gap per call: where an eager call's time goes. Not timed with the iterations above.
    """
    if iters < 1 or warmup < 0 or not 0 <= warmup_ms < math.inf:
        raise ValueError(f"bench: need iters >= 1, warmup >= 0 and warmup_ms >= 0, got {iters}, {warmup}, {warmup_ms}")
    device = torch.device(device) if device is not None else device_info.default_device()
    device_info.check_requested("bench", device)
    arg_sets = list(rotate) if rotate else [()]
    calls = [(lambda a=a: fn(*a)) for a in arg_sets]
    gpu = device_info.is_gpu(device)
    if not gpu:
        if graph:
            raise ValueError("bench: graph replay needs a GPU")
        result = _bench_cpu(calls, warmup, iters)
    else:
        before = device_info.read_telemetry(device) if telemetry else None
        with torch.cuda.device(device):
            result = _bench_gpu(calls, warmup, iters, device, flush if flush is not None else not rotate, graph,
                                sync, warmup_ms)
        result.telemetry_before = before
        result.telemetry_after = device_info.read_telemetry(device) if telemetry else None
        if result.throttled:
            result.notes.append("SM clock dropped by more than 10% during the run")
    if breakdown:
        with torch.cuda.device(device) if gpu else contextlib.nullcontext():
            result.breakdown = kineto.breakdown(calls[0], iters=min(iters, 20), warmup=1, device=device)
    return result


bench.breakdown = breakdown  # ckgemm.testing.bench.breakdown, though the package's `bench` is this function


def _bench_cpu(calls, warmup: int, iters: int) -> BenchResult:
    for i in range(warmup):
        calls[i % len(calls)]()
    times = []
    for i in range(iters):
        start = time.perf_counter()
        calls[i % len(calls)]()
        times.append((time.perf_counter() - start) * 1e3)
    cold = f"rotate {len(calls)} copies" if len(calls) > 1 else "warm"
    return BenchResult(times, "perf_counter", cold, warmup, "cpu")


_MAX_WARMUP = 100_000  # calls: a bound for functions that launch (almost) no device work


def _next_batch(remaining_ms: float, last_ms: float, last_batch: int, made: int) -> int:
    """How many more warm-up calls fill ``remaining_ms`` at the pace of the last batch (``last_batch`` calls
    in ``last_ms``), within the ``_MAX_WARMUP`` bound on ``made + batch``; 0 when nothing remains."""
    if remaining_ms <= 0 or made >= _MAX_WARMUP:
        return 0
    pace = max(last_ms / max(last_batch, 1), 1e-4)
    return min(_MAX_WARMUP - made, max(1, math.ceil(remaining_ms / pace)))


def _warm_up(runs, buffer, warmup: int, warmup_ms: float) -> int:
    """``warmup`` calls (at least one when ``warmup_ms`` > 0; each after the flush, as the timed ones),
    untimed, then batches timed on the stream (flush memsets included) and sized from the last batch's pace,
    until they add up to ``warmup_ms``. The first calls are left out of the count, so a first call that
    compiles, autotunes or allocates on the host does not stand in for device time. Returns the calls made."""
    def step(i):
        if buffer is not None:
            buffer.zero_()
        runs[i % len(runs)]()

    made = max(warmup, 1) if warmup_ms > 0 else warmup
    for i in range(made):
        step(i)
    if warmup_ms <= 0:
        return made
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spent, batch = 0.0, min(made, _MAX_WARMUP)
    while batch > 0:
        start.record()
        for i in range(made, made + batch):
            step(i)
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
        made, spent = made + batch, spent + elapsed
        batch = _next_batch(warmup_ms - spent, elapsed, batch, made)
    return made


def _bench_gpu(calls, warmup: int, iters: int, device, flush: bool, graph: bool, sync: bool,
               warmup_ms: float) -> BenchResult:
    runs = calls
    if graph:
        graphs = [capture_graph(call) for call in calls]
        runs = [g.replay for g in graphs]
    buffer = None
    if flush:
        buffer = torch.empty(device_info.flush_bytes(device) // 4, dtype=torch.int32, device=device)
    warmup = _warm_up(runs, buffer, warmup, warmup_ms)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    torch.cuda.synchronize(device)
    for i in range(iters):
        if buffer is not None:
            buffer.zero_()  # enqueued before the start event: the flush is never inside the timed window
        if sync:
            torch.cuda.synchronize(device)
        starts[i].record()
        runs[i % len(runs)]()
        ends[i].record()
    torch.cuda.synchronize(device)
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    if quantile(times, 0.5) <= 0.0:
        raise RuntimeError("bench: median time <= 0: the timed function launched no device work")
    parts = []
    if buffer is not None:
        parts.append(f"flush {buffer.numel() * 4 >> 20} MiB")
    if len(runs) > 1:
        parts.append(f"rotate {len(runs)} copies")
    method = "cuda-graph" if graph else ("cuda-events, synced" if sync else "cuda-events")
    return BenchResult(times, method, ", ".join(parts) or "warm", warmup,
                       device_info.device_name(device))


def there_and_back(labels, time_one) -> dict:
    """Time each of several variants twice, in the order A B ... B A (``time_one(label)`` returns one
    timing in ms), so that drift in clocks and temperature over the sequence hits every variant alike, as
    ``paired_ab`` does for two. Returns ``{label: (mean ms, spread %, [run 1, run 2])}``, the spread being
    the two runs' difference as a share of their mean."""
    runs = {label: [] for label in labels}
    for label in list(labels) + list(reversed(labels)):
        runs[label].append(float(time_one(label)))
    return {label: (sum(t) / 2, 100 * abs(t[0] - t[1]) / (sum(t) / 2), t) for label, t in runs.items()}


@dataclass
class PairedResult:
    """A/B timing in ABBA order; ``ratio`` = median time of A / median time of B (< 1: A is faster)."""

    a: BenchResult
    b: BenchResult
    round_ratios: list[float]
    order: list[str]

    @property
    def ratio(self) -> float:
        return self.a.median_ms / self.b.median_ms

    @property
    def speedup(self) -> float:
        """How many times faster A is than B."""
        return self.b.median_ms / self.a.median_ms

    def __str__(self) -> str:
        spread = f"{min(self.round_ratios):.3f}..{max(self.round_ratios):.3f}"
        return f"A/B time ratio {self.ratio:.3f} (per round {spread}); A {self.a}; B {self.b}"


def paired_ab(fn_a, fn_b, *, rounds: int = 4, iters: int = 10, warmup: int = 3, **bench_kwargs) -> PairedResult:
    """Interleave A and B as A B B A A B ... (each block ``iters`` timed calls) so drift in clocks and
    temperature hits both alike; pool each side's times and take the ratio of medians. Extra keyword
    arguments go to ``bench`` (``rotate`` applies to both, so A and B must take the same arguments)."""
    if rounds < 1:
        raise ValueError("paired_ab: need rounds >= 1")
    bench_kwargs.setdefault("telemetry", False)
    runs = {"A": [], "B": []}
    round_ratios, order = [], []
    for r in range(rounds):
        pair = ("A", "B") if r % 2 == 0 else ("B", "A")
        for side in pair:
            runs[side].append(bench(fn_a if side == "A" else fn_b, warmup=warmup, iters=iters, **bench_kwargs))
            order.append(side)
        round_ratios.append(runs["A"][-1].median_ms / runs["B"][-1].median_ms)
    note = f"pooled over {rounds} ABBA rounds"
    return PairedResult(pool(runs["A"], note), pool(runs["B"], note), round_ratios, order)


def pool(runs: list[BenchResult], note: str) -> BenchResult:
    """One result from several ``bench`` runs of the same function: their times together, the last run's
    method, caches, device and breakdown, the telemetry before the first run and after the last, and
    ``note`` saying how they were taken."""
    last = runs[-1]
    return BenchResult([t for r in runs for t in r.times_ms], last.method, last.cold, last.warmup, last.device,
                       runs[0].telemetry_before, last.telemetry_after, notes=[note], breakdown=last.breakdown)
