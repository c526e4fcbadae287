#!/usr/bin/env python
"""8-bit RR and the repack kernel: the tiled transpose's bandwidth against the measured copy bandwidth,
and RR calls per call (packed int8 and unscaled fp8: ckgemm's own RR kernel, no transpose; the rest: B transposed
by the repack kernel, then the RC kernel; the config column names what ran), prepacked (ckgemm.prepack, read as
stored) and RC (the native layout) on the same data, in one process, timed round-robin (one call of each form a
round, --iters rounds) in graph replay and end to end, each form's time over RC's per round with its p10-p90.
Every form's output must equal RC's bit for bit first (the own RR kernel sums as the RC tiles do, tests/test_gpu_own_s8.py).

    python benchmarks/bench_repack.py --json repack.json --markdown repack.md
"""
from __future__ import annotations

import sys

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.testing import Report, bench, device_info, measure_ceilings
from ckgemm.testing.rounds import round_robin
from ckgemm.testing.data import random_tensor
from ckgemm.testing import shapes

import common  # benchmarks/common.py: this script's folder is on sys.path

CASES = {"DeepSeek-V3 decode": (32, 512, 4096, 7168), "DeepSeek-V3 prefill": (32, 32768, 4096, 7168)}


def transpose_bandwidth(device, args, ceilings) -> dict:
    b = torch.randint(-128, 128, (32, 7168, 4096), dtype=torch.int8, device=device)  # 0.94 GB
    fn = lambda: torch.ops.ckgemm.transpose_b(b)  # noqa: E731
    assert torch.equal(fn()[3, :64, :64], b[3, :64, :64].t())
    ms = bench(fn, warmup=args.warmup, iters=args.iters, device=device).median_ms
    moved = 2 * b.numel()  # read once, written once
    gbs = moved / (ms / 1e3) / 1e9
    return {"what": "transpose_b [32, 7168, 4096] int8", "ms": ms, "GB/s": gbs,
            "% of copy": 100 * gbs / (ceilings.hbm_tbs * 1e3)}


def rr_case(name, dtype, device, args, report) -> list[dict]:
    experts, tokens, n, k = CASES[name]
    case = shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial")
    gen = torch.Generator(device=device).manual_seed(args.seed)
    a = random_tensor((tokens, k), dtype, gen, device)
    b_kn = random_tensor((experts, k, n), dtype, gen, device)  # RR storage
    gs = torch.tensor(case.ms, dtype=torch.int32, device=device)
    weights = ckgemm.prepack(b_kn, layout="RR")
    b_nk = b_kn.transpose(-1, -2).contiguous()  # the same weights stored RC
    forms = {"RR per call": lambda: ckgemm.grouped_gemm_packed(a, b_kn, gs, layout="RR"),
             "RR prepacked": lambda: ckgemm.grouped_gemm_packed(a, weights, gs),
             "RC": lambda: ckgemm.grouped_gemm_packed(a, b_nk, gs)}
    results, paths = {}, {}
    for label, fn in forms.items():
        results[label] = fn()
        paths[label] = ckgemm.last_dispatch().config_summary
    for label, y in results.items():
        assert torch.equal(y.view(torch.uint8), results["RC"].view(torch.uint8)), label
    # Round-robin (ckgemm.testing.rounds): one call of each form per round, so the power cap's drift hits all three
    # alike; timed one after another, one form once ran 17% slower than RC with the same kernel (PERF_2026-12-06i).
    graph = round_robin(forms, reference="RC", rounds=args.iters, device=device)
    e2e = round_robin(forms, reference="RC", rounds=args.iters, graph=False, sync=True, device=device)
    rows = []
    for label, path in paths.items():
        lo, hi = graph.ratio_range(label)
        rows.append({"case": name, "dtype": str(dtype).replace("torch.", ""), "form": label,
                     "e2e ms": e2e.median_ms(label), "graph ms": graph.median_ms(label),
                     "vs RC (graph)": graph.ratio(label), "p10-p90": f"{lo:.3f}-{hi:.3f}",
                     "vs RC (e2e)": e2e.ratio(label), "config": path})
        report.add(op=label, backend="ckgemm", dtype=rows[-1]["dtype"], layout="RR" if "RR" in label else "RC",
                   shape=name, config=path, time={"median_ms": graph.median_ms(label)},
                   e2e_ms=e2e.median_ms(label), vs_rc_graph=graph.ratio(label), vs_rc_p10_p90=rows[-1]["p10-p90"],
                   vs_rc_e2e=e2e.ratio(label), flops=case.flops)
    return rows


def main() -> int:
    args = common.parser(__doc__, iters=20, warmup=3, cases=False).parse_args()
    device = common.gpu_device(needs_native=True)  # times torch.ops.ckgemm.transpose_b
    if device is None:
        return 2
    ceilings = measure_ceilings(device)
    report = Report("ckgemm 8-bit RR and repack", meta={**device_info.environment(device),
                                                         "ceilings": ceilings.to_dict()})
    bw = transpose_bandwidth(device, args, ceilings)
    print(tabulate([bw], headers="keys", floatfmt=".4g"), flush=True)
    report.add(op="transpose_b", backend="ckgemm", dtype="int8", shape=bw["what"], time={"median_ms": bw["ms"]},
               gbps_measured=bw["GB/s"], pct_copy=bw["% of copy"])
    rows = []
    for name in CASES:
        for dtype in (ckgemm.fp8_dtype_for(device), torch.int8):
            rows += rr_case(name, dtype, device, args, report)
            print(tabulate(rows[-3:], headers="keys", floatfmt=".4g"), flush=True)
            torch.cuda.empty_cache()
    common.finish(report, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
