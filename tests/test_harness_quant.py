"""ckgemm.testing.quant: every cast round-trips within half a quantization step, for both e4m3 flavours,
fp32 and UE8M0 scales, fp4 e2m1 (packing, ties to even) and int8."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing import quant
from support import generator

FP8 = [torch.float8_e4m3fn, torch.float8_e4m3fnuz]
FP8_IDS = ["e4m3fn", "e4m3fnuz"]
CASTS = {
    "per_token": (quant.per_token_cast_to_fp8, lambda r, c, g: (r, -(-c // g))),
    "per_block": (quant.per_block_cast_to_fp8, lambda r, c, g: (-(-r // g), -(-c // g))),
    "per_channel": (quant.per_channel_cast_to_fp8, lambda r, c, g: (-(-r // g), c)),
}


def _wide_range(shape, tag):
    """Normal data spread over several binades, so blocks get very different scales."""
    gen = generator(tag)
    return torch.randn(shape, generator=gen) * torch.exp(2 * torch.randn(shape, generator=gen))


def _fp8_half_step(v: torch.Tensor, dtype) -> torch.Tensor:
    """Half the spacing of the e4m3 grid around each |v| (3 mantissa bits; subnormal spacing below normals)."""
    tiny = torch.finfo(dtype).smallest_normal
    e = torch.floor(torch.log2(v.abs().clamp(min=tiny)))
    return 0.5 * torch.exp2(e - 3)


@pytest.mark.parametrize("ue8m0", [False, True], ids=["fp32-scale", "ue8m0"])
@pytest.mark.parametrize("dtype", FP8, ids=FP8_IDS)
@pytest.mark.parametrize("kind", list(CASTS))
def test_fp8_round_trip_within_half_a_step(kind, dtype, ue8m0):
    cast, scale_shape = CASTS[kind]
    rows, cols, gran = 70, 300, 32
    x = _wide_range((rows, cols), f"fp8-{kind}-{dtype}-{ue8m0}")
    q = cast(x, gran, dtype=dtype, ue8m0=ue8m0)
    assert q.data.dtype == dtype and q.data.shape == x.shape
    assert tuple(q.scale.shape) == scale_shape(rows, cols, gran) and q.scale.dtype == torch.float32
    scale = quant.expand_scale(q.scale.double(), q.block, x.shape)
    v = x.double() / scale  # the value the code stands for, exactly
    err = (q.data.double() - v).abs()
    # x / scale is rounded once to fp32 before the fp8 rounding; with power-of-two scales it is exact.
    slack = 0.0 if ue8m0 else 2.0**-23
    assert bool((err <= _fp8_half_step(v, dtype) + slack * v.abs()).all())
    assert float((err / _fp8_half_step(v, dtype)).max()) > 0.5, "the bound must be tight, not vacuous"
    assert torch.equal(quant.dequant(q, torch.float64), q.data.double() * scale), "dequant is code * scale, exactly"
    assert float(q.data.float().abs().max()) <= torch.finfo(dtype).max


@pytest.mark.parametrize("dtype", FP8, ids=FP8_IDS)
def test_fp8_uses_the_flavours_max(dtype):
    """Without UE8M0 the largest element of each block lands on the format's max (448 or 240)."""
    x = _wide_range((4, 256), f"fp8-max-{dtype}")
    q = quant.per_token_cast_to_fp8(x, 128, dtype=dtype)
    block_max = q.data.float().abs().reshape(4, 2, 128).amax(-1)
    assert torch.equal(block_max, torch.full_like(block_max, torch.finfo(dtype).max))


def test_ue8m0_scales_are_powers_of_two_and_round_trip_as_bytes():
    x = _wide_range((64, 256), "ue8m0")
    q = quant.per_block_cast_to_fp8(x, 128, ue8m0=True)
    codes = quant.ue8m0_bytes(q.scale)
    assert codes.dtype == torch.uint8 and torch.equal(quant.ue8m0_to_float(codes), q.scale)
    plain = quant.per_block_cast_to_fp8(x, 128)
    assert bool((q.scale >= plain.scale).all()) and bool((q.scale < 2 * plain.scale).all())
    with pytest.raises(ValueError, match="powers of two"):
        quant.ue8m0_bytes(plain.scale)


