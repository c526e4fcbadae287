#!/usr/bin/env python
"""How the own 16-bit kernel's clusters take their units (CKGEMM_WS_UNITS, read at each call: csrc/cuda/ws_fp8_rules.h)
on the compute-bound cases of benchmarks/cases.py: the plain stride ('static'), the stride's rounds balanced
('balanced': ws_fp8_schedule.h's balanced_unit, the default from 2048 rows a group) and units drawn in turn
('dynamic', the default below), each in one process round-robin with the torch.matmul loop and, in bf16,
torch._grouped_mm (ckgemm.testing.rounds), under graph replay and end to end. Every form is first checked against
a float reference on a NaN-poisoned output and against the first form for the same bits (each tile is computed
alike whichever cluster takes it). Printed per case and form: median ms, the best peer's time over the form's per
round (above 1: faster) and the first form's time over this one's, each with p10-p90. benchmarks/units_model.py
gives each form's busiest cluster for the same cases, without a GPU.

    python benchmarks/bench_units.py --units static,balanced,dynamic --cases Mixtral,DeepSeek-V3 --rounds 16
"""
from __future__ import annotations

import os
import sys

import common  # benchmarks/common.py: this script's folder is on sys.path
import torch
from tabulate import tabulate

import ckgemm
from cases import all_cases
from ckgemm.testing import Report, device_info
from ckgemm.testing.peers import grouped_peer, loop_peer
from ckgemm.testing.rounds import round_robin

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def own(a, b, gs, out, mode: str):
    """The op's packed call with CKGEMM_WS_UNITS=mode (a graph captured inside keeps it)."""
    def call():
        before = os.environ.get("CKGEMM_WS_UNITS")
        os.environ["CKGEMM_WS_UNITS"] = mode
        try:
            ckgemm.grouped_gemm_packed(a, b, gs, out=out)
        finally:
            if before is None:
                os.environ.pop("CKGEMM_WS_UNITS", None)
            else:
                os.environ["CKGEMM_WS_UNITS"] = before
    return call


def checked_forms(a, b, sizes, dtype, modes) -> dict:
    """Each mode's call on its own poisoned output, checked as the docstring says."""
    gs = torch.tensor(sizes, device=a.device, dtype=torch.int32)
    ref = torch.cat([x.float() @ y.float().T for x, y in zip(a.split(sizes), b)])
    scale = ref.abs().max().item()
    fns, first = {}, None
    for mode in modes:
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device, dtype=dtype)
        call = own(a, b, gs, out, mode)
        call()
        path = ckgemm.last_dispatch()
        torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2 * scale, msg=f"{mode} vs reference")
        if first is None:
            first = out.clone()
        elif not torch.equal(out, first):
            raise AssertionError(f"units {mode} gave other bits than {modes[0]}")
        print(f"  units {mode}: checked; path {path}")
        fns[f"units {mode}"] = call
    return fns


def run_case(case, dtype_name: str, modes, rounds: int, device, report) -> list[dict]:
    dtype = DTYPES[dtype_name]
    sizes, n, k = case.case.ms, case.case.ns[0], case.case.ks[0]
    gen = torch.Generator(device=device).manual_seed(case.case.seed or 0)
    a = torch.randn(sum(sizes), k, device=device, dtype=dtype, generator=gen)
    b = torch.randn(len(sizes), n, k, device=device, dtype=dtype, generator=gen)
    print(f"{case.name} {dtype_name}: {len(sizes)} groups, N {n}, K {k}")
    fns = checked_forms(a, b, sizes, dtype, modes)
    peers = [loop_peer(list(a.split(sizes)), [y.T for y in b]), grouped_peer(a, b.transpose(-2, -1), sizes)]
    peer_names = [p.name for p in peers if p.fn is not None and p.capturable]
    fns.update({p.name: p.fn for p in peers if p.name in peer_names})
    first, rows = f"units {modes[0]}", []
    for timing, sync in (("graph", False), ("e2e", True)):
        result = round_robin(fns, reference=first, rounds=rounds, device=device, graph=not sync, sync=sync)
        best = min(peer_names, key=result.median_ms)
        for form in (f"units {m}" for m in modes):
            lo, hi = result.ratio_range(best, over=form)
            flo, fhi = result.ratio_range(first, over=form)
            rows.append({"case": case.name, "dtype": dtype_name, "timing": timing, "form": form,
                         "ms": result.median_ms(form), "best peer": best, "peer ms": result.median_ms(best),
                         "peer/form": f"{result.ratio(best, over=form):.4f} ({lo:.3f}-{hi:.3f})",
                         f"{modes[0]}/form": f"{result.ratio(first, over=form):.4f} ({flo:.3f}-{fhi:.3f})"})
            report.add(op=f"{form} {timing}", backend="ckgemm", dtype=dtype_name, layout="RC", shape=case.name,
                       time={"median_ms": result.median_ms(form)}, flops=case.case.flops, best_peer=best,
                       peer_over_form=rows[-1]["peer/form"], first_over_form=rows[-1][f"{modes[0]}/form"])
    return rows


def main() -> int:
    p = common.parser(__doc__, iters=None, warmup=None)
    p.add_argument("--rounds", type=int, default=16, help="round-robin rounds (default 16)")
    p.add_argument("--units", default="static,balanced,dynamic",
                   help="comma-separated CKGEMM_WS_UNITS modes, the first the others' reference "
                        "(default static,balanced,dynamic)")
    p.add_argument("--dtype", default="bf16", help="comma-separated: bf16, fp16 (default bf16)")
    args = p.parse_args()
    device = common.gpu_device(needs_native=True)
    if device is None:
        return 2
    modes = args.units.split(",")
    report = Report("ckgemm own 16-bit kernel: how clusters take units", meta=device_info.environment(device))
    rows = []
    for case in all_cases(args.seed):
        if case.decode or len(set(case.case.ns)) != 1 or not common.selected(case.name, args):
            continue
        for dtype_name in args.dtype.split(","):
            case_rows = run_case(case, dtype_name, modes, args.rounds, device, report)
            print(tabulate(case_rows, headers="keys", floatfmt=".4g"), flush=True)  # each case as it ends
            rows += case_rows
    common.finish(report, rows, args)
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
