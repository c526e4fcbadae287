"""Input validation for every public op: the specification of what a call may be, and the source of
every error message. The torch backend runs it before computing; the native backends run their C++
port (csrc/common/validate.h) and, when that rejects a call, run this module to raise the message
(ckgemm/ops.py), so both paths raise the same exception with the same text and nothing is written.

Each error names the op, the group, the tensor (a/b/c/out/group_sizes/scale_a/scale_b), its shape,
dtype, stride and device, and the rule it breaks (``CkgemmError.rule``, ``.group``). The order of the
checks is part of the contract: validate.h checks in the same order, so both report the same first rule.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from . import _overlap, validate_scales
from ._checks import check_is_tensor, check_sequence, check_tensor, check_writable, fail
from .dtypes import DtypeRule, device_family, rule_for, supported_input_dtypes
from .errors import InvalidArgumentError, InvalidTypeError, Rule, describe

LAYOUTS = ("RC", "RR")
B_STORAGE = {"RC": "[N, K]", "RR": "[K, N]"}
MAX_DIM = 2**31 - 1  # the native kernels' per-group M, N and K are 32-bit


def _other_layout_hint(layout: str, n: int, k: int) -> str:
    """A K mismatch that the other layout resolves (the dimension taken as N is K): point at it. torch._grouped_mm's
    users pass weights [G, K, N], which is layout 'RR' here."""
    if n != k:
        return ""
    other = "RR" if layout == "RC" else "RC"
    return f"; b's other dimension is K: if b is stored {B_STORAGE[other]}, pass layout={other!r}"


@dataclass(frozen=True)
class ListProblem:
    """A validated list-form call: one dtype rule, one device, per-group (M, N, K), the scale recipe
    ("none", "tensor", "row" or "block") and the output dtype."""

    rule: DtypeRule
    device: torch.device
    layout: str
    shapes: tuple[tuple[int, int, int], ...]
    recipe: str = "none"
    out_dtype: torch.dtype | None = None

    @property
    def output(self) -> torch.dtype:
        return self.out_dtype if self.out_dtype is not None else self.rule.output


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
    recipe: str = "none"
    out_dtype: torch.dtype | None = None

    @property
    def output(self) -> torch.dtype:
        return self.out_dtype if self.out_dtype is not None else self.rule.output


def check_layout(op: str, layout) -> str:
    if layout is None:
        return "RC"
    if not isinstance(layout, str):
        raise InvalidTypeError(f"{op}: layout must be a str, one of {LAYOUTS}, got {type(layout).__name__} "
                               f"{layout!r}", rule=Rule.LAYOUT)
    if layout not in LAYOUTS:
        raise InvalidArgumentError(
            f"{op}: unknown layout {layout!r}; expected one of {LAYOUTS} "
            f"(RC: b stored [N, K], C = A @ B^T; RR: b stored [K, N], C = A @ B)", rule=Rule.LAYOUT)
    return layout


def check_dtype(op, group, name, t) -> DtypeRule:
    rule = rule_for(t.dtype)
    if rule is None:
        supported = ", ".join(str(d).replace("torch.", "") for d in supported_input_dtypes())
        fail(op, group, name, t, f"unsupported dtype {t.dtype}; supported inputs: {supported}",
             Rule.DTYPE_UNSUPPORTED, InvalidTypeError)
    family = device_family(t.device)
    if family not in rule.families:
        fail(op, group, name, t, f"{t.dtype} is not the fp8 flavour of device {t.device} (family {family}); "
             f"that device uses {_fp8_for_family(family)}", Rule.FP8_FLAVOUR, InvalidTypeError)
    return rule


def _fp8_for_family(family: str) -> str:
    from .dtypes import DTYPE_TABLE

    names = [str(r.input).replace("torch.", "") for r in DTYPE_TABLE if r.mantissa_bits == 3 and family in r.families]
    return " or ".join(names) if names else "no fp8 dtype"


def _check_pair(op, group, a, b, layout, device, rule) -> tuple[int, int, int]:
    if a.device != device:
        fail(op, group, f"a[{group}]", a, f"is on {a.device}, but the call's tensors are on {device}", Rule.DEVICE)
    if b.device != device:
        fail(op, group, f"b[{group}]", b, f"is on {b.device}, but a[{group}] is on {device}", Rule.DEVICE)
    if b.dtype != a.dtype:
        fail(op, group, f"b[{group}]", b, f"dtype {b.dtype} differs from a[{group}] dtype {a.dtype}",
             Rule.DTYPE_MISMATCH, InvalidTypeError)
    if a.dtype != rule.input:
        fail(op, group, f"a[{group}]", a, f"dtype {a.dtype} differs from group 0 dtype {rule.input}",
             Rule.DTYPE_MISMATCH, InvalidTypeError)
    m, k = a.shape
    n, kb = (b.shape[0], b.shape[1]) if layout == "RC" else (b.shape[1], b.shape[0])
    if kb != k:
        fail(op, group, f"b[{group}]", b, f"K mismatch: a[{group}] is [M, K] = {tuple(a.shape)} (K={k}) but "
             f"b[{group}] with layout {layout} is stored {B_STORAGE[layout]} and has K={kb}"
             f"{_other_layout_hint(layout, n, k)}", Rule.K_MISMATCH)
    return m, n, k


def validate_list(op: str, a_list, b_list, layout, scale_a=None, scale_b=None, out_dtype=None,
                  outputs_given: bool = False) -> ListProblem:
    """Inputs of a list-form call (outputs are checked by ``validate_outputs``)."""
    layout = check_layout(op, layout)
    check_sequence(op, "a_list", a_list)
    check_sequence(op, "b_list", b_list)
    if len(a_list) != len(b_list):
        raise InvalidArgumentError(f"{op}: a_list has {len(a_list)} groups but b_list has {len(b_list)}",
                                   rule=Rule.LIST_LENGTH)
    shapes = []
    rule = device = None
    for g, (a, b) in enumerate(zip(a_list, b_list)):
        check_tensor(op, g, f"a[{g}]", a, 2)
        check_tensor(op, g, f"b[{g}]", b, 2)
        group_rule = check_dtype(op, g, f"a[{g}]", a)
        if rule is None:
            rule, device = group_rule, a.device
        shapes.append(_check_pair(op, g, a, b, layout, device, rule))
    recipe = validate_scales.list_scales(op, rule, device, tuple(shapes), scale_a, scale_b)
    out = validate_scales.output_dtype(op, rule, recipe, out_dtype, outputs_given)
    return ListProblem(rule, device, layout, tuple(shapes), recipe, out)


def _check_output(op, group, name, c, shape, dtype: torch.dtype, device, unscaled: DtypeRule | None) -> None:
    check_tensor(op, group, name, c, 2)
    if tuple(c.shape) != tuple(shape):
        fail(op, group, name, c, f"must have shape {tuple(shape)} (M, N)", Rule.OUT_SHAPE)
    if c.dtype != dtype:
        why = (f"for {unscaled.input} inputs" if unscaled is not None else
               "for this scaled call (out_dtype, else the first output's dtype if it is bfloat16, float16 or "
               "float32, else bfloat16)")
        fail(op, group, name, c, f"must have dtype {dtype} {why}", Rule.OUT_DTYPE, InvalidTypeError)
    if c.device != device:
        fail(op, group, name, c, f"is on {c.device}, but the inputs are on {device}", Rule.DEVICE)
    if _overlap.rows_self_overlap(c):
        fail(op, group, name, c, f"leading stride {c.stride(0)} is smaller than N={c.shape[1]}: rows overlap",
             Rule.ROWS_OVERLAP)
    check_writable(op, group, name, c)


def _output_dtype_of(op, out_dtype, first) -> torch.dtype:
    """The outputs' dtype: ``out_dtype`` as validate_scales.output_dtype settled it (the dtype table's for
    unscaled calls), or for a scaled call that named none the first output's (scaled_output_of)."""
    return out_dtype if out_dtype is not None else validate_scales.scaled_output_of(op, first)


