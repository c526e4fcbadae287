"""Validation of scaled low-precision calls: the scale recipes of the README ("Scaled fp8 and int8 (quantized
MoE)") and the output dtype.

``C = (A * sA) @ op(B * sB)`` in fp32, rounded once to ``out_dtype``. Scales are float32, indexed in the
logical [M, K] / [N, K] orientation whatever the storage layout of B. The recipe is read from the scales'
ranks and must be the same for A and B (and, in the list form, for every group):

| recipe | packed scale_a       | packed scale_b         | list scale_a[i]        | list scale_b[i]             | inputs    |
|--------|----------------------|------------------------|------------------------|-----------------------------|-----------|
| tensor | []                   | [G]                    | []                     | []                          | fp8, int8 |
| row    | [sum M]              | [G, N]                 | [M_i]                  | [N_i]                       | fp8, int8 |
| block  | [sum M, ceil(K/128)] | [G, ceil(N/128), ceil(K/128)] | [M_i, ceil(K_i/128)] | [ceil(N_i/128), ceil(K_i/128)] | fp8 |

Scales must be contiguous (the block kernels read each group's scales as one compact array).
"""
from __future__ import annotations

import torch

from ._checks import check_is_tensor, check_no_grad, check_sequence, fail
from .dtypes import DtypeRule
from .errors import InvalidArgumentError, InvalidTypeError, Rule

BLOCK = 128  # K (and N) granularity of the block recipe: 1x128 for A, 128x128 for B
SCALED_OUTPUTS = (torch.bfloat16, torch.float16, torch.float32)
DEFAULT_SCALED_OUTPUT = torch.bfloat16
_A_RANKS = {0: "tensor", 1: "row", 2: "block"}  # rank -> recipe: packed scale_a, and list scales (A and B)
_PACKED_B_RANKS = {1: "tensor", 2: "row", 3: "block"}


