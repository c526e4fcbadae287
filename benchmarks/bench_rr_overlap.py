#!/usr/bin/env python
"""Would 8-bit RR per call gain from overlapping the transpose with the GEMM? A measurement built from the public
op, not a feature: the groups are split into chunks, the first chunk's B is transposed on the current stream,
the others' on a side stream while the GEMM of the chunks before them runs (each chunk a packed call on its
transposed weights; ``--gemm-sms`` caps those GEMMs' SMs with ckgemm.set_num_sms so the transpose has some),
against the op's own per-call RR (transpose all, then one GEMM) and RC on the same data.
Outputs are checked bit-identical to RC's before timing. Graph replay (the two streams fork and join inside the
graph) and end to end.

    python benchmarks/bench_rr_overlap.py --chunks 2 4 8 --json rr_overlap.json
"""
from __future__ import annotations

import argparse
import sys

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.testing import bench, shapes
from ckgemm.testing.data import random_tensor

CASES = {"DeepSeek-V3 prefill": (32, 32768, 4096, 7168), "Mixtral prefill": (8, 32768, 14336, 4096)}


def chunked_rr(a, b_kn, sizes: list[int], gs, chunks: int, side: torch.cuda.Stream, gemm_sms: int = 0):
    """The per-call RR with chunk i+1's transpose under chunk i's GEMM, the GEMMs that have a transpose beside
    them capped at ``gemm_sms`` SMs (0: all; ckgemm.set_num_sms); returns the [rows, N] output."""
    groups = b_kn.shape[0]
    bounds = [round(groups * i / chunks) for i in range(chunks + 1)]
    starts = [0]
    for m in sizes:
        starts.append(starts[-1] + m)
    out = torch.empty((a.shape[0], b_kn.shape[2]), dtype=ckgemm.rule_for(a.dtype).output, device=a.device)
    main = torch.cuda.current_stream()
    first = torch.ops.ckgemm.transpose_b(b_kn[bounds[0]:bounds[1]])
    side.wait_stream(main)  # the side stream starts after chunk 0's transpose
    done, parts = [], [first]
    with torch.cuda.stream(side):
        for i in range(1, chunks):
            t = torch.ops.ckgemm.transpose_b(b_kn[bounds[i]:bounds[i + 1]])
            t.record_stream(main)
            parts.append(t)
            event = torch.cuda.Event()
            event.record(side)
            done.append(event)
    try:
        for i in range(chunks):
            if i:
                main.wait_event(done[i - 1])
            g0, g1 = bounds[i], bounds[i + 1]
            r0, r1 = starts[g0], starts[g1]
            ckgemm.set_num_sms(gemm_sms if i + 1 < chunks else 0)
            ckgemm.grouped_gemm_packed(a[r0:r1], parts[i], gs[g0:g1], out=out[r0:r1])
    finally:
        ckgemm.set_num_sms(0)
    main.wait_stream(side)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--dtypes", nargs="+", default=["fp8", "int8"])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--gemm-sms", type=int, nargs="+", default=[0],
                   help="SM caps for the GEMMs that run beside a transpose (0: every SM)")
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks need a GPU; nothing to do")
        return 2  # as the other benchmarks (common.gpu_device)
    device = torch.device("cuda")
    side = torch.cuda.Stream()
    rows = []
    for name in args.cases:
        experts, tokens, n, k = CASES[name]
        case = shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial")
        for dname in args.dtypes:
            dtype = ckgemm.fp8_dtype_for(device) if dname == "fp8" else torch.int8
            gen = torch.Generator(device=device).manual_seed(args.seed)
            a = random_tensor((tokens, k), dtype, gen, device)
            b_kn = random_tensor((experts, k, n), dtype, gen, device)
            b_nk = b_kn.transpose(-1, -2).contiguous()
            gs = torch.tensor(case.ms, dtype=torch.int32, device=device)
            forms = {"RC": lambda: ckgemm.grouped_gemm_packed(a, b_nk, gs),
                     "RR per call (op)": lambda: ckgemm.grouped_gemm_packed(a, b_kn, gs, layout="RR")}
            for c in args.chunks:
                for sms in args.gemm_sms:
                    label = f"RR, {c} chunks overlapped" + (f", GEMM on {sms} SMs" if sms else "")
                    forms[label] = (lambda c=c, sms=sms: chunked_rr(a, b_kn, list(case.ms), gs, c, side, sms))
            ref = forms["RC"]()
            for label, fn in forms.items():
                got = fn()
                torch.cuda.synchronize()
                assert torch.equal(got.view(torch.uint8), ref.view(torch.uint8)), f"{name} {dname} {label}"
            timed = dict(warmup=args.warmup, iters=args.iters, device=device)
            base = None
            for label, fn in forms.items():
                try:
                    graph = bench(fn, graph=True, **timed).median_ms
                except Exception as exc:  # noqa: BLE001 - report and keep timing end to end
                    print(f"{label}: graph capture failed: {type(exc).__name__}: {exc}", flush=True)
                    graph = float("nan")
                e2e = bench(fn, sync=True, **timed).median_ms
                base = base or graph
                rows.append({"case": name, "dtype": dname, "form": label, "graph ms": graph, "e2e ms": e2e,
                             "vs RC (graph)": graph / base})
            print(tabulate([r for r in rows if r["case"] == name and r["dtype"] == dname], headers="keys"),
                  flush=True)
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
