"""The operands of one run: seeded random inputs, quantized by the ``--quant`` recipe, laid out as the
calling convention says, and the reference that multiplies exactly what the kernel was given.

Recipes (scales float32, indexed in the logical [M, K] / [N, K] orientation whatever B's storage; DESIGN.md
"Scaled low precision"):

| recipe | scale_a packed  | scale_b packed             | list form, per group        | dtypes    |
|--------|-----------------|----------------------------|-----------------------------|-----------|
| tensor | []              | [G]                        | [] / []                     | fp8, int8 |
| row    | [sum M]         | [G, N]                     | [M_i] / [N_i]               | fp8, int8 |
| block  | [sum M, K/128]  | [G, N/128, K/128] (ceil)   | [M_i, K/128] / [N/128, K/128] | fp8     |

The packed form quantizes A as one tensor (its tensor recipe has one scale for all groups); the list form
quantizes each group on its own. The reference dequantizes the very codes and scales (``quant.dequant``)
and multiplies in fp32, or exactly in integers for int8 without scales (``reference`` module).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import data, quant
from ...dtypes import rule_for
from ..quant import Quantized
from ..reference import grouped_gemm_reference, grouped_gemm_reference_packed
from ..shapes import Case

QUANTS = ("none", "tensor", "row", "block")
GRAN = 128  # DeepGEMM's block: 1 x 128 for A, 128 x 128 for B
QUANT_DTYPES = {"none": ("fp16", "bf16", "fp8", "int8"), "tensor": ("fp8", "int8"), "row": ("fp8", "int8"),
                "block": ("fp8",)}
VALUES = ("normal", "int8_large")  # int8_large: codes in [64, 127], so sums pass 2**24 (fp32 is inexact there)


def _blocks(recipe: str, layout: str) -> tuple[tuple, tuple]:
    """Rows x cols of one scale (None: the whole dimension) for A [M, K] and for B as stored."""
    if recipe == "tensor":
        return (None, None), (None, None)
    if recipe == "row":
        return (1, None), ((1, None) if layout == "RC" else (None, 1))
    return (1, GRAN), (GRAN, GRAN)


def a_scale_shape(recipe: str, m: int, k: int) -> tuple[int, ...]:
    return {"tensor": (), "row": (m,), "block": (m, math.ceil(k / GRAN))}[recipe]


def b_scale_shape(recipe: str, n: int, k: int) -> tuple[int, ...]:
    """One group's B scales, logical orientation (N before K)."""
    return {"tensor": (), "row": (n,), "block": (math.ceil(n / GRAN), math.ceil(k / GRAN))}[recipe]


def _quantize(x: torch.Tensor, block: tuple, dtype: torch.dtype) -> Quantized:
    if dtype.is_floating_point:
        return quant.cast_to_fp8(x, block, dtype=dtype)
    if block == (None, 1):  # one scale per column: the row cast of the transpose
        q = quant.cast_to_int8(x.transpose(-2, -1), "row")
        return Quantized(q.data.transpose(-2, -1).contiguous(), q.scale.transpose(-2, -1).contiguous(),
                         (q.block[1], q.block[0]), "int8", tuple(x.shape))
    return quant.cast_to_int8(x, "row" if block == (1, None) else "tensor")


def _fit(scale: torch.Tensor, shape: tuple, transpose: bool = False) -> torch.Tensor:
    """A cast's scales in the convention's shape. Empty operands have a degenerate scale grid; any
    scale fits them (there is nothing to scale), so they get ones."""
    scale = scale.transpose(-2, -1) if transpose else scale
    if scale.numel() != math.prod(shape):
        return torch.ones(shape, dtype=torch.float32, device=scale.device)
    return scale.reshape(shape).contiguous()


def _int8_large(shape, gen, device) -> torch.Tensor:
    return torch.randint(64, 128, tuple(shape), generator=gen, dtype=torch.int8, device=torch.device(device))


def _plain(case: Case, form: str, layout: str, dtype, seed: int, device, values: str):
    if values == "int8_large":
        gen = data.generator(seed, device)
        if form == "packed":
            n, k = case.ns[0], case.ks[0]
            return (_int8_large((sum(case.ms), k), gen, device),
                    _int8_large((case.groups, *data.b_shape(n, k, layout)), gen, device),
                    torch.tensor(case.ms, dtype=torch.int32, device=device))
        return ([_int8_large((m, k), gen, device) for m, _, k in case.shapes],
                [_int8_large(data.b_shape(n, k, layout), gen, device) for _, n, k in case.shapes], None)
    if form == "packed":
        return data.packed_inputs(case, dtype, layout, seed, device)
    return (*data.group_inputs(case, dtype, layout, seed, device), None)


