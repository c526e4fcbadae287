#!/usr/bin/env python
"""Same-process A/B of two builds of ckgemm's own fp8 kernel (the library of build_ws_ab.sh: the working
tree's entry ws_fp8_packed against a revision's ws_fp8_packed_old). Each case, recipe and variant: both outputs
NaN-poisoned and compared bit for bit, then paired_ab's ABBA rounds in graph replay. Prints old/new (above 1:
the working tree is faster) with each round's ratio, so a change is called a gain only beside its spread.

    python benchmarks/native/ws_fp8_ab.py --lib /tmp/libws_ab.so --recipes none,block --cases DeepSeek-V3_prefill
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ws_fp8 import CASES, Kernel, make  # noqa: E402

from ckgemm.testing import paired_ab, shapes  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cases", default="DeepSeek-V3_prefill,DeepSeek-V3_down,Mixtral_prefill,128_experts")
    ap.add_argument("--recipes", default="none,row,block")
    ap.add_argument("--variants", default="192a")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"seed {args.seed}; {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    new, old = Kernel(args.lib), Kernel(args.lib)
    old.lib = ctypes.CDLL(args.lib)
    old.lib.ws_fp8_packed = old.lib.ws_fp8_packed_old
    old.lib.ws_fp8_packed.restype = ctypes.c_int
    for name in args.cases.replace("_", " ").split(","):
        experts, tokens, n, k, _ = CASES[name]
        sizes = list(shapes.moe_split(tokens, experts, n, k, args.seed, dist="multinomial").ms)
        gs = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        for recipe in args.recipes.split(","):
            a, sa, b, sb = make(recipe, sizes, n, k, args.seed)
            dtype = torch.float32 if recipe == "none" else torch.bfloat16
            for variant in args.variants.split(","):
                out_new = torch.full((tokens, n), float("nan"), dtype=dtype, device="cuda")
                out_old = out_new.clone()
                run_new = lambda: new(a, b, gs, out_new, sa, sb, recipe, variant)  # noqa: E731
                run_old = lambda: old(a, b, gs, out_old, sa, sb, recipe, variant)  # noqa: E731
                run_new()
                run_old()
                torch.cuda.synchronize()
                same = torch.equal(out_new, out_old) and not torch.isnan(out_new.float()).any().item()
                pair = paired_ab(run_new, run_old, rounds=args.rounds, iters=args.iters, graph=True)
                t_new, t_old = pair.a.median_ms, pair.b.median_ms
                rounds = ", ".join(f"{1 / r:.3f}" for r in pair.round_ratios)
                print(f"{name:20s} {recipe:5s} {variant}: new {t_new:.4f} ms, old {t_old:.4f} ms, old/new "
                      f"{t_old / t_new:.3f} (rounds {rounds}); outputs {'bit-identical' if same else 'DIFFER'}",
                      flush=True)
            del a, b, sa, sb
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
