"""torch.compile support: the packed form as one opaque custom op, so Dynamo traces a single node
(fullgraph=True works) whatever the backend does inside (host planning, native launches)."""
from __future__ import annotations

from typing import Optional

import torch

from .dtypes import rule_for


@torch.library.custom_op("ckgemm::grouped_gemm_packed", mutates_args=())
def packed_op(a: torch.Tensor, b: torch.Tensor, group_sizes: torch.Tensor, layout: str,
              backend: Optional[str], check_sizes: Optional[bool]) -> torch.Tensor:
    from .ops import grouped_gemm_packed

    return grouped_gemm_packed(a, b, group_sizes, layout=layout, backend=backend, check_sizes=check_sizes)


@packed_op.register_fake
def _packed_fake(a, b, group_sizes, layout, backend, check_sizes):
    rule = rule_for(a.dtype)
    n = b.shape[1] if layout == "RC" else b.shape[2]
    return a.new_empty((a.shape[0], n), dtype=rule.output if rule is not None else a.dtype)


@torch.library.custom_op("ckgemm::grouped_gemm_packed_out", mutates_args=("out",))
def packed_out_op(a: torch.Tensor, b: torch.Tensor, group_sizes: torch.Tensor, out: torch.Tensor, layout: str,
                  backend: Optional[str], check_sizes: Optional[bool]) -> None:
    from .ops import grouped_gemm_packed

    grouped_gemm_packed(a, b, group_sizes, layout=layout, out=out, backend=backend, check_sizes=check_sizes)


@packed_out_op.register_fake
def _packed_out_fake(a, b, group_sizes, out, layout, backend, check_sizes):
    return None
