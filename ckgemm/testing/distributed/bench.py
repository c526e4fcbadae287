"""``--bench``: where the expert-parallel layer's time goes, on the slowest rank, against yardsticks
measured in the same run.

- Per phase (count exchange with its host sync and handshake, dispatch, GEMM, return, combine): the layer
  runs with a device synchronize at each phase end, ranks aligned by a barrier before every iteration;
  each rank takes the median per phase; the report shows the phases of the rank whose total is largest
  (the layer's time is its slowest rank's) and the per-phase maximum over ranks.
- All-to-all: dispatch and return bandwidth (bytes every rank sends, rows + scales + tags, self-copies
  included, over the slowest rank's phase time) against a plain even ``all_to_all_single`` of the same
  total bytes, timed in the same run.
- GEMM: TFLOP/s inside the layer against the same rows and group sizes run alone on this rank's device
  (``ckgemm.testing.bench``: events and a cache flush on GPUs).
"""
from __future__ import annotations

import time

import torch
import torch.distributed as dist

from ..bench import bench as time_call
from ..bench import quantile
from .batch import local_expert_weights, make_batch, make_expert_weights
from .config import MoEConfig
from .world import World
from .layer import PHASES, EPMoE
from .recipes import gemm_kwargs
from .verdict import gather_to_rank0

TAG_BYTES = 3 * 8


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _row_bytes(cfg: MoEConfig, row_dtype: torch.dtype, scale_width: int) -> int:
    return cfg.hidden * row_dtype.itemsize + scale_width * 4 + TAG_BYTES


