#!/usr/bin/env python
"""Per-shape tiles: every compute-bound CUTLASS instance of a kind (forced with CKGEMM_CONFIG) on the
prefill-sized cases, 16-bit by default, unscaled fp8 (fp32 out) with --dtype fp8, row scales (bf16 out) with
--dtype fp8-row and DeepGEMM's block scales (bf16 out) with --dtype fp8-block, beside the peers (a torch.matmul
loop and torch._grouped_mm for bf16; for fp8 the _scaled_mm loop and torch._scaled_grouped_mm with unit row
scales, which writes bf16 where ours writes fp32; for fp8-row torch._scaled_grouped_mm; for fp8-block DeepGEMM's
m_grouped_fp8_gemm_nt_contiguous on its 128-row-aligned layout), all under CUDA-graph replay and timed
round-robin (ckgemm.testing.rounds: one replay of each per round, --rounds rounds), so drift in clocks, power
and temperature hits ours and the peers alike. Each instance's columns: its median time, the default's time
over its own per round ("vs default", above 1: faster than the default) and the best peer's over its own
("vs best peer"), each with the p10-p90 of its per-round ratios. Before anything is timed, the rule's pick and
every peer are checked against the harness reference (with the same quantization for the scaled kinds; a peer
that fails is reported and not timed), and each forced instance against the pick's output. Its table is what
csrc/cuda/rules.cpp's selection rule is derived from (docs/PERF.md).

    python benchmarks/bench_tiles.py --json tiles.json --markdown tiles.md
"""
from __future__ import annotations

import os
import sys

import torch
from tabulate import tabulate

import ckgemm
from ckgemm.backends.native import _C
from ckgemm.testing import Report, device_info, grouped_gemm_reference_packed, shapes
from ckgemm.testing.rounds import round_robin
from ckgemm.testing.data import random_tensor
from ckgemm.testing.peers import checked, peers as find_peers

import common  # benchmarks/common.py: this script's folder is on sys.path
from bench_grouped_gemm import verify_output

CASES = {  # name: (experts, tokens, N, K)
    "uniform 8x4096^3": (8, 8 * 4096, 4096, 4096),
    "DeepSeek-V3 prefill": (32, 32768, 4096, 7168),
    "DeepSeek-V3 down": (32, 32768, 7168, 2048),
    "Mixtral prefill": (8, 16384, 14336, 4096),
    "128 experts": (128, 32768, 1536, 2048),
    "gpt-oss": (32, 16384, 5760, 2880),
    "gpt-oss down": (32, 16384, 2880, 2880),  # N 2880: both widths' 1x2 pairs pad it alike (docs/PERF_2026-12-06d.md)
    # long K: DeepSeek-V3's experts at half the tokens (512 rows a group, docs/PERF_2026-12-06d.md); not yet run on
    # a GPU: Llama-4 Scout's down projection (hidden 5120, expert width 8192, 16 experts), Mixtral 8x22B's fused
    # gate/up (hidden 6144)
    "DeepSeek-V3 16k tokens": (32, 16384, 4096, 7168),
    "Llama-4 down": (16, 16384, 5120, 8192),
    "Mixtral 8x22B prefill": (8, 16384, 32768, 6144),
    # the 16-bit rules' bounds (rules.cpp: the own kernel past 64 rows a group, its 192x192 tile at 80-512 rows, K up to
    # 2880, N that 192-wide pairs pad no more): Qwen3-235B's 128 experts, top 8, at 4096 tokens (256 rows a group;
    # gate/up at K 4096; down at N 4096, which 192-wide pairs pad) and 2048, and groups of 72-128 rows
    # (docs/PERF_2026-12-07h.md); 66 and 70 rows, at the own kernel's low bound, have not run on a GPU yet
    "Qwen3 gate/up": (128, 32768, 3072, 4096),
    "Qwen3 down": (128, 32768, 4096, 1536),
    **{f"small groups ({rows} rows)": (128, 128 * rows, 1536, 2048) for rows in (128, 96, 80, 72, 70, 66)},
    "Qwen3 gate/up, 2k tokens": (128, 16384, 3072, 4096),
}
# fp8: unscaled, fp32 out; fp8-row: per-token A and per-channel B scales, bf16 out; fp8-block: DeepGEMM's block
# scales (1x128 A, 128x128 B), bf16 out
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.float8_e4m3fn, "fp8-row": torch.float8_e4m3fn,
          "fp8-block": torch.float8_e4m3fn}
