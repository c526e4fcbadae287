"""torch.compile support: each form as one opaque custom op (``torch.ops.ckgemm.*``), so Dynamo traces a
single node (fullgraph=True works) whatever the backend does inside (validation, routing, native launches)."""
from __future__ import annotations

from typing import List, Optional

import torch

from . import validate
from ._checks import check_no_grad
from .backends import check_backend_type
from .dtypes import rule_for
from .validate_scales import DEFAULT_SCALED_OUTPUT


def _out_dtype(a: torch.Tensor, scale_a, out_dtype):
    if scale_a is not None:
        return out_dtype or DEFAULT_SCALED_OUTPUT
    rule = rule_for(a.dtype)
    return rule.output if rule is not None else a.dtype


def _elsewhere(device, tensors) -> bool:
    """True when a tensor the call needs on ``device`` is not there (group sizes may be on the CPU)."""
    return any(isinstance(t, torch.Tensor) and t.device != device for t in tensors)


# The fake kernels below run where the real op cannot see what it must refuse: under torch.compile the
# functionalized graph hands an ``_out`` op a copy of its output (an output aliasing an input would be
# computed and copied back over the input), and a call mixing devices reaches the fake kernel alone (a meta
# tensor among CPU ones). For those two rules they raise the eager validator's error (Dynamo reports it at
# trace time); everything else is refused at run time by the eager validation inside the op. (An output made
# under torch.inference_mode() cannot be seen here: fake tensors drop the flag. Inductor hands the op the
# output itself, which the op refuses; aot_eager's copy-back fails in torch, as the README says.)
def _packed_checks(a, b, group_sizes, out, layout, check_sizes, scale_a, scale_b, out_dtype):
    op = "grouped_gemm_packed"
    sizes = [group_sizes] if group_sizes.device.type != "cpu" else []
    if _elsewhere(a.device, [b, out, scale_a, scale_b] + sizes):
        validate.validate_packed(op, a, b, group_sizes, layout, out, check_sizes, scale_a, scale_b, out_dtype)
    if out is not None:
        validate.check_packed_overlap(op, a, b, out, scale_a, scale_b, group_sizes)


def _list_checks(op, a_list, b_list, c_list, layout, sa, sb, out_dtype):
    if not a_list:
        return
    every = list(b_list) + list(a_list) + list(c_list or []) + list(sa or []) + list(sb or [])
    if _elsewhere(a_list[0].device, every):
        validate.validate_list_call(op, a_list, b_list, c_list, layout, sa, sb, out_dtype, c_list is not None)
    if c_list is not None:
        validate.check_list_overlap(op, a_list, b_list, c_list, sa, sb)


