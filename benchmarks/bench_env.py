#!/usr/bin/env python
"""Forms of the op that differ only in one environment knob the native op reads at each call (CKGEMM_WS_L2, the
own kernel's L2 cache policies; CKGEMM_WS_ORDER, its order of units; CKGEMM_CONFIG, a forced instance), beside the peers, on the compute-bound cases of
benchmarks/cases.py. Each form is checked first: against the harness reference on a NaN-poisoned output; unless
--any-bits, for the same bits as the first form (a knob that changes only where data sits changes no value); and
for its path: a CKGEMM_CONFIG form must run the instance it names, and a form whose path the knob does not reach
is flagged (a WARNING on its line). Then all of them and the capturable peers are timed round-robin
(ckgemm.testing.rounds) under graph replay and end to end. Printed per case, dtype and form: median ms, the best
peer's time over the form's per round (above 1: faster than the peer) and the first form's time over this one's,
each with p10-p90.

    python benchmarks/bench_env.py --knob CKGEMM_WS_L2 --values nnn,lfn,lff --cases Mixtral,uniform --rounds 12
    python benchmarks/bench_env.py --knob CKGEMM_WS_ORDER --values plain,snake --dtype bf16,fp16,fp8 --rounds 12
"""
from __future__ import annotations

import sys

import torch
from tabulate import tabulate

import common  # benchmarks/common.py: this script's folder is on sys.path
import ckgemm
from bench_grouped_gemm import DTYPES, _inputs, checked_peers, verify_output
from cases import all_cases
from ckgemm.testing import Report, device_info, grouped_gemm_reference_packed
from ckgemm.testing.data import poisoned
from ckgemm.testing.rounds import round_robin


def path_miss(name: str, value: str, path: str) -> str:
    """Why a form's path cannot show the knob's effect, or "": CKGEMM_CONFIG names the instance that must run, and
    CKGEMM_WS_L2 and CKGEMM_WS_ORDER reach only the own RC kernel's tiles (ws_*; CUTLASS's read neither)."""
    if name == "CKGEMM_CONFIG" and not path.endswith(":" + value):
        return f"ran {path}, not the named instance"
    if name in ("CKGEMM_WS_L2", "CKGEMM_WS_ORDER") and ":ws_" not in path:
        return f"{path} does not read {name}: the forms run the same kernel"
    return ""


def checked_forms(a, b, sizes, dtype, name: str, values, label: str, same_bits: bool = True):
    """Each value's packed call on its own poisoned output, checked as the docstring says; a CKGEMM_CONFIG form
    that did not run its instance is refused, and a knob that does not reach the path is said so (path_miss)."""
    gs = torch.tensor(sizes, device=a.device, dtype=torch.int32)
    ref = grouped_gemm_reference_packed(a, b, sizes)
    fns, first = {}, None
    for value in values:
        out = poisoned((a.shape[0], b.shape[1]), ckgemm.rule_for(dtype).output, a.device)

        def call(out=out, value=value):
            with common.env_set(name, value):
                ckgemm.grouped_gemm_packed(a, b, gs, out=out)
        call()
        verify_output(out, ref, sizes, dtype, a.shape[1], f"{label} {name}={value}")
        if first is None:
            first = out.clone()
        elif same_bits and not torch.equal(out, first):
            raise AssertionError(f"{label}: {name}={value} gave other bits than {values[0]}")
        path = ckgemm.last_dispatch().paths[0]
        miss = path_miss(name, value, path)
        if miss and name == "CKGEMM_CONFIG":
            raise AssertionError(f"{label}: {name}={value} {miss}")
        print(f"  {name}={value}: checked; path {ckgemm.last_dispatch()}{'; WARNING: ' + miss if miss else ''}",
              flush=True)
        fns[f"{name}={value}"] = call
    return fns, ref


def run_case(bc, dtype_name: str, name: str, values, args, device, report) -> list[dict]:
    dtype = DTYPES[dtype_name] or ckgemm.fp8_dtype_for(device)
    sizes, a, b = _inputs(bc.case, dtype, device, args.seed)
    n, k = bc.case.ns[0], bc.case.ks[0]
    label = f"{bc.name} {dtype_name}"
    print(f"{label}: {len(sizes)} groups, N {n}, K {k}", flush=True)
    fns, ref = checked_forms(a, b, sizes, dtype, name, values, label, same_bits=not args.any_bits)
    peer_names = []
    for peer in checked_peers(a, b, sizes, ref, dtype):
        if peer.fn is not None and peer.capturable:
            fns[peer.name] = peer.fn
            peer_names.append(peer.name)
    forms, rows = [f"{name}={v}" for v in values], []
    for timing, sync in (("graph", False), ("e2e", True)):
        result = round_robin(fns, reference=forms[0], rounds=args.rounds, device=device, graph=not sync, sync=sync)
        best = min(peer_names, key=result.median_ms) if peer_names else None
        for form in forms:
            row = {"case": bc.name, "dtype": dtype_name, "timing": timing, "form": form, "ms": result.median_ms(form)}
            if best is not None:
                lo, hi = result.ratio_range(best, over=form)
                row.update({"best peer": best, "peer ms": result.median_ms(best),
                            "peer/form": f"{result.ratio(best, over=form):.4f} ({lo:.3f}-{hi:.3f})"})
            flo, fhi = result.ratio_range(forms[0], over=form)
            row["first/form"] = f"{result.ratio(forms[0], over=form):.4f} ({flo:.3f}-{fhi:.3f})"
            rows.append(row)
            report.add(op=f"{form} {timing}", backend="ckgemm", dtype=dtype_name, layout="RC", shape=bc.name,
                       time={"median_ms": row["ms"]}, flops=bc.case.flops, best_peer=best,
                       peer_over_form=row.get("peer/form"), first_over_form=row["first/form"])
    return rows


def main() -> int:
    p = common.parser(__doc__, iters=None, warmup=None)
    p.add_argument("--rounds", type=int, default=12, help="round-robin rounds (default 12)")
    p.add_argument("--knob", default="CKGEMM_WS_L2", help="the environment variable (default CKGEMM_WS_L2)")
    p.add_argument("--values", required=True, help="comma-separated values, the first the others' reference")
    p.add_argument("--dtype", default="bf16", help="comma-separated: bf16, fp16, fp8, int8 (default bf16)")
    p.add_argument("--any-bits", action="store_true", help="check each form against the reference only")
    args = p.parse_args()
    device = common.gpu_device(needs_native=True)
    if device is None:
        return 2
    values = args.values.split(",")
    report = Report(f"ckgemm forms by {args.knob}", meta=device_info.environment(device))
    rows = []
    for bc in all_cases(args.seed):
        if bc.decode or len(set(bc.case.ns)) != 1 or not common.selected(bc.name, args):
            continue
        for dtype_name in args.dtype.split(","):
            case_rows = run_case(bc, dtype_name, args.knob, values, args, device, report)
            print(tabulate(case_rows, headers="keys", floatfmt=".4g"), flush=True)  # each case as it ends
            rows += case_rows
    common.finish(report, rows, args)
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
