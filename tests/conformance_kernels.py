"""Grouped GEMMs for the conformance suite's own tests, following its calling conventions.

``reference_packed`` / ``reference_list`` are correct, written without ckgemm.testing (float32 products of
the operands dequantized by broadcasting their scales; int64 for int8 without scales). Every other kernel
is wrong in exactly one way that one check of the catalogue exists for; each takes ``out=``, so the
suite's poisoned, guard-banded outputs are what it writes into.
"""
from __future__ import annotations

import pytest
import torch

GRAN = 128


def _expected_dtype(codes: torch.Tensor, scaled: bool, out_dtype) -> torch.dtype:
    if scaled:
        return out_dtype or torch.bfloat16
    return {torch.int8: torch.int32, torch.float8_e4m3fn: torch.float32,
            torch.float8_e4m3fnuz: torch.float32}.get(codes.dtype, codes.dtype)


def _scaled(x: torch.Tensor, scale, row_block: int) -> torch.Tensor:
    """x [R, C] (logical orientation) times its scales: [] one value, [R] per row, [R/rb, C/128] blocks."""
    x = x.float()
    if scale is None:
        return x
    s = scale.float()
    if s.dim() == 0:
        return x * s
    if s.dim() == 1:
        return x * s[:, None]
    full = s.repeat_interleave(row_block, 0).repeat_interleave(GRAN, 1)
    return x * full[:x.shape[0], :x.shape[1]]


def product(a, b_nk, sa=None, sb=None, out_dtype=torch.float32) -> torch.Tensor:
    """One group, right: A [M, K] @ B[N, K]^T with its scales, rounded once to ``out_dtype``."""
    if sa is None and not a.dtype.is_floating_point:
        return (a.long() @ b_nk.long().t()).to(out_dtype)
    return (_scaled(a, sa, 1) @ _scaled(b_nk, sb, GRAN).t()).to(out_dtype)


def _run_packed(a, b, group_sizes, scale_a, scale_b, layout, out, out_dtype, group_fn=product, skip=None):
    sizes = [int(s) for s in group_sizes.tolist()]
    if len(sizes) != b.shape[0] or sum(sizes) != a.shape[0] or min(sizes, default=0) < 0:
        raise ValueError(f"group_sizes {sizes} do not fit a {tuple(a.shape)} and b {tuple(b.shape)}")
    b_nk = b if layout == "RC" else b.transpose(-2, -1)
    if b_nk.shape[-1] != a.shape[1]:
        raise ValueError(f"K mismatch: a {tuple(a.shape)}, b {tuple(b.shape)} ({layout})")
    scaled = scale_a is not None
    if scaled and scale_a.dim() > 0 and scale_a.shape[0] != a.shape[0]:
        raise ValueError(f"scale_a {tuple(scale_a.shape)} does not fit a {tuple(a.shape)}")
    dtype = _expected_dtype(a, scaled, out_dtype)
    out = torch.empty((a.shape[0], b_nk.shape[1]), dtype=dtype) if out is None else out
    start = 0
    for g, m in enumerate(sizes):
        sa = None if not scaled else (scale_a if scale_a.dim() == 0 else scale_a[start:start + m])
        sb = None if not scaled else scale_b[g]
        if not (skip and skip(g, m, a.shape[1], len(sizes))):
            out[start:start + m] = group_fn(a[start:start + m], b_nk[g], sa, sb, dtype)
        start += m
    return out


