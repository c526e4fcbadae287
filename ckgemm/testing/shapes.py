"""Seeded, reproducible grouped-GEMM shape generators. Every case carries a purpose label and prints as a
``GxMxNxK`` id (a dimension that varies across groups prints as ``[min..max]``).

Shapes are drawn with ``random.Random(seed)``, so a seed gives the same cases on every machine and torch
version. Generators that take ``align`` respect a backend's alignment table, a dict with any of
``m_multiple``, ``n_multiple``, ``k_multiple`` (missing keys mean 1), e.g. ``{"k_multiple": 8, "n_multiple": 8}``.
"""
from __future__ import annotations

import math
import numbers
import random
from dataclasses import dataclass

Shape = tuple[int, int, int]  # (M, N, K) of one group
ALIGN_KEYS = ("m_multiple", "n_multiple", "k_multiple")
MOE_DISTRIBUTIONS = ("balanced", "zipf", "empty", "multinomial")


@dataclass(frozen=True)
class Case:
    shapes: tuple[Shape, ...]
    purpose: str
    seed: int | None = None

    def __post_init__(self):
        for g, shape in enumerate(self.shapes):
            if len(shape) != 3 or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0 for d in shape):
                raise ValueError(f"Case {self.purpose!r}: group {g}: (M, N, K) must be three ints >= 0, got {shape}")

    @property
    def groups(self) -> int:
        return len(self.shapes)

    @property
    def ms(self) -> list[int]:
        return [s[0] for s in self.shapes]

    @property
    def ns(self) -> list[int]:
        return [s[1] for s in self.shapes]

    @property
    def ks(self) -> list[int]:
        return [s[2] for s in self.shapes]

    @property
    def packable(self) -> bool:
        """True when every group shares N and K (the MoE/packed form can run it)."""
        return len(set(self.ns)) == 1 and len(set(self.ks)) == 1

    @property
    def id(self) -> str:
        return f"{self.groups}x{_dim(self.ms)}x{_dim(self.ns)}x{_dim(self.ks)}"

    @property
    def flops(self) -> int:
        return sum(2 * m * n * k for m, n, k in self.shapes)

    def __str__(self) -> str:
        seed = f", shape seed {self.seed}" if self.seed is not None else ""  # of the sizes, not of the data
        return f"{self.id} ({self.purpose}{seed})"


def _dim(values: list[int]) -> str:
    if not values:
        return "0"
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"[{lo}..{hi}]"


def _multiples(align: dict | None) -> tuple[int, int, int]:
    align = dict(align or {})
    unknown = set(align) - set(ALIGN_KEYS)
    if unknown:
        raise ValueError(f"unknown alignment keys {sorted(unknown)}; known: {ALIGN_KEYS}")
    values = tuple(int(align.get(key, 1)) for key in ALIGN_KEYS)
    if any(v < 1 for v in values):
        raise ValueError(f"alignment multiples must be >= 1, got {align}")
    return values


