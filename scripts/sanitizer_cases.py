#!/usr/bin/env python
"""One small call per kernel family (every dtype x layout x config instance, the packed builder and the
fused verifier), for compute-sanitizer racecheck/memcheck runs; each result is also checked."""
import torch

import ckgemm
from ckgemm.backends.native import _C
from ckgemm.testing import check, grouped_gemm_reference, gpu_verify

CONFIGS = {0: "large", 1: "small"}


def main() -> None:
    torch.manual_seed(0)
    dev = "cuda"
    for rule in ckgemm.DTYPE_TABLE:
        if ckgemm.device_family(dev) not in rule.families:
            continue
        for layout, code in (("RC", 0), ("RR", 1)):
            for config in CONFIGS:
                if not _C.is_instantiated(rule.abi_code, code, config):
                    continue
                a = [torch.randint(-1, 2, (m, 64), device=dev).to(rule.input) for m in (1, 70)]
                b = [torch.randint(-1, 2, (128, 64) if layout == "RC" else (64, 128), device=dev).to(rule.input)
                     for _ in a]
                c = [torch.empty((x.shape[0], 128), dtype=rule.output, device=dev) for x in a]
                torch.ops.ckgemm.run_list(a, b, c, code, config)
                sizes = torch.tensor([1, 70], device=dev)
                out = torch.ops.ckgemm.run_packed(torch.cat(a), torch.stack(b), sizes, code, config)
                refs = grouped_gemm_reference(a, b, layout=layout)
                exact = [r.to(rule.output) for r in refs]  # entries in {-1, 0, 1}, K=64: every sum is exact
                check(c, exact, rtol=0.0, atol=0.0, name=f"{rule.name} {layout} {CONFIGS[config]} list")
                check(out, torch.cat(exact), rtol=0.0, atol=0.0, name=f"{rule.name} {layout} packed")
                print(f"ok {rule.name} {layout} {CONFIGS[config]}")
    x = torch.randn(1 << 20, device=dev)
    stats = gpu_verify(x, x + 1e-7, rtol=1e-6, atol=0.0)
    assert stats.path.startswith("fused"), stats.path
    print("ok verify", stats)


if __name__ == "__main__":
    main()
