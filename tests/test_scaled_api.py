"""Scaled low precision through the public API: every recipe x layout x form x dtype against an
independent float64 dequantized product (tests/support.py), on the CPU (torch backend) and, where one
runs, on the GPU's native backend (NaN-poisoned outputs there too). Purpose of the shapes: partial last
K block (K not a multiple of 128), M = 0 groups and empty experts, K = 0 (exact zeros), odd N."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from ckgemm.testing import quant
from support import assert_scaled_matches, generator, poison, rand_tensor, random_scales


def _devices():
    params = [pytest.param("cpu", id="cpu")]
    status = ckgemm.backend_status("cuda") if torch.cuda.is_available() else {}
    if any(status.get(n) == "available" for n in ("cutlass", "ck")):
        params.append(pytest.param("cuda", id="gpu", marks=pytest.mark.gpu))
    return params


def _dtypes(device):
    if device == "cpu":
        return [torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.int8]
    return [ckgemm.fp8_dtype_for(device), torch.int8]


CASES = [  # (recipe, dtype selector): block scales are for fp8 only
    ("tensor", "fp8"), ("row", "fp8"), ("block", "fp8"), ("tensor", "int8"), ("row", "int8"),
]
# per-group (M, N, K): partial K blocks, an empty group, K = 0, odd N, a group wider than one N block
LIST_SHAPES = [(5, 64, 200), (0, 48, 144), (33, 136, 256), (1, 16, 0), (17, 200, 400)]


def _dtype_for(kind, device):
    return next(d for d in _dtypes(device) if (d == torch.int8) == (kind == "int8"))


def _group_inputs(shapes, dtype, layout, recipe, tag, device):
    gen = generator(tag)
    a, b, sa, sb = [], [], [], []
    for m, n, k in shapes:
        a.append(rand_tensor((m, k), dtype, gen).to(device))
        b.append(rand_tensor((n, k) if layout == "RC" else (k, n), dtype, gen).to(device))
        s1, s2 = random_scales(recipe, m, n, k, gen, dtype=dtype)
        sa.append(s1.to(device))
        sb.append(s2.to(device))
    return a, b, sa, sb


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("recipe,kind", CASES)
def test_list_forms(device, layout, recipe, kind):
    dtype = _dtype_for(kind, device)
    a, b, sa, sb = _group_inputs(LIST_SHAPES, dtype, layout, recipe, f"scaled-list-{recipe}-{kind}-{layout}", device)
    outs = ckgemm.grouped_gemm(a, b, layout=layout, scale_a=sa, scale_b=sb)
    for g, c in enumerate(outs):
        assert c.dtype == torch.bfloat16, "scaled calls default to bfloat16 outputs"
        assert_scaled_matches(c, a[g], b[g], sa[g], sb[g], layout, recipe, f"{recipe} group {g}")
        if a[g].shape[1] == 0:
            assert torch.equal(c.float(), torch.zeros_like(c.float())), "K = 0 gives exact zeros"
    for out_dtype in (torch.float16, torch.float32):
        outs = [poison((m, n), out_dtype, device) for m, n, _ in LIST_SHAPES]
        ckgemm.grouped_gemm_out(a, b, outs, layout=layout, scale_a=sa, scale_b=sb)  # dtype from the outputs
        for g, c in enumerate(outs):
            assert_scaled_matches(c, a[g], b[g], sa[g], sb[g], layout, recipe, f"{recipe} {out_dtype} group {g}")
    record = ckgemm.last_dispatch()
    assert record.recipe == recipe and record.out_dtype == "float32" and len(record.paths) == len(LIST_SHAPES)


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("recipe,kind", CASES)
def test_packed_form(device, layout, recipe, kind):
    """MoE form with empty experts (first, middle, last) and K not a multiple of 128."""
    dtype = _dtype_for(kind, device)
    sizes, n, k = [0, 7, 130, 0, 1, 0], 144, 328
    gen = generator(f"scaled-packed-{recipe}-{kind}-{layout}")
    rows, groups = sum(sizes), len(sizes)
    a = rand_tensor((rows, k), dtype, gen).to(device)
    b = rand_tensor((groups, n, k) if layout == "RC" else (groups, k, n), dtype, gen).to(device)
    sa, sb = (s.to(device) for s in random_scales(recipe, rows, n, k, gen, packed_groups=groups,
                                                                dtype=dtype))
    group_sizes = torch.tensor(sizes, dtype=torch.int32, device=device)
    written = {}
    for out_dtype in (None, torch.float16, torch.float32):
        out = written[out_dtype] = poison((rows, n), out_dtype or torch.bfloat16, device)
        ckgemm.grouped_gemm_packed(a, b, group_sizes, layout=layout, out=out, scale_a=sa, scale_b=sb,
                                   out_dtype=out_dtype)
        start = 0
        for g, m in enumerate(sizes):
            gsa = sa if recipe == "tensor" else sa[start:start + m]
            assert_scaled_matches(out[start:start + m], a[start:start + m], b[g], gsa, sb[g], layout, recipe,
                                  f"{recipe} expert {g} ({out_dtype})")
            start += m
    allocated = ckgemm.grouped_gemm_packed(a, b, group_sizes, layout=layout, scale_a=sa, scale_b=sb)
    assert allocated.dtype == torch.bfloat16 and torch.equal(allocated, written[None])  # same call, same bits


@pytest.mark.parametrize("device", _devices())
def test_packed_k_zero_gives_zeros(device):
    dtype = _dtype_for("fp8", device)
    gen = generator("scaled-k0")
    a = rand_tensor((9, 0), dtype, gen).to(device)
    b = rand_tensor((3, 40, 0), dtype, gen).to(device)
    sa, sb = (s.to(device) for s in random_scales("block", 9, 40, 0, gen, packed_groups=3))
    out = poison((9, 40), torch.bfloat16, device)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor([4, 0, 5], device=device), out=out, scale_a=sa, scale_b=sb)
    assert torch.equal(out.float(), torch.zeros(9, 40, device=device))


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("recipe,kind", [("tensor", "fp8"), ("row", "fp8"), ("row", "int8")])
def test_k_zero_gives_zeros_whatever_the_scales(device, recipe, kind):
    """K = 0 means no products: exact zeros even where a scale is inf or NaN (0 * inf is NaN if computed),
    on every form, as the native backends write them without reading the scales."""
    dtype = _dtype_for(kind, device)
    gen = generator(f"scaled-k0-nonfinite-{recipe}-{kind}")
    bad = torch.tensor(float("inf")), torch.tensor(float("nan"))
    a = [rand_tensor((3, 0), dtype, gen).to(device)]
    b = [rand_tensor((4, 0), dtype, gen).to(device)]
    shape_a, shape_b = ((), ()) if recipe == "tensor" else ((3,), (4,))
    sa = [bad[0].expand(shape_a).contiguous().to(device)]
    sb = [bad[1].expand(shape_b).contiguous().to(device)]
    zeros = torch.zeros(3, 4, device=device)
    assert torch.equal(ckgemm.grouped_gemm(a, b, scale_a=sa, scale_b=sb)[0].float(), zeros)
    out = [poison((3, 4), torch.bfloat16, device)]
    ckgemm.grouped_gemm_out(a, b, out, scale_a=sa, scale_b=sb)
    assert torch.equal(out[0].float(), zeros)
    packed_sb = sb[0].reshape((1,) + shape_b)
    got = ckgemm.grouped_gemm_packed(a[0], b[0].unsqueeze(0), torch.tensor([3], device=device),
                                     scale_a=sa[0], scale_b=packed_sb)
    assert torch.equal(got.float(), zeros)


def test_harness_casts_feed_the_op_and_the_reference_unchanged():
    """README: a, sa = per_token_cast_to_fp8(x); b, sb = per_block_cast_to_fp8(w) go to the op and to the
    harness reference as they are; the reference gets the same quantization as the op."""
    from ckgemm.testing import check, grouped_gemm_reference_packed, quant

    gen = generator("casts-into-op")
    x = torch.randn(300, 320, generator=gen)
    w = torch.randn(4, 192, 320, generator=gen) * 0.05
    sizes = torch.tensor([100, 0, 150, 50])
    for cast_a, cast_b, recipe in ((quant.per_token_cast_to_fp8, quant.per_block_cast_to_fp8, "block"),
                                   (quant.per_row_cast_to_fp8, quant.per_row_cast_to_fp8, "row"),
                                   (quant.per_tensor_cast_to_fp8, quant.per_tensor_cast_to_fp8, "tensor")):
        a, sa = cast_a(x)
        b, sb = cast_b(w)
        y = ckgemm.grouped_gemm_packed(a, b, sizes, scale_a=sa, scale_b=sb)
        ref = grouped_gemm_reference_packed((a, sa), (b, sb), sizes, precision="fp64")
        check(y, ref, in_dtype=a.dtype, k=320, scaled=True, name=recipe)
        assert ckgemm.last_dispatch().recipe == recipe


def test_bad_scales_name_the_group_the_tensor_and_the_expected_shape():
    """Wrong dtype, device or stride: the message names the group (list forms), the tensor and the shape it should
    have; nothing is written to the output."""
    from ckgemm.errors import InvalidArgumentError, InvalidTypeError
    from ckgemm.testing import quant
    gen = generator("bad-scale-text")
    a, sa = quant.per_token_cast_to_fp8(torch.randn(16, 300, generator=gen))
    b, sb = quant.per_block_cast_to_fp8(torch.randn(2, 160, 300, generator=gen))
    sizes = torch.tensor([7, 9])
    strided = sb.transpose(-1, -2).contiguous().transpose(-1, -2)
    packed = [
        (InvalidTypeError, dict(scale_a=sa.double(), scale_b=sb),
         r"scale_a \(shape \(16, 3\).*must be float32.*of shape .*\(16, 3\) = \[sum M, ceil\(K/128\)\] \(block\)"),
        (InvalidArgumentError, dict(scale_a=sa, scale_b=sb.to("meta")),
         r"scale_b .*is on meta.*\(2, 2, 3\) = \[G, ceil\(N/128\), ceil\(K/128\)\] \(block\)"),
        (InvalidArgumentError, dict(scale_a=sa, scale_b=strided),
         r"scale_b .*contiguous.*expected a contiguous \(2, 2, 3\) = \[G, ceil\(N/128\), ceil\(K/128\)\]"),
        (InvalidArgumentError, dict(scale_a=sa.to_sparse(), scale_b=sb),
         r"scale_a .*sparse_coo tensor; scales must be dense: call .to_dense\(\).*\(16, 3\) = \[sum M"),
        (InvalidTypeError, dict(scale_a=[sa], scale_b=sb),
         r"scale_a is a list, not a torch.Tensor; expected a float32 tensor on cpu of shape .*\(16, 3\) = \[sum M"),
    ]
    for cls, kwargs, pattern in packed:
        out = poison((16, 160), torch.bfloat16)
        with pytest.raises(cls, match=pattern):
            ckgemm.grouped_gemm_packed(a, b, sizes, out=out, **kwargs)
        assert torch.isnan(out).all()
    a_list, b_list, outs = list(a.split([7, 9])), [b[0], b[1]], [poison((m, 160), torch.bfloat16) for m in (7, 9)]
    with pytest.raises(InvalidTypeError, match=r"group 1: scale_a\[1\] .*float32.*of shape \(9, 3\) = \[M_1, "
                                               r"ceil\(K_1/128\)\] \(block\)"):
        ckgemm.grouped_gemm_out(a_list, b_list, outs, scale_a=[sa[:7], sa[7:].double()], scale_b=[sb[0], sb[1]])
    assert all(torch.isnan(o).all() for o in outs)


def test_inputs_in_deepgemms_spelling_get_a_pointer_to_ckgemms():
    """(codes, scales) pairs as operands, encoded UE8M0 scales, an m_indices for group sizes, and [G, K, N]
    weights under the default layout: each refused with the way to pass it."""
    gen = torch.Generator().manual_seed(11)
    x, w = torch.randn(8, 256, generator=gen), torch.randn(2, 256, 256, generator=gen)
    a, sa = quant.per_token_cast_to_fp8(x)
    b, sb = quant.per_block_cast_to_fp8(w)
    sizes = torch.tensor([3, 5])
    with pytest.raises(ckgemm.InvalidTypeError, match=r"a is a tuple.*the codes as a, the scales as scale_a="):
        ckgemm.grouped_gemm_packed((a, sa), (b, sb), sizes)
    bytes_ = quant.ue8m0_bytes(quant.per_token_cast_to_fp8(x, use_ue8m0=True)[1])
    with pytest.raises(ckgemm.InvalidTypeError, match="UE8M0 exponent bytes: decode them with .*ue8m0_to_float"):
        ckgemm.grouped_gemm_packed(a, b, sizes, scale_a=bytes_, scale_b=sb)
    with pytest.raises(ckgemm.InvalidTypeError, match="packed UE8M0"):
        ckgemm.grouped_gemm_packed(a, b, sizes, scale_a=sa.view(torch.int32), scale_b=sb)
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"= -1 is negative; .*torch.bincount"):
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([9, -1]), scale_a=sa, scale_b=sb)
    bf = torch.randn(2, 256, 64, generator=gen).to(torch.bfloat16)  # torch._grouped_mm's [G, K, N]
    with pytest.raises(ckgemm.InvalidArgumentError, match="pass layout='RR'"):
        ckgemm.grouped_gemm_packed(x.to(torch.bfloat16), bf, sizes)
    assert ckgemm.grouped_gemm_packed(x.to(torch.bfloat16), bf, sizes, layout="RR").shape == (8, 64)