def blocks(x: int) -> int:
    return -(-x // BLOCK)


def _encoded_hint(dtype: torch.dtype) -> str:
    """Scales in an encoded form: a cast of the codes to float32 would be a wrong answer, not a fix."""
    if dtype == torch.uint8:
        return ("; uint8 scales look like UE8M0 exponent bytes: decode them with ckgemm.testing.quant.ue8m0_to_float "
                "(.float() of the bytes is not the scale)")
    if dtype == torch.int32:
        return ("; int32 scales look like DeepGEMM's packed UE8M0 (four exponents per int32), which ckgemm does not "
                "take: cast with use_ue8m0=True for float32 powers of two")
    return ""


def check_scale_tensor(op, group, name, s, device, wanted=None) -> None:
    """A float32 tensor on the inputs' device that needs no grad. ``wanted``: a callable giving the shapes it may
    take, for the message (see ``_wanted``), called only when the check fails (no text built on a valid call)."""
    def tail() -> str:
        return f"; expected a float32 tensor on {device} of shape {wanted()}" if wanted is not None else ""
    if not isinstance(s, torch.Tensor):
        check_is_tensor(op, group, name, s, tail())
    if s.layout != torch.strided:
        fail(op, group, name, s, f"is a {s.layout} tensor; scales must be dense: call .to_dense() first{tail()}",
             Rule.SCALE_STRIDE)
    if s.dtype != torch.float32:
        fail(op, group, name, s, f"scales must be float32, got {s.dtype}{tail()}{_encoded_hint(s.dtype)}",
             Rule.SCALE_DTYPE, InvalidTypeError)
    if s.device != device:
        fail(op, group, name, s, f"is on {s.device}, but the inputs are on {device}{tail()}", Rule.DEVICE)
    check_no_grad(op, group, name, s)


def list_shapes(m: int, n: int, k: int, g: int | str = "i") -> dict:
    """{recipe: ((scale_a[g] shape, meaning), (scale_b[g] shape, meaning))} of one list-form group."""
    return {
        "tensor": (((), "[] (one value)"), ((), "[] (one value)")),
        "row": (((m,), f"[M_{g}] (one per row of a[{g}])"), ((n,), f"[N_{g}] (one per output column)")),
        "block": (((m, blocks(k)), f"[M_{g}, ceil(K_{g}/128)]"),
                  ((blocks(n), blocks(k)), f"[ceil(N_{g}/128), ceil(K_{g}/128)]")),
    }


def packed_shapes(rows: int, groups: int, n: int, k: int) -> dict:
    """{recipe: ((scale_a shape, meaning), (scale_b shape, meaning))} of a packed call."""
    return {
        "tensor": (((), "[] (one value)"), ((groups,), "[G] (one per expert)")),
        "row": (((rows,), "[sum M] (one per row of a)"), ((groups, n), "[G, N] (one per expert and output column)")),
        "block": (((rows, blocks(k)), "[sum M, ceil(K/128)]"), ((groups, blocks(n), blocks(k)),
                                                               "[G, ceil(N/128), ceil(K/128)]")),
    }


def _forms(expected: dict, recipes=("tensor", "row", "block")) -> str:
    """The shapes each recipe wants, e.g. "tensor: scale_a () and scale_b (4,); row: ...", from
    {recipe: ((scale_a shape, meaning), (scale_b shape, meaning))}."""
    return "; ".join(f"{r}: scale_a {expected[r][0][0]} = {expected[r][0][1]} and scale_b {expected[r][1][0]} = "
                     f"{expected[r][1][1]}" for r in recipes)


def _wanted(expected: dict, recipes, which: int) -> str:
    """The shapes scale_a (which 0) or scale_b (1) may take, e.g. "(7,) = [M_0] (row) or (7, 3) = ... (block)"."""
    return " or ".join(f"{expected[r][which][0]} = {expected[r][which][1]} ({r})" for r in recipes)


def _recipe_of(op, group, name, s, ranks: dict, expected: dict, rule: DtypeRule) -> str:
    recipe = ranks.get(s.dim())
    if recipe is None:
        fail(op, group, name, s, f"a {s.dim()}-D scale fits no recipe; expected {_forms(expected, _recipes(rule))}",
             Rule.SCALE_SHAPE)
    return recipe


def _recipes(rule: DtypeRule) -> tuple[str, ...]:
    """The recipes an input dtype takes: block scales are for fp8 only."""
    return ("tensor", "row", "block") if rule.input.is_floating_point else ("tensor", "row")


def _check_recipe(op, group, rule: DtypeRule, recipe_a: str, recipe_b: str, first: str | None, sa, sb,
                  expected: dict) -> str:
    """The call's recipe, read from the scales' ranks; ``expected`` ({recipe: shapes}) names what each
    recipe would take, so a scale of the wrong rank is told the shape it should have."""
    suffix = f"[{group}]" if group is not None else ""
    recipes = _recipes(rule)
    if recipe_a != recipe_b:
        _torch_style(op, group, suffix, sa, sb, expected, (recipe_a, recipe_b))
        fail(op, group, "scale_b" + suffix, sb,
             f"recipe mix: scale_a is {recipe_a}-wise but scale_b is {recipe_b}-wise; both must use one recipe, "
             f"with shapes {_forms(expected, recipes)}", Rule.SCALE_RECIPE)
    if first is not None and recipe_a != first:
        fail(op, group, f"scale_a[{group}]", sa, f"group {group} uses {recipe_a} scales but group 0 uses {first}; "
             f"one call uses one recipe ({_forms(expected, (first,))})", Rule.SCALE_RECIPE)
    if recipe_a == "block" and not rule.input.is_floating_point:
        fail(op, group, "scale_a" + suffix, sa,
             f"block scales are for fp8 inputs; {rule.input} takes tensor or row scales, with shapes "
             f"{_forms(expected, recipes)}", Rule.SCALE_RECIPE_DTYPE)
    return recipe_a


_ROW_HINT = "; row-wise scales are 1-D here ([M] for A, [N] for B), not torch._scaled_mm's [M, 1] / [1, N]"
_TENSOR_HINT = "; tensor-wise scales are 0-D here (torch.tensor(s) or s.reshape(())), not shape (1,)"


def _torch_row(s, length: int) -> bool:
    """A torch._scaled_mm-style row scale of ``length`` values: [length, 1] or [1, length]."""
    return s.dim() == 2 and 1 in s.shape and s.numel() == length


def _torch_style(op, group, suffix, sa, sb, expected: dict, recipes) -> None:
    """A recipe mix where one scale is torch._scaled_mm-style (a [M, 1] / [1, N] row scale, or a [1] tensor
    scale): name that one, with the shape ckgemm takes (the rule stays the recipe mix the native validator
    reports)."""
    for i, (name, s) in enumerate((("scale_a", sa), ("scale_b", sb))):
        row_shape, row_meaning = expected["row"][i]
        other = recipes[1 - i]
        mix = f"recipe mix: scale_a is {recipes[0]}-wise but scale_b is {recipes[1]}-wise by their ranks"
        block_shape = expected["block"][i][0]
        if len(row_shape) == 1 and _torch_row(s, row_shape[0]) and other == "row" and tuple(s.shape) != block_shape:  # a [M, 1] block scale (K <= 128) is not torch-style
            fail(op, group, name + suffix, s, f"{mix}; for the row recipe this one takes shape {row_shape} = "
                 f"{row_meaning}{_ROW_HINT}", Rule.SCALE_RECIPE)
        if len(row_shape) == 2 and other == "row" and tuple(s.shape) == row_shape[1:] != expected["tensor"][i][0]:
            fail(op, group, name + suffix, s, f"{mix}; for the row recipe this one takes shape {row_shape} = "
                 f"{row_meaning}: a 1-D scale of {row_shape[1]} values is one expert's, so stack one per expert",
                 Rule.SCALE_RECIPE)  # packed row scale_b given as [N] (an [N] equal to [G] stays tensor-wise)
        tensor_shape = expected["tensor"][i][0]
        if tuple(s.shape) == (1,) and tensor_shape == () and other == "tensor":
            fail(op, group, name + suffix, s, f"{mix}; for the tensor recipe this one takes shape (){_TENSOR_HINT}",
                 Rule.SCALE_RECIPE)


def _check_layout_of(op, group, name, s, expected: tuple[int, ...], recipe: str, meaning: str,
                     row_length: int | None = None) -> None:
    """``row_length``: this scale's length under the 1-D row recipe (list forms, packed scale_a), for the
    hint to a torch._scaled_mm-style [M, 1] / [1, N] scale of that many values."""
    if tuple(s.shape) != expected:
        hint = ""
        if recipe == "block" and 0 in expected and s.dim() == len(expected) and all(
                got == want for got, want in zip(s.shape, expected) if want):  # K = 0, scales made for K > 0
            hint = "; with K = 0 there are no 128-deep K blocks, so block scales have 0 K-block columns"
        elif row_length is not None and _torch_row(s, row_length):
            hint = _ROW_HINT
        elif tuple(s.shape) == (1,) and recipe != "tensor":  # the tensor recipe of packed B is [G], 1-D
            hint = _TENSOR_HINT
        fail(op, group, name, s, f"the {recipe} recipe expects shape {expected} = {meaning}{hint}", Rule.SCALE_SHAPE)
    if not s.is_contiguous():
        fail(op, group, name, s, f"scales must be contiguous; call .contiguous() first (expected a contiguous "
             f"{expected} = {meaning})", Rule.SCALE_STRIDE)


def _common(op, rule: DtypeRule, scale_a, scale_b, forms) -> bool:
    """True when the call is scaled; raises for half-given scales or scales on 16-bit inputs. ``forms()``
    gives the expected scale shapes for the message."""
    if scale_a is None and scale_b is None:
        return False
    if scale_a is None or scale_b is None:
        given, missing = ("scale_a", "scale_b") if scale_b is None else ("scale_b", "scale_a")
        wanted = (f"of one recipe ({forms()})" if rule.input.itemsize == 1 else
                  f"and only for fp8 and int8 inputs ({rule.input} inputs take none)")
        raise InvalidArgumentError(f"{op}: {given} is given but {missing} is not; a scaled call takes both, {wanted}",
                                   rule=Rule.SCALES_PAIR)
    if rule.input.itemsize != 1:
        raise InvalidArgumentError(f"{op}: scale_a/scale_b given for {rule.input} inputs; expected scale_a=None and "
                                   "scale_b=None: scales are for fp8 and int8 inputs (16-bit inputs are not "
                                   "quantized)", rule=Rule.SCALES_UNEXPECTED)
    return True


def list_scales(op, rule: DtypeRule, device, shapes, scale_a, scale_b) -> str:
    """The recipe of a list-form call ("none" when unscaled)."""
    def forms() -> str:  # the shapes group 0 takes, for the message of a half-given pair
        if not shapes:
            return "one per group"
        return _forms(list_shapes(*shapes[0], 0), _recipes(rule)) + (" for group 0, and so on per group"
                                                                     if len(shapes) > 1 else "")

    if not _common(op, rule, scale_a, scale_b, forms):
        return "none"
    for name, scales in (("scale_a", scale_a), ("scale_b", scale_b)):
        if isinstance(scales, (list, tuple)) and not scales:  # the native validator's rule, with the count
            raise InvalidArgumentError(f"{op}: {name} has 0 entries but there are {len(shapes)} groups; give one scale "
                                       "tensor per group", rule=Rule.LIST_EMPTY)
        check_sequence(op, name, scales, "float32 scale tensors")
        if len(scales) != len(shapes):
            raise InvalidArgumentError(f"{op}: {name} has {len(scales)} entries but there are {len(shapes)} groups; "
                                       f"expected a list of {len(shapes)} float32 tensors, one per group",
                                       rule=Rule.LIST_LENGTH)
    first = None
    for g, ((m, n, k), sa, sb) in enumerate(zip(shapes, scale_a, scale_b)):
        expected = list_shapes(m, n, k, g)
        recipes = (first,) if first else _recipes(rule)
        check_scale_tensor(op, g, f"scale_a[{g}]", sa, device, lambda: _wanted(expected, recipes, 0))
        check_scale_tensor(op, g, f"scale_b[{g}]", sb, device, lambda: _wanted(expected, recipes, 1))
        recipe = _check_recipe(op, g, rule, _recipe_of(op, g, f"scale_a[{g}]", sa, _A_RANKS, expected, rule),
                               _recipe_of(op, g, f"scale_b[{g}]", sb, _A_RANKS, expected, rule), first, sa, sb, expected)
        first = first or recipe
        if recipe != "tensor":
            (sa_shape, sa_meaning), (sb_shape, sb_meaning) = expected[recipe]
            _check_layout_of(op, g, f"scale_a[{g}]", sa, sa_shape, recipe, sa_meaning, m)
            _check_layout_of(op, g, f"scale_b[{g}]", sb, sb_shape, recipe, sb_meaning, n)
    return first


def packed_scales(op, rule: DtypeRule, device, rows: int, groups: int, n: int, k: int, scale_a, scale_b) -> str:
    """The recipe of a packed call ("none" when unscaled)."""
    if not _common(op, rule, scale_a, scale_b, lambda: _forms(packed_shapes(rows, groups, n, k), _recipes(rule))):
        return "none"
    expected_by_recipe = packed_shapes(rows, groups, n, k)
    check_scale_tensor(op, None, "scale_a", scale_a, device, lambda: _wanted(expected_by_recipe, _recipes(rule), 0))
    check_scale_tensor(op, None, "scale_b", scale_b, device, lambda: _wanted(expected_by_recipe, _recipes(rule), 1))
    recipe = _check_recipe(
        op, None, rule,
        _recipe_of(op, None, "scale_a", scale_a, _A_RANKS, expected_by_recipe, rule),
        _recipe_of(op, None, "scale_b", scale_b, _PACKED_B_RANKS, expected_by_recipe, rule),
        None, scale_a, scale_b, expected_by_recipe)
    expected = expected_by_recipe[recipe]
    _check_layout_of(op, None, "scale_a", scale_a, expected[0][0], recipe, expected[0][1], rows)
    _check_layout_of(op, None, "scale_b", scale_b, expected[1][0], recipe, expected[1][1])
    return recipe


def output_dtype(op, rule: DtypeRule, recipe: str, out_dtype, outputs_given: bool) -> torch.dtype | None:
    """The output dtype a call produces: the dtype table's when unscaled; ``out_dtype`` (default
    bfloat16) when scaled. None for a scaled call that writes given outputs without naming out_dtype:
    the outputs' own dtype then decides (``scaled_output_of``)."""
    # Every OUT_DTYPE error is an InvalidTypeError (a TypeError), whether out_dtype= or an output tensor carries it.
    if out_dtype is not None and not isinstance(out_dtype, torch.dtype):
        raise InvalidTypeError(f"{op}: out_dtype must be a torch.dtype, got {type(out_dtype).__name__}",
                               rule=Rule.OUT_DTYPE)
    if recipe == "none":
        if out_dtype is not None and out_dtype != rule.output:
            hint = ("; pass scale_a and scale_b for a scaled output" if rule.input.itemsize == 1 else
                    "; 16-bit inputs have no other output (cast the result)")
            raise InvalidTypeError(f"{op}: out_dtype={out_dtype}, but unscaled {rule.input} inputs give {rule.output} "
                                   f"(the dtype table){hint}", rule=Rule.OUT_DTYPE)
        return rule.output
    if out_dtype is None:
        return None if outputs_given else DEFAULT_SCALED_OUTPUT
    if out_dtype not in SCALED_OUTPUTS:
        names = ", ".join(str(d).replace("torch.", "") for d in SCALED_OUTPUTS)
        raise InvalidTypeError(f"{op}: out_dtype={out_dtype} is not a scaled output; choose one of {names}",
                               rule=Rule.OUT_DTYPE)
    return out_dtype


def scaled_output_of(op, first_output) -> torch.dtype:
    """Output dtype of a scaled call with given outputs and no out_dtype: the first output's, if the
    scaled kernels write it; else bfloat16 (and the output check then names the offending tensor)."""
    if isinstance(first_output, torch.Tensor) and first_output.dtype in SCALED_OUTPUTS:
        return first_output.dtype
    return DEFAULT_SCALED_OUTPUT
