#!/usr/bin/env python
"""How the own 16-bit kernel's clusters take their units, and the wave tail (docs/PERF_2026-12-06e.md): 8 groups
of M rows, N = K = 4096, bf16, with the own 128x256 and CUTLASS's 128x256 forced (CKGEMM_CONFIG) and the
torch.matmul loop, timed round-robin under graph replay (ckgemm.testing.rounds). M 4096 makes 2048 tile pairs,
31.03 waves of 66 clusters on 132 SMs; M 4224 makes 2112, exactly 32: where the last wave's idle SMs cost, M
4224's time over M 4096's stays near 1.0 rather than 1.031. CKGEMM_WS_UNITS is read once per process, so each
--units mode runs in its own process; every line gives each contestant's median and CUTLASS's M 4096 time over
its own per round (above 1: faster than CUTLASS), with p10-p90.

    python benchmarks/bench_units.py --units dynamic,static --rounds 24
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import common  # benchmarks/common.py: this script's folder is on sys.path
import torch

import ckgemm
from ckgemm.testing.rounds import round_robin

OWN, CUTLASS, GROUPS, N, K = "ws_128x256x64_c1x2", "coop_128x256x64_c1x2", 8, 4096, 4096


def contestants(device) -> dict:
    fns = {}
    for m in (4096, 4224):
        gen = torch.Generator(device=device).manual_seed(m)
        a = torch.randn(GROUPS * m, K, device=device, dtype=torch.bfloat16, generator=gen)
        b = torch.randn(GROUPS, N, K, device=device, dtype=torch.bfloat16, generator=gen)
        gs = torch.full((GROUPS,), m, dtype=torch.int32, device=device)
        out = torch.empty(GROUPS * m, N, device=device, dtype=torch.bfloat16)
        ref = torch.cat([x @ y.T for x, y in zip(a.split(m), b)])
        for name in (CUTLASS, OWN):
            def call(a=a, b=b, gs=gs, out=out, name=name):
                with common.forced_instance(name):
                    ckgemm.grouped_gemm_packed(a, b, gs, out=out)
            out.fill_(float("nan"))
            call()
            torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())  # checked, then timed
            fns[f"{name} M{m}"] = call
        fns[f"matmul loop M{m}"] = lambda a=a, b=b, out=out, m=m: [
            torch.matmul(x, y.T, out=o) for x, y, o in zip(a.split(m), b, out.split(m))]
    return fns


def run_one(rounds: int) -> None:
    device = common.gpu_device(needs_native=True)
    if device is None:
        sys.exit(2)
    fns = contestants(device)
    ref = f"{CUTLASS} M4096"
    result = round_robin(fns, reference=ref, rounds=rounds, device=device)
    mode = os.environ.get("CKGEMM_WS_UNITS", "auto")
    for label in fns:
        lo, hi = result.ratio_range(ref, over=label)
        print(f"units={mode:8s} {label:28s} {result.median_ms(label):.4f} ms  "
              f"{result.ratio(ref, over=label):.4f} ({lo:.3f}-{hi:.3f})")
    for base in (CUTLASS, OWN, "matmul loop"):
        tail = result.median_ms(f"{base} M4224") / result.median_ms(f"{base} M4096")
        print(f"units={mode:8s} {base:28s} M4224 / M4096 time {tail:.4f} (no tail loss: 1.031)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=24, help="round-robin rounds (default 24)")
    p.add_argument("--units", default="", help="comma-separated CKGEMM_WS_UNITS modes, each in its own process "
                   "(default: this process's setting)")
    args = p.parse_args()
    if not args.units:
        run_one(args.rounds)
        return 0
    status = 0
    for mode in args.units.split(","):
        env = {**os.environ, "CKGEMM_WS_UNITS": mode}
        status |= subprocess.run([sys.executable, __file__, "--rounds", str(args.rounds)], check=False, env=env).returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