def validate_outputs(op: str, problem: ListProblem, c_list, a_list, b_list, scale_a=None, scale_b=None) -> ListProblem:
    """Outputs of ``grouped_gemm_out``; returns the problem with the output dtype settled."""
    check_sequence(op, "c_list", c_list)
    if len(c_list) != len(problem.shapes):
        raise InvalidArgumentError(f"{op}: c_list has {len(c_list)} outputs but there are {len(problem.shapes)} "
                                   "groups", rule=Rule.LIST_LENGTH)
    dtype = _output_dtype_of(op, problem.out_dtype, c_list[0])
    unscaled = problem.rule if problem.recipe == "none" else None
    for g, (c, (m, n, _)) in enumerate(zip(c_list, problem.shapes)):
        _check_output(op, g, f"c[{g}]", c, (m, n), dtype, problem.device, unscaled)
    check_list_overlap(op, a_list, b_list, c_list, scale_a, scale_b)
    return dataclasses.replace(problem, out_dtype=dtype)


def validate_list_call(op: str, a_list, b_list, c_list, layout, scale_a, scale_b, out_dtype,
                       outputs: bool) -> ListProblem:
    """A whole list-form call: its inputs, and with ``outputs`` (``grouped_gemm_out``) its ``c_list``."""
    problem = validate_list(op, a_list, b_list, layout, scale_a, scale_b, out_dtype, outputs)
    return validate_outputs(op, problem, c_list, a_list, b_list, scale_a, scale_b) if outputs else problem


