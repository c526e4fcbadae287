"""Quantization recipes of the expert-parallel flow: how activations and expert weights become the GEMM's
operands, what travels with each dispatched row, and what the GEMM and the reference are given.

| recipe | dtypes | scales that travel with a row | GEMM keyword arguments (README "Scaled fp8 and int8 (quantized MoE)") |
|---|---|---|---|
| none  | bf16, fp16, fp8 (unscaled), int8 | none | none: the dtype table's output dtype |
| row   | fp8, int8 | 1 float32 | scale_a [sum M], scale_b [G, N]; output bf16 |
| block | fp8 | ceil(K/128) float32 (1 x 128 blocks) | scale_a [sum M, ceil(K/128)], scale_b [G, ceil(N/128), ceil(K/128)] |

Numeric mode quantizes random data with the harness casts (``ckgemm.testing.quant``). Exact mode keeps the
small-integer values as codes and draws power-of-two scales, so every product and partial sum is exact in
fp32 and the one rounding to the output dtype is the same in any kernel. Per-tensor scales do not fit expert
parallelism: rows from several ranks meet in one GEMM, each rank's activations with their own scale.
The reference multiplies exactly these codes and scales, never the unquantized values.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import quant as harness_quant

BLOCK = 128
RECIPE_DTYPES = {"none": ("bf16", "fp16", "fp8", "int8"), "row": ("fp8", "int8"), "block": ("fp8",)}
SCALED_OUTPUT = torch.bfloat16  # the scaled GEMM's default out_dtype


@dataclass
class Operand:
    """Values as the GEMM takes them: a plain tensor, or codes with float32 scales.
    Activations: ``data`` [R, K], ``scale`` [R, width]: each token's scales in one row, so they travel with it.
    Weights: ``data`` [E, N, K], ``scale`` in the op's layout: [E, N] (row) or [E, ceil(N/128), ceil(K/128)]."""

    data: torch.Tensor
    scale: torch.Tensor | None = None

    def rows(self, index) -> "Operand":
        return Operand(self.data[index], None if self.scale is None else self.scale[index])

    def to(self, device) -> "Operand":
        return Operand(self.data.to(device), None if self.scale is None else self.scale.to(device))


def check_recipe(recipe: str, dtype_name: str) -> None:
    if recipe not in RECIPE_DTYPES:
        raise ValueError(f"unknown quant recipe {recipe!r}; known: {tuple(RECIPE_DTYPES)}")
    if dtype_name not in RECIPE_DTYPES[recipe]:
        raise ValueError(f"quant recipe {recipe!r} takes dtypes {RECIPE_DTYPES[recipe]}, not {dtype_name!r}")


def scale_width(recipe: str, hidden: int) -> int:
    """How many float32 scales travel with each dispatched row."""
    return {"none": 0, "row": 1, "block": -(-hidden // BLOCK)}[recipe]


def _weight_scale_shape(recipe: str, shape) -> tuple[int, ...]:
    e, n, k = shape
    return (e, n) if recipe == "row" else (e, -(-n // BLOCK), -(-k // BLOCK))


def _powers_of_two(shape, gen: torch.Generator) -> torch.Tensor:
    return torch.pow(2.0, torch.randint(-2, 3, tuple(shape), generator=gen).float())


def quantize_activations(recipe: str, values: torch.Tensor, dtype: torch.dtype, *, exact: bool,
                         gen: torch.Generator) -> Operand:
    """``values``: float32 [R, K] on the CPU (exact mode: integers in [-1, 1])."""
    if recipe == "none":
        return Operand(values.to(dtype))
    rows = values.shape[0]
    if exact:
        return Operand(values.to(dtype), _powers_of_two((rows, scale_width(recipe, values.shape[1])), gen))
    codes, scale = harness_quant.cast_for(values, recipe, "a", dtype)
    return Operand(codes, scale.reshape(rows, scale_width(recipe, values.shape[1])))


def quantize_weights(recipe: str, values: torch.Tensor, dtype: torch.dtype, *, exact: bool,
                     gen: torch.Generator) -> Operand:
    """``values``: float32 [E, N, K] on the CPU."""
    if recipe == "none":
        return Operand(values.to(dtype))
    if exact:
        return Operand(values.to(dtype), _powers_of_two(_weight_scale_shape(recipe, values.shape), gen))
    codes, scale = harness_quant.cast_for(values, recipe, "b", dtype)
    return Operand(codes, scale)


def _row_scale_argument(recipe: str, row_scales: torch.Tensor) -> torch.Tensor:
    """Rows' scales [R, width] in the op's layout: [R] (row recipe) or [R, ceil(K/128)] (block)."""
    return (row_scales[:, 0] if recipe == "row" else row_scales).contiguous()


def gemm_kwargs(recipe: str, row_scales: torch.Tensor | None, weights: Operand) -> dict:
    """Scale arguments of the grouped GEMM for the dispatched rows' scales [sum M, width] and local weights."""
    if recipe == "none":
        return {}
    return {"scale_a": _row_scale_argument(recipe, row_scales), "scale_b": weights.scale.contiguous(),
            "out_dtype": SCALED_OUTPUT}


def reference_operand(recipe: str, op: Operand, *, weights: bool):
    """What ``ckgemm.testing.reference`` multiplies: the plain tensor, or a (codes, scale) pair in the op's
    layout (activations [R, K]; weights [E, N, K] or one expert's [N, K])."""
    if recipe == "none":
        return op.data
    return op.data, op.scale if weights else _row_scale_argument(recipe, op.scale)


def output_dtype(recipe: str, rule_output: torch.dtype) -> torch.dtype:
    return rule_output if recipe == "none" else SCALED_OUTPUT
