"""ckgemm.testing.reference: agrees with float64 on small shapes for every dtype and layout, dequantizes
exactly the quantized operands, is exact for integers, and stays independent of ckgemm's ops."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from ckgemm.testing import quant
from ckgemm.testing.reference import gemm_reference, grouped_gemm_reference, grouped_gemm_reference_packed
from support import b_shape, exact_product, generator, rand_tensor

DTYPES = [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.int8]
SHAPES = [(1, 7, 5), (17, 33, 64), (0, 8, 16), (5, 0, 16), (6, 9, 0), (40, 24, 129)]


@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
def test_reference_matches_float64(dtype, layout):
    gen = generator(f"ref-{dtype}-{layout}")
    a = [rand_tensor((m, k), dtype, gen) for m, n, k in SHAPES]
    b = [rand_tensor(b_shape(n, k, layout), dtype, gen) for m, n, k in SHAPES]
    fp32 = grouped_gemm_reference(a, b, layout=layout)
    fp64 = grouped_gemm_reference(a, b, layout=layout, precision="fp64")
    for g, (x, y, c32, c64) in enumerate(zip(a, b, fp32, fp64)):
        exact = exact_product(x, y, layout)
        if dtype == torch.int8:
            assert c32.dtype == torch.int64 and torch.equal(c32, exact), f"group {g}: int8 must be exact"
            continue
        assert c32.dtype == torch.float32 and c64.dtype == torch.float64
        assert torch.equal(c64, exact), f"group {g}: fp64 products of <=11-bit values are exact"
        k = x.shape[1]
        magnitude = x.double().abs() @ (y.t() if layout == "RC" else y).double().abs()
        assert bool(((c32.double() - exact).abs() <= k * 2.0**-24 * magnitude).all()), f"group {g}"


def test_int8_exact_past_fp32_integer_range_and_int32_wrap():
    gen = generator("ref-int8-big")
    k = 4096
    a = torch.randint(100, 128, (3, k), generator=gen, dtype=torch.int8)
    b = torch.randint(100, 128, (2, k), generator=gen, dtype=torch.int8)
    (c,) = grouped_gemm_reference([a], [b])
    exact = a.long() @ b.long().t()
    assert exact.abs().max() > 2**24 and torch.equal(c, exact)
    (c32,) = grouped_gemm_reference([a], [b], out_dtype=torch.int32)
    assert c32.dtype == torch.int32 and torch.equal(c32.long(), exact)


def test_int8_scaled_reference_wraps_as_the_int32_accumulator():
    """K >= 131072 with extreme codes: the kernels' int32 accumulator wraps before the scales apply, and the
    reference says so, as the op (here the torch backend) computes."""
    k = 140000
    a, b = torch.full((2, k), 127, dtype=torch.int8), torch.full((3, k), 127, dtype=torch.int8)
    sa, sb = torch.full((2,), 0.5), torch.full((3,), 2.0)
    (ref,) = grouped_gemm_reference([(a, sa)], [(b, sb)])
    wrapped = (127 * 127 * k + 2**31) % 2**32 - 2**31
    assert wrapped != 127 * 127 * k and torch.equal(ref, torch.full((2, 3), float(wrapped)))
    import ckgemm

    (out,) = ckgemm.grouped_gemm([a], [b], scale_a=[sa], scale_b=[sb], out_dtype=torch.float32)
    assert torch.equal(out, ref)


def test_quantized_operands_are_dequantized_exactly():
    gen = generator("ref-quant")
    x = torch.randn(37, 256, generator=gen) * 2
    w = torch.randn(48, 256, generator=gen)  # RC: [N, K]
    qa = quant.per_token_cast_to_fp8(x, 128)
    qb = quant.per_block_cast_to_fp8(w, 128, dtype=torch.float8_e4m3fnuz, ue8m0=True)
    c = gemm_reference(qa, qb, layout="RC", precision="fp64")
    manual = (qa.data.double() * quant.expand_scale(qa.scale.double(), qa.block, qa.shape)) @ \
        (qb.data.double() * quant.expand_scale(qb.scale.double(), qb.block, qb.shape)).t()
    assert torch.equal(c, manual)
    # The dequantized product is near the unquantized one, but not equal: the reference used the codes.
    high = x.double() @ w.double().t()
    assert not torch.equal(c, high) and float((c - high).abs().max()) < 0.2 * float(high.abs().max())
    qw4 = quant.cast_to_fp4(w.t().contiguous(), 32)  # RR: [K, N]
    c4 = gemm_reference(qa, qw4, layout="RR", precision="fp64")
    assert torch.equal(c4, qa.dequant(torch.float64) @ qw4.dequant(torch.float64))


@pytest.mark.parametrize("sizes", [[5, 0, 19], [0, 1]], ids=["prefill", "one-row"])
@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_int8_scaled_reference_is_exact_then_rounded_once(recipe, layout, sizes):
    """int8 codes with tensor/row scales: the integer sums are exact, the scales applied in float64, so the
    float32 reference is the float64 truth rounded once (a float32 sum of dequantized products is not), and a
    right float32 answer passes ``check(scaled=True)``. One row in all (a decode token): a tensor scale's block
    is then (1, K), the shape of a row scale's, and the 0-D scale must still read as one per tensor."""
    from ckgemm.testing import check

    gen = generator(f"ref-int8-scaled-{recipe}-{layout}-{len(sizes)}")
    n, k = 40, 300
    x = torch.randn(sum(sizes), k, generator=gen)
    w = torch.randn(len(sizes), n, k, generator=gen)
    qa, qb = quant.cast_for(x, recipe, "a", torch.int8), quant.cast_for(w, recipe, "b", torch.int8)
    sa = qa.scale.double().reshape(-1, 1) if recipe == "row" else qa.scale.double()
    sb = qb.scale.double().unsqueeze(1) if recipe == "row" else qb.scale.double().reshape(-1, 1, 1)
    codes_b = qb.data if layout == "RC" else qb.data.transpose(1, 2).contiguous()
    pair_b = (codes_b, qb.scale)
    got = grouped_gemm_reference_packed((qa.data, qa.scale), pair_b, sizes, layout=layout)
    start = 0
    for g, m in enumerate(sizes):
        rows = slice(start, start + m)
        exact = (qa.data[rows].long() @ qb.data[g].long().t()).double()
        truth = exact * (sa[rows] if recipe == "row" else sa) * sb[g]
        assert torch.equal(got[rows], truth.float()), f"group {g}"
        scale_a = qa.scale[rows] if recipe == "row" else qa.scale
        (listed,) = grouped_gemm_reference([(qa.data[rows], scale_a)], [(codes_b[g], qb.scale[g])], layout=layout)
        assert torch.equal(listed, truth.float())
        if m:
            off = truth.float().clone()
            off.view(-1)[0] += 64 * float(off.abs().max()) * 2.0 ** -23 + 1e-3
            assert check(truth.float(), listed, in_dtype=torch.int8, k=k, scaled=True, raise_on_failure=False).passed
            assert not check(off, listed, in_dtype=torch.int8, k=k, scaled=True, raise_on_failure=False).passed
        start += m


