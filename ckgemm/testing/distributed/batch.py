"""The synthetic data of the expert-parallel flow, rebuilt identically on every rank from one shared seed.

``make_batch`` gives the whole step: every rank's tokens (quantized as the GEMM takes them) and the global
routing; ``make_expert_weights`` gives all experts' weights. Both draw on the CPU from generators seeded by
(seed, step) and seed alone, in a fixed order, then move to the device, so each rank knows every other
rank's tokens and every expert's weights without communicating: the oracle never uses the code under test.

Exact mode draws values in {-1, 0, 1} (with power-of-two combine weights and scales, every result is an
exact small number: any kernel and any summation order must give the same bits). Numeric mode draws
random normal data (fp8: normal magnitudes clamped to the format; int8: its whole range), as
``ckgemm.testing.data.random_tensor`` does for single-GPU tests.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data import random_tensor
from . import recipes
from .config import MoEConfig
from .recipes import Operand
from .router import Routing, route, scenario_named

_STEP_STREAM = 1_000_003  # the generator of (seed, step) is seed * _STEP_STREAM + step + 1 (never seed alone)


def _generator(value: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(value) % (2**63))


def _values(shape, cfg: MoEConfig, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """float32 values of the given shape on the CPU (for scaled recipes: before quantization)."""
    if cfg.mode == "exact":
        return torch.randint(-1, 2, tuple(shape), generator=gen).float()
    if cfg.quant != "none":
        return torch.randn(tuple(shape), generator=gen)
    return random_tensor(shape, dtype, gen).float()


@dataclass
class LocalTokens:
    """One rank's input to the layer."""

    x: Operand  # [T, K] (+ scales [T, width])
    ids: torch.Tensor  # [T, topk] int64
    weights: torch.Tensor  # [T, topk] float32


@dataclass
class GlobalBatch:
    """All ranks' tokens of one step; rank r's tokens are rows ``routing.rows_of(r)``."""

    routing: Routing
    x: Operand  # [sum T, K]

    def local(self, rank: int) -> LocalTokens:
        rows = self.routing.rows_of(rank)
        return LocalTokens(self.x.rows(rows), self.routing.ids[rows], self.routing.weights[rows])


def make_batch(cfg: MoEConfig, scenario: str, seed: int, step: int, world: int, device) -> GlobalBatch:
    gen = _generator(seed * _STEP_STREAM + step + 1)
    routing = route(scenario_named(scenario), tokens=cfg.tokens, experts=cfg.experts, topk=cfg.topk, world=world,
                    exact=cfg.mode == "exact", gen=gen)
    dtype = cfg.input_dtype(device)
    values = _values((routing.ids.shape[0], cfg.hidden), cfg, dtype, gen)
    x = recipes.quantize_activations(cfg.quant, values, dtype, exact=cfg.mode == "exact", gen=gen)
    routing = Routing(routing.tokens_per_rank, routing.ids.to(device), routing.weights.to(device))
    return GlobalBatch(routing, x.to(device))


def make_expert_weights(cfg: MoEConfig, seed: int, device) -> Operand:
    """All experts' weights [E, N, K] (RC: the GEMM computes x @ w_e^T), the same at every step."""
    gen = _generator(seed)
    dtype = cfg.input_dtype(device)
    values = _values((cfg.experts, cfg.out, cfg.hidden), cfg, dtype, gen)
    return recipes.quantize_weights(cfg.quant, values, dtype, exact=cfg.mode == "exact", gen=gen).to(device)


def local_expert_weights(weights: Operand, rank: int, world: int) -> Operand:
    """The experts rank ``rank`` serves: a contiguous slice of E / world experts."""
    per_rank = weights.data.shape[0] // world
    return weights.rows(slice(rank * per_rank, (rank + 1) * per_rank))
