#!/usr/bin/env python
"""Minimal smoke run of ckgemm (replaced by the full harness CLI): every dtype x layout on the best
backend here, checked against a float64/int64 computation; exits non-zero on any failure."""
import argparse
import sys

import torch

import ckgemm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default=None)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(args.seed)
    print(f"seed {args.seed}; device {device}; backends {ckgemm.available_backends(device)}")
    failures = 0
    for rule in ckgemm.DTYPE_TABLE:
        if ckgemm.device_family(device) not in rule.families:
            continue
        for layout in ("RC", "RR"):
            shapes = [(1, 64, 32), (17, 128, 64), (100, 96, 128), (0, 64, 32)]
            a = [torch.randn(m, k, generator=gen).mul(2).to(rule.input).to(device) for m, n, k in shapes]
            b = [torch.randn(*((n, k) if layout == "RC" else (k, n)), generator=gen).mul(2).to(rule.input).to(device)
                 for m, n, k in shapes]
            if rule.exact:
                a = [torch.randint(-128, 128, x.shape, generator=gen, dtype=torch.int8).to(device) for x in a]
                b = [torch.randint(-128, 128, x.shape, generator=gen, dtype=torch.int8).to(device) for x in b]
            outs = ckgemm.grouped_gemm(a, b, layout=layout, backend=args.backend)
            ok = True
            for x, y, c in zip(a, b, outs):
                yk = (y.t() if layout == "RC" else y).cpu().double()
                ref = x.cpu().double() @ yk
                if rule.exact:
                    ok &= torch.equal(c.cpu(), ref.long().to(torch.int32))
                else:
                    tol = 2.0 ** -(rule.mantissa_bits if rule.output != torch.float32 else 20) * (1 + ref.abs())
                    ok &= bool(((c.cpu().double() - ref).abs() <= tol).all())
            failures += not ok
            print(f"{rule.name:9s} {layout}: {'PASS' if ok else 'FAIL'} ({ckgemm.last_dispatch()})")
    print("FAILED" if failures else "ALL PASSED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
