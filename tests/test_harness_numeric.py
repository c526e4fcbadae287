"""ckgemm.testing.numeric: calc_diff identities, CK-tile's tolerance formulas against their worked values,
error_stats on random and adversarial data, and assert_bitwise_equal's report."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing import assert_bitwise_equal, calc_diff, error_stats, tolerance
from ckgemm.testing.numeric import ck_absolute_threshold, ck_relative_threshold, mantissa_bits
from support import generator

F16, BF16, F32, E4M3, E4M3FNUZ, I8, I32 = (torch.float16, torch.bfloat16, torch.float32, torch.float8_e4m3fn,
                                           torch.float8_e4m3fnuz, torch.int8, torch.int32)


def test_calc_diff_identities():
    x = torch.randn(64, 48, generator=generator("calc-diff"), dtype=torch.float64)
    assert calc_diff(x, x) == 0.0
    assert calc_diff(x, -x) == pytest.approx(2.0, abs=1e-15)
    assert calc_diff(x, torch.zeros_like(x)) == pytest.approx(1.0, abs=1e-15)
    assert calc_diff(torch.zeros(3, 4), torch.zeros(3, 4)) == 0.0
    y = x + 0.1 * torch.randn(x.shape, generator=generator("calc-diff-y"), dtype=torch.float64)
    assert calc_diff(x, y) == pytest.approx(calc_diff(y, x), rel=1e-12)
    # 1 - 2<x,y>/(|x|^2+|y|^2) == |x-y|^2 / (|x|^2+|y|^2)
    expected = float(((x - y) ** 2).sum() / ((x * x).sum() + (y * y).sum()))
    assert calc_diff(x, y) == pytest.approx(expected, rel=1e-10)
    for c in (0.5, 2.0, 3.0):  # scale-aware: (1-c)^2 / (1+c^2)
        assert calc_diff(x, c * x) == pytest.approx((1 - c) ** 2 / (1 + c * c), rel=1e-12)


def test_calc_diff_runs_in_float64():
    """In fp16 the sums of squares would overflow (max 65504); float64 gets the exact small value."""
    x = torch.full((4096,), 200.0, dtype=F16)
    y = x.clone()
    y[0] = 201.0
    assert calc_diff(x, y) == pytest.approx(1.0 / (4096 * 200.0**2 + 4095 * 200.0**2 + 201.0**2), rel=1e-6)
    with pytest.raises(ValueError, match="shapes differ"):
        calc_diff(x, y[:10])


def test_mantissa_bits_from_the_dtype_table_and_finfo():
    assert [mantissa_bits(d) for d in (F16, BF16, E4M3, E4M3FNUZ, F32, torch.float64, I8, I32)] == \
        [10, 7, 3, 3, 23, 52, 0, 0]


# ck_tile.md §2.1 worked values (newest formula: e = floor(log2 max), a full output ulp), max|ref| = 64.
@pytest.mark.parametrize("inp,out,acc,k,rtol,atol", [
    (F16, F16, F32, 4096, 4.8828125e-4, 0.0625),
    (BF16, BF16, F32, 4096, 3.90625e-3, 0.5),
    (E4M3, F32, F32, 4096, 0.0625, 4.0),
    (E4M3FNUZ, F32, F32, 4096, 0.0625, 4.0),
    (I8, I32, I32, 4096, 0.0, 0.0),
])
def test_ck_worked_values(inp, out, acc, k, rtol, atol):
    assert tolerance(inp, out, acc, k, 64.0) == (pytest.approx(rtol, rel=1e-12), pytest.approx(atol, rel=1e-12))


def test_accumulation_term_takes_over_past_k_8192():
    """2^-24 * K overtakes fp16's half ulp 2^-11 once K > 8192."""
    assert tolerance(F16, F16, F32, 8192, 64.0)[0] == 2.0**-11
    assert tolerance(F16, F16, F32, 16384, 64.0)[0] == 2.0**-10
    assert tolerance(F16, F16, F32, 16384, 64.0)[1] == max(2.0 ** (6 - 23) * 0.5 * 16384, 2.0 ** (6 - 10))


