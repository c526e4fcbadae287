"""DeepGEMM's testing helpers (``deep_gemm.testing``) on ckgemm's harness: ``bench``, ``bench_kineto``,
``calc_diff``, ``count_bytes``, ``assert_bitwise_equal``, with their signatures and their unit (seconds).

Where these differ from DeepGEMM's:

- ``bench_kineto`` raises ``ValueError`` when no profiled kernel's name contains a requested name (DeepGEMM's
  returns 0 seconds, which a script turns into an infinite TFLOP/s), and when several distinct kernels match
  one name without ``with_multiple_kernels=True`` (DeepGEMM asserts). Its L2 flush before each call is a
  device-to-device copy over ``device_info.flush_bytes`` (256 MB or twice the L2), not an 8 GB memset: a
  copy shows in the profile as ``Memcpy DtoD``, which is left out of the matching (so are ``fn``'s own
  device-to-device copies while ``flush_l2`` is on), so no flush kernel can match a kernel name (DeepGEMM's
  memset is an elementwise kernel, which a name such as "elementwise" would match); the barrier's sleep
  kernel is left out too. On a CPU-only machine, or with ``device="cpu"``, the names match the CPU operators
  of the profile (``"aten::mm"``), timed by their inclusive CPU time (a name that matches an operator and one
  it calls counts the inner one twice with ``with_multiple_kernels``). The environment variables of
  DeepGEMM's version (``DG_USE_NVIDIA_TOOLS``, ``DG_BENCH_FLUSH_L2_BYTES``) are not read.
- ``bench`` is ``ckgemm.testing.bench``: device events around each call with the L2 flushed outside the
  timed window, and the median over the calls, in seconds (DeepGEMM's is the mean of back-to-back calls
  after one flush; ``high_precision`` is accepted and has nothing left to do).
- ``calc_diff`` returns a Python float (DeepGEMM's a 0-d tensor; both compare and format alike) and refuses
  tensors of different shapes.
"""
from __future__ import annotations

import contextlib
import os
import sys

import torch

from .. import device_info, kineto
from ..bench import bench as _bench
from ..numeric import assert_bitwise_equal, calc_diff, count_bytes

__all__ = ["assert_bitwise_equal", "bench", "bench_kineto", "calc_diff", "count_bytes", "suppress_stdout_stderr"]

_FLUSH_EVENT = "Memcpy DtoD"  # the flush's copy in the profile (left out of the matching)
_SLEEP_KERNEL = "spin_kernel("  # torch.cuda._sleep's kernel, ahead of the barrier (left out too)
_BARRIER_SLEEP_CYCLES = int(2e7)  # DeepGEMM's: ~10 ms of device sleep so every rank reaches the barrier idle


def bench(fn, num_warmups: int = 5, num_tests: int = 10, high_precision: bool = False, *, device=None) -> float:
    """Seconds per call of ``fn``: ``ckgemm.testing.bench`` (events per call, cold L2, the median); ``device``
    as ``bench``'s (``"cpu"`` times on the host on a machine with a GPU too)."""
    del high_precision  # each call is timed by its own events: there is no launch overhead to hide
    return float(_bench(fn, warmup=num_warmups, iters=num_tests, telemetry=False, device=device)) / 1e3


@contextlib.contextmanager
def suppress_stdout_stderr():
    """Silence file descriptors 1 and 2 (the profiler's C++ side prints there), restoring them after."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        try:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _names(kernel_names) -> tuple[str, ...]:
    names = (kernel_names,) if isinstance(kernel_names, str) else kernel_names
    if not isinstance(names, tuple) or not names or not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"bench_kineto: kernel_names must be a non-empty string or a tuple of them, got {kernel_names!r}")
    return names


def _before_each(gpu: bool, flush_l2: bool, barrier):
    """What runs ahead of each profiled call: the flush copy (GPU), then the sleep and the barrier."""
    steps = []
    if gpu and flush_l2:
        half = device_info.flush_bytes(torch.device("cuda")) // 8  # two int32 buffers of half the flush size
        src = torch.zeros(half, dtype=torch.int32, device="cuda")
        dst = torch.empty_like(src)
        steps.append(lambda: dst.copy_(src))
    if barrier is not None:
        if gpu:
            steps.append(lambda: torch.cuda._sleep(_BARRIER_SLEEP_CYCLES))
        steps.append(barrier)
    if not steps:
        return None

    def before():
        for step in steps:
            step()
    return before


def bench_kineto(fn, kernel_names, num_tests: int = 30, suppress_kineto_output: bool = False,
                 trace_path: str | None = None, flush_l2: bool = True, with_multiple_kernels: bool = False,
                 barrier=None, *, device=None):
    """Seconds of device time of the kernels whose names contain each of ``kernel_names``, over ``num_tests``
    profiled calls of ``fn`` (one more call before, unprofiled): per launch, or with ``with_multiple_kernels``
    the sum of every matching kernel per call of ``fn``. A string gives a float, a tuple a tuple.

    ``flush_l2`` flushes the L2 before each call; ``barrier`` (a callable, e.g. a process group's barrier)
    runs before each call after ~10 ms of device sleep, so ranks start together; ``trace_path`` writes the
    profile as a Chrome trace; ``device``: ``"cpu"`` matches CPU operators on a machine with a GPU too (the
    default is the GPU where there is one). See the module docstring for where this differs from DeepGEMM's."""
    names = _names(kernel_names)
    if num_tests < 1:
        raise ValueError(f"bench_kineto: num_tests must be >= 1, got {num_tests}")
    device_info.check_requested("bench_kineto", device)
    gpu = device_info.runs_on_gpu(device)
    quiet = suppress_stdout_stderr() if suppress_kineto_output else contextlib.nullcontext()
    on_device = torch.cuda.device(torch.device(device)) if gpu and device is not None else contextlib.nullcontext()
    with on_device:
        fn()
        with quiet:
            table = kineto.profile_table(fn, num_tests, gpu=gpu, before=_before_each(gpu, flush_l2, barrier),
                                         trace_path=trace_path)
    if gpu:  # the flush's copies and the barrier's sleep are not fn's
        table = {name: entry for name, entry in table.items()
                 if not (flush_l2 and name.startswith(_FLUSH_EVENT)) and not (barrier is not None and _SLEEP_KERNEL in name)}
    what = "kernel" if gpu else "CPU operator"
    times = []
    for name in names:
        hits = {key: entry for key, entry in table.items() if name in key}
        if not hits:
            seen = ", ".join(sorted(table, key=lambda k: -table[k][0])[:8]) or "nothing"
            raise ValueError(f"bench_kineto: no {what} name contains {name!r} in {num_tests} calls of fn; "
                             f"the profile has: {seen}")
        if len(hits) > 1 and not with_multiple_kernels:
            raise ValueError(f"bench_kineto: {len(hits)} {what}s contain {name!r} ({', '.join(list(hits)[:4])}); "
                             "give a longer name, or with_multiple_kernels=True for their sum per call of fn")
        total_us = sum(us for us, _ in hits.values())
        launches = sum(count for _, count in hits.values())
        per_us = total_us / num_tests if with_multiple_kernels else total_us / launches
        times.append(per_us / 1e6)
    return tuple(times) if isinstance(kernel_names, tuple) else times[0]
