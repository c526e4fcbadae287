#!/usr/bin/env python
"""Scaled fp8 (and int8) grouped GEMM against its peers, in one process: block scales (1x128 tokens,
128x128 weights) against DeepGEMM, its m_grouped_fp8_gemm_nt_contiguous on prefill (sgl-deep-gemm, timed
on its own 128-row-aligned layout, FLOPs counted over real rows only) and its fp8 masked grouped GEMM on
decode (each expert's rows in its own slot of a [G, M_max, K] buffer); row scales against
torch._scaled_grouped_mm; tensor scales alone. Every output is checked against the harness reference with
the same quantization before it is timed. End to end (device idle at the start) and CUDA-graph replay; where
the recipe has a peer, ours and the peer are timed in A B B A order (two rounds of --iters calls, pooled;
each round's ratio in the graph rounds column), else ours alone.

    python benchmarks/bench_scaled.py --json scaled.json --markdown scaled.md
"""
from __future__ import annotations

import sys

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.testing import Report, bench, calc_diff, device_info, gpu_verify, grouped_gemm_reference_packed, paired_ab
from ckgemm.testing import measure_ceilings, quant, shapes
from ckgemm.testing.bench import capture_graph
from ckgemm.testing.conformance.adapters import contiguous_launch, masked_launch
from ckgemm.testing.numeric import scaled_max_diff, scaled_tolerance

import common  # benchmarks/common.py: this script's folder is on sys.path

CASES = {  # name: (experts, tokens, N, K, decode)
    "DeepSeek-V3 prefill": (32, 32768, 4096, 7168, False),
    "DeepSeek-V3 down": (32, 32768, 7168, 2048, False),
    "Mixtral prefill": (8, 16384, 14336, 4096, False),
    "128 experts": (128, 32768, 1536, 2048, False),
    "DeepSeek-V3 decode": (32, 512, 4096, 7168, True),
}


def verify(out, ref, dtype, k, name):
    """On the device (a prefill output has 10^8 elements): the scaled tolerance from the whole output's
    max|ref| (a per-group bound at least as loose for every group), and the calc_diff bound."""
    rtol, atol = scaled_tolerance(dtype, torch.bfloat16, k, float(ref.abs().max()))
    out = out.float()
    stats = gpu_verify(out, ref, rtol, atol)
    diff = calc_diff(out, ref)
    if not stats.passed or not diff <= scaled_max_diff(torch.bfloat16):
        raise AssertionError(f"{name}: {stats}; calc_diff {diff:.3g} (bound {scaled_max_diff(torch.bfloat16):.3g})")


def _first_call(call, result, who="deep_gemm"):
    """((call, result), "") once call has run, else (None, why): a refusal means no peer for this case."""
    try:
        call()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        return None, f"{who} refused: {str(exc).splitlines()[0][:80]}"
    return (call, result), ""


def _deepgemm(launcher, a, sa, b, sb, sizes):
    """A DeepGEMM peer from a conformance adapter's launcher: the operands laid out once here, outside the timed
    call, which runs the kernel alone (bf16 out); its result, the real rows gathered back."""
    try:
        launch, d, rows = launcher(a, b, torch.tensor(sizes), sa, sb)
    except (NotImplementedError, ModuleNotFoundError) as exc:  # not installed, or no such kernel in it
        return None, f"deep_gemm unavailable: {str(exc).splitlines()[0][:80]}"
    return _first_call(launch, lambda: d.index_select(0, rows))


def deepgemm_peer(a, sa, b, sb, sizes):
    """DeepGEMM's m_grouped_fp8_gemm_nt_contiguous on its contiguous layout (each expert's rows padded to the
    alignment it asks for, a per-row expert index, -1 on padding rows)."""
    return _deepgemm(contiguous_launch, a, sa, b, sb, sizes)


def deepgemm_masked_peer(a, sa, b, sb, sizes):
    """DeepGEMM's decode kernel, its fp8 masked grouped GEMM (m_grouped_fp8_fp4_gemm_nt_masked, exported as
    fp8_m_grouped_gemm_nt_masked by sgl-deep-gemm 0.1.0): each expert's rows at the start of its own slot of a
    [G, M_max, K] buffer, the real counts on the device and their mean as its expected_m."""
    return _deepgemm(masked_launch, a, sa, b, sb, sizes)


def scaled_grouped_mm_peer(a, sa, b, sb, sizes):
    if not hasattr(torch, "_scaled_grouped_mm"):
        return None, "torch._scaled_grouped_mm missing"
    offs = torch.tensor(sizes, dtype=torch.int32, device=a.device).cumsum(0, dtype=torch.int32)
    b_col = b.transpose(-2, -1)  # [G, K, N] column-major, as it requires
    out = {}

    def call():
        out["y"] = torch._scaled_grouped_mm(a, b_col, sa, sb, offs=offs, out_dtype=torch.bfloat16)

    return _first_call(call, lambda: out["y"], "_scaled_grouped_mm")


