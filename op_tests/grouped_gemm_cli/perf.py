"""Timing of one prepared run: ckgemm with cold caches, then each available peer in ABBA order against
ckgemm (ratio of medians). FLOPs and bytes count real group sizes only."""
from __future__ import annotations

import torch

from ckgemm.testing import bench, paired_ab, roofline

from .peers import peers_for


def work(case, dtype: torch.dtype, out_dtype: torch.dtype) -> tuple[int, int]:
    """(FLOPs, bytes) of a case over its real sizes: A, B read once and C written once per group."""
    return roofline.group_flops(case.shapes), roofline.group_bytes(case.shapes, dtype.itemsize, out_dtype.itemsize)


def _rate(flops: int, ms: float) -> str:
    return f"{flops / (ms / 1e3) / 1e12:.4g} TFLOP/s"


def time_run(p, case, dtype: torch.dtype, warmup: int, repeat: int, device) -> dict:
    """Our BenchResult plus, per peer, "1.23x" (peer time / our time: above 1, ckgemm is faster) or "n/a"."""
    ours = bench(p.call, warmup=warmup, iters=repeat, device=device)
    columns = {}
    notes = [f"ckgemm {_rate(case.flops, ours.median_ms)}"]
    for column, peer in zip(("vs_loop", "vs_grouped"), peers_for(p, case, dtype)):
        if peer.fn is None:
            columns[column] = "n/a"
            notes.append(f"{peer.name}: n/a ({peer.reason})")
            continue
        pair = paired_ab(p.call, peer.fn, rounds=2, iters=max(repeat // 2, 1), warmup=min(warmup, 2), device=device)
        columns[column] = f"{pair.speedup:.2f}x"
        notes.append(f"{peer.name}: {pair.b.median_ms:.4g} ms, {_rate(case.flops, pair.b.median_ms)}, "
                     f"ckgemm {pair.speedup:.2f}x")
    return {"time": ours, "columns": columns, "notes": notes}