@torch.library.custom_op("ckgemm::grouped_gemm_packed", mutates_args=())
def packed_op(a: torch.Tensor, b: torch.Tensor, group_sizes: torch.Tensor, layout: Optional[str],
              backend: Optional[str], check_sizes: Optional[bool], scale_a: Optional[torch.Tensor],
              scale_b: Optional[torch.Tensor], out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    from .ops import grouped_gemm_packed

    return grouped_gemm_packed(a, b, group_sizes, layout=layout, backend=backend, check_sizes=check_sizes,
                               scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)


@packed_op.register_fake
def _packed_fake(a, b, group_sizes, layout, backend, check_sizes, scale_a, scale_b, out_dtype):
    _packed_checks(a, b, group_sizes, None, layout, check_sizes, scale_a, scale_b, out_dtype)
    return a.new_empty(_output_shape(a, b, layout, 3), dtype=_out_dtype(a, scale_a, out_dtype))


def _output_shape(a, b, layout, b_rank: int) -> tuple:
    """The output shape a valid call gives. Tensors of the wrong rank get [rows, 0], so the trace completes and
    the op raises the eager error (NDIM) when the compiled code runs, as for every other bad input."""
    rows = a.shape[0] if a.dim() >= 1 else 0
    if a.dim() != 2 or b.dim() != b_rank:
        return (rows, 0)
    return (rows, b.shape[-1] if layout == "RR" else b.shape[-2])


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
    _packed_checks(a, b, group_sizes, out, layout, check_sizes, scale_a, scale_b, out_dtype)


def _misfits(tensors, optional_tensors, lists, optional) -> bool:
    """True when an argument's Python type is not one the ops' schemas take: tensors, optional tensors, lists
    (or tuples) of tensors, and optional values of the kinds given as (value, type) pairs."""
    return (any(not isinstance(t, torch.Tensor) for t in tensors)
            or any(t is not None and not isinstance(t, torch.Tensor) for t in optional_tensors)
            or any(not isinstance(x, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in x) for x in lists)
            or any(v is not None and not isinstance(v, kind) for v, kind in optional))


def _eager_refusal(op, backend, validator) -> None:
    """An argument the schema would refuse (with Dynamo's TorchRuntimeError): raise the eager error instead,
    at trace time. Anything the eager checks let through is left to the schema."""
    validator()
    check_backend_type(backend, op)


def packed(a, b, group_sizes, layout, out, backend, check_sizes, scale_a, scale_b, out_dtype):
    """The compiled-graph form of ``ops.grouped_gemm_packed`` (a ``PackedWeights`` b is unwrapped before)."""
    if _misfits((a, b, group_sizes), (out, scale_a, scale_b), (),
                ((layout, str), (backend, str), (check_sizes, bool), (out_dtype, torch.dtype))):
        _eager_refusal("grouped_gemm_packed", backend, lambda: validate.validate_packed(  # sizes: fake while tracing
            "grouped_gemm_packed", a, b, group_sizes, layout, out, check_sizes, scale_a, scale_b, out_dtype,
            read_sizes=False))
    refuse_grad("grouped_gemm_packed", [(None, name, t) for name, t in
                                        (("a", a), ("b", b), ("out", out), ("scale_a", scale_a), ("scale_b", scale_b))])
    if out is None:
        return packed_op(a, b, group_sizes, layout, backend, check_sizes, scale_a, scale_b, out_dtype)
    packed_out_op(a, b, group_sizes, out, layout, backend, check_sizes, scale_a, scale_b, out_dtype)
    return out


@torch.library.custom_op("ckgemm::grouped_gemm", mutates_args=())
def list_op(a_list: List[torch.Tensor], b_list: List[torch.Tensor], layout: Optional[str], backend: Optional[str],
            scale_a: List[torch.Tensor], scale_b: List[torch.Tensor], scales_given: int,
            out_dtype: Optional[torch.dtype]) -> List[torch.Tensor]:
    from .ops import grouped_gemm

    sa, sb = _given(scale_a, scale_b, scales_given)
    return grouped_gemm(a_list, b_list, layout=layout, backend=backend, scale_a=sa, scale_b=sb, out_dtype=out_dtype)


@list_op.register_fake
def _list_fake(a_list, b_list, layout, backend, scale_a, scale_b, scales_given, out_dtype):
    if not a_list:  # the call raises at run time, as eagerly
        return []
    _list_checks("grouped_gemm", a_list, b_list, None, layout, *_given(scale_a, scale_b, scales_given), out_dtype)
    dtype = _out_dtype(a_list[0], scale_a if scales_given & 1 else None, out_dtype)
    return [a.new_empty(_output_shape(a, b, layout, 2), dtype=dtype) for a, b in zip(a_list, b_list)]


@torch.library.custom_op("ckgemm::grouped_gemm_out", mutates_args=("c_list",))
def list_out_op(a_list: List[torch.Tensor], b_list: List[torch.Tensor], c_list: List[torch.Tensor],
                layout: Optional[str], backend: Optional[str], scale_a: List[torch.Tensor],
                scale_b: List[torch.Tensor], scales_given: int, out_dtype: Optional[torch.dtype]) -> None:
    from .ops import grouped_gemm_out

    sa, sb = _given(scale_a, scale_b, scales_given)
    grouped_gemm_out(a_list, b_list, c_list, layout=layout, backend=backend, scale_a=sa, scale_b=sb,
                     out_dtype=out_dtype)


@list_out_op.register_fake
def _list_out_fake(a_list, b_list, c_list, layout, backend, scale_a, scale_b, scales_given, out_dtype):
    _list_checks("grouped_gemm_out", a_list, b_list, c_list, layout, *_given(scale_a, scale_b, scales_given),
                 out_dtype)


def refuse_grad(op: str, named) -> None:
    """Raise eager's REQUIRES_GRAD error before a compiled call reaches its op: inside a custom op grad mode
    is off, so the validation there cannot see it. ``named``: (group, name, tensor) in the validator's
    order; Dynamo resolves the test at trace time (requires_grad is guarded)."""
    if torch.is_grad_enabled():
        for group, name, t in named:
            if isinstance(t, torch.Tensor):
                check_no_grad(op, group, name, t)


def _per_group(a_list, b_list, c_list, scale_a, scale_b) -> list:
    """The list forms' tensors in the validator's order: a[g] and b[g] group by group, then c, then scales."""
    named = []
    for g, (x_a, x_b) in enumerate(zip(a_list, b_list)):
        named += [(g, f"a[{g}]", x_a), (g, f"b[{g}]", x_b)]
    for name, seq in (("c", c_list), ("scale_a", scale_a), ("scale_b", scale_b)):
        if isinstance(seq, (list, tuple)):
            named += [(g, f"{name}[{g}]", t) for g, t in enumerate(seq)]
    return named


def _given(scale_a, scale_b, scales_given: int):
    """The scale lists as the user gave them: None where not given (an empty list given stays a list)."""
    return (scale_a if scales_given & 1 else None), (scale_b if scales_given & 2 else None)


def listed(a_list, b_list, c_list, layout, backend, scale_a, scale_b, out_dtype):
    """The compiled-graph form of ``ops.grouped_gemm`` (``c_list`` None) and ``ops.grouped_gemm_out``. The
    ops' schemas take no optional lists: ``scales_given`` says which scale lists were given. Only lists and
    tuples become lists; anything else (a stacked tensor, say) reaches the schema, which refuses it, so a
    compiled call never computes what the eager call rejects (the eager validation runs inside the op)."""
    op = "grouped_gemm" if c_list is None else "grouped_gemm_out"
    scale_lists = [s for s in (scale_a, scale_b) if s is not None]
    if _misfits((), (), [a_list, b_list] + ([] if c_list is None else [c_list]) + scale_lists,
                ((layout, str), (backend, str), (out_dtype, torch.dtype))):
        _eager_refusal(op, backend, lambda: validate.validate_list_call(
            op, a_list, b_list, c_list, layout, scale_a, scale_b, out_dtype, c_list is not None))
    seq = (lambda x: list(x) if isinstance(x, (list, tuple)) else x)
    given = int(scale_a is not None) | int(scale_b is not None) << 1
    sa, sb = seq(scale_a) if scale_a is not None else [], seq(scale_b) if scale_b is not None else []
    if c_list is None:
        refuse_grad("grouped_gemm", _per_group(a_list, b_list, None, scale_a, scale_b))
        return list_op(seq(a_list), seq(b_list), layout, backend, sa, sb, given, out_dtype)
    refuse_grad("grouped_gemm_out", _per_group(a_list, b_list, c_list, scale_a, scale_b))
    list_out_op(seq(a_list), seq(b_list), seq(c_list), layout, backend, sa, sb, given, out_dtype)
    return list(c_list)
