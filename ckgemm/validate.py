"""Input validation for every public op. It runs before any backend, so the CPU reference enforces
exactly what the GPU backends enforce, and a bad call never writes into caller outputs.

Each error names the op, the group, the tensor (a/b/c/out/group_sizes), its shape, dtype, stride and
device, and the rule it breaks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _overlap
from .dtypes import DtypeRule, device_family, rule_for, supported_input_dtypes
from .errors import InvalidArgumentError, InvalidTypeError, describe

LAYOUTS = ("RC", "RR")
B_STORAGE = {"RC": "[N, K]", "RR": "[K, N]"}


@dataclass(frozen=True)
class ListProblem:
    """A validated list-form call: one dtype rule, one device, per-group (M, N, K)."""

    rule: DtypeRule
    device: torch.device
    layout: str
    shapes: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class PackedProblem:
    """A validated packed (MoE) call. ``sizes`` is None when the sizes live on a GPU and were not
    read back (no host sync); a GPU backend then checks them on the device."""

    rule: DtypeRule
    device: torch.device
    layout: str
    groups: int
    rows: int
    n: int
    k: int
    sizes: tuple[int, ...] | None


def _fail(op: str, group: int | None, name: str, t: torch.Tensor | None, rule: str, cls=InvalidArgumentError):
    where = f"group {group}: " if group is not None else ""
    what = f"{name} ({describe(t)})" if isinstance(t, torch.Tensor) else name
    raise cls(f"{op}: {where}{what}: {rule}")


def check_layout(op: str, layout) -> str:
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise InvalidArgumentError(
            f"{op}: unknown layout {layout!r}; expected one of {LAYOUTS} "
            f"(RC: b stored [N, K], C = A @ B^T; RR: b stored [K, N], C = A @ B)"
        )
    return layout


def _check_tensor(op, group, name, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise InvalidTypeError(
            f"{op}: " + (f"group {group}: " if group is not None else "")
            + f"{name} is a {type(t).__name__}, not a torch.Tensor"
        )
    shape = t.shape
    if len(shape) != ndim:
        _fail(op, group, name, t, f"must be {ndim}-D, got {len(shape)}-D")
    if shape[-1] > 1 and t.stride(-1) != 1 and 0 not in shape:
        _fail(op, group, name, t, "innermost stride must be 1 (row-major rows); call .contiguous() first")
    if t.requires_grad and torch.is_grad_enabled():
        _fail(op, group, name, t, "requires grad, but ckgemm ops are not differentiable; "
              "wrap the call in torch.no_grad() or detach the inputs")


def _check_dtype(op, group, name, t) -> DtypeRule:
    rule = rule_for(t.dtype)
    if rule is None:
        supported = ", ".join(str(d).replace("torch.", "") for d in supported_input_dtypes())
        _fail(op, group, name, t, f"unsupported dtype {t.dtype}; supported inputs: {supported}", InvalidTypeError)
    family = device_family(t.device)
    if family not in rule.families:
        _fail(op, group, name, t, f"{t.dtype} is not the fp8 flavour of device {t.device} (family {family}); "
              f"that device uses {_fp8_for_family(family)}", InvalidTypeError)
    return rule


def _fp8_for_family(family: str) -> str:
    from .dtypes import DTYPE_TABLE

    names = [str(r.input).replace("torch.", "") for r in DTYPE_TABLE if r.mantissa_bits == 3 and family in r.families]
    return " or ".join(names) if names else "no fp8 dtype"


def _check_pair(op, group, a, b, layout, device, rule) -> tuple[int, int, int]:
    if a.device != device:
        _fail(op, group, f"a[{group}]", a, f"is on {a.device}, but the call's tensors are on {device}")
    if b.device != device:
        _fail(op, group, f"b[{group}]", b, f"is on {b.device}, but a[{group}] is on {device}")
    if b.dtype != a.dtype:
        _fail(op, group, f"b[{group}]", b, f"dtype {b.dtype} differs from a[{group}] dtype {a.dtype}", InvalidTypeError)
    if a.dtype != rule.input:
        _fail(op, group, f"a[{group}]", a, f"dtype {a.dtype} differs from group 0 dtype {rule.input}", InvalidTypeError)
    m, k = a.shape
    n, kb = (b.shape[0], b.shape[1]) if layout == "RC" else (b.shape[1], b.shape[0])
    if kb != k:
        _fail(op, group, f"b[{group}]", b, f"K mismatch: a[{group}] is [M, K] = {tuple(a.shape)} (K={k}) but "
              f"b[{group}] with layout {layout} is stored {B_STORAGE[layout]} and has K={kb}")
    return m, n, k


def _check_sequence(op, name, seq) -> None:
    if isinstance(seq, torch.Tensor) or not isinstance(seq, (list, tuple)):
        raise InvalidTypeError(f"{op}: {name} must be a list or tuple of 2-D tensors, got {type(seq).__name__}"
                               + (" (use grouped_gemm_packed for a stacked tensor)" if isinstance(seq, torch.Tensor) else ""))
    if len(seq) == 0:
        raise InvalidArgumentError(f"{op}: {name} is empty; give at least one group")


def validate_list(op: str, a_list, b_list, layout) -> ListProblem:
    layout = check_layout(op, layout)
    _check_sequence(op, "a_list", a_list)
    _check_sequence(op, "b_list", b_list)
    if len(a_list) != len(b_list):
        raise InvalidArgumentError(f"{op}: a_list has {len(a_list)} groups but b_list has {len(b_list)}")
    shapes = []
    rule = device = None
    for g, (a, b) in enumerate(zip(a_list, b_list)):
        _check_tensor(op, g, f"a[{g}]", a, 2)
        _check_tensor(op, g, f"b[{g}]", b, 2)
        group_rule = _check_dtype(op, g, f"a[{g}]", a)
        if rule is None:
            rule, device = group_rule, a.device
        shapes.append(_check_pair(op, g, a, b, layout, device, rule))
    return ListProblem(rule, device, layout, tuple(shapes))


def _check_output(op, group, name, c, shape, problem_rule, device) -> None:
    _check_tensor(op, group, name, c, 2)
    if tuple(c.shape) != tuple(shape):
        _fail(op, group, name, c, f"must have shape {tuple(shape)} (M, N)")
    if c.dtype != problem_rule.output:
        _fail(op, group, name, c, f"must have dtype {problem_rule.output} for {problem_rule.input} inputs",
              InvalidTypeError)
    if c.device != device:
        _fail(op, group, name, c, f"is on {c.device}, but the inputs are on {device}")
    if _overlap.rows_self_overlap(c):
        _fail(op, group, name, c, f"leading stride {c.stride(0)} is smaller than N={c.shape[1]}: rows overlap")


def validate_outputs(op: str, problem: ListProblem, c_list, a_list, b_list) -> None:
    _check_sequence(op, "c_list", c_list)
    if len(c_list) != len(problem.shapes):
        raise InvalidArgumentError(f"{op}: c_list has {len(c_list)} outputs but there are {len(problem.shapes)} groups")
    for g, (c, (m, n, _)) in enumerate(zip(c_list, problem.shapes)):
        _check_output(op, g, f"c[{g}]", c, (m, n), problem.rule, problem.device)
    outs = [_overlap.rows_of(f"c[{g}]", c) for g, c in enumerate(c_list)]
    ins = [_overlap.rows_of(f"a[{g}]", a) for g, a in enumerate(a_list)]
    ins += [_overlap.rows_of(f"b[{g}]", b) for g, b in enumerate(b_list)]
    hit = _overlap.first_overlap(outs, ins)
    if hit is not None:
        raise InvalidArgumentError(f"{op}: output {hit[0]} overlaps {hit[1]} in memory; outputs must not alias "
                                   "inputs or each other")


def check_group_size_values(op: str, sizes, rows: int) -> None:
    """Host-side check of group size values: none negative, total equal to a's rows."""
    for g, s in enumerate(sizes):
        if s < 0:
            raise InvalidArgumentError(f"{op}: group {g}: group_sizes[{g}] = {s} is negative")
    total = sum(sizes)
    if total != rows:
        raise InvalidArgumentError(f"{op}: group_sizes sum to {total} but a has {rows} rows; they must be equal")