def test_ceil_to_ue8m0_is_exact_at_and_above_powers_of_two():
    x = torch.tensor([1.0, 1.0000001, 0.75, 3.0, 2.0**-20, 2.0**100 * 1.0000001])
    expected = torch.tensor([1.0, 2.0, 1.0, 4.0, 2.0**-20, 2.0**101])
    assert torch.equal(quant.ceil_to_ue8m0(x), expected)


def test_ceil_to_ue8m0_keeps_nan_and_inf():
    x = torch.tensor([float("nan"), float("inf"), 3.0])
    got = quant.ceil_to_ue8m0(x)
    assert torch.isnan(got[0]) and torch.isinf(got[1]) and got[2] == 4.0
    assert quant.ue8m0_bytes(got).tolist() == [255, 255, 129]  # 0xFF is UE8M0's NaN
    back = quant.ue8m0_to_float(torch.tensor([255, 0, 1, 254], dtype=torch.uint8))
    assert torch.isnan(back[0]) and back[1:].tolist() == [2.0**-127, 2.0**-126, 2.0**127]  # OCP E8M0


def test_blocks_too_small_for_a_reciprocal_scale_still_round_trip():
    """With amax_floor=0 a block of amax ~1e-37 has a scale whose reciprocal overflows fp32: the cast divides
    there instead of saturating every code to the block's amax."""
    x = torch.tensor([[1e-37, 5e-38, -1e-36, 2e-37], [1.0, -0.5, 0.25, 3.0]])
    amax = x.double().abs().amax(dim=1, keepdim=True)
    for q, bound in ((quant.per_token_cast_to_fp8(x, amax_floor=0.0), 2.0**-4 * x.double().abs()),
                     (quant.cast_to_int8(x, amax_floor=0.0), amax / 254)):  # half a step of 127 per amax
        error = (q.dequant(torch.float64) - x.double()).abs()
        assert bool((error <= bound * (1 + 1e-6)).all()), error


def test_zero_blocks_with_no_amax_floor_give_zero_codes():
    x = torch.zeros(4, 256)
    x[1, :128] = 2.0
    for q in (quant.per_token_cast_to_fp8(x, amax_floor=0.0), quant.cast_to_int8(x, amax_floor=0.0)):
        assert not torch.isnan(q.data.float()).any()
        values = q.dequant(torch.float64)
        assert torch.equal(values[x == 0], torch.zeros_like(values[x == 0]))
        assert torch.allclose(values, x.double(), rtol=1e-2)


def test_batched_per_block_scales_each_matrix():
    x = _wide_range((3, 130, 260), "fp8-batched")
    q = quant.per_block_cast_to_fp8(x, 128)
    assert tuple(q.scale.shape) == (3, 2, 3)
    for g in range(3):
        single = quant.per_block_cast_to_fp8(x[g], 128)
        assert torch.equal(q.scale[g], single.scale) and torch.equal(q.data[g].float(), single.data.float())


def test_zero_blocks_quantize_to_zero():
    x = torch.zeros(4, 128)
    x[0, :64] = torch.linspace(-1, 1, 64)
    q = quant.per_token_cast_to_fp8(x, 64)
    assert torch.equal(quant.dequant(q)[1:], torch.zeros(3, 128))


def _fp4_half_step(v: torch.Tensor) -> torch.Tensor:
    a = v.abs()
    return torch.where(a < 2, 0.25, torch.where(a < 4, 0.5, 1.0)).double()


@pytest.mark.parametrize("ue8m0", [False, True], ids=["fp32-scale", "ue8m0"])
def test_fp4_round_trip_and_packing(ue8m0):
    rows, cols, gran = 9, 97, 32  # odd column count: the last byte carries one code
    x = _wide_range((rows, cols), f"fp4-{ue8m0}")
    q = quant.cast_to_fp4(x, gran, ue8m0=ue8m0)
    assert q.data.dtype == torch.uint8 and tuple(q.data.shape) == (rows, 49)
    assert tuple(q.scale.shape) == (rows, 4)
    scale = quant.expand_scale(q.scale.double(), q.block, x.shape)
    v = x.double() / scale
    values = quant.fp4_values(quant.fp4_unpack(q.data, cols), torch.float64)
    slack = 0.0 if ue8m0 else 2.0**-23
    assert bool(((values - v).abs() <= _fp4_half_step(v) + slack * v.abs()).all())
    assert torch.equal(quant.dequant(q, torch.float64), values * scale)


