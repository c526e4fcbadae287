#!/usr/bin/env python
"""ckgemm against its peers on this GPU, in one process: every case x dtype, our packed form (and the
list form for non-MoE cases), each output checked against the harness reference before it is timed.

Timing: round-robin (ckgemm.testing.rounds: one call of each contestant per round, --iters rounds, in a
Williams-design order, after about 100 ms of warm-up calls; device events per call, L2 flushed outside the
timed window), so that drift in clocks, power and temperature over the run (10-25% within seconds on a
power-capped H100, docs/PERF_2026-12-06c.md) hits all alike: each ratio is the median of the best peer's time
over ours from the same round, beside the p10-p90 of those ratios. Eager calls are timed as they are; with
--sync each starts after a device synchronisation (end to end: the GPU idle at its start, the host's whole
cost inside its window). With --graph the capturable contestants are timed again as CUDA-graph replays, the
same way (kernel time, no host overhead).
Ceilings (copy bandwidth, dense matmul TFLOP/s) are measured in the same run. Writes JSON and markdown.

    python benchmarks/bench_grouped_gemm.py --json bench.json --markdown bench.md
"""
from __future__ import annotations

import os
import sys

import torch
from tabulate import tabulate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckgemm  # noqa: E402
from ckgemm.testing import Report, check, device_info, grouped_gemm_reference_packed, measure_ceilings  # noqa: E402
from ckgemm.testing.data import poisoned, random_tensor  # noqa: E402
from ckgemm.testing.peers import checked, peers as find_peers  # noqa: E402
from ckgemm.testing.roofline import group_bytes  # noqa: E402
from ckgemm.testing.rounds import round_robin  # noqa: E402

import common  # noqa: E402
from cases import all_cases  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": None, "int8": torch.int8}


def _inputs(case, dtype, device, seed):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    sizes = case.ms
    n, k = case.ns[0], case.ks[0]
    a = random_tensor((sum(sizes), k), dtype, gen).to(device)
    b = random_tensor((case.groups, n, k), dtype, gen).to(device)
    return sizes, a, b


def verify_output(out, ref, sizes, dtype, k, name, scaled=False):
    """``out`` (packed rows) against the harness reference ``ref``: int8 exact; scaled calls by
    ``bench_scaled.verify`` (the quantized inputs' tolerance and calc_diff bound, on the device); else group by
    group with the harness tolerance."""
    if scaled:
        from bench_scaled import verify  # (bench_scaled's imports are heavier; only scaled callers need them)

        verify(out, ref, dtype, k, name)
        return
    if ckgemm.rule_for(dtype).exact:
        check(out, ref, name=name)  # int32 against the int64 reference: exact, modulo 2^32 as the accumulator
    else:
        starts = [sum(sizes[:g]) for g in range(len(sizes))]
        check([out[s:s + m] for s, m in zip(starts, sizes)], [ref[s:s + m] for s, m in zip(starts, sizes)],
              in_dtype=dtype, k=k, name=name)


def checked_peers(a, b, sizes, ref, dtype) -> list:
    """The peers of a packed RC call (A [rows, k], B [groups, n, k]), each checked against ``ref`` before it may be
    timed (ckgemm.testing.peers.checked: a peer that fails has no fn and says why)."""
    n, k = b.shape[1], b.shape[2]
    b_kn = b.transpose(-2, -1)
    return [checked(peer, list(ref.split(sizes)), sizes, [n] * len(sizes), dtype, [k] * len(sizes))
            for peer in find_peers(list(a.split(sizes)), list(b_kn.unbind(0)), (a, b_kn, sizes))]


