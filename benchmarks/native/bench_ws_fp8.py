#!/usr/bin/env python
"""ckgemm's own fp8 grouped kernel (csrc/cuda/ws_fp8*.cuh), loaded with ctypes from the C entry
benchmarks/native/ws_fp8_capi.cu (built as that file says), checked and timed beside its peers in one process:
block scales against DeepGEMM's m_grouped_fp8_gemm_nt_contiguous (timed on its own 128-row-aligned layout,
FLOPs of real rows only), row scales against torch._scaled_grouped_mm, unscaled fp8 (fp32 out, promotion
every 128 of K) against a loop of torch._scaled_mm without fast accumulation at equal error (calc_diff
against float64 of the same inputs). Every output is NaN-poisoned, then checked against the harness
reference with the same quantization before anything is timed. Graph replay, peers in A B B A order.

    python benchmarks/native/bench_ws_fp8.py --lib /tmp/libws_fp8.so [--check-only] [--cases ...]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_scaled import CASES, deepgemm_peer, scaled_grouped_mm_peer  # noqa: E402

from ckgemm.testing import bench, calc_diff, grouped_gemm_reference_packed, paired_ab, quant, shapes  # noqa: E402
from ckgemm.testing import check as harness_check  # noqa: E402
from ckgemm.testing.numeric import scaled_max_diff  # noqa: E402

RECIPES = {"none": 0, "row": 1, "block": 2}
FP8 = torch.float8_e4m3fn


class Kernel:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.ws_fp8_packed.restype = ctypes.c_int
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def __call__(self, a, b, sizes, out, sa, sb, recipe, variant):
        bn, mcast_b = int(variant[:-1]), int(variant[-1] == "b")
        p = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)  # noqa: E731
        ll = ctypes.c_longlong
        sa_stride = sa.stride(0) if sa is not None and sa.dim() == 2 else 1
        sb_stride = sb.stride(0) if sb is not None else 0
        rc = self.lib.ws_fp8_packed(
            p(a), p(b), p(out), p(sizes), int(sizes.dtype == torch.int64), sizes.numel(), ll(a.shape[0]),
            ll(b.shape[1]), ll(a.shape[1]), ll(a.stride(0)), ll(b.stride(1)), ll(out.stride(0)), ll(b.stride(0)),
            p(sa), ll(sa_stride), p(sb), ll(sb_stride), RECIPES[recipe], int(out.dtype == torch.float32), bn, mcast_b,
            self.sms, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"ws_fp8_packed returned {rc}")
        return out


def make(recipe, sizes, n, k, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn((sum(sizes), k), generator=gen, device="cuda")
    w = torch.randn((len(sizes), n, k), generator=gen, device="cuda") * 0.05
    if recipe == "none":
        return x.clamp(-448, 448).to(FP8), None, (w * 20).to(FP8), None
    a, sa = quant.cast_for(x, recipe, "a", FP8)
    b, sb = quant.cast_for(w, recipe, "b", FP8)
    return a, sa, b, sb


def verdict(out, ref, sizes, recipe, k):
    """The harness's check per group: the scaled-GEMM tolerance (numeric.scaled_tolerance, from K, the output
    dtype and the group's max|ref|) and calc_diff within the bf16 rounding bound; unwritten (NaN) outputs fail.
    Returns (ok, one line)."""
    bounds = dict(in_dtype=FP8, k=k, raise_on_failure=False, name=recipe, max_diff=scaled_max_diff(torch.bfloat16),
                  scaled=True)  # unscaled = scales of 1: the scaled model's accumulation bound, far tighter at fp32
    report = harness_check(list(out.split(sizes)), list(ref.split(sizes)), **bounds)
    return report.passed, str(report).splitlines()[0]


def check(kern, recipe, sizes, n, k, variant, seed, sizes_dtype=torch.int32):
    a, sa, b, sb = make(recipe, sizes, n, k, seed)
    out_dtype = torch.float32 if recipe == "none" else torch.bfloat16
    out = torch.full((sum(sizes), n), float("nan"), dtype=out_dtype, device="cuda")
    kern(a, b, torch.tensor(sizes, dtype=sizes_dtype, device="cuda"), out, sa, sb, recipe, variant)
    torch.cuda.synchronize()
    ref = grouped_gemm_reference_packed(a, b, sizes) if recipe == "none" else \
        grouped_gemm_reference_packed((a, sa), (b, sb), sizes)
    ok, line = verdict(out, ref, sizes, recipe, k)
    print(f"{'PASS' if ok else 'FAIL'} {recipe:5s} {variant} sizes {sizes if len(sizes) < 8 else len(sizes)} "
          f"n {n} k {k} {sizes_dtype}: {line}", flush=True)
    return ok


CHECKS = [  # (sizes, n, k): tile edges, empty experts, odd N, partial K block, one row, many groups
    ([5, 0, 130, 257, 1], 320, 272), ([128, 64, 300], 584, 1024), ([1000, 37], 4096, 7168),
    ([0, 0, 3], 200, 16), ([129] * 7, 129, 2880), ([17] * 300, 256, 512),
]


def scaled_mm_loop(a, b, sizes):
    one = torch.ones((), device="cuda")
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    out = {}

    def call():
        out["y"] = [torch._scaled_mm(a[s:s + m], b[g].t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
                    for g, (s, m) in enumerate(zip(starts, sizes)) if m]
    return call, lambda: torch.cat(out["y"])


def ckgemm_call(a, sa, b, sb, gs, out):
    """The op's own packed call (on a GPU build: its CUTLASS instances), for an A/B against the prototype."""
    import ckgemm
    if sa is None:
        return lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    return lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, scale_a=sa, scale_b=sb)


