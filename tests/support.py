"""Shared test helpers: seeded inputs and an independent float64/int64 check of grouped GEMM results.

The check here is deliberately separate from ckgemm's reference backend and from the harness, so a
bug in either cannot hide in both.
"""
from __future__ import annotations

import importlib.util
import json
import os
import zlib
from pathlib import Path

import torch

BASE_SEED = int(os.environ.get("CKGEMM_SEED", "20261129"))
INT32_SENTINEL = -(2**31)  # unreachable by |K * 128 * 128| < 2**31, so an unwritten int32 element fails


def generator(tag: str) -> torch.Generator:
    """A CPU generator seeded from the base seed and the test's tag; the seed is printed so a
    failing case can be replayed with CKGEMM_SEED."""
    seed = (BASE_SEED ^ zlib.crc32(tag.encode())) & 0x7FFFFFFF
    print(f"[seed] {tag}: {seed} (base CKGEMM_SEED={BASE_SEED})")
    return torch.Generator().manual_seed(seed)


def rand_tensor(shape, dtype: torch.dtype, gen: torch.Generator, device="cpu") -> torch.Tensor:
    """Random normal data (never all-zeros or all-ones); int8 over its whole range."""
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, generator=gen, dtype=torch.int8).to(device)
    x = torch.randn(shape, generator=gen)
    if dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz):
        x = x * 4.0
    return x.to(dtype).to(device)


def b_shape(n: int, k: int, layout: str) -> tuple[int, int]:
    return (n, k) if layout == "RC" else (k, n)


def make_group(m, n, k, dtype, layout, gen, device="cpu"):
    return rand_tensor((m, k), dtype, gen, device), rand_tensor(b_shape(n, k, layout), dtype, gen, device)


def exact_product(a: torch.Tensor, b: torch.Tensor, layout: str) -> torch.Tensor:
    """Exact A @ op(B): int64 for integer inputs, float64 otherwise (computed on the CPU)."""
    a, b = a.cpu(), b.cpu()
    bk = b.t() if layout == "RC" else b
    if a.dtype == torch.int8:
        return a.to(torch.int64) @ bk.to(torch.int64)
    return a.to(torch.float64) @ bk.to(torch.float64)


_OUT_MANTISSA = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23}


def assert_group_matches(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, layout: str, what: str) -> None:
    """Per-element bound for fp32 accumulation rounded once: 0.5 ulp of the output plus
    K * 2**-24 * sum|a||b| (fp32 summation error). int8 must be exact (int32 wrap included)."""
    exact = exact_product(a, b, layout)
    out = out.cpu()
    assert out.shape == exact.shape, f"{what}: shape {tuple(out.shape)} != {tuple(exact.shape)}"
    if a.dtype == torch.int8:
        expected = exact.to(torch.int32)
        if not torch.equal(out, expected):
            bad = (out != expected).nonzero()
            i, j = bad[0].tolist()
            raise AssertionError(f"{what}: {len(bad)} int32 mismatches; first at ({i}, {j}): "
                                 f"got {out[i, j].item()} expected {expected[i, j].item()}")
        return
    assert torch.isfinite(out).all(), f"{what}: {int((~torch.isfinite(out)).sum())} non-finite outputs"
    k = a.shape[1]
    bk = b.t() if layout == "RC" else b
    magnitude = a.cpu().to(torch.float64).abs() @ bk.cpu().to(torch.float64).abs()
    half_ulp = 2.0 ** -(_OUT_MANTISSA[out.dtype] + 1)
    bound = half_ulp * exact.abs() * 1.0001 + k * 2.0**-24 * magnitude + 1e-30
    _assert_within(out, exact, bound, what)