SCALED = {"fp8-row": ("row", 1), "fp8-block": ("block", 2)}  # recipe and the instance table's scaling code


def candidates(dtype, scaling=0):
    code = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2}[dtype]
    return [i for i in _C.instances() if i["dtype"] == code and i["layout"] == 0 and i["scaling"] == scaling
            and i["tile"][0] >= 128]


def scaled_inputs(recipe, tokens, experts, n, k, ms, device, seed):
    """Scaled operands from the harness casts of ``recipe``, the call's keyword arguments, the reference with the
    same quantization, and the recipe's peer (block: DeepGEMM; row: torch._scaled_grouped_mm), its output
    checked against that reference before it is timed (bench_scaled.verify)."""
    from bench_scaled import deepgemm_peer, scaled_grouped_mm_peer, verify
    from ckgemm.testing import quant

    gen = torch.Generator(device=device).manual_seed(seed)
    a, sa = quant.cast_for(torch.randn((tokens, k), generator=gen, device=device), recipe, "a")
    b, sb = quant.cast_for(torch.randn((experts, n, k), generator=gen, device=device) * 0.05, recipe, "b")
    ref = grouped_gemm_reference_packed((a, sa), (b, sb), list(ms))
    if recipe == "block":
        name, (found, why) = "DeepGEMM", deepgemm_peer(a, sa, b, sb, list(ms))
    else:
        name, (found, why) = "_scaled_grouped_mm", scaled_grouped_mm_peer(a, sa, b, sb, list(ms))
    if found is not None:
        try:
            verify(found[1](), ref, a.dtype, k, f"{name} peer")
        except AssertionError as exc:  # a wrong peer is reported and not timed, as peers.checked does
            found, why = None, f"wrong result: {exc}"
    if found is None:
        print(f"no {name} peer: {why}", flush=True)
    return a, b, {"scale_a": sa, "scale_b": sb}, ref, ({name: found[0]} if found else {})


