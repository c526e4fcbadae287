"""What one expert-parallel case runs: the layer's sizes, the input dtype, the quantization recipe and the
check mode, and the (scenario, dtype, quant, mode) grid a run covers."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from ...dtypes import fp8_dtype_for, rule_named

DTYPE_NAMES = ("bf16", "fp16", "fp8", "int8")
MODES = ("exact", "numeric")
# "none": the dtype table's unscaled GEMM. "row" and "block" are the README's scaled recipes; their rows
# carry scales through dispatch (recipes.py says which dtypes and what the GEMM must accept).
QUANTS = ("none", "row", "block")
# Exact mode: unscaled, |x|, |w| <= 1, so |out| <= K must be an integer the output dtype holds. Scaled recipes
# (codes in [-1, 1], power-of-two scales 1/4..4): partial sums are multiples of 1/16 up to 16 K, exact in
# fp32 while 256 K <= 2^24; the one rounding to bf16 is then the same in every kernel.
EXACT_MAX_K = {"bf16": 256, "fp16": 2048, "scaled": 65536}


@dataclass(frozen=True)
class MoEConfig:
    """One MoE layer: ``experts`` experts of [out, hidden] (RC: C = A @ B^T), top-``topk`` routing,
    ``tokens`` tokens on rank 0 (scenarios vary the other ranks)."""

    experts: int = 8
    topk: int = 2
    hidden: int = 256  # K: two 128-deep scale blocks, so a block recipe's K indexing is checked
    out: int = 256  # N: two 128-wide weight-scale blocks, likewise
    tokens: int = 24
    dtype: str = "bf16"
    quant: str = "none"
    mode: str = "exact"

    def __post_init__(self):
        if self.dtype not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {self.dtype!r}; known: {DTYPE_NAMES}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {MODES}")
        if self.quant not in QUANTS:
            raise ValueError(f"unknown quant recipe {self.quant!r}; known: {QUANTS}")
        if min(self.experts, self.topk, self.hidden, self.out) < 1 or self.tokens < 0:
            raise ValueError(f"sizes must be positive: {self}")
        if self.topk > self.experts:
            raise ValueError(f"topk {self.topk} exceeds the {self.experts} experts")
        limit = EXACT_MAX_K.get(self.dtype if self.quant == "none" else "scaled")
        if self.mode == "exact" and limit is not None and self.hidden > limit:
            raise ValueError(f"exact mode with {self.label.split()[0]} needs hidden <= {limit} (every sum must "
                             f"stay exact), got {self.hidden}")

    def input_dtype(self, device) -> torch.dtype:
        """The torch dtype of the GEMM's A and B: fp8 is the device's e4m3 flavour."""
        return fp8_dtype_for(device) if self.dtype == "fp8" else rule_named(self.dtype).input

    def local_experts(self, world: int) -> int:
        if self.experts % world:
            raise ValueError(f"{self.experts} experts do not split evenly over {world} ranks")
        return self.experts // world

    @property
    def label(self) -> str:
        quant = "" if self.quant == "none" else f"/{self.quant}"
        return f"{self.dtype}{quant} {self.mode}"


@dataclass(frozen=True)
class Case:
    """One cell of a run: a scenario with a layer config, run for ``steps`` steps."""

    scenario: str
    config: MoEConfig
    steps: int = 3

    @property
    def name(self) -> str:
        return f"{self.scenario} {self.config.label}"


def grid(scenarios, dtypes, modes, *, sizes: dict | None = None, quants=("none",), steps: int = 3) -> list[Case]:
    """Every scenario x dtype x quant x mode, in that nesting order, with the MoEConfig ``sizes`` (experts,
    topk, hidden, out, tokens). Dtypes a recipe does not take are left out of that recipe's cells."""
    from .recipes import RECIPE_DTYPES

    return [Case(s, MoEConfig(**(sizes or {}), dtype=d, quant=q, mode=m), steps)
            for s, d, q, m in itertools.product(scenarios, dtypes, quants, modes) if d in RECIPE_DTYPES[q]]
