#!/usr/bin/env python
"""ckgemm's own int8 RR grouped kernel (csrc/cuda/ws_s8_rr*.cuh: B [G, K, N] read as stored, no transpose pass),
loaded with ctypes from the C entry benchmarks/native/ws_s8_capi.cu (built as that file says).

First every check shape: outputs poisoned with INT32_MIN (no int8 product sum of these K reaches it) inside a
buffer with guard rows and columns, compared exactly (torch.equal) with a float64 reference of the same
inputs (exact below 2**53), the guard bands still poisoned. Then, where the native extension is built, the
timing cases in one process, graph replay and end to end: this kernel against the op's RR per call (an
extension built before 2026-12-06 transposes B with the repack kernel, then runs the RC kernel; a later one
runs its default build of this kernel), RR prepacked and RC, all on the same data, in A B B A order; the
outputs of every form equal before anything is timed.

    python benchmarks/native/bench_ws_s8_rr.py --lib /tmp/libws_s8.so [--check-only] [--iters 20]

--lib takes one build of the C entry, as PATH or NAME=PATH (NAME labels its rows, e.g. an experiment switch);
it is timed only if it passed every check (the exit status is 1 when any failed). One build a process, as
ws_s8_device.sh runs them: on the H100 (2026-12-05) a second build's launch failed with "invalid argument" in a
process that had run the first, and on 2026-12-06 so did the op's after the C entry's. The cause was libraries
built with default visibility sharing one process-wide "shared memory raised" flag (build_support/__init__.py HIDDEN);
the extension and the C entries are now built hidden. --profile only runs the build on the first selected case
three times (no checks, no timing), for Nsight Compute.
"""
from __future__ import annotations

import argparse
import ctypes
import sys

import torch
from tabulate import tabulate

from ckgemm.testing import bench, shapes

POISON = -(2**31)
# (name, sizes, N, K): empty groups, a group of one row, rows that end mid-tile, N past a 256-wide tile, K not a
# multiple of 128, many small groups.
CHECKS = [
    ("mixed", [300, 0, 129, 64], 512, 384),
    ("ragged", [1, 127, 256, 0], 272, 208),
    ("one group", [1000], 768, 4096),
    ("many small", [3, 17, 0, 40, 5, 129, 64, 1, 0, 90, 2, 33], 1024, 1024),
    ("wide N", [200, 300], 4096, 512),
]
CASES = {"DeepSeek-V3 decode": (32, 512, 4096, 7168), "DeepSeek-V3 4096 tokens": (32, 4096, 4096, 7168),
         "DeepSeek-V3 prefill": (32, 32768, 4096, 7168),
         "Mixtral prefill": (8, 16384, 14336, 4096)}


class Kernel:
    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.lib.ws_s8_rr_packed.restype = ctypes.c_int
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def __call__(self, a, b_kn, sizes, out):
        """out[rows, N] (any row stride) = A @ B_g per group; B [G, K, N] row-major."""
        g, k, n = b_kn.shape
        p = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
        ll = ctypes.c_longlong
        rc = self.lib.ws_s8_rr_packed(
            p(a), p(b_kn), p(out), p(sizes), int(sizes.dtype == torch.int64), g, ll(a.shape[0]), ll(n), ll(k),
            ll(a.stride(0)), ll(b_kn.stride(1)), ll(out.stride(0)), ll(b_kn.stride(0)), self.sms,
            ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"ws_s8_rr_packed returned {rc}")
        return out


def reference(a, b_kn, sizes) -> torch.Tensor:
    out = torch.empty(a.shape[0], b_kn.shape[2], dtype=torch.int32, device=a.device)
    row = 0
    for g, m in enumerate(sizes):
        out[row:row + m] = (a[row:row + m].double() @ b_kn[g].double()).to(torch.int32)
        row += m
    return out


def check(kernel, seed: int) -> list[dict]:
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for name, ms, n, k in CHECKS:
        total = sum(ms)
        a = torch.randint(-128, 128, (total, k), dtype=torch.int8, device="cuda", generator=gen)
        b = torch.randint(-128, 128, (len(ms), k, n), dtype=torch.int8, device="cuda", generator=gen)
        for size_dtype in (torch.int32, torch.int64):
            sizes = torch.tensor(ms, dtype=size_dtype, device="cuda")
            buf = torch.full((total + 3, n + 16), POISON, dtype=torch.int32, device="cuda")
            out = buf[1:total + 1, 8:n + 8]  # guard row above and below, 8 guard columns each side
            kernel(a, b, sizes, out)
            torch.cuda.synchronize()
            want = reference(a, b, ms)
            guard = buf.clone()
            guard[1:total + 1, 8:n + 8] = POISON
            ok = torch.equal(out, want) and bool((guard == POISON).all())
            rows.append({"check": name, "sizes": str(size_dtype).replace("torch.", ""), "N": n, "K": k, "ok": ok,
                         "wrong": int((out != want).sum())})
    return rows


