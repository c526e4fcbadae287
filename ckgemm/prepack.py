"""Prepacked weights: B (and its scales) stored once in the layout the backend's kernels read.

MoE weights are static, so a layout change belongs at load time, not in every call. Hopper's tensor
cores take 8-bit operands only K-major, so CUTLASS reads 8-bit ``RR`` weights ([K, N] row-major) only
after a transpose to [N, K]; without ``prepack`` every such call transposes B again (one tiled kernel,
``last_dispatch()`` shows ``+transpose``), except packed unscaled int8 and fp8 calls, which ckgemm's own
8-bit RR kernel reads as stored at the RC kernel's speed. ``prepack`` does it once, for every form and recipe (list
calls and row-scaled int8 too). Where the backend reads B as
given (16-bit inputs; CK-tile, which reads 8-bit RR natively; the torch reference) it returns a wrapper
around the tensors as they are, so serving code can call it unconditionally.

Every form takes a ``PackedWeights`` in place of ``b``: the call's ``layout`` (if given) must be the
layout the weights were packed from. Weights packed with ``scales`` supply ``scale_b`` (a call that gives it
too is refused: given twice); weights packed without take ``scale_b`` at the call. Weights packed
from one [G, ., .] tensor serve the list forms too (one view per expert, their scales alike); weights
packed from a list serve the list forms only. Scales are checked against the recipes when packed (and
again by each call, with the activations' scales), and stored contiguous: ``prepack`` takes strided
scales (a slice of a larger table, say) and copies them, where a call given them directly refuses them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import backends
from . import validate_scales
from ._checks import check_is_tensor, check_sequence, check_tensor, fail
from .errors import InvalidArgumentError, InvalidTypeError, Rule
from .validate import check_dtype, check_layout


@dataclass(frozen=True, eq=False)
class PackedWeights:
    """Weights as the kernels read them. ``b``: a [G, ., .] tensor (packed form) or a tuple of 2-D
    tensors (list forms), stored in ``layout``; ``source_layout`` is the layout they were given in.
    ``shape``, ``dtype`` and ``device`` describe the weights as given. To move or load weights, move or
    load the tensors and prepack them there (prepack is the load-time step)."""

    b: torch.Tensor | tuple
    layout: str
    source_layout: str
    scale_b: torch.Tensor | tuple | None
    backend: str

    @property
    def transposed(self) -> bool:
        return self.layout != self.source_layout

    @property
    def is_list(self) -> bool:
        return isinstance(self.b, tuple)

    @property
    def dtype(self) -> torch.dtype:
        return (self.b[0] if self.is_list else self.b).dtype

    @property
    def device(self) -> torch.device:
        return (self.b[0] if self.is_list else self.b).device

    @property
    def shape(self):
        """The weights' shape as given (source layout): a torch.Size, or a tuple of them for a list."""
        def given(t):
            return t.shape if not self.transposed else torch.Size((*t.shape[:-2], t.shape[-1], t.shape[-2]))
        return tuple(given(t) for t in self.b) if self.is_list else given(self.b)

    def __repr__(self) -> str:
        what = f"{len(self.b)} groups" if self.is_list else f"shape {tuple(self.b.shape)}"
        how = f"transposed {self.source_layout} -> {self.layout}" if self.transposed else f"{self.layout} as given"
        return f"PackedWeights({what}, {how}, for {self.backend!r}, scales={self.scale_b is not None})"


def prepack(b, *, layout: str | None = None, scales=None, backend: str | None = None) -> PackedWeights:
    """Store weights ``b`` (a [G, N, K] / [G, K, N] tensor, or a list of 2-D tensors) and their scales
    (``scale_b`` of the matching form, or None) in the layout the backend reads natively."""
    op = "prepack"
    layout = check_layout(op, layout)
    if isinstance(b, PackedWeights):
        raise InvalidArgumentError(f"{op}: b is already a PackedWeights ({b!r})", rule=Rule.PREPACKED)
    if isinstance(b, torch.Tensor):
        check_tensor(op, None, "b", b, 3)
        check_dtype(op, None, "b", b)
        if b.shape[0] == 0:  # every form refuses G = 0: refuse it where the weights are loaded
            raise InvalidArgumentError(f"{op}: b has G=0 groups; give at least one group", rule=Rule.GROUPS_ZERO)
        device, dtype, items = b.device, b.dtype, None
    else:
        check_sequence(op, "b", b)
        for g, x in enumerate(b):
            check_tensor(op, g, f"b[{g}]", x, 2)
            check_dtype(op, g, f"b[{g}]", x)
            if x.dtype != b[0].dtype or x.device != b[0].device:
                mixed = x.dtype != b[0].dtype  # a dtype rule: InvalidTypeError, as the ops raise it
                fail(op, g, f"b[{g}]", x, f"every expert's weights share one dtype and device; b[0] is {b[0].dtype} "
                     f"on {b[0].device}", Rule.DTYPE_MISMATCH if mixed else Rule.DEVICE,
                     InvalidTypeError if mixed else InvalidArgumentError)
        device, dtype, items = b[0].device, b[0].dtype, tuple(b)
    _check_scales(op, b, layout, dtype, scales)
    module = backends.select(backend, device, op)
    transpose = bool(getattr(module, "native", False) and module.needs_transpose(dtype, layout))
    if not transpose:
        stored = b if items is None else items
        return PackedWeights(stored, layout, layout, _scales(scales), module.NAME)
    with torch.no_grad():
        if items is None:
            stored = module.transpose_b(b)
        else:
            stored = tuple(module.transpose_b(x) for x in items)
    return PackedWeights(stored, "RC", layout, _scales(scales), module.NAME)