def _plain_all_to_all_ms(world: World, nbytes: int, warmup: int, iters: int) -> float:
    per_peer = max(nbytes // world.size, 1)
    send = torch.zeros(per_peer * world.size, dtype=torch.uint8, device=world.device)
    recv = torch.empty_like(send)
    times = []
    for i in range(warmup + iters):
        dist.barrier(group=world.control)
        _sync(world.device)
        start = time.perf_counter()
        dist.all_to_all_single(recv, send, group=world.group)
        _sync(world.device)
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return quantile(times, 0.5)


def bench_layer(world: World, cfg: MoEConfig, scenario: str, *, seed: int, gemm=None, backend=None,
                warmup: int = 3, iters: int = 10) -> dict | None:
    """Times the layer on one fixed step; returns the report dict on rank 0 (None elsewhere)."""
    weights = make_expert_weights(cfg, seed, world.device)
    layer = EPMoE(local_expert_weights(weights, world.rank, world.size), num_experts=cfg.experts,
                  recipe=cfg.quant, group=world.group, gemm=gemm, backend=backend, rank=world.rank,
                  world=world.size, sync_phases=True)
    tokens = make_batch(cfg, scenario, seed, 0, world.size, world.device).local(world.rank)
    per_phase = {p: [] for p in PHASES}
    for i in range(warmup + iters):
        dist.barrier(group=world.control)
        _sync(world.device)
        trace = layer.forward(tokens)
        if trace.error:
            raise RuntimeError(f"bench: the layer failed at stage {trace.error[0]}: {trace.error[1]}")
        if i >= warmup:
            for p in PHASES:
                per_phase[p].append(trace.times.get(p, 0.0) * 1e3)
    medians = {p: quantile(v, 0.5) for p, v in per_phase.items()}
    width = 0 if trace.rows.scale is None else trace.rows.scale.shape[1]
    row_bytes = _row_bytes(cfg, trace.rows.data.dtype, width)
    out_bytes = cfg.out * trace.gemm_out.dtype.itemsize
    mine = {"rank": world.rank, "phases_ms": medians, "total_ms": sum(medians.values()),
            "dispatch_bytes": sum(trace.send_splits) * row_bytes, "return_bytes": sum(trace.recv_splits) * out_bytes,
            "gemm_flops": 2 * trace.rows.data.shape[0] * cfg.out * cfg.hidden,
            "gemm_alone_ms": _gemm_alone_ms(layer, trace, warmup, iters)}
    total_dispatch = torch.tensor([mine["dispatch_bytes"]], dtype=torch.int64)
    dist.all_reduce(total_dispatch, group=world.control)
    mine["plain_a2a_ms"] = _plain_all_to_all_ms(world, int(total_dispatch) // world.size, warmup, iters)
    ranks = gather_to_rank0(mine, world.control, world.rank, world.size)
    return None if ranks is None else _summarize(cfg, scenario, ranks)


def _gemm_alone_ms(layer: EPMoE, trace, warmup: int, iters: int) -> float:
    rows, sizes, weights = trace.rows, trace.group_sizes, layer.weights
    out = torch.empty_like(trace.gemm_out)
    kwargs = gemm_kwargs(layer.recipe, rows.scale, weights)
    result = time_call(lambda: layer.gemm(rows.data, weights.data, sizes, out=out, **kwargs), warmup=warmup,
                       iters=iters, device=rows.data.device, telemetry=False)
    return result.median_ms


def _rate(amount: float, ms: float, unit: float) -> float | None:
    return amount / (ms / 1e3) / unit if ms > 0 else None


def _summarize(cfg: MoEConfig, scenario: str, ranks: list[dict]) -> dict:
    slowest = max(ranks, key=lambda r: r["total_ms"])
    worst = {p: max(r["phases_ms"][p] for r in ranks) for p in PHASES}
    dispatch_bytes = sum(r["dispatch_bytes"] for r in ranks)
    return_bytes = sum(r["return_bytes"] for r in ranks)
    plain_ms = max(r["plain_a2a_ms"] for r in ranks)
    gemm_rank = max(ranks, key=lambda r: r["phases_ms"]["GEMM"])
    return {
        "case": f"{scenario} {cfg.label}", "world": len(ranks), "slowest_rank": slowest["rank"],
        "total_ms": slowest["total_ms"], "phases_ms": slowest["phases_ms"], "max_over_ranks_ms": worst,
        "dispatch_gbps": _rate(dispatch_bytes, worst["dispatch"], 1e9),
        "return_gbps": _rate(return_bytes, worst["return"], 1e9),
        "plain_a2a_gbps": _rate(dispatch_bytes, plain_ms, 1e9),
        "gemm_rank": gemm_rank["rank"],
        "gemm_tflops": _rate(gemm_rank["gemm_flops"], gemm_rank["phases_ms"]["GEMM"], 1e12),
        "gemm_alone_tflops": _rate(gemm_rank["gemm_flops"], gemm_rank["gemm_alone_ms"], 1e12),
        "per_rank": ranks,
    }


def bench_text(summary: dict) -> str:
    lines = [f"bench {summary['case']}, world {summary['world']}: layer {summary['total_ms']:.3f} ms on the "
             f"slowest rank ({summary['slowest_rank']})"]
    lines += [f"  {p:15s} {summary['phases_ms'][p]:9.3f} ms   (max over ranks {summary['max_over_ranks_ms'][p]:.3f})"
              for p in PHASES]

    def fmt(v, unit):
        return "n/a" if v is None else f"{v:.3f} {unit}"

    lines.append(f"  all-to-all: dispatch {fmt(summary['dispatch_gbps'], 'GB/s')}, return "
                 f"{fmt(summary['return_gbps'], 'GB/s')}; plain all_to_all_single of the dispatch's bytes "
                 f"{fmt(summary['plain_a2a_gbps'], 'GB/s')}")
    lines.append(f"  GEMM (rank {summary['gemm_rank']}): {fmt(summary['gemm_tflops'], 'TFLOP/s')} in the layer, "
                 f"{fmt(summary['gemm_alone_tflops'], 'TFLOP/s')} alone on one device, same sizes")
    return "\n".join(lines)