def run_case(bc, dtype_name, dtype, device, args, report, ceilings, dense):
    sizes, a, b = _inputs(bc.case, dtype, device, args.seed)
    n, k = bc.case.ns[0], bc.case.ks[0]
    rule = ckgemm.rule_for(dtype)
    gs = torch.tensor(sizes, dtype=torch.int32, device=device)
    out = poisoned((a.shape[0], n), rule.output, device)
    ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    ref = grouped_gemm_reference_packed(a, b, sizes)  # ckgemm's forms and every peer are judged against it
    verify_output(out, ref, sizes, dtype, k, f"{bc.name} {dtype_name}")
    paths = {"ckgemm packed": ckgemm.last_dispatch()}  # each form's own record (the list form may route elsewhere)
    path = paths["ckgemm packed"]
    flops = bc.case.flops
    nbytes = group_bytes(bc.case.shapes, a.element_size(), out.element_size())
    common = dict(dtype=dtype_name, layout="RC", shape=bc.name, flops=flops, nbytes=nbytes, ceilings=ceilings)
    fns = {"ckgemm packed": lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out)}
    if not bc.decode and bc.case.groups <= 8:
        a_list = list(a.split(sizes))
        b_list = list(b.unbind(0))
        c_list = list(out.split(sizes))
        out.copy_(poisoned(out.shape, out.dtype, device))
        ckgemm.grouped_gemm_out(a_list, b_list, c_list)
        paths["ckgemm list"] = ckgemm.last_dispatch()
        verify_output(out, ref, sizes, dtype, k, f"{bc.name} {dtype_name} list form")
        fns["ckgemm list"] = lambda: ckgemm.grouped_gemm_out(a_list, b_list, c_list)
    skipped = {}
    capturable = {}
    for peer in ([] if args.only_ours else checked_peers(a, b, sizes, ref, dtype)):
        if peer.fn is None:
            skipped[peer.name] = peer.reason
            continue
        fns[peer.name] = peer.fn
        if peer.capturable:
            capturable[peer.name] = peer.fn
        else:
            skipped[f"{peer.name} (graph)"] = "synchronises with the host: not capturable"
    eager = round_robin(fns, reference="ckgemm packed", rounds=args.iters, graph=False, sync=args.sync, device=device)
    timings = {name: eager.median_ms(name) for name in eager.times}
    graph, replays = {}, None
    if args.graph:  # kernel time without host overhead: what a CUDA-graph serving loop sees
        replays = round_robin({"ckgemm packed": fns["ckgemm packed"], **capturable}, reference="ckgemm packed",
                              rounds=args.iters, device=device)
        graph = {name: replays.median_ms(name) for name in replays.times}
    ours = timings["ckgemm packed"]
    peers = {k: v for k, v in timings.items() if not k.startswith("ckgemm")}
    best_peer = min(peers, key=peers.get) if peers else None
    for name, t in timings.items():
        lo, hi = eager.ratio_range(name)  # this contestant's time over ours, per round: median and p10-p90
        extra = {"vs_ours": eager.ratio(name), "vs_ours_p10_p90": f"{lo:.3f}-{hi:.3f}"}
        if name in graph:
            lo, hi = replays.ratio_range(name)
            extra.update({"graph_ms": graph[name], "graph_vs_ours": replays.ratio(name),
                          "graph_vs_ours_p10_p90": f"{lo:.3f}-{hi:.3f}"})
        if name.startswith("ckgemm"):
            extra["config"] = paths[name].config_summary
            if best_peer is not None:  # the best peer's time over this form's, per round
                extra["vs_best_peer"] = eager.ratio(best_peer, over=name)
        report.add(op=name, backend=path.backend if name.startswith("ckgemm") else "torch",
                   time={"median_ms": t}, runs_ms=eager.times[name], **common, **extra)
    weight_bytes = b.numel() * b.element_size()
    pct_copy = lambda ms: 100 * weight_bytes / (ms / 1e3) / (ceilings.hbm_tbs * 1e12)  # noqa: E731
    line = {"case": bc.name, "dtype": dtype_name, "ckgemm ms": ours, "TFLOP/s": flops / ours / 1e9,
            "best peer": best_peer or "none", "peer ms": peers.get(best_peer),
            "ratio": eager.ratio(best_peer) if best_peer else None,
            "p10-p90": "{:.3f}-{:.3f}".format(*eager.ratio_range(best_peer)) if best_peer else ""}
    if bc.decode:
        line["weight BW % copy"] = pct_copy(ours)
    if bc.dense_size and dtype_name in dense:
        line["% dense"] = 100 * (flops / ours / 1e9) / dense[dtype_name]
    if "ckgemm list" in timings:
        line["list ms"] = timings["ckgemm list"]
    if graph:
        peers_g = {k: v for k, v in graph.items() if k != "ckgemm packed"}
        best_g = min(peers_g, key=peers_g.get) if peers_g else None
        line["graph ms"], line["graph ratio"] = graph.get("ckgemm packed"), None
        if bc.decode and line["graph ms"]:  # issue 10's decode figure: the weight bytes over the graph-replay time
            line["graph BW % copy"] = pct_copy(line["graph ms"])
        if best_g:  # the best peer's time over ours, paired per round
            lo, hi = replays.ratio_range(best_g)
            line["graph ratio"], line["graph p10-p90"] = replays.ratio(best_g), f"{lo:.3f}-{hi:.3f}"
    line["not run"] = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or ""
    return line


def dense_tflops(device, size: int) -> dict:
    """TFLOP/s of one dense size^3 product per dtype (the 'same dtype and size' yardstick)."""
    return measure_ceilings(device, size=size, copy_bytes=1 << 26).tflops


def main() -> int:
    parser = common.parser(__doc__, iters=30, warmup=None)
    parser.add_argument("--dtype", default="bf16,fp16,fp8,int8")
    parser.add_argument("--graph", action="store_true", help="also time CUDA-graph replays (no host overhead)")
    parser.add_argument("--only-ours", action="store_true", help="skip the peers (tuning runs)")
    parser.add_argument("--sync", action="store_true",
                        help="synchronise before each eager call: end-to-end time with all host overhead")
    args = parser.parse_args()
    device = common.gpu_device()
    if device is None:
        return 2
    names = [d.strip() for d in args.dtype.split(",") if d.strip()]
    ceilings = measure_ceilings(device)
    dense = dense_tflops(device, 4096)
    print(f"device {device_info.device_name(device)}; measured ceilings {ceilings.to_dict()}; dense 4096^3 {dense}")
    report = Report("ckgemm vs peers", meta={**device_info.environment(device), "ceilings": ceilings.to_dict(),
                                              "dense_4096": dense, "seed": args.seed})
    lines = []
    for bc in all_cases(args.seed):
        if not common.selected(bc.name, args):
            continue
        for name in names:
            dtype = DTYPES[name] or ckgemm.fp8_dtype_for(device)
            lines.append(run_case(bc, name, dtype, device, args, report, ceilings, dense))
            print(tabulate([lines[-1]], headers="keys", floatfmt=".4g"), flush=True)
    common.finish(report, lines, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
