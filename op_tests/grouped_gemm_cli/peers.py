"""The run's operands handed to the harness's peers (ckgemm.testing.peers): per-group views for the loop
peer, and packed operands for the grouped peer when the groups share N and K."""
from __future__ import annotations

import torch

from ckgemm.testing.peers import Peer, peers


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


def peers_for(p, case, dtype: torch.dtype) -> list[Peer]:
    """The loop peer and the grouped peer of this run (each possibly n/a)."""
    a_list, bk_list = _group_views(p)
    found = peers(a_list, bk_list, _packed(p, case))
    if len(found) == 1:
        found.append(Peer("grouped", None, "groups differ in N or K"))
    return found
