#!/usr/bin/env python
"""gpu_verify on 2^28-element fp32 pairs: its bandwidth (both tensors read once) against a measured
device-to-device copy (bytes read + written), and its time against torch.testing.assert_close on the
same device tensors. Verdicts of the fused kernel, the torch fallback and the CPU path must agree.

    python benchmarks/bench_verify.py --json verify.json
"""
import argparse
import json
import sys

import torch

from ckgemm.testing import bench, error_stats, gpu_verify
from ckgemm.testing.verify import torch_verify_stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log2n", type=int, default=28)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a GPU")
        return 2
    n = 1 << args.log2n
    gen = torch.Generator(device="cuda").manual_seed(0)
    ref = torch.randn(n, generator=gen, device="cuda")
    out = ref + torch.randn(n, generator=gen, device="cuda") * 1e-6
    rtol, atol = 1e-5, 1e-5
    nbytes = 2 * n * 4  # both tensors read once
    dst = torch.empty_like(ref)
    copy = bench(lambda: dst.copy_(ref), iters=args.iters)
    copy_bw = 2 * n * 4 / (copy.median_ms / 1e3)
    dst = None  # free 1 GiB before the verify runs
    fused = bench(lambda: gpu_verify(out, ref, rtol, atol), iters=args.iters)
    kernel_only = bench(lambda: torch.ops.ckgemm.verify_stats(out, ref, rtol, atol), iters=args.iters)
    close = bench(lambda: torch.testing.assert_close(out, ref, rtol=rtol, atol=atol), iters=max(3, args.iters // 4))
    stats = gpu_verify(out, ref, rtol, atol)
    fallback = torch_verify_stats(out, ref, rtol, atol).tolist()
    small = slice(0, 1 << 22)
    cpu = error_stats(out[small].cpu(), ref[small].cpu(), rtol, atol)
    agree = (stats.mismatches == int(fallback[1]) and cpu.mismatches == gpu_verify(out[small], ref[small], rtol,
                                                                                   atol).mismatches)
    result = {
        "n": n, "path": stats.path, "mismatches": stats.mismatches,
        "copy_GBps": copy_bw / 1e9, "gpu_verify_ms": fused.median_ms, "verify_stats_kernel_ms": kernel_only.median_ms,
        "gpu_verify_GBps": nbytes / (fused.median_ms / 1e3) / 1e9,
        "kernel_GBps": nbytes / (kernel_only.median_ms / 1e3) / 1e9,
        "pct_of_copy": 100 * nbytes / (fused.median_ms / 1e3) / copy_bw,
        "assert_close_ms": close.median_ms, "speedup_vs_assert_close": close.median_ms / fused.median_ms,
        "verdicts_agree": agree,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
