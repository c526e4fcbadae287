"""Where an eager call's time goes: per-kernel device time and the host gap, through the PyTorch profiler
(the pattern of DeepGEMM's ``bench_kineto``).

``breakdown(fn)`` runs ``fn`` ``iters`` times, each between two device synchronisations (so the device is
idle when the call starts, as in ``bench(sync=True)``), and takes the median wall time per call from the
host's point of view; on a GPU it then runs ``fn`` ``iters`` more times under ``torch.profiler`` for the
device time of every kernel (by name) and their sum. The two loops are apart because the profiler's own
bookkeeping (tens of microseconds a call on a busy eager path) would otherwise land in the wall time. The
host gap is the wall time not covered by kernels: what the device spent waiting for the host (validation,
routing, argument building, launch latency). No cache flush runs inside either loop, so kernel times are
warm-cache times; use ``bench`` for cold-cache kernel timings.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch

from . import device_info


@dataclass
class Breakdown:
    calls: int
    wall_us: float  # per call, host-measured between synchronisations (the median), outside the profiler
    kernel_us: float  # per call, sum of device kernel time
    kernels: dict[str, float] = field(default_factory=dict)  # per call, by kernel name
    launches: float = 0.0  # kernels per call
    on_gpu: bool = True  # False: a CPU run, which has no device kernels (its wall time is all host time)

    @property
    def host_gap_us(self) -> float:
        """Per call: wall time not covered by kernels (host work, launch latency, gaps between kernels)."""
        return max(self.wall_us - self.kernel_us, 0.0)

    def rows(self) -> list[dict]:
        """One row per kernel, then the totals: for report tables (a CPU run has only its wall time)."""
        if not self.on_gpu:
            return [{"kernel": "(wall)", "us/call": self.wall_us}]
        out = [{"kernel": name, "us/call": us} for name, us in sorted(self.kernels.items(), key=lambda kv: -kv[1])]
        out.append({"kernel": "(all kernels)", "us/call": self.kernel_us})
        out.append({"kernel": "(host gap)", "us/call": self.host_gap_us})
        out.append({"kernel": "(wall)", "us/call": self.wall_us})
        return out

    def __str__(self) -> str:
        if not self.on_gpu:
            return f"{self.wall_us:.1f} us/call wall (CPU run: no device kernels to separate from host time)"
        top = ", ".join(f"{name[:48]} {us:.1f}" for name, us in sorted(self.kernels.items(), key=lambda kv: -kv[1])[:4])
        return (f"{self.wall_us:.1f} us/call wall = {self.kernel_us:.1f} us in {self.launches:.1f} kernels "
                f"+ {self.host_gap_us:.1f} us host gap [{top}]")


def _device_time_us(event) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total", "device_time_total", "cuda_time_total"):
        value = getattr(event, attr, None)
        if value:
            return float(value)
    return 0.0


def profile_table(fn, iters: int, *, gpu: bool, before=None, trace_path: str | None = None) -> dict[str, tuple[float, int]]:
    """Run ``fn`` ``iters`` times under ``torch.profiler``, each call between two synchronisations (``before()``
    runs ahead of each call, inside the profile), and return, per event name, the total time in microseconds
    and the count: the device kernels on a GPU (copies and memsets too), the CPU operators on a CPU run (their
    inclusive CPU time). ``trace_path``: also write a Chrome trace there."""
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if gpu:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(iters):
            sync()
            if before is not None:
                before()
            fn()
            sync()
    if trace_path is not None:
        prof.export_chrome_trace(trace_path)
    wanted = torch.autograd.DeviceType.CUDA if gpu else torch.autograd.DeviceType.CPU
    table: dict[str, tuple[float, int]] = {}
    for event in prof.key_averages():
        if getattr(event, "device_type", None) != wanted:
            continue
        us = _device_time_us(event) if gpu else float(event.cpu_time_total)
        if gpu and us <= 0:
            continue
        total, count = table.get(event.key, (0.0, 0))
        table[event.key] = (total + us, count + int(event.count))
    return table


def breakdown(fn, *, iters: int = 20, warmup: int = 3, device=None) -> Breakdown:
    """Time ``fn`` (no arguments) ``iters`` times, and on a GPU profile it ``iters`` times more; see the module
    docstring."""
    if iters < 1 or warmup < 0:
        raise ValueError(f"breakdown: need iters >= 1 and warmup >= 0, got iters={iters}, warmup={warmup}")
    device_info.check_requested("breakdown", device)
    gpu = device_info.runs_on_gpu(device)
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    walls = []
    for _ in range(iters):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        walls.append(time.perf_counter() - start)
    wall = statistics.median(walls)
    kernels: dict[str, float] = {}
    launches = 0
    if gpu:
        for name, (us, count) in profile_table(fn, iters, gpu=True).items():
            kernels[name] = us / iters
            launches += count
    return Breakdown(iters, wall * 1e6, float(sum(kernels.values())), kernels, launches / iters, gpu)