def perf(kern, name, recipe, variants, iters, seed, vs_ckgemm=False):
    experts, tokens, n, k, _ = CASES[name]
    sizes = list(shapes.moe_split(tokens, experts, n, k, seed, dist="multinomial").ms)
    a, sa, b, sb = make(recipe, sizes, n, k, seed)
    gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
    out_dtype = torch.float32 if recipe == "none" else torch.bfloat16
    flops = 2.0 * tokens * n * k
    if vs_ckgemm:
        out_ck = torch.full((tokens, n), float("nan"), dtype=out_dtype, device="cuda")
        call = ckgemm_call(a, sa, b, sb, gs, out_ck)
        call()
        import ckgemm
        found, why = (call, lambda: out_ck), ckgemm.last_dispatch().config_summary
    elif recipe == "block":
        found, why = deepgemm_peer(a, sa, b, sb, sizes)
    elif recipe == "row":
        found, why = scaled_grouped_mm_peer(a, sa, b, sb, sizes)
    else:
        found, why = scaled_mm_loop(a, b, sizes), ""
    ref = None
    if recipe == "none":  # equal error: both against float64 of the same inputs, on the first busy group
        g0 = next(i for i, m in enumerate(sizes) if m)
        s0 = sum(sizes[:g0])
        ref = a[s0:s0 + sizes[g0]].double() @ b[g0].double().t()
    for variant in variants:
        out = torch.full((tokens, n), float("nan"), dtype=out_dtype, device="cuda")
        ours = lambda: kern(a, b, gs, out, sa, sb, recipe, variant)  # noqa: E731
        ours()
        torch.cuda.synchronize()
        assert not torch.isnan(out.float()).any(), "unwritten output"
        line = f"{name:20s} {recipe:5s} {variant}: "
        if found is None:
            t = bench(ours, graph=True, iters=iters, telemetry=False).median_ms
            print(line + f"{t:.4f} ms {flops / t / 1e9:.0f} TFLOP/s (no peer: {why})", flush=True)
            continue
        peer, result = found
        # outputs that disagree are not timed (ours is checked apart unless --skip-checks, so either may be off).
        # Rounding to out_dtype alone puts each output within calc_diff R of the exact product, and calc_diff is
        # quadratic, so two outputs differ by up to 4R: twice scaled_max_diff (2R + 1e-7 for accumulation)
        bound = 2 * scaled_max_diff(out_dtype)
        peer()
        diff = calc_diff(out.float(), result().float())  # the whole output, every group
        if vs_ckgemm:
            line += f"vs ckgemm {why}: calc_diff {diff:.3g}; "
        elif ref is not None:  # unscaled, equal error: both against float64 on the first busy group
            ours_diff = calc_diff(out[s0:s0 + sizes[g0]], ref)
            theirs = calc_diff(result()[s0:s0 + sizes[g0]], ref)
            line += f"calc_diff vs fp64 ours {ours_diff:.3g} peer {theirs:.3g}, ours vs peer {diff:.3g}; "
        else:
            line += f"calc_diff vs peer {diff:.3g}; "
        if not diff <= bound:
            raise AssertionError(f"{line}ours and the peer disagree (bound {bound:.3g}); not timed")
        pair = paired_ab(ours, peer, rounds=2, iters=iters, graph=True)
        t, tp = pair.a.median_ms, pair.b.median_ms
        print(line + f"ours {t:.4f} ms {flops / t / 1e9:.0f} TFLOP/s, peer {tp:.4f} ms {flops / tp / 1e9:.0f}; "
              f"peer/ours {tp / t:.3f} (rounds {', '.join(f'{1 / r:.3f}' for r in pair.round_ratios)})", flush=True)
    del a, b, sa, sb
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--skip-checks", action="store_true", help="time without the correctness pass (experiments)")
    ap.add_argument("--check-cases", default="", help="indices of CHECKS to run (default: all), e.g. 0,5 for sanitizers")
    ap.add_argument("--vs-ckgemm", action="store_true", help="the peer is ckgemm's own packed call (its CUTLASS "
                    "instances on a GPU build) instead of DeepGEMM / torch")
    ap.add_argument("--cases", default=",".join(n for n in CASES if "decode" not in n),
                    help="comma-separated case names of bench_scaled.CASES (underscores may stand for spaces)")
    ap.add_argument("--recipes", default="block,row,none")
    ap.add_argument("--variants", default="256a,256b,192a,192b,128b",
                    help="tile columns and the multicast operand (a or b), e.g. 192b")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true", help="run each case x recipe x variant three times, no checks or "
                    "peers (for Nsight Compute: profile the third launch of each)")
    ap.add_argument("--profile-peer", action="store_true", help="with --profile: DeepGEMM's block call on the same "
                    "inputs too (four launches of its kernel, the first its check)")
    args = ap.parse_args()
    args.cases = args.cases.replace("_", " ")
    print(f"seed {args.seed}; {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    kern = Kernel(args.lib)
    variants = args.variants.split(",")
    if args.profile:
        for name in args.cases.split(","):
            experts, tokens, n, k, _ = CASES[name]
            sizes = list(shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial").ms)
            gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
            for recipe in args.recipes.split(","):
                a, sa, b, sb = make(recipe, sizes, n, k, args.seed)
                out = torch.empty((tokens, n), dtype=torch.float32 if recipe == "none" else torch.bfloat16, device="cuda")
                for variant in variants:
                    for _ in range(3):
                        kern(a, b, gs, out, sa, sb, recipe, variant)
                if recipe == "block" and args.profile_peer:
                    found, _ = deepgemm_peer(a, sa, b, sb, sizes)
                    for _ in range(3 if found else 0):
                        found[0]()
                torch.cuda.synchronize()
        return 0
    ok = True
    for recipe in args.recipes.split(",") if not args.skip_checks else []:
        for variant in variants:
            for i, (sizes, n, k) in enumerate(CHECKS):
                if args.check_cases and str(i) not in args.check_cases.split(","):
                    continue
                ok &= check(kern, recipe, sizes, n, k, variant, args.seed + i,
                            torch.int64 if i % 2 else torch.int32)
    print("ALL CHECKS PASSED" if ok else "CHECKS FAILED", flush=True)
    if not ok or args.check_only:
        return 0 if ok else 1
    for name in args.cases.split(","):
        for recipe in args.recipes.split(","):
            try:
                perf(kern, name, recipe, variants, args.iters, args.seed, args.vs_ckgemm)
            except Exception as exc:  # noqa: BLE001 - one failure must not hide the other cases
                print(f"{name} {recipe}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
