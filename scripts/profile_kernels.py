#!/usr/bin/env python
"""Nsight Compute profiles of ckgemm's kernels beside a peer's, on one benchmark case.

Two modes:

  run        call one op of one case once inside a cudaProfilerStart/Stop window, after warm-ups, so that
             `ncu --profile-from-start off` sees only that op's kernels:
               ncu --clock-control none --profile-from-start off -o rep --section SpeedOfLight ... \
                   python3 scripts/profile_kernels.py run --case uniform --dtype fp8 --who ours
             --who is `ours`, a peer name from ckgemm.testing.peers (e.g. "matmul loop"), or `verify`
             (gpu_verify on 2^28 fp32 pairs); with --quant, `ours`, `deepgemm` (block) or
             `_scaled_grouped_mm` (row), the peers as benchmarks/bench_scaled.py builds them.
  summarize  one table of the metrics that explain a GEMM's speed, from `ncu --import rep --csv --page raw`
             files: time, launch shape, registers, occupancy, SM throughput, wgmma issue rate, L2 and L1, top stalls.

scripts/device_suite.sh's `profile` stage runs both.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (column in the raw page, short name); a metric a report lacks is shown as "-". All of these are
# collected by the sections and metrics the `profile` stage asks for (seen on the H200 and the H100, ncu with
# CUDA 13.0; the byte and sector counts were first read in docs/PERF_2026-12-07c.md call 3).
METRICS = [
    ("gpu__time_duration.sum", "time"),
    ("launch__grid_size", "grid"),
    ("launch__block_size", "block"),
    ("launch__registers_per_thread", "regs"),
    ("launch__occupancy_limit_registers", "occ lim regs"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %"),
    ("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active", "gmma inst %"),
    ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "gmma pipe active %"),
    ("smsp__cycles_elapsed.avg.per_second", "SM clock"),
    ("lts__t_sector_hit_rate.pct", "L2 hit %"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %"),
    ("dram__bytes_read.sum.per_second", "DRAM read"),
    ("dram__bytes_read.sum", "DRAM bytes read"),
    ("dram__bytes_write.sum", "DRAM bytes written"),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 read sectors"),
    ("l1tex__throughput.avg.pct_of_peak_sustained_active", "L1 %"),
]
STALL_PREFIX = "smsp__average_warp_latency_issue_stalled_"
STALL_PREFIX_ALT = "smsp__average_warps_issue_stalled_"


def _case_inputs(case_sub: str, dtype_name: str):
    import torch

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from bench_grouped_gemm import DTYPES, _inputs  # noqa: E402
    from cases import all_cases  # noqa: E402

    matches = [c for c in all_cases() if case_sub in c.name]
    if not matches:
        raise SystemExit(f"no case matches {case_sub!r}: {[c.name for c in all_cases()]}")
    dtype = DTYPES[dtype_name] or torch.float8_e4m3fn
    sizes, a, b = _inputs(matches[0].case, dtype, "cuda", 0)
    return matches[0], sizes, a, b


def _op(args):
    import torch

    import ckgemm
    from ckgemm.testing import gpu_verify

    if args.who == "verify":
        gen = torch.Generator(device="cuda").manual_seed(0)
        ref = torch.randn(1 << 28, generator=gen, device="cuda")
        out = ref + torch.randn(1 << 28, generator=gen, device="cuda") * 1e-6
        return lambda: gpu_verify(out, ref, 1e-5, 1e-5)
    bc, sizes, a, b = _case_inputs(args.case, args.dtype)
    if args.quant != "none":  # scaled: the same inputs, quantized with the harness's casts (bench_scaled.py's)
        from ckgemm.testing import quant

        scaled_peers = {"deepgemm": "block", "_scaled_grouped_mm": "row"}
        if (args.who not in ("ours", *scaled_peers) or args.dtype not in ("fp8", "int8")
                or (args.dtype, args.quant) == ("int8", "block")
                or scaled_peers.get(args.who, args.quant) != args.quant):
            raise SystemExit("--quant: ours (fp8 with tensor/row/block, int8 with tensor/row), "
                             "deepgemm (fp8 block) or _scaled_grouped_mm (fp8 row)")

        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        (qa, sa), (qb, sb) = (quant.cast_for(t.float(), args.quant, side, a.dtype) for t, side in ((a, "a"), (b, "b")))
        if args.who != "ours":  # bench_scaled.py's peers, on their own layouts
            sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
            from bench_scaled import deepgemm_peer, scaled_grouped_mm_peer  # noqa: E402

            found, why = (deepgemm_peer(qa, sa, qb, sb, sizes) if args.who == "deepgemm"
                          else scaled_grouped_mm_peer(qa, sa, qb, sb, sizes))
            if found is None:
                raise SystemExit(f"peer {args.who!r} not runnable here: {why}")
            return found[0]
        out = torch.empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16, device="cuda")
        return lambda: ckgemm.grouped_gemm_packed(qa, qb, gs, out=out, scale_a=sa, scale_b=sb)
    if args.who == "ours":
        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        out = torch.empty((a.shape[0], b.shape[1]), dtype=ckgemm.rule_for(a.dtype).output, device="cuda")
        return lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    from ckgemm.testing.peers import peers

    b_kn = b.transpose(-2, -1)
    found = {p.name: p for p in peers(list(a.split(sizes)), list(b_kn.unbind(0)), (a, b_kn, sizes))}
    if args.who not in found or found[args.who].fn is None:
        raise SystemExit(f"peer {args.who!r} not runnable here: {[(n, p.reason) for n, p in found.items()]}")
    return found[args.who].fn


def run(args) -> int:
    import torch

    fn = _op(args)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


def _float(v: str):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def summarize(args) -> int:
    for path in args.csv:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if len(rows) < 3:
            print(f"## {os.path.basename(path)}: no kernels profiled")
            continue
        header, units, data = rows[0], rows[1], rows[2:]
        col = {name: i for i, name in enumerate(header)}
        print(f"## {os.path.basename(path)}")
        for r in data:
            name = r[col["Kernel Name"]] if "Kernel Name" in col else "?"
            print(f"- kernel `{name[:110]}`")
            cells = []
            for metric, short in METRICS:
                i = col.get(metric)
                cells.append(f"{short} {r[i]}{(' ' + units[i]) if i is not None and units[i] else ''}"
                             if i is not None else f"{short} -")
            print("  " + "; ".join(cells))
            stalls = []
            for i, name_i in enumerate(header):
                for prefix in (STALL_PREFIX, STALL_PREFIX_ALT):
                    if name_i.startswith(prefix) and name_i.endswith(".ratio") and "not_issued" not in name_i:
                        value = _float(r[i])
                        if value is not None:
                            stalls.append((value, name_i[len(prefix):-len(".ratio")]))
            stalls.sort(reverse=True)
            if stalls:
                print("  top stalls (cycles per issued instruction): "
                      + ", ".join(f"{n} {v:.2f}" for v, n in stalls[:6]))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--case", default="uniform")
    r.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp8", "int8"])
    r.add_argument("--who", default="ours")
    r.add_argument("--quant", default="none", choices=["none", "tensor", "row", "block"],
                   help="ours only: the scaled op with this recipe (bf16 out) on the case's inputs")
    s = sub.add_parser("summarize")
    s.add_argument("csv", nargs="+")
    args = parser.parse_args()
    import torch

    if args.mode == "run" and not torch.cuda.is_available():
        print("profile_kernels run: needs a GPU (torch sees none)", file=sys.stderr)
        return 2
    return run(args) if args.mode == "run" else summarize(args)


if __name__ == "__main__":
    sys.exit(main())
