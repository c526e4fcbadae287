"""Decoding what the native router decided (csrc/common/route.h): one 32-bit route code per group.

    bits 0-3   kind: 0 empty group (nothing to do), 1 K == 0 (C zero-filled), 2 kernel
    bits 4-15  instance id (index into the backend's instance table; its name comes from ckgemm._C)
    bits 16-23 flags: 1 A copied (misaligned or overlapping rows, or K padded), 2 B copied, 4 B transposed
               (8-bit RR on a backend whose kernels read 8-bit B only K-major), 8 C staged through an
               aligned temporary, 16 tensor scales expanded to row scales

The values are route.h's (tests/test_native_rules.py checks them against the compiled rules).
"""
from __future__ import annotations

REJECTED_MARK = "[ckgemm-rejected"  # starts the message of a call the native validator rejects (validate.h)
UNSUPPORTED_MARK = "[ckgemm-unsupported]"  # a valid call no instance of this build can compute (the reason follows)
KIND_EMPTY, KIND_ZERO_K, KIND_KERNEL = 0, 1, 2
FLAG_REPACK_A, FLAG_REPACK_B, FLAG_TRANSPOSE_B, FLAG_STAGE_C, FLAG_EXPAND_SCALES = 1, 2, 4, 8, 16
OPS = ("grouped_gemm", "grouped_gemm_out", "grouped_gemm_packed", "grouped_gemm_packed")
RECIPES = ("none", "tensor", "row", "block")
OUT_DTYPES = ("float16", "bfloat16", "float32", "int32")
LAYOUTS = ("RC", "RR")


def kind(route: int) -> int:
    return route & 0xF


def instance(route: int) -> int:
    return (route >> 4) & 0xFFF


def flags(route: int) -> int:
    return (route >> 16) & 0xFF


def path(backend: str, route: int, names) -> str:
    """'skip:empty', 'zero-k', or '<backend>:<instance name>' with '+transpose', '+repack', '+staged' and
    '+expand-scales', one per flag of the route code."""
    k = kind(route)
    if k == KIND_EMPTY:
        return "skip:empty"
    if k == KIND_ZERO_K:
        return "zero-k"
    f = flags(route)
    text = f"{backend}:{names[instance(route)]}"
    if f & FLAG_TRANSPOSE_B:
        text += "+transpose"
    if f & (FLAG_REPACK_A | FLAG_REPACK_B) and not (f & FLAG_TRANSPOSE_B and not f & FLAG_REPACK_A):
        text += "+repack"
    if f & FLAG_STAGE_C:
        text += "+staged"
    if f & FLAG_EXPAND_SCALES:
        text += "+expand-scales"
    return text


def decode_report(backend: str, report, names, stages=()):
    """(op, dtype name, layout, recipe, output dtype name, paths, stages) from ``ckgemm._C.last_report()``;
    ``stages``: each instance's mainloop stages by id (``ckgemm._C.instances()``), 0 per group without a
    kernel or where the backend reports none."""
    from ..dtypes import DTYPE_TABLE

    op_code, dtype_code, layout_code, recipe_code, out_code, codes = report
    dtype = next(r.name for r in DTYPE_TABLE if r.abi_code == dtype_code)
    per_group = tuple(stages[instance(c)] if kind(c) == KIND_KERNEL and instance(c) < len(stages) else 0
                      for c in codes)
    return (OPS[op_code], dtype, LAYOUTS[layout_code], RECIPES[recipe_code], OUT_DTYPES[out_code],
            tuple(path(backend, c, names) for c in codes), per_group)
