"""The building blocks of validation shared by validate.py and validate_scales.py: the standard
error message, and the checks every tensor argument and every list argument of a call goes through."""
from __future__ import annotations

import torch

from .errors import InvalidArgumentError, InvalidTypeError, Rule, describe


def fail(op: str, group: int | None, name: str, t, rule_text: str, rule: Rule, cls=InvalidArgumentError):
    """Raise ``cls`` with the standard message: op, group, tensor description, rule."""
    where = f"group {group}: " if group is not None else ""
    what = f"{name} ({describe(t)})" if isinstance(t, torch.Tensor) else name
    raise cls(f"{op}: {where}{what}: {rule_text}", rule=rule, group=group)


def check_is_tensor(op, group, name, t, expected: str = "") -> None:
    """``expected``: what the argument should be, appended to the message (e.g. a scale's shapes)."""
    if not isinstance(t, torch.Tensor):
        raise InvalidTypeError(
            f"{op}: " + (f"group {group}: " if group is not None else "")
            + f"{name} is a {type(t).__name__}, not a torch.Tensor{_pair_hint(name, t)}{expected}",
            rule=Rule.NOT_A_TENSOR, group=group)


def _pair_hint(name: str, t) -> str:
    """A DeepGEMM-style (codes, scales) pair (or a harness ``Quantized``) given as an operand."""
    if name[:1] not in ("a", "b") or not isinstance(t, (tuple, list)) or len(t) != 2 \
            or not all(isinstance(x, torch.Tensor) for x in t):
        return ""
    return (f"; a (codes, scales) pair, as DeepGEMM takes operands, goes in two arguments here: the codes as "
            f"{name}, the scales as scale_{name[0]}=")


def check_no_grad(op, group, name, t) -> None:
    if t.requires_grad and torch.is_grad_enabled():
        fail(op, group, name, t, "requires grad, but ckgemm ops are not differentiable; "
             "wrap the call in torch.no_grad() or detach the inputs", Rule.REQUIRES_GRAD)


def check_writable(op, group, name, c) -> None:
    """An output made under torch.inference_mode() may be written only inside it."""
    if c.is_inference() and not torch.is_inference_mode_enabled():
        fail(op, group, name, c, "is an inference tensor (made under torch.inference_mode()), which torch lets "
             "only code inside inference mode write: call under torch.inference_mode(), or pass a normal tensor "
             "(e.g. c.clone())", Rule.INFERENCE_OUTPUT)


def _transposed_hint(name: str, t) -> str:
    """For weights given as a transposed view (torch._grouped_mm's ``w.transpose(-2, -1)``): the layout that
    reads the tensor underneath as it is, with no copy."""
    if not name.startswith("b") or t.dim() < 2 or t.stride(-2) != 1:
        return ""
    return (", or pass the tensor underneath (b.transpose(-2, -1), contiguous) with the other layout "
            "(layout='RC' for [N, K] weights, 'RR' for [K, N]): no copy")


def check_tensor(op, group, name, t, ndim: int) -> None:
    check_is_tensor(op, group, name, t)
    if t.layout != torch.strided:
        fail(op, group, name, t, f"is a {t.layout} tensor; ckgemm takes dense (strided) tensors: call .to_dense() first",
             Rule.INNER_STRIDE)
    shape = t.shape
    if len(shape) != ndim:
        fail(op, group, name, t, f"must be {ndim}-D, got {len(shape)}-D", Rule.NDIM)
    if ndim and shape[-1] > 1 and t.stride(-1) != 1 and 0 not in shape:
        fail(op, group, name, t, "innermost stride must be 1 (row-major rows); call .contiguous() first"
             + _transposed_hint(name, t), Rule.INNER_STRIDE)
    check_no_grad(op, group, name, t)


def check_sequence(op, name, seq, what: str = "2-D tensors") -> None:
    if isinstance(seq, torch.Tensor) or not isinstance(seq, (list, tuple)):
        hint = " (use grouped_gemm_packed for a stacked tensor)" if isinstance(seq, torch.Tensor) and what == "2-D tensors" else ""
        raise InvalidTypeError(f"{op}: {name} must be a list or tuple of {what}, got {type(seq).__name__}{hint}",
                               rule=Rule.NOT_A_LIST)
    if len(seq) == 0:
        raise InvalidArgumentError(f"{op}: {name} is empty; give at least one group", rule=Rule.LIST_EMPTY)
