"""The run's operands handed to the harness's peers (ckgemm.testing.peers): per-group views for the loop
peer, and packed operands for the grouped peer when the groups share N and K. Scaled fp8 runs get the
peers with their own scales (``torch._scaled_mm`` loop for tensor/row, ``torch._scaled_grouped_mm`` for
row); scaled int8 runs get the ``torch._int_mm`` loop over the codes (the integer product, no scales).
With ``aiter=True`` a third peer, a loop of aiter's GEMMs (ROCm; it may JIT-compile aiter's modules)."""
from __future__ import annotations

import dataclasses

import torch

from ckgemm.testing.peers import FP8, Peer, aiter_loop_peer, grouped_peer, loop_peer, peers, scaled_loop_peer


def _group_views(p):
    """(A_i, op(B_i) as a [K, N] view) per group, for the list and packed forms."""
    if p.form == "packed":
        a_parts, b_parts = list(torch.split(p.a, p.sizes.tolist())), list(p.b)
    else:
        a_parts, b_parts = list(p.a), list(p.b)
    return a_parts, [b.t() if p.layout == "RC" else b for b in b_parts]


def _packed(p, case):
    if not case.packable or case.groups == 0:
        return None
    if p.form == "packed":
        a, b = p.a, p.b
    else:
        a, b = torch.cat(list(p.a)), torch.stack(list(p.b))
    return a, (b.transpose(-2, -1) if p.layout == "RC" else b), case.ms


def _group_scales(p, case, recipe: str):
    """Per-group (scale_a, scale_b) lists of a scaled run, in either form."""
    if p.form == "list":
        return list(p.scale_a), list(p.scale_b)
    sb = list(p.scale_b)
    if recipe == "tensor":
        return [p.scale_a] * case.groups, sb
    return list(torch.split(p.scale_a, case.ms)), sb


def _packed_row_scales(p):
    if p.form == "packed":
        return p.scale_a, p.scale_b
    return torch.cat(list(p.scale_a)), torch.stack(list(p.scale_b))


def _scaled_peers(p, case, recipe: str) -> list[Peer]:
    a_list, bk_list = _group_views(p)
    if a_list[0].dtype not in FP8:  # the integer product alone: timed, not compared with the scaled outputs
        return [dataclasses.replace(loop_peer(a_list, bk_list), comparable=False),
                Peer("grouped", None, "no torch grouped op for scaled int8")]
    found = [scaled_loop_peer(a_list, bk_list, *_group_scales(p, case, recipe), recipe)]
    packed = _packed(p, case)
    if recipe != "row":
        found.append(Peer("_scaled_grouped_mm", None, f"it takes row-wise scales, not {recipe}"))
    elif packed is None:
        found.append(Peer("_scaled_grouped_mm", None, "groups differ in N or K"))
    else:
        found.append(grouped_peer(*packed, scales=_packed_row_scales(p)))
    return found


def peers_for(p, case, recipe: str = "none", aiter: bool = False) -> list[Peer]:
    """The loop peer and the grouped peer of this run (each possibly n/a), and aiter's when asked for."""
    a_list, bk_list = _group_views(p)
    if recipe != "none":
        found = _scaled_peers(p, case, recipe)
    else:
        found = peers(a_list, bk_list, _packed(p, case))
        if len(found) == 1:
            found.append(Peer("grouped", None, "groups differ in N or K"))
    if aiter:
        scales = _group_scales(p, case, recipe) if recipe != "none" else (None, None)
        found.append(aiter_loop_peer(a_list, bk_list, recipe, *scales))
    return found
