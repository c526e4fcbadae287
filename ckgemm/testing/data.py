"""Seeded inputs and poisoned outputs for kernel tests and benchmarks.

Data is random normal (never all-zeros or all-ones: constant data hides indexing bugs and flatters timings,
as fewer bits flip). fp8 values are kept out of the subnormal range, where rounding differs between
implementations; int8 covers its whole range. Generation runs on the target device with a generator
seeded there, so large benchmark inputs do not cross the host.
"""
from __future__ import annotations

import torch

from .shapes import Case

# A true int32 result equals it only from K = 131072 (2**31 = K * (-128)**2 wraps to it), so for K < 131072 an
# unwritten int32 stays visible.
INT32_SENTINEL = -(2**31)


SEED_BITS = 62  # torch.Generator takes 64-bit seeds; cases and tensors add small offsets to a run's seed


def seed_problem(seed: int, flag: str = "--seed") -> str | None:
    """Why a command line's seed cannot be used (None when it can): 0 <= seed < 2^SEED_BITS."""
    return None if 0 <= seed < 2**SEED_BITS else f"{flag} must be in [0, 2^{SEED_BITS}), got {seed}"


def generator(seed: int, device="cpu") -> torch.Generator:
    return torch.Generator(device=torch.device(device)).manual_seed(int(seed))


def random_tensor(shape, dtype: torch.dtype, gen: torch.Generator, device="cpu", *, scale: float = 1.0) -> torch.Tensor:
    """Random data of ``dtype``: normal * ``scale`` for floats (fp8: magnitudes at least the smallest normal,
    clamped to the format's max), uniform over [-128, 127] for int8."""
    device = torch.device(device)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        lo, hi = max(info.min, -128), min(info.max, 127)
        return torch.randint(lo, hi + 1, tuple(shape), generator=gen, dtype=dtype, device=device)
    x = torch.randn(tuple(shape), generator=gen, device=device) * scale
    if dtype.itemsize == 1:
        info = torch.finfo(dtype)
        x = torch.sign(x) * x.abs().clamp(min=info.smallest_normal, max=info.max)
    return x.to(dtype)


def b_shape(n: int, k: int, layout: str) -> tuple[int, int]:
    """How B is stored: [N, K] for RC, [K, N] for RR."""
    if layout not in ("RC", "RR"):
        raise ValueError(f"unknown layout {layout!r}")
    return (n, k) if layout == "RC" else (k, n)


def group_inputs(case: Case, dtype: torch.dtype, layout: str, seed: int, device="cpu", *, scale: float = 1.0):
    """(a_list, b_list) for a case: a[i] [M_i, K_i], b[i] stored per ``layout``."""
    gen = generator(seed, device)
    a_list = [random_tensor((m, k), dtype, gen, device, scale=scale) for m, _, k in case.shapes]
    b_list = [random_tensor(b_shape(n, k, layout), dtype, gen, device, scale=scale) for _, n, k in case.shapes]
    return a_list, b_list


def packed_inputs(case: Case, dtype: torch.dtype, layout: str, seed: int, device="cpu", *, scale: float = 1.0,
                  sizes_dtype: torch.dtype = torch.int32):
    """(a [sum M, K], b [G, N, K] or [G, K, N], group_sizes [G] on ``device``) for a case with shared N, K."""
    if not case.packable:
        raise ValueError(f"case {case} has per-group N or K; the packed form needs them shared")
    n, k = case.ns[0], case.ks[0]
    gen = generator(seed, device)
    a = random_tensor((sum(case.ms), k), dtype, gen, device, scale=scale)
    b = random_tensor((case.groups, *b_shape(n, k, layout)), dtype, gen, device, scale=scale)
    sizes = torch.tensor(case.ms, dtype=sizes_dtype, device=device)
    return a, b, sizes


def poisoned(shape, dtype: torch.dtype, device="cpu") -> torch.Tensor:
    """An output buffer pre-filled with NaN (integers: an unreachable sentinel), so unwritten elements fail."""
    if dtype.is_floating_point:
        return torch.full(tuple(shape), float("nan"), dtype=dtype, device=device)
    return torch.full(tuple(shape), INT32_SENTINEL if dtype == torch.int32 else torch.iinfo(dtype).min,
                      dtype=dtype, device=device)


def unwritten(t: torch.Tensor) -> torch.Tensor:
    """Mask of elements that still hold the poison value."""
    if t.dtype.is_floating_point:
        return torch.isnan(t)
    return t == (INT32_SENTINEL if t.dtype == torch.int32 else torch.iinfo(t.dtype).min)