def respects_alignment(case: Case, align: dict | None) -> bool:
    mm, nm, km = _multiples(align)
    return all(m % mm == 0 and n % nm == 0 and k % km == 0 for m, n, k in case.shapes)


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def _log_uniform(rng: random.Random, lo: int, hi: int, multiple: int = 1) -> int:
    """An integer in [lo, hi], a multiple of ``multiple``, drawn log-uniformly (small sizes get their share)."""
    lo_a, hi_a = _round_up(max(lo, 1), multiple), (hi // multiple) * multiple
    if lo_a > hi_a:
        raise ValueError(f"no multiple of {multiple} lies in [{lo}, {hi}]")
    x = math.exp(rng.uniform(math.log(lo_a), math.log(hi_a)))
    return min(max(round(x / multiple) * multiple, lo_a), hi_a)


def _at_least(what: str, value, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{what} must be an int >= {least}, got {value!r}")


def uniform(groups: int, m: int, n: int, k: int, purpose: str = "uniform groups") -> Case:
    """``groups`` identical (m, n, k) groups."""
    _at_least("groups", groups, 0)
    return Case(tuple((m, n, k) for _ in range(groups)), purpose)


def variable(groups: int, m: int, n: int, k: int, seed: int, *, spread: float = 0.3,
             align: dict | None = None) -> Case:
    """Shared N, K (rounded up to ``align``'s multiples, as the other generators round them); each M drawn
    uniformly in m*(1 +- spread) (DeepGEMM's grouped tests use 0.3)."""
    _at_least("groups", groups, 0)
    rng = random.Random(seed)
    mm, nm, km = _multiples(align)
    n, k = _round_up(n, nm), _round_up(k, km)
    ms = [max(mm, _round_up(int(m * rng.uniform(1 - spread, 1 + spread)), mm)) for _ in range(groups)]
    return Case(tuple((mi, n, k) for mi in ms), f"variable M around {m} (+-{spread:.0%})", seed)


def heterogeneous(groups: int, seed: int, *, m_range=(1, 1024), n_range=(64, 4096), k_range=(64, 4096),
                  align: dict | None = None) -> Case:
    """Every group's M, N and K drawn independently (log-uniform, aligned)."""
    rng = random.Random(seed)
    mm, nm, km = _multiples(align)
    shapes = tuple((_log_uniform(rng, *m_range, mm), _log_uniform(rng, *n_range, nm), _log_uniform(rng, *k_range, km))
                   for _ in range(groups))
    return Case(shapes, "heterogeneous M, N, K per group", seed)


def moe_split(tokens: int, experts: int, n: int, k: int, seed: int, *, dist: str = "balanced", topk: int = 1,
              zipf_s: float = 1.2, empty_fraction: float = 0.25) -> Case:
    """Rows per expert for ``tokens * topk`` routed rows, one group per expert (shared N, K).

    ``dist``: ``balanced`` (even split), ``zipf`` (weights 1/rank^zipf_s over a shuffled expert order),
    ``empty`` (a fraction of experts, at least one, get no rows; the rest share at random),
    ``multinomial`` (random uneven weights per expert). Random splits are multinomial draws."""
    if dist not in MOE_DISTRIBUTIONS:
        raise ValueError(f"unknown MoE distribution {dist!r}; known: {MOE_DISTRIBUTIONS}")
    _at_least("tokens", tokens, 0)
    _at_least("experts", experts, 1)
    _at_least("topk", topk, 1)
    rng = random.Random(seed)
    rows = tokens * topk
    if dist == "balanced":
        sizes = [rows // experts + (e < rows % experts) for e in range(experts)]
    else:
        sizes = _multinomial(rng, rows, _moe_weights(rng, experts, dist, zipf_s, empty_fraction))
    label = f"MoE {dist} split: {tokens} tokens x top-{topk} over {experts} experts"
    return Case(tuple((s, n, k) for s in sizes), label, seed)


def _moe_weights(rng: random.Random, experts: int, dist: str, zipf_s: float, empty_fraction: float) -> list[float]:
    if dist == "zipf":
        weights = [1.0 / (rank + 1) ** zipf_s for rank in range(experts)]
        rng.shuffle(weights)
        return weights
    weights = [rng.uniform(0.2, 1.8) for _ in range(experts)]
    if dist == "empty":
        empty = min(max(1, round(experts * empty_fraction)), experts - 1) if experts > 1 else 0
        for e in rng.sample(range(experts), empty):
            weights[e] = 0.0
    return weights


def _multinomial(rng: random.Random, total: int, weights: list[float]) -> list[int]:
    counts = [0] * len(weights)
    for e in rng.choices(range(len(weights)), weights=weights, k=total):
        counts[e] += 1
    return counts


def edge_cases(n: int = 256, k: int = 256, *, tile_m: int = 128, granularity: int = 128,
               align: dict | None = None) -> list[Case]:
    """The shape branches kernels get wrong: M=1, M at tile-1/tile/tile+1, K equal to the quantization
    granularity, odd (or minimally aligned) N and K, empty groups among full ones, all groups empty,
    K=0 and N=0 groups, many tiny groups and a single group. Sizes respect ``align``."""
    mm, nm, km = _multiples(align)
    n, k = _round_up(n, nm), _round_up(k, km)
    m_near_tile = sorted({_round_up(max(tile_m + d, 1), mm) for d in (-1, 0, 1)})
    odd_n, odd_k = _round_up(n + 1, nm), _round_up(k + 1, km)  # n+1 and k+1 when the backend allows odd sizes
    m1 = mm
    cases = [
        Case(((m1, n, k),), f"smallest M ({m1})"),
        Case(tuple((m, n, k) for m in m_near_tile), f"M around the {tile_m}-row tile"),
        Case(((m_near_tile[-1], n, _round_up(granularity, km)),) * 2, "K equal to the quantization granularity"),
        Case(((m_near_tile[0], odd_n, odd_k), (m1, odd_n, odd_k)), "odd (or minimally aligned) N and K"),
        Case(((0, n, k), (m_near_tile[0], n, k), (0, n, k), (0, n, k), (m1, n, k), (0, n, k)),
             "empty groups among non-empty ones"),
        Case(((0, n, k),) * 4, "all groups empty"),
        Case(((m_near_tile[0], n, k), (m_near_tile[-1], n, 0), (m1, n, k)), "a K=0 group (output must be zeros)"),
        Case(((m_near_tile[0], n, k), (m_near_tile[0], 0, k)), "an N=0 group"),
        Case(tuple((_round_up(1 + (g * 7) % 33, mm), n, k) for g in range(16)), "many tiny groups"),
        Case(((2 * tile_m + mm, n, k),), "a single group"),
    ]
    return cases


def random_sweep(count: int, seed: int, *, align: dict | None = None, m_range=(1, 8192), n_range=(256, 16384),
                 k_range=(256, 16384), groups_range=(1, 8), max_flops: float | None = None) -> list[Case]:
    """``count`` cases with random group counts and per-group sizes (log-uniform in each range, aligned).
    ``max_flops`` caps a case's work by shrinking its M values (keeps sweeps affordable)."""
    rng = random.Random(seed)
    mm, nm, km = _multiples(align)
    cases = []
    for i in range(count):
        groups = rng.randint(*groups_range)
        shapes = [(_log_uniform(rng, *m_range, mm), _log_uniform(rng, *n_range, nm), _log_uniform(rng, *k_range, km))
                  for _ in range(groups)]
        if max_flops is not None:
            shapes = _cap_flops(shapes, max_flops, mm)
        cases.append(Case(tuple(shapes), f"random sweep #{i}", seed))
    return cases


def _cap_flops(shapes, max_flops: float, mm: int) -> list[Shape]:
    """Shrink each M towards ``mm`` by one common factor so that the case's FLOPs fit ``max_flops``
    (the floor of ``mm`` rows per group is kept even if it alone exceeds the cap)."""
    total = sum(2 * m * n * k for m, n, k in shapes)
    floor = sum(2 * mm * n * k for _, n, k in shapes)
    if total <= max_flops:
        return list(shapes)
    scale = max(max_flops - floor, 0.0) / (total - floor)
    return [(mm + int((m - mm) * scale) // mm * mm, n, k) for m, n, k in shapes]
