#!/usr/bin/env python
"""The eager call's cost beyond its kernels, against torch's peers in the same process: end to end
(device idle at the start event), CUDA-graph replay (kernels only), their difference (and its floor: the
same for one trivial torch op), the profiler's breakdown (kernel time and host gap per call), and the
seed-style back-to-back loop timed on the host (the op_tests default case, as aiter's script times it).

    python benchmarks/bench_host.py --json host.json --markdown host.md
"""
from __future__ import annotations

import sys
import time

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.testing import Report, bench, check, device_info, grouped_gemm_reference
from ckgemm.testing.data import random_tensor
from ckgemm.testing.kineto import breakdown
from ckgemm.testing.peers import checked, peers as find_peers

import common  # benchmarks/common.py: this script's folder is on sys.path

CASES = {  # name: per-group (M, N, K)
    "seed-default 3x1024^3": [(1024, 1024, 1024)] * 3,
    "tiny-M x6": [(m, 4096, 2048) for m in (1, 17, 33, 63, 65, 100)],
    "8 groups 256x1024x1024": [(256, 1024, 1024)] * 8,
    "32 groups 64x512x512": [(64, 512, 512)] * 32,
}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": None, "int8": torch.int8}


def peers_for(a, b, refs) -> dict:
    """The harness's peers (ckgemm.testing.peers): the loop of the dtype's torch GEMM, and torch's grouped
    op where the groups share N and K; each kept only when its output passes against ``refs``."""
    same = len({tuple(x.shape[1:]) for x in a}) == 1 and len({tuple(y.shape) for y in b}) == 1
    ms, ns, ks = [x.shape[0] for x in a], [y.shape[0] for y in b], [x.shape[1] for x in a]
    packed = (torch.cat(a), torch.stack(b).transpose(-2, -1), ms) if same else None
    found = {}
    for peer in find_peers(a, [y.t() for y in b], packed):
        peer = checked(peer, refs, ms, ns, a[0].dtype, ks)
        if peer.fn is None:
            print(f"{peer.name}: n/a ({peer.reason})", flush=True)
        else:
            found[peer.name] = peer.fn
    return found


def verified(label: str, fn, refs, a) -> None:
    """One call of a ckgemm form, its outputs checked against ``refs`` before it is timed."""
    out = fn()
    outs = list(torch.split(out, [x.shape[0] for x in a])) if isinstance(out, torch.Tensor) else list(out)
    check(outs, refs, in_dtype=a[0].dtype, k=[x.shape[1] for x in a], name=label)


def host_loop_us(fn, calls: int) -> float:
    """aiter-style: back-to-back calls timed on the host, one synchronisation at the end."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def run(name, shapes, dtype_name, dtype, args, device, report):
    gen = torch.Generator(device=device).manual_seed(args.seed)
    a = [random_tensor((m, k), dtype, gen, device) for m, n, k in shapes]
    b = [random_tensor((n, k), dtype, gen, device) for m, n, k in shapes]
    c = [torch.empty((m, n), dtype=ckgemm.rule_for(dtype).output, device=device) for m, n, _ in shapes]
    sizes = torch.tensor([m for m, _, _ in shapes], dtype=torch.int32, device=device)
    forms = {"ckgemm list (out)": lambda: ckgemm.grouped_gemm_out(a, b, c),
             "ckgemm list (alloc)": lambda: ckgemm.grouped_gemm(a, b)}
    if len({(n, k) for _, n, k in shapes}) == 1:
        pa, pb = torch.cat(a), torch.stack(b)
        pout = torch.empty((pa.shape[0], shapes[0][1]), dtype=c[0].dtype, device=device)
        forms["ckgemm packed"] = lambda: ckgemm.grouped_gemm_packed(pa, pb, sizes, out=pout)
    refs = grouped_gemm_reference(a, b)
    for label, fn in forms.items():
        verified(f"{name} {dtype_name} {label}", fn, refs, a)
    return [timed_row(name, dtype_name, label, fn, args, device, report)
            for label, fn in {**forms, **peers_for(a, b, refs)}.items()]


def timed_row(name, dtype_name, label, fn, args, device, report) -> dict:
    """One callable: end to end, graph replay, their difference, the profiler's split and the host loop."""
    timed = dict(warmup=args.warmup, iters=args.iters, device=device, telemetry=False)
    e2e = bench(fn, sync=True, **timed).median_ms * 1e3
    try:
        graph = bench(fn, graph=True, **timed).median_ms * 1e3
    except Exception:  # noqa: BLE001 - a peer that synchronises with the host cannot be captured
        graph = None
    split = breakdown(fn, iters=args.iters, device=device)
    row = {"case": name, "dtype": dtype_name, "form": label, "e2e us": e2e, "graph us": graph,
           "e2e - graph us": None if graph is None else e2e - graph, "host loop us": host_loop_us(fn, args.iters),
           "kernels/call": split.launches, "kernel us": split.kernel_us, "host gap us": split.host_gap_us}
    if label.startswith("ckgemm"):
        row["config"] = ckgemm.last_dispatch().config_summary
    report.add(op=label, backend="ckgemm" if label.startswith("ckgemm") else "torch", dtype=dtype_name,
               shape=name, config=row.get("config", ""), time={"median_ms": e2e / 1e3},
               graph_ms=None if graph is None else graph / 1e3, host_loop_us=row["host loop us"],
               kernels=split.kernels, host_gap_us=split.host_gap_us)
    return row


def floor_rows(args, device, report) -> list[dict]:
    """The same measurements of one trivial torch op (a single small kernel): the floor that e2e - graph
    has on this machine for any eager call that launches anything."""
    x = torch.randn(64, 64, device=device)
    z = torch.empty_like(x)
    return [timed_row("floor: one kernel", "fp32", "torch.add(out=)", lambda: torch.add(x, x, out=z), args, device,
                      report)]


def main() -> int:
    p = common.parser(__doc__, iters=50, warmup=10)
    p.add_argument("--dtype", default="bf16,fp16,fp8,int8")
    args = p.parse_args()
    device = common.gpu_device()
    if device is None:
        return 2
    report = Report("ckgemm host overhead vs peers", meta={**device_info.environment(device), "seed": args.seed})
    rows = floor_rows(args, device, report)
    print(tabulate(rows, headers="keys", floatfmt=".1f"), flush=True)
    for name, shapes in CASES.items():
        if not common.selected(name, args):
            continue
        for dtype_name in args.dtype.split(","):
            dtype = DTYPES[dtype_name] or ckgemm.fp8_dtype_for(device)
            new = run(name, shapes, dtype_name, dtype, args, device, report)
            rows += new
            print(tabulate(new, headers="keys", floatfmt=".1f"), flush=True)
    common.finish(report, rows, args, ".1f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