def run(name, recipe, dtype, args, device, report, ceilings):
    experts, tokens, n, k, decode = CASES[name]
    case = shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial")
    sizes = list(case.ms)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    x = torch.randn((tokens, k), generator=gen, device=device)
    w = torch.randn((experts, n, k), generator=gen, device=device) * 0.05
    a, sa = quant.cast_for(x, recipe, "a", dtype)
    b, sb = quant.cast_for(w, recipe, "b", dtype)
    del x, w
    gs = torch.tensor(sizes, dtype=torch.int32, device=device)
    out = torch.full((tokens, n), float("nan"), dtype=torch.bfloat16, device=device)
    call = lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, scale_a=sa, scale_b=sb)  # noqa: E731
    call()
    ref = grouped_gemm_reference_packed((a, sa), (b, sb), sizes)
    verify(out, ref, dtype, k, f"{name} {recipe}")
    config = ckgemm.last_dispatch().config_summary
    notes, peer, peer_name = [], None, None
    if dtype != torch.int8 and recipe in ("block", "row"):
        # decode: DeepGEMM's masked kernel, the one it ships for decode (its contiguous layout would pad
        # 5-27 rows per expert to 128, about 8x the real rows' work)
        peer_name = "_scaled_grouped_mm" if recipe == "row" else "DeepGEMM masked" if decode else "DeepGEMM"
        found, why = (scaled_grouped_mm_peer(a, sa, b, sb, sizes) if recipe == "row" else
                      (deepgemm_masked_peer if decode else deepgemm_peer)(a, sa, b, sb, sizes))
        if found is None:
            notes.append(why)
        else:
            peer, result = found
            verify(result(), ref, dtype, k, f"{peer_name} {name}")  # the peer computes the same function
    timed = dict(warmup=args.warmup, iters=args.iters, device=device)

    def times(mode):
        """(ours ms, the peer's ms, peer/ours of each round): in A B B A order beside the peer, so drift in
        clocks and temperature hits both alike; ours alone where there is no peer or the peer cannot be
        captured in a graph."""
        if peer is not None and mode.get("graph"):
            try:
                capture_graph(peer)
            except Exception as exc:  # noqa: BLE001 - a peer that cannot be captured is timed eagerly only
                notes.append(f"{peer_name} graph: {str(exc).splitlines()[0][:60]}")
                return bench(call, **mode, **timed).median_ms, float("nan"), []
        if peer is None:
            return bench(call, **mode, **timed).median_ms, float("nan"), []
        pair = paired_ab(call, peer, rounds=2, **mode, **timed)
        return pair.a.median_ms, pair.b.median_ms, [1 / r for r in pair.round_ratios]

    (e2e, peer_e2e, _), (graph, peer_graph, rounds) = times(dict(sync=True)), times(dict(graph=True))
    peers = {peer_name: (peer_e2e, peer_graph)} if peer is not None else {}
    flops = case.flops
    weight_bytes = b.numel() * b.element_size()
    row = {"case": name, "recipe": recipe, "dtype": str(dtype).replace("torch.", ""), "config": config,
           "e2e ms": e2e, "graph ms": graph, "TFLOP/s (graph)": flops / graph / 1e9}
    if decode:
        row["weight BW % copy"] = 100 * weight_bytes / (graph / 1e3) / (ceilings.hbm_tbs * 1e12)
    for peer_name, (pe, pg) in peers.items():
        row[f"{peer_name} graph ms"] = pg
        row[f"vs {peer_name} (graph)"] = pg / graph
        row["graph rounds"] = ", ".join(f"{r:.3f}" for r in rounds)  # the run-to-run spread of that ratio
        row[f"vs {peer_name} (e2e)"] = pe / e2e
    row["notes"] = "; ".join(notes)
    report.add(op="grouped_gemm_packed", backend=ckgemm.last_dispatch().backend, dtype=row["dtype"], layout="RC",
               shape=name, config=config, recipe=recipe, flops=flops, time={"median_ms": graph}, e2e_ms=e2e,
               peers={k: {"e2e_ms": v[0], "graph_ms": v[1], "graph_rounds": rounds} for k, v in peers.items()})
    return row


def main() -> int:
    p = common.parser(__doc__, iters=20, warmup=3)
    p.add_argument("--recipes", default="block,row,tensor")
    p.add_argument("--int8", action="store_true", help="also int8 with row and tensor scales")
    args = p.parse_args()
    device = common.gpu_device()
    if device is None:
        return 2
    ceilings = measure_ceilings(device)
    report = Report("ckgemm scaled fp8 vs peers", meta={**device_info.environment(device),
                                                         "ceilings": ceilings.to_dict(), "seed": args.seed})
    rows = []
    fp8 = ckgemm.fp8_dtype_for(device)
    for name in CASES:
        if not common.selected(name, args):
            continue
        for recipe in args.recipes.split(","):
            for dtype in [fp8] + ([torch.int8] if args.int8 and recipe != "block" else []):
                try:
                    rows.append(run(name, recipe, dtype, args, device, report, ceilings))
                except Exception as exc:  # noqa: BLE001 - report and go on: one failure must not hide the rest
                    rows.append({"case": name, "recipe": recipe, "dtype": str(dtype), "notes": f"FAILED: {exc}"[:300]})
                print(tabulate([rows[-1]], headers="keys", floatfmt=".4g"), flush=True)
                torch.cuda.empty_cache()
    common.finish(report, rows, args)
    return 1 if any("FAILED" in r.get("notes", "") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