def test_packed_int8_reference_with_torch_style_row_scales():
    """A [rows, 1] scale of int8 codes with K <= 128 reads as one scale per row (a 1 x 128 block), per group."""
    gen = generator("ref-int8-rows-1")
    sizes, n, k = [3, 5], 8, 64
    qa = torch.randint(-127, 128, (sum(sizes), k), generator=gen, dtype=torch.int8)
    qb = torch.randint(-127, 128, (2, n, k), generator=gen, dtype=torch.int8)
    sa, sb = torch.rand(sum(sizes), 1, generator=gen) + 0.5, torch.rand(2, n, generator=gen) + 0.5
    got = grouped_gemm_reference_packed((qa, sa), (qb, sb), sizes, precision="fp64")
    rows = torch.repeat_interleave(torch.arange(2), torch.tensor(sizes))
    exact = torch.einsum("mk,mnk->mn", qa.double(), qb[rows].double()) * sa.double() * sb[rows].double()
    assert torch.equal(got, exact)
    with pytest.raises(ValueError, match="K mismatch"):
        grouped_gemm_reference_packed((qa[:, :32], sa), (qb, sb), sizes)


@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_packed_equals_list_form(layout):
    gen = generator(f"ref-packed-{layout}")
    sizes = [3, 0, 11, 1]
    a = rand_tensor((sum(sizes), 40), torch.bfloat16, gen)
    b = rand_tensor((4, *b_shape(24, 40, layout)), torch.bfloat16, gen)
    packed = grouped_gemm_reference_packed(a, b, torch.tensor(sizes), layout=layout)
    listed = grouped_gemm_reference(list(torch.split(a, sizes)), list(b), layout=layout)
    assert torch.equal(packed, torch.cat(listed))
    ai = rand_tensor((sum(sizes), 40), torch.int8, gen)
    bi = rand_tensor((4, *b_shape(24, 40, layout)), torch.int8, gen)
    exact = grouped_gemm_reference_packed(ai, bi, sizes, layout=layout)
    assert exact.dtype == torch.int64 and torch.equal(exact, torch.cat(
        [exact_product(x, y, layout) for x, y in zip(torch.split(ai, sizes), bi)]))


def test_argument_errors_name_the_group():
    a = [torch.zeros(2, 8), torch.zeros(2, 8)]
    b = [torch.zeros(4, 8), torch.zeros(4, 7)]
    with pytest.raises(ValueError, match="group 1: K mismatch"):
        grouped_gemm_reference(a, b)
    with pytest.raises(ValueError, match="layout"):
        grouped_gemm_reference(a, b, layout="CC")
    with pytest.raises(ValueError, match="precision"):
        grouped_gemm_reference_packed(torch.zeros(2, 8), torch.zeros(1, 4, 8), [2], precision="fp16")
    with pytest.raises(ValueError, match="sum to"):
        grouped_gemm_reference_packed(torch.zeros(2, 8), torch.zeros(1, 4, 8), [3])


def test_harness_never_imports_the_ops_or_backends():
    """ckgemm.testing judges ckgemm from outside: no module of it imports ckgemm.ops or the backends."""
    root = Path(__import__("ckgemm.testing").testing.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")] + [
                    ("." * node.level) + (node.module or "") + "." + a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                for banned in ("ckgemm.ops", "ckgemm.backends", "..ops", "..backends", "ckgemm.grouped_gemm"):
                    assert not name.startswith(banned), f"{path.name} imports {name}"
