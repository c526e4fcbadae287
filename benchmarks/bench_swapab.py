#!/usr/bin/env python
"""The 8-bit decode tiles: every SwapAB instance of each 8-bit kind (forced with CKGEMM_CONFIG), in the same
process, under CUDA-graph replay. Two tables, the data csrc/cuda/rules.cpp's SwapAB rule is derived from
(docs/PERF.md):

  decode   DeepSeek-V3 decode (512 tokens, multinomial over 32 experts, N 4096, K 7168; Gaussian data
           quantized as bench_scaled.py does) for fp8 unscaled/row/tensor/block and int8 unscaled/row/tensor:
           graph ms and % of the copy bandwidth in weight bytes, with the usual L2 flush (a memset, which
           leaves dirty lines) and without it.
  groups   16- or 8-row groups, 1 to 128 of them, N 1536-7168: where each width wins, and what the rule picks.

Every forced output is checked (int8 exact, scaled against the reference with the same quantization) before
it is timed. Each call's instances are timed twice, in A B B A order, after bench's 25 ms warm-up: the
figures are the mean of the two runs, the spread their difference as a share of it.

    python benchmarks/bench_swapab.py --json swapab.json --markdown swapab.md
"""
from __future__ import annotations

import sys

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.backends.native import _C
from ckgemm.testing import Report, bench, device_info, grouped_gemm_reference_packed, measure_ceilings, quant, shapes
from ckgemm.testing import there_and_back

import common  # benchmarks/common.py: this script's folder is on sys.path
from bench_grouped_gemm import verify_output

KINDS = [(torch.float8_e4m3fn, r) for r in ("none", "row", "tensor", "block")] + \
        [(torch.int8, r) for r in ("none", "row", "tensor")]
SWEEP = [(4096, 7168, 16, (1, 2, 4, 8, 16, 32)), (1536, 2048, 8, (8, 32, 128)), (7168, 2048, 16, (1, 4, 8, 32))]
SCALING = {"none": 0, "row": 1, "tensor": 1, "block": 2}


def swapab_instances(dtype, recipe):
    code = {torch.float8_e4m3fn: 2, torch.int8: 4}[dtype]
    return [i["name"] for i in _C.instances() if i["dtype"] == code and i["scaling"] == SCALING[recipe]
            and "swapab" in i["name"] and (recipe != "none" or i["out"] in (2, 3))]


def quantized(x, w, dtype, recipe):
    """(a, sa, b, sb): the inputs of a call of this recipe (unscaled: the row cast, scales dropped)."""
    a, sa = quant.cast_for(x, "row" if recipe == "none" else recipe, "a", dtype)
    b, sb = quant.cast_for(w, "row" if recipe == "none" else recipe, "b", dtype)
    return (a, None, b, None) if recipe == "none" else (a, sa, b, sb)


def forced(name, call):
    with common.forced_instance(name):
        call()
        torch.cuda.synchronize()
        return ckgemm.last_dispatch().summary


def timed_graph(name, call, args, device, flush=None):
    with common.forced_instance(name):  # read at capture: the graph keeps the forced instance
        return bench(call, graph=True, warmup=args.warmup, iters=args.iters, device=device, flush=flush,
                     telemetry=False).median_ms


def checker(a, sa, b, sb, sizes, dtype, recipe, k):
    """A check of one call's outputs, its reference computed once: int8 exact; fp8 unscaled against the
    reference; scaled against the reference with the same quantization."""
    ref = grouped_gemm_reference_packed(a, b, sizes) if recipe == "none" else \
        grouped_gemm_reference_packed((a, sa), (b, sb), sizes)
    return lambda out, name: verify_output(out, ref, sizes, dtype, k, name, scaled=recipe != "none")


