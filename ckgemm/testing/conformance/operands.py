"""The operands of one run: seeded random inputs, quantized by the ``--quant`` recipe, laid out as the
calling convention says, and the reference that multiplies exactly what the kernel was given.

Recipes (scales float32, indexed in the logical [M, K] / [N, K] orientation whatever B's storage; the README,
"Scaled fp8 and int8 (quantized MoE)"), from the harness's casts, which return exactly these layouts:

| recipe | scale_a packed  | scale_b packed             | list form, per group            | dtypes    |
|--------|-----------------|----------------------------|---------------------------------|-----------|
| tensor | []              | [G]                        | [] / []                         | fp8, int8 |
| row    | [sum M]         | [G, N]                     | [M_i] / [N_i]                   | fp8, int8 |
| block  | [sum M, K/128]  | [G, N/128, K/128] (ceil)   | [M_i, K/128] / [N_i/128, K/128] | fp8       |

The packed form quantizes A as one tensor (its tensor recipe has one scale for all groups); the list form
quantizes each group on its own. RR weights are cast in their logical [N, K] orientation and stored
transposed. The reference gets the very ``(codes, scale)`` pairs and dequantizes them (``reference``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import data, quant
from ...dtypes import rule_for
from ..reference import grouped_gemm_reference, grouped_gemm_reference_packed
from ..shapes import Case

QUANTS = ("none", "tensor", "row", "block")
QUANT_DTYPES = {"none": ("fp16", "bf16", "fp8", "int8"), "tensor": ("fp8", "int8"), "row": ("fp8", "int8"),
                "block": ("fp8",)}
VALUES = ("normal", "int8_large")  # int8_large: codes in [64, 127], so sums pass 2**24 (fp32 is inexact there)


def _casts(recipe: str, dtype: torch.dtype):
    """(cast of A, cast of B in its logical [.., N, K] orientation) for a recipe and code dtype."""
    return (lambda x: quant.cast_for(x, recipe, "a", dtype), lambda x: quant.cast_for(x, recipe, "b", dtype))


def _quantize(x: torch.Tensor, cast, layout: str = "RC", is_b: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes as stored, scales in the logical orientation)."""
    if not (is_b and layout == "RR"):
        return tuple(cast(x))
    codes, scale = cast(x.transpose(-2, -1))
    return codes.transpose(-2, -1).contiguous(), scale


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

    @property
    def scaled(self) -> bool:
        return self.scale_a is not None

    @property
    def ref_a(self):
        """What the reference multiplies: the kernel's own tensors, or (codes, scale) pairs."""
        return self._pairs(self.a, self.scale_a)

    @property
    def ref_b(self):
        return self._pairs(self.b, self.scale_b)

    def _pairs(self, codes, scales):
        if scales is None:
            return codes
        return (codes, scales) if self.form == "packed" else list(zip(codes, scales))

    @property
    def exact(self) -> bool:
        return not self.out_dtype.is_floating_point

    @property
    def device(self) -> torch.device:
        return (self.a if self.form == "packed" else self.a[0]).device if self.case.groups else torch.device("cpu")

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
        return Operands(case, form, layout, dtype, recipe, out_dtype, a, b, sizes, None, None)
    src_a, src_b, sizes = _plain(case, form, layout, torch.float32, seed, device, "normal")
    cast_a, cast_b = _casts(recipe, dtype)
    if form == "packed":
        (a, sa), (b, sb) = _quantize(src_a, cast_a), _quantize(src_b, cast_b, layout, True)
        return Operands(case, form, layout, dtype, recipe, out_dtype, a, b, sizes, sa, sb)
    pairs_a = [_quantize(x, cast_a) for x in src_a]
    pairs_b = [_quantize(x, cast_b, layout, True) for x in src_b]
    return Operands(case, form, layout, dtype, recipe, out_dtype, [p[0] for p in pairs_a], [p[0] for p in pairs_b],
                    None, [p[1] for p in pairs_a], [p[1] for p in pairs_b])