def test_fp4_casts_of_no_rows_dequantize_to_no_rows():
    assert quant.dequant(quant.cast_to_fp4(torch.randn(0, 64))).shape == (0, 64)  # an empty MoE group


def test_fp4_codes_ties_to_even_and_nibble_order():
    x = torch.tensor([[0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.75, 6.0, -6.0, 0.5, -1.0]])
    q = quant.cast_to_fp4(x, 12, amax_floor=6.0)  # scale exactly 1
    assert float(q.scale) == 1.0
    got = quant.dequant(q)[0].tolist()
    assert got == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, -1.0, 6.0, -6.0, 0.5, -1.0]
    assert int(q.data[0, 5]) == 0x1 | (0xA << 4)  # 0.5 -> code 1 (low nibble), -1.0 -> sign|2 = 0xA (high)


@pytest.mark.parametrize("per", ["row", "tensor"])
def test_int8_symmetric_round_trip(per):
    x = _wide_range((33, 65), f"int8-{per}")
    q = quant.cast_to_int8(x, per)
    # ckgemm's scale layouts: one per row [R], one per tensor []
    assert q.data.dtype == torch.int8 and tuple(q.scale.shape) == ((33,) if per == "row" else ())
    assert int(q.data.abs().max()) == 127 and int(q.data.min()) >= -127
    scale = quant.expand_scale(q.full_scale().double(), q.block, x.shape)
    err = (quant.dequant(q, torch.float64) - x.double()).abs()
    assert bool((err <= scale * (0.5 + 2.0**-16)).all())
    assert float((err / scale).max()) > 0.4
    with pytest.raises(ValueError):
        quant.cast_to_int8(x, "column")


