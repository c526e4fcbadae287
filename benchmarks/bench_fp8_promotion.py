#!/usr/bin/env python
"""fp8 accumulation: speed and error of the promotion interval (CKGEMM_FP8_PROMOTION, read once per
process) on the compute-bound fp8 cases. Run once per setting and compare:

    CKGEMM_FP8_PROMOTION=4 python benchmarks/bench_fp8_promotion.py
    CKGEMM_FP8_PROMOTION=8 python benchmarks/bench_fp8_promotion.py

Error is measured against an fp64 product of the same e4m3 inputs: calc_diff and the max relative error
(|out - ref| / max|ref| per group), over the first groups of each case (the reference is slow), for the op
(the path it took is printed) and for cuBLAS's torch._scaled_mm with unit scales (no fast accumulation),
the precision issue 10 asks the op to match.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckgemm  # noqa: E402
from ckgemm.testing import bench, calc_diff  # noqa: E402
from ckgemm.testing.numeric import scaled_max_diff  # noqa: E402
from bench_grouped_gemm import _inputs  # noqa: E402
from cases import all_cases  # noqa: E402
import common  # noqa: E402


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    if common.gpu_device(needs_native=True) is None:
        return 2
    setting = os.environ.get("CKGEMM_FP8_PROMOTION", "4 (default)")
    for bc in all_cases():
        if bc.decode or "seed" in bc.name:
            continue
        sizes, a, b = _inputs(bc.case, torch.float8_e4m3fn, "cuda", 0)
        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=torch.float32, device="cuda")
        ckgemm.grouped_gemm_packed(a, b, gs, out=out)
        if out.isnan().any():  # before anything is timed
            raise AssertionError(f"{bc.name}: the op left output elements unwritten (NaN-poisoned)")
        t = bench(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out), warmup=5, iters=20, device="cuda")
        path = ckgemm.last_dispatch().paths[0]
        one = torch.ones((), device="cuda")
        diffs, rels, cublas, start = [], [], [], 0
        for g, m in enumerate(sizes[:4]):
            ref = a[start:start + m].double() @ b[g].double().t()
            got = out[start:start + m].double()
            diffs.append(calc_diff(got, ref))
            rels.append(((got - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item())
            theirs = torch._scaled_mm(a[start:start + m], b[g].t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
            cublas.append(calc_diff(theirs.double(), ref))
            if not cublas[-1] <= scaled_max_diff(torch.float32):  # the baseline itself must be right
                raise AssertionError(f"{bc.name} group {g}: _scaled_mm calc_diff {cublas[-1]:.3g} against float64")
            start += m
        print(f"promotion {setting} | {bc.name} | {path} | {t.median_ms:.4f} ms | "
              f"{bc.case.flops / t.median_ms / 1e9:.0f} TFLOP/s | calc_diff max {max(diffs):.3e} "
              f"(_scaled_mm {max(cublas):.3e}) | max rel err {max(rels):.3e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