def test_exponent_is_floored_and_zero_max_gives_zero_atol():
    # max 100: floor(log2 100) = 6, same atol as 64; max 127.99 too; 128 moves to e = 7.
    assert tolerance(F16, F16, F32, 64, 100.0)[1] == tolerance(F16, F16, F32, 64, 64.0)[1] == 2.0**-4
    assert tolerance(F16, F16, F32, 64, 127.99)[1] == 2.0**-4
    assert tolerance(F16, F16, F32, 64, 128.0)[1] == 2.0**-3
    assert tolerance(F16, F16, F32, 64, 0.75)[1] == 2.0 ** (-1 - 10)
    assert tolerance(F16, F16, F32, 64, 0.0)[1] == 0.0


def test_split_k_relaxes_tolerance():
    one = tolerance(BF16, BF16, F32, 65536, 64.0)
    split = tolerance(BF16, BF16, F32, 65536, 64.0, k_batch=4)
    assert split[0] >= one[0] and split[1] >= one[1]
    assert split[0] == max(ck_relative_threshold(BF16, BF16, F32, 16384), ck_relative_threshold(BF16, BF16, BF16, 4))
    assert split[1] == max(ck_absolute_threshold(BF16, BF16, F32, 16.0, 16384), ck_absolute_threshold(BF16, BF16, BF16, 64.0, 4))
    with pytest.raises(ValueError):
        tolerance(BF16, BF16, F32, 64, 1.0, k_batch=0)


def test_error_stats_locates_the_worst_element():
    gen = generator("error-stats")
    ref = torch.randn(37, 53, generator=gen)
    out = ref + 1e-4 * torch.randn(ref.shape, generator=gen)
    out[11, 29] += 0.5
    out[30, 1] = ref[30, 1] * 1.9  # the largest relative error...
    ref[30, 1] = 0.25  # ...once ref is set
    out[30, 1] = 0.25 * 1.9
    s = error_stats(out, ref, rtol=1e-3, atol=1e-3)
    assert s.max_abs_index == (11, 29) and s.max_abs_err == pytest.approx(float((out - ref).abs().max()))
    assert s.max_rel_index == (30, 1) and s.max_rel_err == pytest.approx(0.9, rel=1e-6)
    assert s.mismatches == 2 and not s.passed
    assert [e[0] for e in s.examples] == [(11, 29), (30, 1)]
    assert s.max_abs_ref == pytest.approx(float(ref.abs().max()))
    text = str(s)
    assert "2 of 1961 mismatched" in text and "(11, 29)" in text


def test_error_stats_nan_inf_and_ties():
    ref = torch.tensor([1.0, 2.0, float("nan"), float("inf"), float("-inf"), 4.0, 3.0, 0.0], dtype=torch.float64)
    out = torch.tensor([1.0, 3.0, float("nan"), float("inf"), float("inf"), float("nan"), 3.0 + 2.0**-40, 0.0],
                       dtype=torch.float64)
    # rtol 0.25, atol 0.5: element 1 has |3-2| = 1 = 0.5 + 0.25*2 exactly -> passes (a tie is not a mismatch).
    s = error_stats(out, ref, rtol=0.25, atol=0.5)
    assert (s.nan_out, s.nan_ref, s.inf_out, s.inf_ref) == (2, 1, 2, 2)
    assert s.mismatches == 3  # NaN vs NaN, -inf vs +inf, NaN vs 4
    assert [e[0] for e in s.examples] == [(2,), (4,), (5,)]
    tighter = error_stats(out, ref, rtol=0.25, atol=0.5 - 2.0**-40)
    assert tighter.mismatches == 4, "one step below the tie must fail"
    assert s.max_abs_index == (1,) and s.max_abs_err == 1.0 and s.max_abs_ref == 4.0


def test_error_stats_integers_exact_and_all_zero_flag():
    ref = torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4) * 1000003
    out = ref.to(torch.int32)
    assert error_stats(out, ref).passed
    out[2, 3] += 1
    s = error_stats(out, ref)
    assert s.mismatches == 1 and s.max_abs_index == (2, 3) and s.max_abs_err == 1.0
    z = error_stats(torch.zeros(4), torch.ones(4))
    assert z.out_all_zero and "all zeros" in str(z)
    with pytest.raises(ValueError, match="shape"):
        error_stats(torch.zeros(4), torch.zeros(5))


