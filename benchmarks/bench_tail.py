#!/usr/bin/env python
"""The own 16-bit kernel's split tail (csrc/cuda/ws_tail.cuh: the call's last round of units split along K, drawn
in turn, summed in a fixed order) against the unsplit call and the peers, on the compute-bound cases:
CKGEMM_WS_TAIL off, 2 and 3 slices, and 2 slices over two rounds (2x2; read at each call, so one process
times every form round-robin, under graph replay and end to end), the torch.matmul loop and, in bf16, torch._grouped_mm. Each form is first checked
against the unsplit one and a float reference on a NaN-poisoned output, and each split form called twice for
the same bits. Printed per case and form: median ms, the best peer's time over the form's per round (above 1:
faster) and 'off''s time over the form's, each with p10-p90.

    python benchmarks/bench_tail.py --cases Mixtral,uniform --rounds 16
"""
from __future__ import annotations

import os
import sys

import common  # benchmarks/common.py: this script's folder is on sys.path
import torch

import ckgemm
from cases import all_cases
from ckgemm.testing import Report, device_info
from ckgemm.testing.peers import grouped_peer, loop_peer
from ckgemm.testing.rounds import round_robin

MODES = ("off", "2", "3", "2x2")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def own(a, b, gs, out, mode: str):
    """The op's packed call with CKGEMM_WS_TAIL=mode (a graph captured inside keeps it)."""
    def call():
        os.environ["CKGEMM_WS_TAIL"] = mode
        try:
            ckgemm.grouped_gemm_packed(a, b, gs, out=out)
        finally:
            os.environ.pop("CKGEMM_WS_TAIL", None)
    return call


def checked_forms(a, b, sizes, dtype, modes) -> dict:
    """Each mode's call on its own poisoned output, checked as the docstring says."""
    gs = torch.tensor(sizes, device=a.device, dtype=torch.int32)
    ref = torch.cat([x.float() @ y.float().T for x, y in zip(a.split(sizes), b)])
    scale = ref.abs().max().item()
    fns, base = {}, None
    for mode in modes:
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device, dtype=dtype)
        call = own(a, b, gs, out, mode)
        call()
        path = ckgemm.last_dispatch()
        first = out.clone()
        torch.testing.assert_close(first.float(), ref, rtol=2e-2, atol=2e-2 * scale, msg=f"{mode} vs reference")
        if base is None:
            base = first
        else:
            torch.testing.assert_close(first, base, rtol=1e-2, atol=1e-2 * scale, msg=f"{mode} vs {modes[0]}")
        out.fill_(float("nan"))
        call()
        assert torch.equal(out, first), f"tail {mode}: two calls gave different bits"
        print(f"  tail {mode}: checked; path {path}")
        fns[f"tail {mode}"] = call
    return fns


def run_case(case, dtype_name: str, rounds: int, device, report) -> list[dict]:
    dtype = DTYPES[dtype_name]
    sizes, n, k = case.case.ms, case.case.ns[0], case.case.ks[0]
    gen = torch.Generator(device=device).manual_seed(case.case.seed or 0)
    a = torch.randn(sum(sizes), k, device=device, dtype=dtype, generator=gen)
    b = torch.randn(len(sizes), n, k, device=device, dtype=dtype, generator=gen)
    print(f"{case.name} {dtype_name}: {len(sizes)} groups, N {n}, K {k}")
    fns = checked_forms(a, b, sizes, dtype, MODES)
    peers = [loop_peer(list(a.split(sizes)), [y.T for y in b]), grouped_peer(a, b.transpose(-2, -1), sizes)]
    peer_names = [p.name for p in peers if p.fn is not None and p.capturable]
    fns.update({p.name: p.fn for p in peers if p.name in peer_names})
    rows = []
    for label_sync, sync in (("graph", False), ("e2e", True)):
        result = round_robin(fns, reference="tail off", rounds=rounds, device=device, graph=not sync, sync=sync)
        best = min(peer_names, key=result.median_ms)
        for form in (f"tail {m}" for m in MODES):
            lo, hi = result.ratio_range(best, over=form)
            olo, ohi = result.ratio_range("tail off", over=form)
            rows.append({"case": case.name, "dtype": dtype_name, "timing": label_sync, "form": form,
                         "ms": result.median_ms(form), "best peer": best, "peer ms": result.median_ms(best),
                         "peer/form": f"{result.ratio(best, over=form):.4f} ({lo:.3f}-{hi:.3f})",
                         "off/form": f"{result.ratio('tail off', over=form):.4f} ({olo:.3f}-{ohi:.3f})"})
            report.add(op=f"{form} {label_sync}", backend="ckgemm", dtype=dtype_name, layout="RC", shape=case.name,
                       time={"median_ms": result.median_ms(form)}, flops=case.case.flops, best_peer=best,
                       peer_over_form=rows[-1]["peer/form"], off_over_form=rows[-1]["off/form"])
    return rows


def main() -> int:
    p = common.parser(__doc__, iters=None, warmup=None)
    p.add_argument("--rounds", type=int, default=16, help="round-robin rounds (default 16)")
    p.add_argument("--dtype", default="bf16", help="comma-separated: bf16, fp16 (default bf16)")
    args = p.parse_args()
    device = common.gpu_device(needs_native=True)
    if device is None:
        return 2
    report = Report("ckgemm own 16-bit kernel: split tail", meta=device_info.environment(device))
    rows = []
    for case in all_cases(args.seed):
        if case.decode or len(set(case.case.ns)) != 1 or not common.selected(case.name, args):
            continue
        for dtype_name in args.dtype.split(","):
            rows += run_case(case, dtype_name, args.rounds, device, report)
    common.finish(report, rows, args)
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