def _deepgemm_token_cast(x):
    """DeepGEMM's per_token_cast_to_fp8 arithmetic, restated: amax of 1x128 blocks (floored at 1e-4) / 448,
    codes ``x * (1 / sf)``."""
    m, n = x.shape
    pad = torch.zeros((m, -(-n // 128) * 128), dtype=x.dtype)
    pad[:, :n] = x
    view = pad.view(m, -1, 128)
    sf = view.abs().float().amax(dim=2).clamp(1e-4) / 448.0
    return (view * (1.0 / sf.unsqueeze(2))).to(torch.float8_e4m3fn).view(m, -1)[:, :n], sf


def _deepgemm_block_cast(x):
    """DeepGEMM's per_block_cast_to_fp8 arithmetic, restated (128x128 blocks)."""
    m, n = x.shape
    pad = torch.zeros((-(-m // 128) * 128, -(-n // 128) * 128), dtype=x.dtype)
    pad[:m, :n] = x
    view = pad.view(-1, 128, pad.size(1) // 128, 128)
    sf = view.abs().float().amax(dim=(1, 3), keepdim=True).clamp(1e-4) / 448.0
    codes = (view * (1.0 / sf)).to(torch.float8_e4m3fn).view_as(pad)[:m, :n]
    return codes, sf.view(view.size(0), view.size(2))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_casts_give_deepgemms_codes_bit_for_bit(dtype):
    # x / s and x * (1 / s) round differently near a code's midpoint (bf16 0.80859375 in a block of amax
    # 2.15625: 160 against DeepGEMM's 176), so the casts must use DeepGEMM's arithmetic to match it.
    x = (_wide_range((300, 520), f"deepgemm-codes-{dtype}")).to(dtype)
    for ours, theirs in ((quant.per_token_cast_to_fp8, _deepgemm_token_cast),
                         (quant.per_block_cast_to_fp8, _deepgemm_block_cast)):
        codes, scale = ours(x)
        ref_codes, ref_scale = theirs(x)
        assert torch.equal(scale, ref_scale)
        assert torch.equal(codes.view(torch.uint8), ref_codes.contiguous().view(torch.uint8))


def test_quantized_unpacks_like_deepgemm_and_checks_input():
    x = _wide_range((4, 128), "unpack")
    q = quant.per_token_cast_to_fp8(x)
    codes, scale = q
    assert codes.dtype == torch.float8_e4m3fn and scale.shape == (4, 1)
    assert q[0] is codes and q[1] is scale and q[-1] is scale and len(q) == 2 and tuple(q[:1]) == (codes,)
    with pytest.raises(ValueError, match="e4m3"):
        quant.per_token_cast_to_fp8(x, dtype=torch.float8_e5m2)
    with pytest.raises(ValueError, match="rows, cols"):
        quant.per_token_cast_to_fp8(x[0])


def test_quantized_is_a_tuple_that_torch_testing_and_copies_take():
    x = _wide_range((4, 256), "tuple")
    q = quant.per_token_cast_to_fp8(x)
    assert isinstance(q, tuple) and tuple(q) == (q.data, q.scale)
    torch.testing.assert_close(q, (q[0].clone(), q[1].clone()))  # a tuple of tensors, as DeepGEMM's casts return
    other = quant.per_token_cast_to_fp8(x * 2)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(q[1], other[1])
    import copy
    import pickle
    qi = quant.cast_to_int8(x)
    for twin in (copy.copy(qi), copy.deepcopy(qi), pickle.loads(pickle.dumps(qi))):
        assert type(twin) is quant.Quantized and (twin.block, twin.fmt, twin.shape, twin.squeezed) == (
            qi.block, qi.fmt, qi.shape, qi.squeezed)
        assert torch.equal(twin.data, qi.data) and torch.equal(twin.scale, qi.scale)
    with pytest.raises(AttributeError, match="read-only"):
        q.block = (1, 1)


@pytest.mark.parametrize("cast", [quant.per_token_cast_to_fp8, quant.per_block_cast_to_fp8, quant.per_row_cast_to_fp8,
                                  quant.per_tensor_cast_to_fp8, quant.per_channel_cast_to_fp8, quant.cast_to_int8,
                                  quant.cast_to_fp4])
def test_casts_do_not_track_gradients(cast):
    """Weights cast from a tensor that requires grad give scales the ops take (they refuse scales needing grad)."""
    x = _wide_range((4, 256), "grad").requires_grad_()
    codes, scale = cast(x)
    assert not codes.requires_grad and not scale.requires_grad


@pytest.mark.parametrize("name", sorted(CASTS))
def test_casts_take_deepgemms_spelling(name):
    """DeepGEMM's ``cast(x, use_ue8m0, gran_k=...)``: the flag positional or by keyword, the block as gran_k."""
    cast, _ = CASTS[name]
    x = _wide_range((256, 256), f"dg-{name}")
    ours = cast(x, 64, ue8m0=True)
    for theirs in (cast(x, True, gran_k=64), cast(x, use_ue8m0=True, gran_k=64), cast(x, True, 64)):
        assert theirs.block == ours.block and torch.equal(theirs.scale, ours.scale)
        assert torch.equal(theirs.data.view(torch.uint8), ours.data.view(torch.uint8))
    plain = cast(x, False)
    assert plain.block == cast(x).block and torch.equal(plain.scale, cast(x).scale)
    with pytest.raises(ValueError, match="disagree"):
        cast(x, 64, gran_k=32)
    with pytest.raises(ValueError, match="disagree"):
        cast(x, ue8m0=True, use_ue8m0=False)
    with pytest.raises(ValueError, match="disagree"):
        cast(x, True, use_ue8m0=False)
    # DeepGEMM's use_packed_ue8m0 keyword: False is its default; True (int32-packed exponents) is refused
    packed_off = cast(x, True, gran_k=64, use_packed_ue8m0=False)
    assert torch.equal(packed_off.scale, ours.scale)
    with pytest.raises(ValueError, match="use_packed_ue8m0=True .*float32 scales"):
        cast(x, True, use_packed_ue8m0=True)
    # all four of DeepGEMM's arguments positionally: cast(x, use_ue8m0, gran_k, use_packed_ue8m0)
    four = cast(x, True, 64, False)
    assert torch.equal(four.data.view(torch.uint8), ours.data.view(torch.uint8)) and torch.equal(four.scale, ours.scale)
    with pytest.raises(ValueError, match="use_packed_ue8m0=True"):
        cast(x, True, 64, True)


@pytest.mark.parametrize("cast,expected", [
    (quant.per_token_cast_to_fp8, lambda g, r, c: (g, r, -(-c // 128))),       # block recipe, A
    (quant.per_block_cast_to_fp8, lambda g, r, c: (g, -(-r // 128), -(-c // 128))),  # block recipe, B
    (quant.per_row_cast_to_fp8, lambda g, r, c: (g, r)),                      # row recipe
    (quant.per_tensor_cast_to_fp8, lambda g, r, c: (g,)),                      # tensor recipe
])
@pytest.mark.parametrize("shape", [(3, 130, 300), (2, 1, 0), (1, 0, 7)])
def test_casts_return_the_ops_scale_layouts(cast, expected, shape):
    """Purpose: the casts feed ckgemm's scaled ops unchanged (README scale table), K = 0 and M = 0 included;
    from_pair reads the same layout back, and dequant inverts the cast within half a code step."""
    x = _wide_range(shape, f"layout-{cast.__name__}-{shape}")
    q = cast(x)
    assert tuple(q.scale.shape) == expected(*shape)
    back = quant.from_pair(q.data, q.scale)  # (with at most one row, 1-row and 128-row blocks are the same)
    assert back.squeezed == q.squeezed and (back.block == q.block or shape[1] <= 1)
    assert torch.equal(back.dequant(torch.float64), q.dequant(torch.float64))
    scale = quant.expand_scale(q.full_scale().double(), q.block, x.shape)
    err = (q.dequant(torch.float64) - x.double()).abs()
    assert bool((err <= scale * _fp8_half_step(x.double() / scale, torch.float8_e4m3fn) * (1 + 2.0**-20)).all())


def test_from_pair_rejects_foreign_layouts():
    codes = torch.zeros(4, 256, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="no scale layout"):
        quant.from_pair(codes, torch.ones(4, 3))


@pytest.mark.parametrize("recipe,dtype,a_scale,b_scale", [
    ("tensor", torch.float8_e4m3fn, (), (3,)), ("row", torch.float8_e4m3fn, (130,), (3, 64)),
    ("block", torch.float8_e4m3fn, (130, 3), (3, 1, 3)), ("tensor", torch.int8, (), (3,)),
    ("row", torch.int8, (130,), (3, 64)),
])
def test_cast_for_gives_the_ops_layout_of_each_recipe(recipe, dtype, a_scale, b_scale):
    """cast_for(x, recipe, operand, dtype): the one recipe -> cast mapping op_tests, the conformance suite,
    the distributed flow and the benchmarks use."""
    gen = torch.Generator().manual_seed(3)
    x, w = torch.randn(130, 300, generator=gen), torch.randn(3, 64, 300, generator=gen)
    qa, qb = quant.cast_for(x, recipe, "a", dtype), quant.cast_for(w, recipe, "b", dtype)
    assert qa.data.dtype == qb.data.dtype == dtype
    assert (tuple(qa.scale.shape), tuple(qb.scale.shape)) == (a_scale, b_scale)


def test_cast_for_refuses_what_no_recipe_means():
    x = torch.ones(4, 8)
    for recipe, operand, dtype, match in (("block", "a", torch.int8, "int8 takes the tensor or row recipe"),
                                          ("column", "a", torch.float8_e4m3fn, "unknown scale recipe"),
                                          ("row", "c", torch.float8_e4m3fn, "operand must be 'a' or 'b'")):
        with pytest.raises(ValueError, match=match):
            quant.cast_for(x, recipe, operand, dtype)


def test_casts_refuse_block_sizes_that_are_not_positive():
    x = torch.randn(4, 64)
    for call in (lambda: quant.cast_to_fp4(x, 0), lambda: quant.cast_to_fp4(x, -1),
                 lambda: quant.cast_to_fp8(x, (0, 0)), lambda: quant.cast_to_fp8(x, (-1, 128))):
        with pytest.raises(ValueError, match="block sizes must be positive ints or None"):
            call()


def test_the_reference_reads_fp4_operands_at_their_logical_k():
    from ckgemm.testing import grouped_gemm_reference

    a, b = torch.randn(5, 200), torch.randn(7, 200)
    q = quant.cast_to_fp4(a)  # 100 bytes a row: two codes per byte
    (out,) = grouped_gemm_reference([q], [b], precision="fp64")
    torch.testing.assert_close(out.double(), quant.dequant(q, torch.float64) @ b.double().t())