def check_list_overlap(op: str, a_list, b_list, c_list, scale_a=None, scale_b=None) -> None:
    """OVERLAP for the list forms: no output may share memory with an input or another output (also run by
    the compiled ops' fake kernels, where the tensors have storages but no addresses)."""
    named = {f"c[{g}]": c for g, c in enumerate(c_list)}
    outs = [r for name, c in named.items() for r in _overlap.spans_of(name, c)]
    ins = []
    for name, seq in (("a", a_list), ("b", b_list), ("scale_a", scale_a or ()), ("scale_b", scale_b or ())):
        for g, t in enumerate(seq):
            named[f"{name}[{g}]"] = t
            ins += _overlap.spans_of(f"{name}[{g}]", t)
    hit = _overlap.first_overlap(outs, ins)
    if hit is not None:
        out, other = hit
        raise InvalidArgumentError(f"{op}: group {out[2:-1]}: output {out} overlaps {other} in memory; outputs must "
                                   f"not alias inputs or each other ({out}: {describe(named[out])}; {other}: "
                                   f"{describe(named[other])})", rule=Rule.OVERLAP, group=int(out[2:-1]))


def check_group_size_values(op: str, sizes, rows: int) -> None:
    """Host-side check of group size values: none negative, total equal to a's rows."""
    for g, s in enumerate(sizes):
        if s < 0:
            raise InvalidArgumentError(
                f"{op}: group {g}: group_sizes[{g}] = {s} is negative; group_sizes hold each group's row count (a "
                "DeepGEMM m_indices, one group index per row and -1 on padding rows, converts with "
                "torch.bincount(m_indices[m_indices >= 0], minlength=G))", rule=Rule.SIZE_NEGATIVE, group=g)
    total = sum(sizes)
    if total != rows:
        offsets = len(sizes) > 1 and sizes[-1] == rows and all(x <= y for x, y in zip(sizes, sizes[1:]))
        hint = ("; these look like cumulative offsets (torch._grouped_mm's offs): group_sizes are the rows of each "
                "group, e.g. torch.diff(offs, prepend=offs.new_zeros(1))") if offsets else ""
        raise InvalidArgumentError(f"{op}: group_sizes sum to {total} but a has {rows} rows; they must be equal{hint}",
                                   rule=Rule.SIZES_SUM)


def _check_group_sizes(op, group_sizes, groups, device) -> None:
    check_is_tensor(op, None, "group_sizes", group_sizes)
    if group_sizes.dtype not in (torch.int32, torch.int64):
        fail(op, None, "group_sizes", group_sizes, "must be an int32 or int64 tensor", Rule.SIZES_DTYPE,
             InvalidTypeError)
    if group_sizes.dim() != 1 or group_sizes.shape[0] != groups:
        fail(op, None, "group_sizes", group_sizes, f"must be 1-D of length G={groups} (b.shape[0])", Rule.SIZES_SHAPE)
    if group_sizes.device.type != "cpu" and group_sizes.device != device:
        where = "the CPU (a's device)" if device.type == "cpu" else f"{device} (a's device) or on the CPU"
        fail(op, None, "group_sizes", group_sizes, f"must be on {where}", Rule.DEVICE)
    if groups == 0:
        raise InvalidArgumentError(f"{op}: b has G=0 groups; give at least one group", rule=Rule.GROUPS_ZERO)


