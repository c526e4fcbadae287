"""``--perf``: the op timed by ``ckgemm.testing.bench`` at realistic MoE sizes, against the roofline and
the torch peers available here (``ckgemm.testing.peers``), after its output there passed the reference.

Per case, on a GPU: ``eager`` (calls queued back to back, L2 flushed outside each timed window: kernel
time where the host keeps up), ``synced`` (the device idle before each call: end-to-end time with all host
work), ``graph`` (CUDA-graph replays, cold L2 too: no launch cost) where the op can be captured, and
``kernel`` (the underlying kernel alone, for adapters that declare ``conformance_prepare``). The host gap
is synced - graph (synced - eager without a graph). TFLOP/s and % of the datasheet roofline are from the
eager median; each peer's ratio is its median time over the op's, from ABBA-interleaved runs (> 1: the op
is faster). On a CPU only eager timing runs (perf_counter, no cache flush), beside the same peers.
"""
from __future__ import annotations

import torch

from . import guard, operands
from .checks import Row, execute, verdict
from .kernel import describe
from .. import shapes
from ..bench import bench, paired_ab
from ..peers import peers
from ..report import Report
from ..roofline import group_bytes, peak_for_device

PERF_CASES = {
    "smoke": lambda seed: [shapes.moe_split(1024, 8, 512, 512, seed, dist="balanced")],
    "full": lambda seed: [
        shapes.moe_split(32768, 32, 4096, 7168, seed, dist="balanced"),  # DeepSeek-V3-like EP prefill
        shapes.moe_split(16384, 8, 14336, 4096, seed, dist="zipf"),  # Mixtral-like, skewed routing
        shapes.moe_split(128, 32, 4096, 7168, seed, dist="balanced"),  # decode: weight-bandwidth bound
    ],
}
ROOFLINE_NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.int8: "int8"}


def _views(ops):
    """Per-group A and op(B) as [K, N] views, and the packed triple, for the peers (codes, unit scales)."""
    if ops.form == "packed":
        a_list, b_list = list(torch.split(ops.a, ops.case.ms)), list(ops.b)
        packed = (ops.a, ops.b.transpose(-2, -1) if ops.layout == "RC" else ops.b, ops.case.ms)
    else:
        a_list, b_list = list(ops.a), list(ops.b)
        packed = None
    return a_list, [b.t() if ops.layout == "RC" else b for b in b_list], packed


def _timed(ctx, ops, iters: int, warmup: int) -> dict:
    kernel = ctx.kernel
    out = guard.allocate(ops.case, ops.form, ops.out_dtype, ctx.device).out if kernel.takes_out else None
    kwargs = kernel.keyword_args(out, ops.out_dtype if ops.scaled else None)
    args = ops.args()

    def call():
        return kernel.fn(*args, **kwargs)
    timing = dict(warmup=warmup, iters=iters, device=ctx.device)
    result = {"call": call, "eager": bench(call, **timing), "notes": []}
    if ctx.device.type != "cuda":
        result["notes"].append("CPU: perf_counter timing, no cache flush, no roofline")
        return result
    result["synced"] = bench(call, sync=True, **timing)
    if kernel.host_sizes:
        result["notes"].append("graph n/a: the op reads group sizes on the host")
    else:
        try:
            result["graph"] = bench(call, graph=True, **timing)
        except Exception as exc:  # noqa: BLE001 - not capturable (a host sync, say): say why
            result["notes"].append(f"graph n/a: {describe(exc)}")
    if kernel.prepare is not None:
        launch = kernel.prepare(*args, **kernel.keyword_args(None, None))
        result["kernel"] = bench(launch, **timing)
    return result


def _peer_columns(ctx, ops, call, iters: int, warmup: int, flops: int) -> tuple[dict, list]:
    columns, notes = {}, []
    a_list, bk_list, packed = _views(ops)
    for peer in peers(a_list, bk_list, packed if ops.case.packable else None):
        key = "vs " + peer.name
        if peer.fn is None:
            columns[key] = "n/a"
            notes.append(f"{peer.name}: n/a ({peer.reason})")
            continue
        pair = paired_ab(call, peer.fn, rounds=2, iters=max(iters // 2, 2), warmup=min(warmup, 2), device=ctx.device)
        columns[key] = round(pair.speedup, 3)
        notes.append(f"{peer.name}: {pair.b.median_ms:.4g} ms, {flops / pair.b.median_ms / 1e9:.4g} TFLOP/s")
    return columns, notes


def run_perf(ctx, report: Report, *, iters: int = 20, warmup: int = 5, tier: str = "smoke") -> list[Row]:
    """Time every perf case of ``tier``; add one report row each. Returns a correctness row per case
    (a case whose output fails the reference is not timed)."""
    rows = []
    for case in PERF_CASES[tier](ctx.seed):
        row = Row(f"perf {case.id}", "perf", "timed at a realistic size after its output passed the reference",
                  ctx.kernel.form, ctx.kernel.layout, ctx.dtype_name, ctx.recipe, "fail", case=case.id,
                  seed=ctx.seed)
        rows.append(row)
        if ctx.kernel.form == "packed" and not case.packable:
            row.status, row.detail = "n/a", "packed form needs shared N, K"
            continue
        ops = operands.build(case, ctx.kernel.form, ctx.kernel.layout, ctx.dtype, ctx.recipe, ctx.seed, ctx.device,
                             out_dtype=ctx.out_dtype)
        outs = execute(ctx, ops, row)
        if outs is None or not verdict(row, outs, ops.reference(), ops):
            continue
        timed = _timed(ctx, ops, iters, warmup)
        flops = case.flops
        nbytes = group_bytes(case.shapes, ops.dtype.itemsize, ops.out_dtype.itemsize)
        columns, notes = _peer_columns(ctx, ops, timed["call"], iters, warmup, flops)
        extra = {f"{name}_ms": timed[name].median_ms for name in ("synced", "graph", "kernel") if name in timed}
        if "synced" in timed:
            base = timed["graph"] if "graph" in timed else timed["eager"]
            extra["host_gap_ms"] = timed["synced"].median_ms - base.median_ms
        if "graph" in timed:
            extra["tflops_graph"] = flops / timed["graph"].median_ms / 1e9
        report.add(op=ctx.kernel.name, backend=ctx.kernel.form, dtype=ROOFLINE_NAMES.get(ops.dtype, "fp8"),
                   layout=ctx.kernel.layout, shape=case.id, config=f"quant {ctx.recipe}", time=timed["eager"],
                   flops=flops, nbytes=nbytes, ceilings=peak_for_device(ctx.device), passed=True, **extra,
                   **columns, notes="; ".join(timed["notes"] + notes))
        row.status, row.detail = "pass", f"eager {timed['eager'].median_ms:.4g} ms, " \
            f"{flops / timed['eager'].median_ms / 1e9:.4g} TFLOP/s"
    return rows