@dataclass
class Operands:
    case: Case
    form: str
    layout: str
    dtype: torch.dtype  # what the kernel's a and b hold
    recipe: str
    out_dtype: torch.dtype  # what the kernel must return
    a: object  # tensor (packed) or list of tensors
    b: object
    sizes: torch.Tensor | None  # packed: int32 [G] on the device
    scale_a: object  # None without scales
    scale_b: object
    ref_a: object  # what the reference multiplies: the same tensors, or Quantized codes + scales
    ref_b: object
    seed: int

    @property
    def scaled(self) -> bool:
        return self.scale_a is not None

    @property
    def exact(self) -> bool:
        return not self.out_dtype.is_floating_point

    @property
    def device(self) -> torch.device:
        return (self.a if self.form == "packed" else self.a[0]).device if self.case.groups else torch.device("cpu")

    @property
    def tolerance_dtype(self) -> torch.dtype:
        """The input dtype CK-tile's tolerance model is given: the codes' dtype, except for int8 with scales,
        whose products are exact and whose only error is the fp32 epilogue and one rounding to out_dtype."""
        return self.out_dtype if self.scaled and not self.dtype.is_floating_point else self.dtype

    def args(self, sizes: torch.Tensor | None = None) -> tuple:
        """The positional arguments of the calling convention (``sizes`` replaces the group sizes)."""
        head = (self.a, self.b) if self.form == "list" else (self.a, self.b, self.sizes if sizes is None else sizes)
        return head + ((self.scale_a, self.scale_b) if self.scaled else ())

    def inputs(self) -> list[torch.Tensor]:
        """Every tensor handed to the kernel (none of them may change)."""
        flat = []
        for x in self.args():
            flat.extend(x if isinstance(x, (list, tuple)) else [x])
        return [t for t in flat if isinstance(t, torch.Tensor)]

    def reference(self, ms: list[int] | None = None) -> list[torch.Tensor]:
        """Per-group references (fp32, or int64 when exact), on the operands' device."""
        if self.form == "list":
            return grouped_gemm_reference(self.ref_a, self.ref_b, layout=self.layout)
        ms = self.case.ms if ms is None else ms
        ref = grouped_gemm_reference_packed(self.ref_a, self.ref_b, ms, layout=self.layout)
        return list(torch.split(ref, ms))


def expected_out_dtype(dtype: torch.dtype, recipe: str) -> torch.dtype:
    """By ckgemm's dtype table without scales; bf16 with scales."""
    return torch.bfloat16 if recipe != "none" else rule_for(dtype).output


def build(case: Case, form: str, layout: str, dtype: torch.dtype, recipe: str, seed: int, device, *,
          out_dtype: torch.dtype | None = None, values: str = "normal") -> Operands:
    """The operands of ``case`` (quantized from normal fp32 data when ``recipe`` is not "none")."""
    if recipe not in QUANTS:
        raise ValueError(f"unknown quant recipe {recipe!r}; expected one of {QUANTS}")
    if form == "packed" and not case.packable:
        raise ValueError(f"case {case} has per-group N or K; the packed form needs them shared")
    out_dtype = out_dtype or expected_out_dtype(dtype, recipe)
    if recipe == "none":
        a, b, sizes = _plain(case, form, layout, dtype, seed, device, values)
        return Operands(case, form, layout, dtype, recipe, out_dtype, a, b, sizes, None, None, a, b, seed)
    src_a, src_b, sizes = _plain(case, form, layout, torch.float32, seed, device, "normal")
    block_a, block_b = _blocks(recipe, layout)
    turn = recipe == "block" and layout == "RR"  # B's block grid is stored [K/128, N/128]: turn it to N first
    if form == "packed":
        n, k, g = case.ns[0], case.ks[0], case.groups
        qa, qb = _quantize(src_a, block_a, dtype), _quantize(src_b, block_b, dtype)
        sa = _fit(qa.scale, a_scale_shape(recipe, src_a.shape[0], k))
        sb = _fit(qb.scale, (g, *b_scale_shape(recipe, n, k)), transpose=turn)
        return Operands(case, form, layout, dtype, recipe, out_dtype, qa.data, qb.data, sizes, sa, sb, qa, qb, seed)
    qas = [_quantize(x, block_a, dtype) for x in src_a]
    qbs = [_quantize(x, block_b, dtype) for x in src_b]
    sas = [_fit(q.scale, a_scale_shape(recipe, m, k)) for q, (m, _, k) in zip(qas, case.shapes)]
    sbs = [_fit(q.scale, b_scale_shape(recipe, n, k), transpose=turn) for q, (_, n, k) in zip(qbs, case.shapes)]
    return Operands(case, form, layout, dtype, recipe, out_dtype, [q.data for q in qas], [q.data for q in qbs],
                    None, sas, sbs, qas, qbs, seed)