def run(name, dtype_name, args, device, report):
    experts, tokens, n, k = CASES[name]
    dtype = DTYPES[dtype_name]
    case = (shapes.uniform(experts, tokens // experts, n, k) if name.startswith("uniform") else
            shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial"))
    gs = torch.tensor(case.ms, dtype=torch.int32, device=device)
    recipe, scaling = SCALED.get(dtype_name, (None, 0))
    ms = list(case.ms)
    if recipe:
        a, b, scales, ref, peers = scaled_inputs(recipe, tokens, experts, n, k, ms, device, args.seed)
    else:
        gen = torch.Generator(device=device).manual_seed(args.seed)
        a = random_tensor((tokens, k), dtype, gen, device)
        b = random_tensor((experts, n, k), dtype, gen, device)
        scales = {}
        ref = grouped_gemm_reference_packed(a, b, ms)
        bt = b.transpose(-1, -2)
        found = [checked(p, list(ref.split(ms)), ms, [n] * experts, dtype, [k] * experts)  # a wrong peer is no peer
                 for p in find_peers(list(a.split(ms)), list(bt), (a, bt, ms))]
        for p in found:
            if p.fn is None:
                print(f"{name} {dtype_name}: no {p.name}: {p.reason}", flush=True)
        peers = {p.name: p.fn for p in found if p.fn is not None and p.capturable}  # graph replay: no host syncs
    out = torch.full((tokens, n), float("nan"), dtype=torch.bfloat16 if recipe else ckgemm.rule_for(dtype).output,
                     device=device)
    os.environ.pop("CKGEMM_CONFIG", None)
    ckgemm.grouped_gemm_packed(a, b, gs, out=out, **scales)
    default = ckgemm.last_dispatch().summary
    default_path = ckgemm.last_dispatch().paths[0]
    verify_output(out, ref, ms, dtype, k, f"{name} {dtype_name} ({default})", scaled=bool(recipe))
    del ref
    reference = out.clone()
    order = [i for i in candidates(dtype, scaling)  # --instances: those named, and the rule's pick always
             if args.instances is None or i["name"] in args.instances or default_path.endswith(":" + i["name"])]
    missing = sorted(set(args.instances or ()) - {i["name"] for i in order})
    if missing:  # a misspelt name, or one of another kind: said, not silently dropped
        print(f"{name} {dtype_name}: no compute-bound instance named {', '.join(missing)}", flush=True)
    call = lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, **scales)  # noqa: E731
    for info in order:  # each forced instance computes the default's result
        out.fill_(float("nan"))
        _forced(info["name"], call)()
        ran = ckgemm.last_dispatch().paths[0]
        assert ran.endswith(info["name"]), (ran, info["name"])
        torch.testing.assert_close(out.float(), reference.float(), rtol=2e-2, atol=2e-2 * reference.abs().max().item())
    # ours and the peers round-robin, one graph replay each per round, so drift in clocks, power and
    # temperature hits all alike; compared per round (ckgemm.testing.rounds)
    default_label = next((i["name"] for i in order if default_path.endswith(":" + i["name"])), None)
    if default_label is None:  # nothing to compare against: this case is skipped, the others still run
        print(f"{name} {dtype_name}: skipped, the rule's pick {default_path} is not a compute-bound candidate")
        return []
    fns = {i["name"]: _forced(i["name"], call) for i in order}
    fns.update({f"peer: {p}": fn for p, fn in peers.items()})
    result = round_robin(fns, reference=default_label, rounds=args.rounds, device=device)
    peer_labels = [label for label in fns if label.startswith("peer: ")]
    best = min(peer_labels, key=result.median_ms, default=None)
    rows = []
    for label in fns:
        median = result.median_ms(label)
        row = {"case": name, "dtype": dtype_name, "instance": label, "median ms": median,
               "TFLOP/s": case.flops / median / 1e9}
        if label in peer_labels:
            rows.append(row)
            report.add(op=label[len("peer: "):], backend="torch", dtype=dtype_name, shape=name,
                       time={"median_ms": median}, flops=case.flops, runs_ms=result.times[label])
            continue
        lo, hi = result.ratio_range(default_label, over=label)
        row.update({"vs default": result.ratio(default_label, over=label), "p10-p90": f"{lo:.3f}-{hi:.3f}"})
        if best is not None:
            lo, hi = result.ratio_range(best, over=label)
            row.update({"vs best peer": result.ratio(best, over=label), "peer p10-p90": f"{lo:.3f}-{hi:.3f}"})
        rows.append({**row, "default": label == default_label})
        report.add(op="grouped_gemm_packed", backend="cutlass", dtype=dtype_name, shape=name, config=label,
                   time={"median_ms": median}, flops=case.flops, runs_ms=result.times[label])
    return rows


def _forced(instance, call):
    """``call`` with CKGEMM_CONFIG set to ``instance`` while it runs: the graph captured from it keeps the
    forced instance."""
    def forced_call():
        with common.forced_instance(instance):
            return call()
    return forced_call


def main() -> int:
    p = common.parser(__doc__, iters=None, warmup=None)
    p.add_argument("--rounds", type=int, default=24, help="round-robin rounds, one replay of each per round "
                   "(default 24)")
    p.add_argument("--dtype", default="bf16,fp16",
                   help="bf16, fp16, fp8, fp8-row and/or fp8-block (default bf16,fp16)")
    p.add_argument("--instances", type=lambda v: v.split(","), default=None,
                   help="time only these instances (comma-separated names, e.g. ws_128x192x64_c1x2) beside the "
                        "rule's pick (default: every compute-bound instance of the kind)")
    args = p.parse_args()
    device = common.gpu_device(needs_native=True)
    if device is None:
        return 2
    unknown = set(args.dtype.split(",")) - set(DTYPES)
    if unknown:
        p.error(f"--dtype: unknown {sorted(unknown)}; choose from {', '.join(DTYPES)}")
    report = Report("per-shape tiles", meta=device_info.environment(device))
    rows = []
    for name in CASES:
        if not common.selected(name, args):
            continue
        for dtype_name in args.dtype.split(","):
            new = run(name, dtype_name, args, device, report)
            rows += new
            print(tabulate(new, headers="keys", floatfmt=".4g"), flush=True)
            torch.cuda.empty_cache()
    common.finish(report, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