def _check_scales(op, b, layout, dtype, scales) -> None:
    """The weights' scales as scale_b of the form they were given in: float32 on the weights' device, one
    recipe for every entry (validate_scales.py's shapes), block scales for fp8 only. The call checks them
    again with the activations' scales; this catches a wrong scale when the weights are packed."""
    if scales is None:
        return
    if dtype.itemsize != 1:
        raise InvalidArgumentError(f"{op}: scales given for {dtype} weights; scales are for fp8 and int8 weights",
                                   rule=Rule.SCALES_UNEXPECTED)
    if isinstance(b, torch.Tensor):
        g, n, k = (b.shape[0], b.shape[1], b.shape[2]) if layout == "RC" else (b.shape[0], b.shape[2], b.shape[1])
        check_is_tensor(op, None, "scales", scales)
        given = [(None, "scales", scales, validate_scales.packed_shapes(0, g, n, k), b.device)]
    else:
        check_sequence(op, "scales", scales, "float32 scale tensors")
        if len(scales) != len(b):
            raise InvalidArgumentError(f"{op}: scales has {len(scales)} entries but b has {len(b)} groups",
                                       rule=Rule.LIST_LENGTH)
        given = []
        for i, (x, s) in enumerate(zip(b, scales)):
            n, k = (x.shape[0], x.shape[1]) if layout == "RC" else (x.shape[1], x.shape[0])
            check_is_tensor(op, i, f"scales[{i}]", s)
            given.append((i, f"scales[{i}]", s, validate_scales.list_shapes(0, n, k, i), x.device))
    first = None
    for group, name, s, by_recipe, device in given:  # scale_b's shape under each recipe
        forms = ", ".join(f"{shapes[1][0]} = {shapes[1][1]}" for r, shapes in by_recipe.items()
                          if r != "block" or dtype.is_floating_point)
        validate_scales.check_scale_tensor(op, group, name, s, device, lambda: f"one of {forms}")
        recipes = [r for r, shapes in by_recipe.items() if tuple(s.shape) == shapes[1][0]]
        if not recipes:
            fail(op, group, name, s, f"fits no recipe for these weights; expected one of {forms}", Rule.SCALE_SHAPE)
        recipe = recipes[0]
        if recipe == "block" and not dtype.is_floating_point:
            fail(op, group, name, s, f"block scales are for fp8 weights; {dtype} takes tensor or row scales",
                 Rule.SCALE_RECIPE_DTYPE)
        if first is not None and recipe != first:
            fail(op, group, name, s, f"{recipe} scales, but scales[0] is {first}-wise; one recipe for every expert",
                 Rule.SCALE_RECIPE)
        first = first or recipe


def _scales(scales):
    """The scales as stored: contiguous (the calls take no other), each expert's entry of a list alike."""
    if scales is None or isinstance(scales, torch.Tensor):
        return scales if scales is None else scales.contiguous()
    return tuple(s.contiguous() for s in scales)


def unwrap(op: str, b, layout, scale_a, scale_b):
    """(b, layout, scale_b) a call computes with: the stored weights when ``b`` is a PackedWeights."""
    if not isinstance(b, PackedWeights):
        return b, layout, scale_b
    if layout is not None:  # a layout that is no layout at all is that error, as without prepacked weights
        check_layout(op, layout)
    if scale_a is None and scale_b is None and b.scale_b is not None:
        fail(op, None, "scale_a", None, "not given, but the prepacked weights carry scales (their scale_b); a scaled "
             "call takes the activations' scale_a too", Rule.SCALES_PAIR)
    if layout is not None and layout != b.source_layout:
        fail(op, None, "b", None, f"prepacked from layout {b.source_layout}, but the call asks for layout {layout}; "
             "leave layout unset or pass the weights' own layout", Rule.PREPACKED)
    if scale_b is not None and b.scale_b is not None:
        fail(op, None, "scale_b", None, "given twice: the prepacked weights carry their scales already",
             Rule.PREPACKED)
    stored, carried = b.b, b.scale_b
    if op == "grouped_gemm_packed" and b.is_list:
        fail(op, None, "b", None, "holds weights prepacked from a list (the list forms' weights); grouped_gemm_packed "
             "takes weights prepacked from one [G, N, K] / [G, K, N] tensor: prepack(torch.stack(weights))",
             Rule.PREPACKED)
    if op != "grouped_gemm_packed" and not b.is_list:  # the list forms: one view per expert, scales alike
        stored = tuple(stored.unbind(0))
        carried = tuple(carried.unbind(0)) if isinstance(carried, torch.Tensor) else carried
    return stored, b.layout, scale_b if scale_b is not None else carried  # tuples: every form takes them