def validate_packed(op: str, a, b, group_sizes, layout, out, check_sizes: bool | None) -> PackedProblem:
    layout = check_layout(op, layout)
    _check_tensor(op, None, "a", a, 2)
    _check_tensor(op, None, "b", b, 3)
    rule = _check_dtype(op, None, "a", a)
    device = a.device
    if b.device != device:
        _fail(op, None, "b", b, f"is on {b.device}, but a is on {device}")
    if b.dtype != a.dtype:
        _fail(op, None, "b", b, f"dtype {b.dtype} differs from a dtype {a.dtype}", InvalidTypeError)
    rows, k = a.shape
    groups = b.shape[0]
    n, kb = (b.shape[1], b.shape[2]) if layout == "RC" else (b.shape[2], b.shape[1])
    if kb != k:
        _fail(op, None, "b", b, f"K mismatch: a is [sum(M), K] = {tuple(a.shape)} (K={k}) but b with layout "
              f"{layout} is stored [G, {B_STORAGE[layout][1:-1]}] and has K={kb}")
    if not isinstance(group_sizes, torch.Tensor):
        raise InvalidTypeError(f"{op}: group_sizes is a {type(group_sizes).__name__}, not a torch.Tensor")
    if group_sizes.dtype not in (torch.int32, torch.int64):
        _fail(op, None, "group_sizes", group_sizes, "must be an int32 or int64 tensor", InvalidTypeError)
    if group_sizes.dim() != 1 or group_sizes.shape[0] != groups:
        _fail(op, None, "group_sizes", group_sizes, f"must be 1-D of length G={groups} (b.shape[0])")
    if group_sizes.device.type != "cpu" and group_sizes.device != device:
        _fail(op, None, "group_sizes", group_sizes, f"must be on {device} (a's device) or on the CPU")
    if groups == 0:
        raise InvalidArgumentError(f"{op}: b has G=0 groups; give at least one group")
    if out is not None:
        _check_output(op, None, "out", out, (rows, n), rule, device)
        hit = _overlap.first_overlap([_overlap.rows_of("out", out)],
                                     [_overlap.rows_of("a", a), _overlap.rows_of("b", b)])
        if hit is not None:
            raise InvalidArgumentError(f"{op}: out overlaps {hit[1]} in memory; out must not alias the inputs")
    sizes = None
    if group_sizes.device.type == "cpu" or check_sizes:
        sizes = tuple(int(s) for s in group_sizes.tolist())
        check_group_size_values(op, sizes, rows)
    return PackedProblem(rule, device, layout, groups, rows, n, k, sizes)