def check_sizes_flag(op: str, check_sizes) -> None:
    if check_sizes is not None and not isinstance(check_sizes, bool):
        raise InvalidTypeError(f"{op}: check_sizes must be a bool or None, got {type(check_sizes).__name__}")


def validate_packed(op: str, a, b, group_sizes, layout, out, check_sizes: bool | None, scale_a=None, scale_b=None,
                    out_dtype=None, read_sizes: bool = True) -> PackedProblem:
    """``read_sizes=False``: leave the size values unread even on the CPU (tracing: they are fake, or a trace
    would bake them in); the op checks them when it runs."""
    check_sizes_flag(op, check_sizes)
    layout = check_layout(op, layout)
    check_tensor(op, None, "a", a, 2)
    check_tensor(op, None, "b", b, 3)
    rule = check_dtype(op, None, "a", a)
    device = a.device
    if b.device != device:
        fail(op, None, "b", b, f"is on {b.device}, but a is on {device}", Rule.DEVICE)
    if b.dtype != a.dtype:
        fail(op, None, "b", b, f"dtype {b.dtype} differs from a dtype {a.dtype}", Rule.DTYPE_MISMATCH, InvalidTypeError)
    rows, k = a.shape
    groups = b.shape[0]
    n, kb = (b.shape[1], b.shape[2]) if layout == "RC" else (b.shape[2], b.shape[1])
    if kb != k:
        fail(op, None, "b", b, f"K mismatch: a is [sum(M), K] = {tuple(a.shape)} (K={k}) but b with layout "
             f"{layout} is stored [G, {B_STORAGE[layout][1:-1]}] and has K={kb}{_other_layout_hint(layout, n, k)}",
             Rule.K_MISMATCH)
    _check_group_sizes(op, group_sizes, groups, device)
    recipe = validate_scales.packed_scales(op, rule, device, rows, groups, n, k, scale_a, scale_b)
    out_dt = validate_scales.output_dtype(op, rule, recipe, out_dtype, out is not None)
    if out is not None:
        dtype = _output_dtype_of(op, out_dt, out)
        _check_output(op, None, "out", out, (rows, n), dtype, device, rule if recipe == "none" else None)
        check_packed_overlap(op, a, b, out, scale_a, scale_b, group_sizes)
        out_dt = dtype
    sizes = None
    if read_sizes and (group_sizes.device.type == "cpu" or check_sizes):
        sizes = tuple(int(s) for s in group_sizes.tolist())
        check_group_size_values(op, sizes, rows)
    return PackedProblem(rule, device, layout, groups, rows, n, k, sizes, recipe, out_dt)


def check_native_limits(op: str, problem) -> None:
    """The native kernels index with 32-bit M, N, K, and the packed form with 32-bit sum(M) (the torch
    backend has no such limit)."""
    if isinstance(problem, PackedProblem):
        shapes, where = [(problem.rows, problem.n, problem.k)], lambda g: "sum(M) x N x K = "
    else:
        shapes, where = problem.shapes, lambda g: f"group {g}: "
    for g, (m, n, k) in enumerate(shapes):
        if max(m, n, k) > MAX_DIM:
            raise InvalidArgumentError(f"{op}: {where(g)}{m}x{n}x{k} has a dimension above 2^31-1, the native "
                                       "kernels' 32-bit sizes; use backend='torch'", rule=Rule.TOO_LARGE,
                                       group=None if isinstance(problem, PackedProblem) else g)


def check_packed_overlap(op: str, a, b, out, scale_a=None, scale_b=None, group_sizes=None) -> None:
    """OVERLAP for the packed form's ``out`` (also run by the compiled op's fake kernel). The group sizes count:
    kernels read them on the device while they write ``out``."""
    named = {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b}
    if group_sizes is not None and group_sizes.device == out.device:
        named["group_sizes"] = group_sizes
    ins = [r for name, t in named.items() if t is not None for r in _overlap.spans_of(name, t)]
    hit = _overlap.first_overlap(_overlap.spans_of("out", out), ins)
    if hit is not None:
        raise InvalidArgumentError(f"{op}: out overlaps {hit[1]} in memory; out must not alias the inputs (out: "
                                   f"{describe(out)}; {hit[1]}: {describe(named[hit[1]])})", rule=Rule.OVERLAP)