def test_error_stats_to_dict_is_json_ready():
    import json

    s = error_stats(torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]))
    d = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert d["mismatches"] == 1 and d["passed"] is False and d["nan_out"] == 1


def test_calc_diff_past_float64_squares_and_mismatch_mask_checks_its_arguments():
    from ckgemm.testing import mismatch_mask

    big = torch.full((4,), 1e200, dtype=torch.float64)
    assert calc_diff(big, big) == 0.0 and abs(calc_diff(big, 2 * big) - 0.2) < 1e-12
    with pytest.raises(ValueError, match="shape"):
        mismatch_mask(torch.ones(3), torch.ones(2, 3), 0.0, 0.0)
    with pytest.raises(ValueError, match="tolerances must be >= 0"):
        mismatch_mask(torch.ones(3), torch.ones(3), -1.0, 0.0)


def test_tolerance_refuses_a_negative_k_or_an_unknown_max():
    with pytest.raises(ValueError, match="K >= 0"):
        tolerance(torch.float16, torch.float16, torch.float32, -1, 1.0)
    with pytest.raises(ValueError, match="max|ref|"):
        tolerance(torch.float16, torch.float16, torch.float32, 64, float("nan"))


def test_scaled_tolerance_admits_fp16_outputs_rounded_into_its_subnormals():
    """Outputs ~1e-6 rounded to fp16 land in its subnormal range (a fixed step of 2^-24): that rounding passes,
    and an output a few steps off does not."""
    from ckgemm.testing import numeric

    ref = torch.randn(4096, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 1e-6
    rtol, atol = numeric.scaled_tolerance(torch.float8_e4m3fn, torch.float16, 4096, float(ref.abs().max()))
    assert atol >= 2.0**-24 and not numeric.mismatch_mask(ref.to(torch.float16), ref, rtol, atol).any()
    off = ref.to(torch.float16).double() + 4 * 2.0**-24
    assert numeric.mismatch_mask(off, ref, rtol, atol).any()


def test_assert_bitwise_equal_names_the_first_differing_byte_and_element():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    assert_bitwise_equal(x, x.clone())
    assert_bitwise_equal(x.t(), x.t().contiguous())  # strides may differ
    assert_bitwise_equal(torch.full((2,), float("nan")), torch.full((2,), float("nan")))  # same payload
    y = x.clone()
    y[1, 2] = 1.0
    y[2, 3] = float("nan")
    with pytest.raises(AssertionError, match=r"case 3: .*2 of 12 elements differ; the first at byte 12 \(element 6, "
                                             r"index \(1, 2\)\): 1\.0 \(0x3f80\) vs"):
        assert_bitwise_equal(y, x, "case 3")
    with pytest.raises(AssertionError, match=r"byte 3 \(element 0, index \(0,\)\): 0\.0 \(0x00000000\) vs -0\.0 "
                                             r"\(0x80000000\)"):
        assert_bitwise_equal(torch.zeros(1), -torch.zeros(1))  # equal numbers, different bits
    for other in (x.float(), x[:2]):
        with pytest.raises(AssertionError, match="vs"):
            assert_bitwise_equal(other, x)
    ints = torch.arange(6, dtype=torch.int32).view(2, 3)
    with pytest.raises(AssertionError, match=r"1 of 6 elements differ.*index \(1, 1\)\): -1 \(0xffffffff\) vs 4"):
        assert_bitwise_equal(torch.where(ints == 4, -1, ints), ints)


def test_mismatch_examples_print_enough_digits_to_differ():
    out = torch.tensor([37492304.0, 2.0, float("nan")])
    ref = torch.tensor([37492300.0, 2.5, 1.0])
    text = error_stats(out, ref).examples_text()
    assert text == "(0,): out 37492304 ref 37492300, (1,): out 2 ref 2.5, (2,): out nan ref 1"  # 6 digits: alike
