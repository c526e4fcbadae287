"""What one rank must see at every stage of the expert-parallel flow, computed from the regenerated global
batch alone: no communication, and none of the layer's code (its sort, permutation or combine).

The canonical receive order is the layer's contract: expert-major (local expert 0 first), then source rank,
then the source's token order (then slot; a token routes to an expert at most once). GEMM results come from
``ckgemm.testing.reference`` on exactly the quantized operands: float32 (int8: exact int64). In exact mode
they are rounded once to the GEMM's output dtype (exact for unscaled dtypes; for the scaled recipes the one
rounding every kernel makes of an exact fp32 sum), so every later stage must match them bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...dtypes import rule_for
from ..reference import gemm_reference, grouped_gemm_reference_packed
from . import recipes
from .batch import GlobalBatch
from .config import MoEConfig
from .recipes import Operand


@dataclass
class Expected:
    send_counts: torch.Tensor  # [E] int64
    recv_counts: torch.Tensor  # [W, E_l] int64
    tags: torch.Tensor  # [R, 3] int64: (source rank, token, slot), canonical order
    rows: Operand  # [R, K] codes (and scales) in canonical order
    group_sizes: list[int]  # rows per local expert
    gemm: torch.Tensor  # [R, N] reference of the local experts' GEMM (float32 / int64; exact mode: output dtype)
    returned: torch.Tensor  # [T, topk, N] reference row of each of this rank's (token, slot) pairs
    slot_experts: torch.Tensor  # [T, topk] the expert of each slot
    weights: torch.Tensor  # [T, topk] float32 combine weights
    out: torch.Tensor  # [T, N] float64: sum over slots of weight * returned
    gemm_dtype: torch.dtype  # the GEMM's output dtype: the dtype table's, or the recipe's


def _exact_output(cfg: MoEConfig, ref: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return ref.to(out_dtype) if cfg.mode == "exact" else ref


def expected_for_rank(batch: GlobalBatch, weights: Operand, cfg: MoEConfig, rank: int, world: int) -> Expected:
    routing, ids = batch.routing, batch.routing.ids
    device, experts = ids.device, cfg.experts
    local = experts // world
    every_expert = torch.arange(experts, device=device)
    own = routing.rows_of(rank)
    send_counts = (ids[own].unsqueeze(-1) == every_expert).sum((0, 1))
    offsets = routing.offsets
    recv_counts = torch.zeros((world, local), dtype=torch.int64, device=device)
    tag_parts, sizes = [], []
    for e in range(local):
        expert = rank * local + e
        for source in range(world):
            hits = (ids[routing.rows_of(source)] == expert).nonzero()  # (token, slot), by token
            recv_counts[source, e] = hits.shape[0]
            tag_parts.append(torch.cat((torch.full_like(hits[:, :1], source), hits), dim=1))
        sizes.append(int(recv_counts[:, e].sum()))
    tags = torch.cat(tag_parts) if tag_parts else torch.zeros((0, 3), dtype=torch.int64, device=device)
    global_rows = torch.tensor(offsets[:-1], device=device)[tags[:, 0]] + tags[:, 1]
    rows = batch.x.rows(global_rows)
    local_w = weights.rows(slice(rank * local, (rank + 1) * local))
    gemm_dtype = recipes.output_dtype(cfg.quant, rule_for(batch.x.data.dtype).output)
    gemm = grouped_gemm_reference_packed(recipes.reference_operand(cfg.quant, rows, weights=False),
                                         recipes.reference_operand(cfg.quant, local_w, weights=True), sizes)
    gemm = _exact_output(cfg, gemm, gemm_dtype)
    returned = _own_rows(batch, weights, cfg, own)
    returned = _exact_output(cfg, returned, gemm_dtype)
    token_weights = routing.weights[own]
    out = (returned.double() * token_weights.double().unsqueeze(-1)).sum(1)
    return Expected(send_counts, recv_counts, tags, rows, sizes, gemm, returned, ids[own], token_weights, out,
                    gemm_dtype)


def _own_rows(batch: GlobalBatch, weights: Operand, cfg: MoEConfig, own: slice) -> torch.Tensor:
    """[T, topk, N]: x_t @ W_e^T for every (token, slot) of this rank, one expert at a time."""
    ids = batch.routing.ids[own]
    x = batch.x.rows(own)
    exact_int = not x.data.dtype.is_floating_point and cfg.quant == "none"
    result = torch.zeros((*ids.shape, cfg.out), dtype=torch.int64 if exact_int else torch.float32,
                         device=ids.device)
    for expert in torch.unique(ids).tolist():
        hits = (ids == expert).nonzero()
        a = recipes.reference_operand(cfg.quant, x.rows(hits[:, 0]), weights=False)
        b = recipes.reference_operand(cfg.quant, weights.rows(expert), weights=True)
        result[hits[:, 0], hits[:, 1]] = gemm_reference(a, b, layout="RC").to(result.dtype)
    return result
