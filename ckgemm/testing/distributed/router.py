"""Seeded top-k routing for the expert-parallel flow, and the scenarios that shape it.

Routing is drawn on the CPU from one generator per (seed, step), in a fixed order, so every rank rebuilds
the same global routing (all ranks' tokens) without communication, and top-k ties cannot differ between
devices. Experts are chosen by the Gumbel-top-k trick: ``topk(log(weight_e) + Gumbel noise)`` samples
``topk`` distinct experts per token with probability proportional to ``weight_e``; an excluded expert has
weight 0 (score -inf) and is never chosen.

Tokens per rank are uneven on purpose (rank r has ``tokens - r * tokens // (2 * world)``, DeepEP's
``N - rank`` idea), so split sizes differ between every pair of ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

ZIPF_S = 1.2


@dataclass(frozen=True)
class Scenario:
    name: str
    purpose: str
    routing: str = "balanced"  # "balanced": equal expert weights; "zipf": 1/rank^s over a shuffled order
    idle_last_rank: bool = False  # the last rank has no tokens to send (it still receives)
    unrouted_last_rank: bool = False  # no token anywhere routes to the last rank's experts
    empty_expert: bool = False  # one expert (drawn per step) receives no token on any rank


SCENARIOS = {s.name: s for s in (
    Scenario("balanced", "every expert equally likely; uneven tokens per rank"),
    Scenario("zipf", "Zipf-skewed expert popularity (s=1.2): hot experts, nearly idle ones", routing="zipf"),
    Scenario("zero-token-rank", "the last rank sends no token but still receives", idle_last_rank=True),
    Scenario("empty-rank", "the last rank receives zero tokens: a 0-row GEMM, every collective still joined",
             unrouted_last_rank=True),
    Scenario("empty-expert", "one expert gets zero tokens on every rank", empty_expert=True),
)}


def scenario_named(name: str) -> Scenario:
    """The scenario of that name (``zero_token_rank`` also names ``zero-token-rank``)."""
    try:
        return SCENARIOS[name.replace("_", "-")]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {sorted(SCENARIOS)}") from None


@dataclass(frozen=True)
class Routing:
    """The global routing of one step: rank r owns rows ``offsets[r] : offsets[r + 1]`` of ``ids``."""

    tokens_per_rank: tuple[int, ...]
    ids: torch.Tensor  # [sum T, topk] int64 global expert ids, distinct within a row
    weights: torch.Tensor  # [sum T, topk] float32 combine weights

    @property
    def offsets(self) -> list[int]:
        out = [0]
        for t in self.tokens_per_rank:
            out.append(out[-1] + t)
        return out

    def rows_of(self, rank: int) -> slice:
        off = self.offsets
        return slice(off[rank], off[rank + 1])


def tokens_per_rank(scenario: Scenario, tokens: int, world: int) -> list[int]:
    counts = [tokens - r * tokens // (2 * world) for r in range(world)]
    if scenario.idle_last_rank:
        counts[-1] = 0
    return counts


def routes_nothing(scenario: Scenario, *, tokens: int, experts: int, topk: int, world: int) -> str | None:
    """Why the scenario routes no token at all with these sizes (a run of it would check nothing), or None."""
    if sum(tokens_per_rank(scenario, tokens, world)) == 0:
        return "no rank has a token" + (" (its last rank is its only rank)" if scenario.idle_last_rank else "")
    allowed = experts - (experts // world if scenario.unrouted_last_rank else 0) - int(scenario.empty_expert)
    if allowed < topk:
        return f"only {allowed} of the {experts} experts may receive, fewer than topk {topk}"
    return None


def expert_weights(scenario: Scenario, experts: int, world: int, gen: torch.Generator) -> torch.Tensor:
    """Relative popularity of each expert for this step (0: never chosen)."""
    if scenario.routing == "zipf":
        ranks = torch.randperm(experts, generator=gen).double()
        weights = 1.0 / (ranks + 1.0) ** ZIPF_S
    else:
        weights = torch.ones(experts, dtype=torch.float64)
    if scenario.unrouted_last_rank:
        weights[experts - experts // world:] = 0.0
    if scenario.empty_expert:
        weights[int(torch.randint(experts, (1,), generator=gen))] = 0.0
    return weights


def route(scenario: Scenario, *, tokens: int, experts: int, topk: int, world: int, exact: bool,
          gen: torch.Generator) -> Routing:
    """Draws, in this order: expert popularity, Gumbel noise, then (exact mode) the weight exponents."""
    counts = tokens_per_rank(scenario, tokens, world)
    popularity = expert_weights(scenario, experts, world, gen)
    allowed = int((popularity > 0).sum())
    if allowed < topk:  # e.g. "empty-rank" at world size 1: no expert may receive, so no token exists
        counts = [0] * world
    total = sum(counts)
    uniform = torch.rand((total, experts), generator=gen, dtype=torch.float64).clamp_(min=1e-300)
    scores = popularity.log() - torch.log(-torch.log(uniform))  # log(0) = -inf: excluded experts lose
    top_scores, ids = scores.topk(topk, dim=1)
    if exact:  # powers of two from 1/2 to 1/16: every product and sum in the combine is exact
        weights = torch.pow(2.0, -torch.randint(1, 5, (total, topk), generator=gen).double()).float()
    else:
        weights = torch.softmax(top_scores, dim=1).float()
    return Routing(tuple(counts), ids.to(torch.int64), weights)