def _assert_within(out: torch.Tensor, exact: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    """Every |out - exact| <= bound, else the count and the worst element."""
    err = (out.to(torch.float64) - exact).abs()
    if (err > bound).any():
        idx = int(torch.argmax(err - bound))
        i, j = divmod(idx, exact.shape[1])
        raise AssertionError(f"{what}: {int((err > bound).sum())} elements out of bound; worst at ({i}, {j}): "
                             f"got {out[i, j].item()} exact {exact[i, j].item()} bound {bound[i, j].item():.3g}")


def poison(shape, dtype, device="cpu") -> torch.Tensor:
    """An output buffer pre-filled with NaN (or an unreachable int32 sentinel)."""
    if dtype == torch.int32:
        return torch.full(shape, INT32_SENTINEL, dtype=dtype, device=device)
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


# ---- scaled low precision: inputs and an independent float64 product (no ckgemm or harness code) ----

SCALED_BLOCK = 128


def _blocks(x: int) -> int:
    return -(-x // SCALED_BLOCK)


def random_scales(recipe: str, m: int, n: int, k: int, gen: torch.Generator, packed_groups: int | None = None,
                  dtype: torch.dtype = torch.float8_e4m3fn):
    """(scale_a, scale_b) of one group (list form) in ckgemm's layouts, positive and spread over binades
    (int8: small enough that full-range int8 sums stay inside float16). With ``packed_groups`` G, scale_b
    gets the packed form's leading [G] (and scale_a covers ``m`` rows)."""
    low, high = (-10, -6) if dtype == torch.int8 else (-4, 2)

    def pos(*shape):
        return torch.exp2(torch.randint(low, high, shape, generator=gen).float()) * (
            1 + torch.rand(shape, generator=gen))
    lead = () if packed_groups is None else (packed_groups,)
    if recipe == "tensor":
        return pos(), pos(*lead)
    if recipe == "row":
        return pos(m), pos(*lead, n)
    return pos(m, _blocks(k)), pos(*lead, _blocks(n), _blocks(k))


def scaled_exact(a, b, sa, sb, layout: str, recipe: str) -> torch.Tensor:
    """float64 (A * sA) @ op(B * sB) for one group, B's scales in the logical [N, K] orientation."""
    af = a.cpu().to(torch.float64)
    bnk = (b if layout == "RC" else b.t()).cpu().to(torch.float64)  # logical [N, K]
    m, k = af.shape
    n = bnk.shape[0]
    sa, sb = sa.cpu().to(torch.float64), sb.cpu().to(torch.float64)
    if recipe == "tensor":
        sa_full, sb_full = sa.expand(m, k), sb.expand(n, k)
    elif recipe == "row":
        sa_full, sb_full = sa.reshape(m, 1).expand(m, k), sb.reshape(n, 1).expand(n, k)
    else:
        cols = torch.arange(k) // SCALED_BLOCK
        sa_full = sa[:, cols] if k else torch.zeros(m, 0, dtype=torch.float64)
        sb_full = sb[torch.arange(n) // SCALED_BLOCK][:, cols] if k else torch.zeros(n, 0, dtype=torch.float64)
    return (af * sa_full) @ (bnk * sb_full).t()


# fp8 tensor cores sum each 32-deep MMA step into an accumulator aligned to about 14 mantissa bits, and
# CUTLASS promotes into fp32 every 4 steps (128 deep; the block recipe's K block): up to 4 * 2^-14 of
# the scaled products' magnitude on top of fp32 accumulation (an H200 run measured about 2^-15).
FP8_MMA_STEP_BOUND = 4 * 2.0**-14


def assert_scaled_matches(out, a, b, sa, sb, layout, recipe, what):
    """Bound per element: half an ulp of the output plus fp32 accumulation of the scaled products
    ((K + 4) * 2^-24 * sum |a sA||b sB|: the 4 for the scale multiplies), plus, for fp8 inputs on a GPU, the
    tensor core's narrower accumulation (FP8_MMA_STEP_BOUND * the same magnitude)."""
    exact = scaled_exact(a, b, sa, sb, layout, recipe)
    out = out.cpu()
    assert out.shape == exact.shape, f"{what}: shape {tuple(out.shape)} != {tuple(exact.shape)}"
    assert torch.isfinite(out).all(), f"{what}: {int((~torch.isfinite(out)).sum())} non-finite outputs"
    af = a.cpu().to(torch.float64).abs()
    bf = b.cpu().to(torch.float64).abs()
    magnitude = scaled_exact(af, bf, sa, sb, layout, recipe)
    k = a.shape[1]
    half_ulp = 2.0 ** -(_OUT_MANTISSA[out.dtype] + 1)
    mma = FP8_MMA_STEP_BOUND if a.dtype.is_floating_point and a.is_cuda else 0.0
    bound = half_ulp * exact.abs() * 1.0001 + ((k + 4) * 2.0**-24 + mma) * magnitude + 1e-30
    _assert_within(out, exact, bound, what)


def op_tests_on_one_thread(module_name: str):
    """Body of a module fixture: an OpTestsOnCpu with one intra-op thread while it lives (the CLI's tiny
    matmuls lose milliseconds to thread wake-ups on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield OpTestsOnCpu(module_name)
    finally:
        torch.set_num_threads(threads)


def report_rows(path) -> list[dict]:
    """The rows of a report JSON (ckgemm.testing.Report.write_json)."""
    return json.loads(Path(path).read_text())["rows"]


class OpTestsOnCpu:
    """op_tests/test_grouped_gemm.py as a module whose ``main`` runs on the CPU (the torch reference, with
    ``--device cpu``) on every box: the tests using it are about the command line; op_tests on a GPU is the
    device suite's smoke stage (scripts/device_suite.sh). Other attributes are the module's."""

    def __init__(self, module_name: str):
        path = Path(__file__).resolve().parents[1] / "op_tests" / "test_grouped_gemm.py"
        spec = importlib.util.spec_from_file_location(module_name, path)
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)  # puts op_tests/ on sys.path for grouped_gemm_cli

    def main(self, argv) -> int:
        return self.module.main([*argv, "--device", "cpu"])

    def __getattr__(self, name):
        return getattr(self.module, name)
