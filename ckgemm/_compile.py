"""torch.compile support: each form as one opaque custom op (``torch.ops.ckgemm.*``), so Dynamo traces a
single node (fullgraph=True works) whatever the backend does inside (validation, routing, native launches)."""
from __future__ import annotations

from typing import List, Optional

import torch

from .dtypes import rule_for
from .validate_scales import DEFAULT_SCALED_OUTPUT


def _out_dtype(a: torch.Tensor, scale_a, out_dtype):
    if scale_a is not None:
        return out_dtype or DEFAULT_SCALED_OUTPUT
    rule = rule_for(a.dtype)
    return rule.output if rule is not None else a.dtype


@torch.library.custom_op("ckgemm::grouped_gemm_packed", mutates_args=())
def packed_op(a: torch.Tensor, b: torch.Tensor, group_sizes: torch.Tensor, layout: Optional[str],
              backend: Optional[str], check_sizes: Optional[bool], scale_a: Optional[torch.Tensor],
              scale_b: Optional[torch.Tensor], out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    from .ops import grouped_gemm_packed

    return grouped_gemm_packed(a, b, group_sizes, layout=layout, backend=backend, check_sizes=check_sizes,
                               scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)


@packed_op.register_fake
def _packed_fake(a, b, group_sizes, layout, backend, check_sizes, scale_a, scale_b, out_dtype):
    n = b.shape[2] if layout == "RR" else b.shape[1]
    return a.new_empty((a.shape[0], n), dtype=_out_dtype(a, scale_a, out_dtype))


@torch.library.custom_op("ckgemm::grouped_gemm_packed_out", mutates_args=("out",))
def packed_out_op(a: torch.Tensor, b: torch.Tensor, group_sizes: torch.Tensor, out: torch.Tensor,
                  layout: Optional[str], backend: Optional[str], check_sizes: Optional[bool],
                  scale_a: Optional[torch.Tensor], scale_b: Optional[torch.Tensor],
                  out_dtype: Optional[torch.dtype]) -> None:
    from .ops import grouped_gemm_packed

    grouped_gemm_packed(a, b, group_sizes, layout=layout, out=out, backend=backend, check_sizes=check_sizes,
                        scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)


@packed_out_op.register_fake
def _packed_out_fake(a, b, group_sizes, out, layout, backend, check_sizes, scale_a, scale_b, out_dtype):
    return None


def packed(a, b, group_sizes, layout, out, backend, check_sizes, scale_a, scale_b, out_dtype):
    """The compiled-graph form of ``ops.grouped_gemm_packed`` (a ``PackedWeights`` b is unwrapped before)."""
    if out is None:
        return packed_op(a, b, group_sizes, layout, backend, check_sizes, scale_a, scale_b, out_dtype)
    packed_out_op(a, b, group_sizes, out, layout, backend, check_sizes, scale_a, scale_b, out_dtype)
    return out


@torch.library.custom_op("ckgemm::grouped_gemm", mutates_args=())
def list_op(a_list: List[torch.Tensor], b_list: List[torch.Tensor], layout: Optional[str], backend: Optional[str],
            scale_a: List[torch.Tensor], scale_b: List[torch.Tensor],
            out_dtype: Optional[torch.dtype]) -> List[torch.Tensor]:
    from .ops import grouped_gemm

    return grouped_gemm(a_list, b_list, layout=layout, backend=backend, scale_a=scale_a or None,
                        scale_b=scale_b or None, out_dtype=out_dtype)


@list_op.register_fake
def _list_fake(a_list, b_list, layout, backend, scale_a, scale_b, out_dtype):
    dtype = _out_dtype(a_list[0], scale_a or None, out_dtype)
    return [a.new_empty((a.shape[0], b.shape[1] if layout == "RR" else b.shape[0]), dtype=dtype)
            for a, b in zip(a_list, b_list)]


@torch.library.custom_op("ckgemm::grouped_gemm_out", mutates_args=("c_list",))
def list_out_op(a_list: List[torch.Tensor], b_list: List[torch.Tensor], c_list: List[torch.Tensor],
                layout: Optional[str], backend: Optional[str], scale_a: List[torch.Tensor],
                scale_b: List[torch.Tensor], out_dtype: Optional[torch.dtype]) -> None:
    from .ops import grouped_gemm_out

    grouped_gemm_out(a_list, b_list, c_list, layout=layout, backend=backend, scale_a=scale_a or None,
                     scale_b=scale_b or None, out_dtype=out_dtype)


@list_out_op.register_fake
def _list_out_fake(a_list, b_list, c_list, layout, backend, scale_a, scale_b, out_dtype):
    return None


def listed(a_list, b_list, c_list, layout, backend, scale_a, scale_b, out_dtype):
    """The compiled-graph form of ``ops.grouped_gemm`` (``c_list`` None) and ``ops.grouped_gemm_out``; the
    ops' schemas take no optional lists, so unscaled calls pass empty scale lists."""
    seq = (lambda x: [] if x is None else list(x))
    if c_list is None:
        return list_op(list(a_list), list(b_list), layout, backend, seq(scale_a), seq(scale_b), out_dtype)
    list_out_op(list(a_list), list(b_list), list(c_list), layout, backend, seq(scale_a), seq(scale_b), out_dtype)
    return list(c_list)
