"""Starting an expert-parallel world: under ``torchrun`` (env://), or self-started from one process.

- CPU / gloo: ``fork`` + a ``file://`` store (a 4-rank world starts in about 0.1 s; spawn takes ~20 s on a
  2-core box) and ``torch.set_num_threads(1)`` in every rank (torchrun sets OMP_NUM_THREADS=1 itself;
  without it ranks oversubscribe the cores and run 20-30x slower: research/distributed_moe.md 4.3).
- CUDA / ROCm: backend ``nccl`` (RCCL on ROCm), one GPU per rank (``LOCAL_RANK``), ``spawn`` (never fork
  after CUDA initialised), ``init_process_group(device_id=...)``.

Every world also gets a gloo "control" group for verdicts and reports (CPU tensors), which keeps working
after a collective of the layer's group failed. Per-rank results come back to the parent through one pipe
per rank; a rank that dies (a signal, an abort inside gloo) or overruns the deadline is a failed rank,
never a hang: the parent terminates only the processes it started.
"""
from __future__ import annotations

import datetime
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait

import torch
import torch.distributed as dist

CONTROL_TIMEOUT_S = 300


@dataclass
class World:
    rank: int
    size: int
    device: torch.device
    backend: str
    group: object = None  # the layer's process group (None: the default group)
    control: object = None  # gloo group for verdicts and reports


@dataclass
class RankOutcome:
    rank: int
    ok: bool
    value: object = None  # what the rank's function returned
    error: str = ""  # traceback, exit status or "timed out"


def pick_backend(comm: str = "auto", ranks_here: int = 1) -> str:
    """``auto``: nccl when this host has a GPU for each of its ``ranks_here`` ranks, else gloo (CPU tensors;
    e.g. a 2-rank test world on a 1-GPU box). An explicit ``nccl`` without enough GPUs is a usage error."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if comm == "auto":
        return "nccl" if gpus >= ranks_here else "gloo"
    if comm == "nccl" and gpus < ranks_here:
        raise ValueError(f"nccl needs one GPU per rank: {ranks_here} rank(s) on this host, {gpus} GPU(s) visible "
                         f"(use gloo, or fewer ranks)")
    return comm


def init_world(rank: int, size: int, init_method: str, backend: str, timeout_s: float,
               local_rank: int | None = None) -> World:
    """``init_process_group`` plus the control group; one GPU per rank on nccl."""
    timeout = datetime.timedelta(seconds=timeout_s)
    kwargs = {}
    if backend == "nccl":
        device = torch.device("cuda", rank if local_rank is None else local_rank)
        torch.cuda.set_device(device)
        kwargs["device_id"] = device
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=size, timeout=timeout, **kwargs)
    control = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=max(CONTROL_TIMEOUT_S, timeout_s)))
    return World(rank, size, device, backend, None, control)


def init_from_env(comm: str = "auto", timeout_s: float = 120) -> World:
    """Inside torchrun: RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous come from the environment."""
    size = int(os.environ["WORLD_SIZE"])
    backend = pick_backend(comm, int(os.environ.get("LOCAL_WORLD_SIZE", size)))
    return init_world(int(os.environ["RANK"]), size, "env://", backend, timeout_s, int(os.environ.get("LOCAL_RANK", 0)))


def exit_rank(status: int) -> None:
    """End a rank's process without tearing its process groups down: after a failed collective (and at
    interpreter exit, with gloo's threads still running) their destructors can block on peers that left
    or abort the process. Everything the rank reports is flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _rank_main(rank, size, store, backend, timeout_s, threads, fn, args, conn):
    status = 0
    try:
        torch.set_num_threads(threads)
        world = init_world(rank, size, store, backend, timeout_s)
        conn.send(RankOutcome(rank, True, fn(world, *args)))
    except BaseException:  # noqa: BLE001 - report anything to the parent, which owns the verdict
        status = 1
        conn.send(RankOutcome(rank, False, error=traceback.format_exc()))
    finally:
        conn.close()
        exit_rank(status)


def launch(fn, world_size: int, *args, backend: str = "gloo", start_method: str | None = None,
           timeout_s: float = 60, deadline_s: float = 600, threads: int = 1) -> list[RankOutcome]:
    """Run ``fn(world, *args)`` on ``world_size`` fresh ranks; returns each rank's outcome, by rank.

    ``timeout_s``: the layer group's collective timeout. ``deadline_s``: wall time for the whole world,
    after which ranks still running are terminated and reported as timed out."""
    method = start_method or ("spawn" if backend == "nccl" else "fork")
    ctx = multiprocessing.get_context(method)
    with tempfile.TemporaryDirectory(prefix="ckgemm_ep_") as tmp:
        store = f"file://{os.path.join(tmp, 'store')}"
        pipes, procs = [], []
        for rank in range(world_size):
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_rank_main, daemon=False,
                               args=(rank, world_size, store, backend, timeout_s, threads, fn, args, writer))
            proc.start()
            writer.close()
            pipes.append(reader)
            procs.append(proc)
        return _collect(pipes, procs, time.monotonic() + deadline_s)


def _collect(pipes, procs, deadline: float) -> list[RankOutcome]:
    outcomes: dict[int, RankOutcome] = {}
    open_pipes = {p: rank for rank, p in enumerate(pipes)}
    while open_pipes and time.monotonic() < deadline:
        for conn in wait(list(open_pipes), timeout=max(0.0, deadline - time.monotonic())):
            rank = open_pipes.pop(conn)
            try:
                outcomes[rank] = conn.recv()
            except EOFError:  # the rank died before reporting
                pass
    for rank, proc in enumerate(procs):
        proc.join(timeout=max(0.0, deadline - time.monotonic()) if rank in outcomes else 0.5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
            outcomes.setdefault(rank, RankOutcome(rank, False, error="timed out: terminated by the launcher"))
        elif rank not in outcomes:
            outcomes[rank] = RankOutcome(rank, False, error=f"died with exit code {proc.exitcode} before reporting")
    return [outcomes[r] for r in range(len(procs))]


def run_in_process(fn, *args, backend: str = "gloo", timeout_s: float = 60, threads: int | None = 1):
    """World size 1 in this process (no fork): init, run ``fn(world, *args)``, tear down. ``threads``: intra-op
    threads while it runs (restored after; None leaves them): the flow's small tensors only lose from more."""
    saved = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="ckgemm_ep_") as tmp:
        world = init_world(0, 1, f"file://{os.path.join(tmp, 'store')}", backend, timeout_s)
        try:
            if threads is not None:
                torch.set_num_threads(threads)
            return fn(world, *args)
        finally:
            torch.set_num_threads(saved)
            dist.destroy_process_group()