def case_inputs(name: str, seed: int):
    """A timing case's group sizes, A and B [G, K, N] (random from the seed), and the sizes on the device."""
    experts, tokens, n, k = CASES[name]
    case = shapes.moe_split(tokens, experts, n, k, seed, dist="multinomial")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randint(-128, 128, (tokens, k), dtype=torch.int8, device="cuda", generator=gen)
    b_kn = torch.randint(-128, 128, (experts, k, n), dtype=torch.int8, device="cuda", generator=gen)
    return a, b_kn, torch.tensor(case.ms, dtype=torch.int32, device="cuda")


def timing(kernels: dict, args) -> list[dict]:
    import ckgemm
    from ckgemm.backends.native import _C

    if _C is None:
        print("the native extension is not built: only the checks ran")
        return []
    rows = []
    for name in CASES:
        if not selected(name, args):
            continue
        a, b_kn, gs = case_inputs(name, args.seed)
        b_nk = b_kn.transpose(-1, -2).contiguous()
        weights = ckgemm.prepack(b_kn, layout="RR")
        own_out = torch.full((a.shape[0], b_kn.shape[2]), POISON, dtype=torch.int32, device="cuda")
        forms = {f"own RR {label}": (lambda kern=kern: kern(a, b_kn, gs, own_out)) for label, kern in kernels.items()}
        forms.update({"op RR per call": lambda: ckgemm.grouped_gemm_packed(a, b_kn, gs, layout="RR"),
                      "op RR prepacked": lambda: ckgemm.grouped_gemm_packed(a, weights, gs),
                      "op RC": lambda: ckgemm.grouped_gemm_packed(a, b_nk, gs)})
        first = forms["op RC"]().clone()
        for label, fn in forms.items():
            assert torch.equal(fn(), first), f"{name}: {label} differs from the op's RC"
        timed = dict(warmup=args.warmup, iters=args.iters, device=torch.device("cuda"))
        res = {label: {"graph": [], "e2e": []} for label in forms}
        order = list(forms) + list(forms)[::-1]  # A B C D D C B A
        for label in order:
            res[label]["graph"].append(bench(forms[label], graph=True, **timed).median_ms)
            res[label]["e2e"].append(bench(forms[label], sync=True, **timed).median_ms)
        rc = min(res["op RC"]["graph"])
        for label in forms:
            g, e = res[label]["graph"], res[label]["e2e"]
            rows.append({"case": name, "form": label, "graph ms": min(g), "graph spread %": 100 * (max(g) / min(g) - 1),
                         "e2e ms": min(e), "vs op RC (graph)": min(g) / rc})
        print(tabulate(rows[-len(forms):], headers="keys", floatfmt=".4g"), flush=True)
        del a, b_kn, b_nk, weights, own_out
        torch.cuda.empty_cache()
    return rows


def selected(name: str, args) -> bool:
    return not args.cases or any(c in name for c in args.cases.split(","))


def profile(kernel, args) -> int:
    name = next(n for n in CASES if selected(n, args))
    a, b_kn, gs = case_inputs(name, args.seed)
    out = torch.empty(a.shape[0], b_kn.shape[2], dtype=torch.int32, device="cuda")
    for _ in range(3):
        kernel(a, b_kn, gs, out)
    torch.cuda.synchronize()
    print(f"profiled {name}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--cases", default="")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true", help="run the build three times on the first case, nothing else")
    args = ap.parse_args()
    if "," in args.lib:
        ap.error("--lib takes one build a process (the docstring says why)")
    if not torch.cuda.is_available():
        print("needs a GPU")
        return 2
    print(f"seed {args.seed}")
    name, _, path = args.lib.partition("=")
    label, kernel = (name, Kernel(path)) if path else ("(in-kernel transpose)", Kernel(name))
    if args.profile:
        return profile(kernel, args)
    checks = check(kernel, args.seed)
    print(label)
    print(tabulate(checks, headers="keys"), flush=True)
    exact = all(r["ok"] for r in checks)
    if exact and not args.check_only:  # a build that failed a check is not timed
        print(tabulate(timing({label: kernel}, args), headers="keys", floatfmt=".4g"))
    return int(not exact)


if __name__ == "__main__":
    sys.exit(main())