def decode(args, device, report, ceilings):
    tokens, experts, n, k = 512, 32, 4096, 7168
    sizes = list(shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial").ms)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    x = torch.randn((tokens, k), generator=gen, device=device)
    w = torch.randn((experts, n, k), generator=gen, device=device) * 0.05
    gs = torch.tensor(sizes, dtype=torch.int32, device=device)
    rows = []
    for dtype, recipe in KINDS:
        a, sa, b, sb = quantized(x, w, dtype, recipe)
        out_dtype = ckgemm.rule_for(dtype).output if recipe == "none" else torch.bfloat16
        out = torch.empty((tokens, n), dtype=out_dtype, device=device)
        call = lambda a=a, b=b, sa=sa, sb=sb: ckgemm.grouped_gemm_packed(  # noqa: E731
            a, b, gs, out=out, scale_a=sa, scale_b=sb)
        check = checker(a, sa, b, sb, sizes, dtype, recipe, k)
        weight_bytes = b.numel()
        names = swapab_instances(dtype, recipe)
        for name in names:
            out.fill_(float("nan") if out_dtype.is_floating_point else -7)
            ran = forced(name, call)
            assert name in ran, (name, ran)
            check(out, f"{name} {dtype} {recipe}")
        t_flush = there_and_back(names, lambda name, call=call: timed_graph(name, call, args, device))
        t_warm = there_and_back(names, lambda name, call=call: timed_graph(name, call, args, device, flush=False))
        pct = lambda t: 100 * weight_bytes / (t / 1e3) / (ceilings.hbm_tbs * 1e12)  # noqa: E731
        for name in names:
            (f_ms, f_spread, _), (w_ms, w_spread, _) = t_flush[name], t_warm[name]
            rows.append({"dtype": str(dtype).replace("torch.", ""), "recipe": recipe, "instance": name,
                         "graph ms": f_ms, "% of copy": pct(f_ms), "spread %": f_spread, "no flush ms": w_ms,
                         "no flush % of copy": pct(w_ms), "no flush spread %": w_spread})
            report.add(op="grouped_gemm_packed", backend="cutlass", dtype=rows[-1]["dtype"], shape="DeepSeek-V3 decode",
                       config=name, recipe=recipe, time={"median_ms": f_ms}, spread_pct=f_spread, no_flush_ms=w_ms)
        del a, b, sa, sb, check, call
        torch.cuda.empty_cache()
    return rows


def groups(args, device, report):
    gen = torch.Generator(device=device).manual_seed(args.seed)
    rows = []
    for n, k, m, counts in SWEEP:
        for g in counts:
            x = torch.randn((g * m, k), generator=gen, device=device)
            w = torch.randn((g, n, k), generator=gen, device=device) * 0.05
            gs = torch.full((g,), m, dtype=torch.int32, device=device)
            for dtype, recipe in ((torch.float8_e4m3fn, "row"), (torch.int8, "none")):
                a, sa, b, sb = quantized(x, w, dtype, recipe)
                out_dtype = ckgemm.rule_for(dtype).output if recipe == "none" else torch.bfloat16
                out = torch.empty((g * m, n), dtype=out_dtype, device=device)
                call = lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, scale_a=sa, scale_b=sb)  # noqa: E731
                call()
                dtype_name = str(dtype).replace("torch.", "")
                row = {"groups x rows": f"{g} x {m}", "N": n, "K": k, "kind": f"{dtype_name} {recipe}",
                       "rule picks": ckgemm.last_dispatch().summary.split(":")[-1].split(" x")[0]}
                check = checker(a, sa, b, sb, [m] * g, dtype, recipe, k)
                names = swapab_instances(dtype, recipe)
                for name in names:
                    out.fill_(float("nan") if out_dtype.is_floating_point else -7)
                    assert name in forced(name, call)
                    check(out, f"{name} {g}x{m} N{n}")
                timed = there_and_back(names, lambda name: timed_graph(name, call, args, device))
                for name in names:
                    row[f"{name} us"] = 1e3 * timed[name][0]
                    report.add(op="grouped_gemm_packed", backend="cutlass", dtype=dtype_name, recipe=recipe,
                               config=name, shape=f"{g}x{m} N{n} K{k}", time={"median_ms": timed[name][0]},
                               spread_pct=timed[name][1])
                row["max spread %"] = max((v[1] for v in timed.values()), default=float("nan"))
                rows.append(row)
    return rows


def main() -> int:
    p = common.parser(__doc__, iters=30, warmup=5, cases=False)
    p.add_argument("--part", default="decode,groups", help="decode, groups or both (default)")
    args = p.parse_args()
    device = common.gpu_device(needs_native=True)
    if device is None:
        return 2
    ceilings = measure_ceilings(device)
    report = Report("8-bit SwapAB tiles", meta={**device_info.environment(device), "ceilings": ceilings.to_dict()})
    parts = args.part.split(",")
    if not set(parts) <= {"decode", "groups"}:
        p.error(f"--part: decode and/or groups, got {args.part!r}")
    for part in parts:
        new = decode(args, device, report, ceilings) if part == "decode" else groups(args, device, report)
        print(tabulate(new, headers="keys", floatfmt=".4g"), flush=True)
    common.finish(report, [], args)  # the two tables have different columns: each was printed above
    return 0


if __name__ == "__main__":
    sys.exit(main())