def reference_packed(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC", out=None, out_dtype=None):
    return _run_packed(a, b, group_sizes, scale_a, scale_b, layout, out, out_dtype)


def reference_list(a_list, b_list, scale_a=None, scale_b=None, *, layout="RC", out=None, out_dtype=None):
    if len(a_list) != len(b_list):
        raise ValueError(f"{len(a_list)} A groups but {len(b_list)} B groups")
    scaled = scale_a is not None
    results = []
    for g, (a, b) in enumerate(zip(a_list, b_list)):
        b_nk = b if layout == "RC" else b.t()
        if b_nk.shape[1] != a.shape[1]:
            raise ValueError(f"group {g}: K mismatch")
        c = product(a, b_nk, scale_a[g] if scaled else None, scale_b[g] if scaled else None,
                    _expected_dtype(a, scaled, out_dtype))
        results.append(c if out is None else out[g].copy_(c))
    return results


reference_packed.conformance_form = "packed"
reference_list.conformance_form = "list"


# Planted faults, one each -------------------------------------------------------------------------------

def drop_last_group(a_list, b_list, *, layout="RC"):
    """List form: returns one output fewer than there are groups."""
    return reference_list(a_list, b_list, layout=layout)[:-1]


def drop_last_group_packed(a, b, group_sizes, *, layout="RC", out=None):
    """Packed form: never computes the last group (its rows stay as they were)."""
    return _run_packed(a, b, group_sizes, None, None, layout, out, None, skip=lambda g, m, k, count: g == count - 1)


def _tail_rows_zero(a, b_nk, sa, sb, dtype):
    c = product(a, b_nk, sa, sb, dtype)
    c[a.shape[0] // 16 * 16:] = 0  # a 16-row tile loop that forgets the partial last tile
    return c


def wrong_m_tail(a, b, group_sizes, *, layout="RC", out=None):
    """Rows past the last multiple of 16 in each group come out as zeros."""
    return _run_packed(a, b, group_sizes, None, None, layout, out, None, group_fn=_tail_rows_zero)


FP16_TILE_K = 64


def _fp16_accumulator(a, b_nk, sa, sb, dtype):
    acc = torch.zeros((a.shape[0], b_nk.shape[0]), dtype=torch.float16)
    for k0 in range(0, a.shape[1], FP16_TILE_K):  # fp32 within a K-tile, the running sum kept in fp16
        tile = a[:, k0:k0 + FP16_TILE_K].float() @ b_nk[:, k0:k0 + FP16_TILE_K].float().t()
        acc = (acc.float() + tile).half()
    return acc.to(dtype)


def fp16_accumulate(a, b, group_sizes, *, layout="RC", out=None):
    """Keeps the running sum over K-tiles of 64 in fp16: exact enough for short K, drifts for long K."""
    return _run_packed(a, b, group_sizes, None, None, layout, out, None, group_fn=_fp16_accumulator)


def _through_fp32(a, b_nk, sa, sb, dtype):
    return (a.float() @ b_nk.float().t()).to(dtype)


def int8_through_fp32(a, b, group_sizes, *, layout="RC", out=None):
    """int8 products summed in fp32: exact only while every partial sum stays below 2**24."""
    return _run_packed(a, b, group_sizes, None, None, layout, out, None, group_fn=_through_fp32)


def skip_k0(a, b, group_sizes, *, layout="RC", out=None):
    """Treats K=0 as nothing to do and leaves those outputs unwritten (they must be zeros)."""
    return _run_packed(a, b, group_sizes, None, None, layout, out, None, skip=lambda g, m, k, count: k == 0)


def one_row_past(a, b, group_sizes, *, layout="RC", out=None):
    """Each non-empty group writes M+1 rows: its own and the row after them, computed from the next row of
    A with this group's B. In order, the next group overwrites that row; after the last it lands past the
    end of the output."""
    sizes = [int(s) for s in group_sizes.tolist()]
    b_nk = b if layout == "RC" else b.transpose(-2, -1)
    rows = out.shape[0]
    wide = out.as_strided((rows + 1, out.shape[1]), out.stride(), out.storage_offset())  # one row too many
    a_wide = torch.cat([a, a.new_zeros((1, a.shape[1]))])
    start = 0
    for g, m in enumerate(sizes):
        if m:
            wide[start:start + m + 1] = product(a_wide[start:start + m + 1], b_nk[g], out_dtype=out.dtype)
        start += m
    return out


_CALLS = [0]


def nondeterministic(a, b, group_sizes, *, layout="RC", out=None):
    """Within tolerance every time, but every other call one element is one ulp off (as a reduction
    whose order changes from call to call gives): not the same bits twice."""
    out = reference_packed(a, b, group_sizes, layout=layout, out=out)
    _CALLS[0] += 1
    if _CALLS[0] % 2 and out.numel():
        out.view({2: torch.int16, 4: torch.int32}[out.element_size()]).view(-1)[0] += 1
    return out


def modifies_input(a, b, group_sizes, *, layout="RC", out=None):
    """Right answer, but scribbles on its input A afterwards."""
    result = reference_packed(a, b, group_sizes, layout=layout, out=out)
    if a.numel():
        a.view(-1)[0] = a.view(-1)[1]
        a.view(torch.uint8).view(-1)[0] ^= 1
    return result


def refuses_fp8(a, b, group_sizes, *, layout="RC", out=None):
    """Correct, but raises for fp8 inputs (as a kernel without an fp8 path does)."""
    if a.dtype.itemsize == 1 and a.dtype.is_floating_point:
        raise NotImplementedError("no fp8 kernel in this build")
    return reference_packed(a, b, group_sizes, layout=layout, out=out)


def returns_garbage_for_bad_k(a, b, group_sizes, *, layout="RC", out=None):
    """Never checks K: multiplies whatever overlap a and b have (and so accepts a bad call)."""
    k = min(a.shape[1], b.shape[-1] if layout == "RC" else b.shape[-2])
    b = b[..., :k] if layout == "RC" else b[:, :k]
    return reference_packed(a[:, :k], b, group_sizes, layout=layout, out=out)


@pytest.fixture(autouse=True)
def one_cpu_thread():
    """The suite's smoke shapes are tiny: intra-op threads only add wake-ups (milliseconds each on a busy
    2-core CI box), and oneDNN would JIT a kernel per new shape. One thread, MKL's sgemm."""
    saved = torch.get_num_threads(), torch.backends.mkldnn.enabled
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    yield
    torch.set_num_threads(saved[0])
    torch.backends.mkldnn.enabled = saved[1]
