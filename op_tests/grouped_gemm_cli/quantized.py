"""Scaled (``--quant``) operands: float data quantized with ckgemm.testing's casts into exactly the scale
layouts ckgemm's ops take (README, "Scaled fp8 and int8 (quantized MoE)"), and the matching (codes, scale) pairs for the
harness reference, so op and reference see the same quantization.

| recipe | A cast (per group / packed)   | B cast (logical [N, K] / [G, N, K])  | dtypes    |
|--------|-------------------------------|--------------------------------------|-----------|
| tensor | per tensor: [] / []           | per tensor: [] / [G]                 | fp8, int8 |
| row    | per row: [M_i] / [sum M]      | per row: [N_i] / [G, N]              | fp8, int8 |
| block  | 1x128: [M_i, ceil(K/128)]     | 128x128: [ceil(N/128), ceil(K/128)]  | fp8       |

B is quantized in its logical [N, K] orientation and, for RR, stored as [K, N] (its scales keep the
logical orientation, as the ops take them). The float data varies in magnitude by powers of two from row
to row, so a kernel that applies another row's or channel's scale gets visibly wrong results.
"""
from __future__ import annotations

import torch

from ckgemm.testing import data, quant

MAGNITUDE_OCTAVES = 4  # rows scaled by 2**u, u uniform in [-4, 4]


def _float_data(shape, gen: torch.Generator, device) -> torch.Tensor:
    x = data.random_tensor(shape, torch.float32, gen, device)
    octaves = torch.randint(-MAGNITUDE_OCTAVES, MAGNITUDE_OCTAVES + 1, (*shape[:-1], 1), generator=gen,
                            device=device)
    return x * torch.exp2(octaves.float())


def _b_stored(codes: torch.Tensor, layout: str) -> torch.Tensor:
    return codes if layout == "RC" else codes.transpose(-1, -2).contiguous()


def group_inputs(case, dtype: torch.dtype, recipe: str, layout: str, seed: int, device):
    """(a_list, b_list, scale_a list, scale_b list) for the list form."""
    gen = data.generator(seed, device)
    qa = [quant.cast_for(_float_data((m, k), gen, device), recipe, "a", dtype) for m, _, k in case.shapes]
    qb = [quant.cast_for(_float_data((n, k), gen, device), recipe, "b", dtype) for _, n, k in case.shapes]
    return ([q.data for q in qa], [_b_stored(q.data, layout) for q in qb], [q.scale for q in qa],
            [q.scale for q in qb])


def packed_inputs(case, dtype: torch.dtype, recipe: str, layout: str, seed: int, device):
    """(a [sum M, K], b [G, N, K] or [G, K, N], group_sizes, scale_a, scale_b) for the packed form."""
    if not case.packable:
        raise ValueError(f"case {case} has per-group N or K; the packed form needs them shared")
    n, k = case.ns[0], case.ks[0]
    gen = data.generator(seed, device)
    qa = quant.cast_for(_float_data((sum(case.ms), k), gen, device), recipe, "a", dtype)
    qb = quant.cast_for(_float_data((case.groups, n, k), gen, device), recipe, "b", dtype)
    sizes = torch.tensor(case.ms, dtype=torch.int32, device=device)
    return qa.data, _b_stored(qb.data, layout), sizes, qa.scale, qb.scale
