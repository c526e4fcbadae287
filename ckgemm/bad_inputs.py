"""The bad-input catalogue: calls every backend must refuse with the same exception type and message,
writing nothing. One list serves the CPU tests (tests/test_validation.py, against the reference and
against the native validator's g++ build in tests/test_native_rules.py), the GPU tests (reference and
native paths side by side), ``op_tests --bad-input`` and the selftest.

Each case is data: the public function, its arguments and keyword arguments, the expected exception
type, a pattern its message must match, the rule id (``errors.Rule``) and the outputs that must still
hold their poison afterwards. ``run(case, backend)`` makes the call.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from . import ops
from .errors import CkgemmError, InvalidArgumentError as Arg, InvalidTypeError as Type, Rule

F16 = torch.float16


@dataclass
class BadCase:
    name: str
    op: str  # "grouped_gemm", "grouped_gemm_out" or "grouped_gemm_packed"
    args: tuple
    kwargs: dict
    error: type
    pattern: str
    rule: Rule
    outputs: tuple = field(default_factory=tuple)  # tensors that must still hold the poison afterwards


def run(case: BadCase, backend: str | None = None):
    """Make the call (raises, if the case is right)."""
    return getattr(ops, case.op)(*case.args, backend=backend, **case.kwargs)


def check(case: BadCase, backend: str | None = None) -> tuple[bool, str]:
    """(passed, detail): the call raised ``case.error`` with the pattern and rule, and wrote nothing."""
    from .testing import data

    try:
        run(case, backend)
    except CkgemmError as exc:
        msg = str(exc)
        if not isinstance(exc, case.error):
            return False, f"raised {type(exc).__name__}, expected {case.error.__name__}: {msg}"
        if not re.search(case.pattern, msg):
            return False, f"message lacks /{case.pattern}/: {msg}"
        if exc.rule != case.rule:
            return False, f"rule {exc.rule.name}, expected {case.rule.name}: {msg}"
        if any(not bool(data.unwritten(t).all()) for t in case.outputs):
            return False, "a rejected call wrote into an output"
        return True, msg
    except Exception as exc:  # noqa: BLE001 - anything but a CkgemmError breaks the contract
        return False, f"raised {type(exc).__name__} (not a CkgemmError): {exc}"
    return False, "no error raised"


def _with(seq, index, value):
    seq = list(seq)
    seq[index] = value
    return seq


def _rand(shape, dtype, gen, dev):
    from .testing import data

    return data.random_tensor(shape, dtype, gen, dev)


def _poison(shape, dtype, dev):
    from .testing import data

    return data.poisoned(shape, dtype, dev)


def list_cases(dev, gen) -> list[BadCase]:
    a = [_rand((8, 32), F16, gen, dev) for _ in range(4)]
    b = [_rand((16, 32), F16, gen, dev) for _ in range(4)]
    outs = [_poison((8, 16), F16, dev) for _ in range(4)]
    rr_b = [_rand((32, 16), F16, gen, dev) for _ in range(4)]
    wide = _rand((8, 32), F16, gen, dev)
    bf = [x.to(torch.bfloat16) for x in (a[2], b[2])]
    grad = a[0].float().requires_grad_().to(F16)
    overlapping = torch.full((200,), float("nan"), dtype=F16, device=dev).as_strided((8, 16), (4, 1))
    with torch.inference_mode():  # written outside inference mode below: torch forbids that
        inference = _poison((8, 16), F16, dev)
    g, go = "grouped_gemm", "grouped_gemm_out"
    cases = [
        BadCase("a_list not a list", g, (torch.stack(a), b), {}, Type, "a_list must be a list", Rule.NOT_A_LIST),
        BadCase("empty lists", g, ([], []), {}, Arg, "a_list is empty", Rule.LIST_EMPTY),
        BadCase("group count mismatch", g, (a, b[:3]), {}, Arg, "a_list has 4 groups but b_list has 3",
                Rule.LIST_LENGTH),
        BadCase("non-tensor group", g, (_with(a, 1, [[1.0]]), b), {}, Type, r"group 1: a\[1\] is a list",
                Rule.NOT_A_TENSOR),
        BadCase("3-D group", g, (a, _with(b, 2, b[2].unsqueeze(0))), {}, Arg, r"group 2: b\[2\] \(shape.*must be 2-D",
                Rule.NDIM),
        BadCase("K mismatch (RC)", g, (_with(a, 1, a[1][:, :31]), b), {}, Arg, r"group 1: .*K mismatch",
                Rule.K_MISMATCH),
        BadCase("K mismatch (RR)", g, (_with(a, 3, a[3][:, :16]), rr_b), {"layout": "RR"}, Arg,
                r"group 3: .*K mismatch", Rule.K_MISMATCH),
        BadCase("a/b dtype differ", g, (a, _with(b, 0, b[0].to(torch.bfloat16))), {}, Type,
                r"group 0: b\[0\].*differs from a\[0\] dtype", Rule.DTYPE_MISMATCH),
        BadCase("dtype differs across groups", g, (_with(a, 2, bf[0]), _with(b, 2, bf[1])), {}, Type,
                r"group 2: a\[2\].*differs from group 0", Rule.DTYPE_MISMATCH),
        BadCase("unsupported dtype", g, ([x.float() for x in a], [x.float() for x in b]), {}, Type,
                r"group 0: a\[0\].*unsupported dtype", Rule.DTYPE_UNSUPPORTED),
        BadCase("group on another device", g, (a, _with(b, 1, torch.empty(b[1].shape, dtype=F16, device="meta"))),
                {}, Arg, r"group 1: b\[1\].*is on meta", Rule.DEVICE),
        BadCase("unknown layout", g, (a, b), {"layout": "CR"}, Arg, "unknown layout 'CR'", Rule.LAYOUT),
        BadCase("layout not a str", g, (a, b), {"layout": 0}, Type, "layout must be a str", Rule.LAYOUT),
        BadCase("innermost stride", g, (_with(a, 1, torch.empty(32, 8, dtype=F16, device=dev).t()), b), {}, Arg,
                r"group 1: a\[1\].*innermost stride must be 1", Rule.INNER_STRIDE),
        BadCase("requires grad", g, (_with(a, 0, grad), b), {}, Arg, r"group 0: a\[0\].*not differentiable",
                Rule.REQUIRES_GRAD),
        BadCase("outputs: count", go, (a, b, outs[:3]), {}, Arg, "c_list has 3 outputs but there are 4 groups",
                Rule.LIST_LENGTH, tuple(outs)),
        BadCase("outputs: shape", go, (a, b, _with(outs, 1, _poison((8, 15), F16, dev))), {}, Arg,
                r"group 1: c\[1\].*must have shape \(8, 16\)", Rule.OUT_SHAPE, tuple(outs)),
        BadCase("outputs: dtype", go, (a, b, _with(outs, 2, _poison((8, 16), torch.float32, dev))), {}, Type,
                r"group 2: c\[2\].*must have dtype torch.float16", Rule.OUT_DTYPE, tuple(outs)),
        BadCase("outputs: on another device", go, (a, b, _with(outs, 3, torch.empty((8, 16), dtype=F16, device="meta"))),
                {}, Arg, r"group 3: c\[3\].*is on meta", Rule.DEVICE, tuple(outs[:3])),
        BadCase("outputs: alias an input", go, (_with(a, 0, wide), b, _with(outs, 0, wide[:, :16])), {}, Arg,
                r"output c\[0\] overlaps a\[0\]", Rule.OVERLAP, tuple(outs[1:])),
        BadCase("outputs: alias each other", go, (a, b, _with(outs, 2, outs[1])), {}, Arg,
                r"output c\[\d\] overlaps c\[\d\]", Rule.OVERLAP, tuple(outs)),
        BadCase("outputs: overlapping rows", go, (a, b, _with(outs, 1, overlapping)), {}, Arg,
                r"group 1: c\[1\].*rows overlap", Rule.ROWS_OVERLAP, tuple(outs)),
        BadCase("outputs: an inference tensor", go, (a, b, _with(outs, 2, inference)), {}, Arg,
                r"group 2: c\[2\].*inference tensor", Rule.INFERENCE_OUTPUT, tuple(outs) + (inference,)),
        BadCase("late K mismatch", go, (a, _with(b, 3, b[3][:, :16].contiguous()), outs), {}, Arg,
                r"group 3: .*K mismatch", Rule.K_MISMATCH, tuple(outs)),
        BadCase("out_dtype of an unscaled call", g, (a, b), {"out_dtype": torch.float32}, Type,
                "unscaled torch.float16 inputs give torch.float16", Rule.OUT_DTYPE),
    ]
    if dev.type == "cuda":  # the CPU reference takes both e4m3 flavours; a GPU takes only its own
        from .dtypes import fp8_dtype_for

        other = torch.float8_e4m3fnuz if fp8_dtype_for(dev) == torch.float8_e4m3fn else torch.float8_e4m3fn
        f8 = [x.to(other) for x in (a[0], b[0])]
        cases.append(BadCase("fp8 flavour of another device", g, ([f8[0]], [f8[1]]), {}, Type,
                             "not the fp8 flavour of device", Rule.FP8_FLAVOUR))
    return cases


def packed_cases(dev, gen) -> list[BadCase]:
    a = _rand((12, 32), F16, gen, dev)
    b = _rand((3, 16, 32), F16, gen, dev)
    out = _poison((12, 16), F16, dev)
    sizes = torch.tensor([4, 4, 4], dtype=torch.int32)  # on the CPU: checked on the host, on every backend
    alias_src = _rand((12, 32), F16, gen, dev)
    with torch.inference_mode():
        inference = _poison((12, 16), F16, dev)
    shared = _poison((12, 16), F16, dev)  # its last 6 halves hold the group sizes as int32
    shared_sizes = shared.view(-1).view(torch.int32)[-3:]
    shared_sizes.copy_(sizes)
    p = "grouped_gemm_packed"

    def case(name, error, pattern, rule, a_=a, b_=b, sizes_=sizes, out_=out, **kwargs):
        return BadCase(name, p, (a_, b_, sizes_), {"out": out_, **kwargs}, error, pattern, rule, (out,))

    return [
        case("packed: sizes length", Arg, r"group_sizes .*must be 1-D of length G=3", Rule.SIZES_SHAPE, sizes_=sizes[:2]),
        case("packed: negative size", Arg, r"group 1: group_sizes\[1\] = -2 is negative", Rule.SIZE_NEGATIVE,
             sizes_=torch.tensor([8, -2, 6])),
        case("packed: sizes sum", Arg, "group_sizes sum to 11 but a has 12 rows", Rule.SIZES_SUM,
             sizes_=torch.tensor([4, 4, 3])),
        case("packed: cumulative offsets as sizes", Arg, "group_sizes sum to 24 .*look like cumulative offsets",
             Rule.SIZES_SUM, sizes_=torch.tensor([4, 8, 12])),
        case("packed: float sizes", Type, "must be an int32 or int64 tensor", Rule.SIZES_DTYPE, sizes_=sizes.float()),
        case("packed: sizes not a tensor", Type, "group_sizes is a list", Rule.NOT_A_TENSOR, sizes_=[4, 4, 4]),
        case("packed: 2-D b", Arg, r"b \(shape \(16, 32\).*must be 3-D", Rule.NDIM, b_=b[0]),
        case("packed: K mismatch", Arg, "K mismatch", Rule.K_MISMATCH, a_=a[:, :16]),
        case("packed: out shape", Arg, r"out \(shape \(12, 15\).*must have shape \(12, 16\)", Rule.OUT_SHAPE,
             out_=_poison((12, 15), F16, dev)),
        case("packed: out aliases a", Arg, "out overlaps a", Rule.OVERLAP, a_=alias_src, out_=alias_src[:, :16]),
        BadCase("packed: out overlaps the group sizes", p, (a, b, shared_sizes), {"out": shared}, Arg,
                "out overlaps group_sizes", Rule.OVERLAP, (shared[:11],)),  # the rows without the sizes
        case("packed: out an inference tensor", Arg, r"out \(shape.*inference tensor", Rule.INFERENCE_OUTPUT,
             out_=inference),
        case("packed: no experts", Arg, "G=0 groups", Rule.GROUPS_ZERO, b_=b[:0], sizes_=sizes[:0],
             a_=a[:0], out_=out[:0]),
    ]


def scaled_cases(dev, gen) -> list[BadCase]:
    """Scaled calls (issue: scaled fp8): wrong scale shape, dtype, device, stride, recipe mixes, scales on
    16-bit inputs, block scales for int8, half-given scales, bad out_dtype."""
    from .dtypes import fp8_dtype_for

    f8 = fp8_dtype_for(dev)
    rows, n, k, groups = 12, 16, 200, 3  # K = 200: two K blocks, the last one partial
    a = _rand((rows, k), f8, gen, dev)
    b = _rand((groups, n, k), f8, gen, dev)
    a8, b8 = _rand((rows, k), torch.int8, gen, dev), _rand((groups, n, k), torch.int8, gen, dev)
    sizes = torch.tensor([4, 0, 8], dtype=torch.int32)
    out = _poison((rows, n), torch.bfloat16, dev)

    def ones(*shape, dtype=torch.float32, device=dev):
        return torch.ones(shape, dtype=dtype, device=device)

    row_a, row_b = ones(rows), ones(groups, n)
    blk_a, blk_b = ones(rows, 2), ones(groups, 1, 2)
    p = "grouped_gemm_packed"

    def case(name, error, pattern, rule, sa, sb, a_=a, b_=b, **kwargs):
        return BadCase(name, p, (a_, b_, sizes), {"out": kwargs.pop("out", out), "scale_a": sa, "scale_b": sb, **kwargs},
                       error, pattern, rule, (out,))

    la = [_rand((4, k), f8, gen, dev), _rand((5, k), f8, gen, dev)]
    lb = [_rand((n, k), f8, gen, dev) for _ in range(2)]
    l16a = [x.to(torch.bfloat16) for x in la]
    l16b = [x.to(torch.bfloat16) for x in lb]
    return [
        case("scaled: wrong scale_a shape (row)", Arg, r"scale_a \(shape \(11,\).*row recipe expects shape \(12,\)",
             Rule.SCALE_SHAPE, ones(rows - 1), row_b),
        case("scaled: wrong scale_b shape (block)", Arg, r"scale_b .*block recipe expects shape \(3, 1, 2\)",
             Rule.SCALE_SHAPE, blk_a, ones(groups, 1, 1)),
        case("scaled: float16 scales", Type, r"scale_a .*scales must be float32", Rule.SCALE_DTYPE,
             ones(rows, dtype=F16), row_b),
        case("scaled: scale on another device", Arg, r"scale_b .*is on meta", Rule.DEVICE, row_a,
             ones(groups, n, device="meta")),
        case("scaled: strided scales", Arg, r"scale_a .*scales must be contiguous", Rule.SCALE_STRIDE,
             ones(rows, 4)[:, ::2], blk_b),
        case("scaled: recipe mix (row A, block B)", Arg, "recipe mix: scale_a is row-wise but scale_b is block-wise",
             Rule.SCALE_RECIPE, row_a, blk_b),
        case("scaled: block scales for int8", Arg, "block scales are for fp8 inputs", Rule.SCALE_RECIPE_DTYPE,
             blk_a, blk_b, a_=a8, b_=b8),
        case("scaled: scale_a without scale_b", Arg, "scale_a is given but scale_b is not", Rule.SCALES_PAIR,
             row_a, None),
        case("scaled: row scale_b without its group dimension", Arg,
             r"scale_b \(shape \(16,\).*recipe mix: scale_a is row-wise but scale_b is tensor-wise.*"
             r"row recipe this one takes shape \(3, 16\) = \[G, N\].*one expert's", Rule.SCALE_RECIPE, row_a, ones(n)),
        case("scaled: 4-D scale", Arg, r"scale_b .*fits no recipe", Rule.SCALE_SHAPE, blk_a, ones(groups, 1, 2, 1)),
        case("scaled: out_dtype int32", Type, "out_dtype=torch.int32 is not a scaled output", Rule.OUT_DTYPE,
             row_a, row_b, out=None, out_dtype=torch.int32),
        case("scaled: out of the wrong dtype", Type, r"out .*must have dtype torch.float16", Rule.OUT_DTYPE,
             row_a, row_b, out_dtype=torch.float16),
        BadCase("scaled: scales for bf16 inputs", "grouped_gemm", (l16a, l16b),
                {"scale_a": [ones(4), ones(5)], "scale_b": [ones(n), ones(n)]}, Arg,
                "scales are for fp8 and int8 inputs", Rule.SCALES_UNEXPECTED),
        BadCase("scaled: list form, one scale list short", "grouped_gemm", (la, lb),
                {"scale_a": [ones(4)], "scale_b": [ones(n), ones(n)]}, Arg, "scale_a has 1 entries but there are 2",
                Rule.LIST_LENGTH),
        BadCase("scaled: list form, torch._scaled_mm-style [M, 1] / [1, N] scales", "grouped_gemm", (la, lb),
                {"scale_a": [ones(4, 1), ones(5, 1)], "scale_b": [ones(1, n), ones(1, n)]}, Arg,
                r"group 0: scale_a\[0\] .*block recipe expects shape \(4, 2\).*row-wise scales are 1-D here",
                Rule.SCALE_SHAPE),
        BadCase("scaled: list form, torch-style [M, 1] scale_a beside 1-D scale_b", "grouped_gemm", (la, lb),
                {"scale_a": [ones(4, 1), ones(5, 1)], "scale_b": [ones(n), ones(n)]}, Arg,
                r"group 0: scale_a\[0\] \(shape \(4, 1\).*recipe mix.*takes shape \(4,\).*row-wise scales are 1-D",
                Rule.SCALE_RECIPE),
        case("scaled: torch-style [sum M, 1] scale_a", Arg,
             r"scale_a \(shape \(12, 1\).*recipe mix.*takes shape \(12,\).*row-wise scales are 1-D", Rule.SCALE_RECIPE,
             ones(rows, 1), row_b),
        case("scaled: tensor-wise scale_a of shape [1]", Arg,
             r"scale_a \(shape \(1,\).*recipe mix.*takes shape \(\).*tensor-wise scales are 0-D", Rule.SCALE_RECIPE,
             ones(1), ones(groups)),
        BadCase("scaled: list form, empty scale lists", "grouped_gemm", (la, lb), {"scale_a": [], "scale_b": []}, Arg,
                "scale_a has 0 entries but there are 2 groups", Rule.LIST_EMPTY),
        BadCase("scaled: list form, recipe differs across groups", "grouped_gemm", (la, lb),
                {"scale_a": [ones(4), ones(5, 2)], "scale_b": [ones(n), ones(1, 2)]}, Arg,
                "group 1 uses block scales but group 0 uses row", Rule.SCALE_RECIPE),
    ]


def catalogue(device, seed: int = 0) -> list[BadCase]:
    """Every case, with tensors on ``device`` (random from ``seed``)."""
    from .testing import data

    device = torch.device(device)
    gen = data.generator(seed, device)
    return list_cases(device, gen) + packed_cases(device, gen) + scaled_cases(device, gen)
