"""ckgemm.testing.check: hard failure with a readable per-group report, tolerances derived per group,
integers exact, NaN never passing, and the optional calc_diff criterion."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing import check, tolerance
from ckgemm.testing.check import ASSERT_CLOSE_DEFAULTS
from support import generator


def _groups(tag, shapes, dtype=torch.float16):
    gen = generator(tag)
    refs = [torch.randn(m, n, generator=gen) * 3 for m, n in shapes]
    return [r.to(dtype) for r in refs], refs


def test_passes_and_returns_a_report():
    outs, refs = _groups("check-pass", [(8, 16), (3, 5), (0, 7)])
    report = check(outs, refs, in_dtype=torch.float16, k=[64, 32, 16], name="fp16 list")
    assert report.passed and len(report.groups) == 3
    s = report.summary()
    assert s["passed"] and s["mismatches"] == 0 and s["failed_groups"] == 0
    assert "fp16 list" in str(report) and "passed" in str(report)


def test_failure_names_group_index_and_values():
    outs, refs = _groups("check-fail", [(8, 16), (4, 4), (6, 9)])
    outs[2] = outs[2].clone()
    outs[2][5, 7] += 1.0
    with pytest.raises(AssertionError) as info:
        check(outs, refs, in_dtype=torch.float16, k=64, name="planted")
    text = str(info.value)
    assert "FAILED: 1 of 3 groups fail" in text
    assert "group 2: first mismatches: (5, 7)" in text
    rows = [line.split() for line in text.splitlines() if line[:1].isdigit()]
    assert [(r[0], r[-1]) for r in rows] == [("0", "ok"), ("1", "ok"), ("2", "FAIL")]


def test_tolerance_is_derived_per_group_from_k_and_max_ref():
    """The same error passes a group with large K and large values but fails a small one."""
    ref_big = torch.full((2, 2), 60.0)
    ref_small = torch.full((2, 2), 0.9)
    err = 0.03
    rtol_b, atol_b = tolerance(torch.float16, torch.float16, torch.float32, 4096, 60.0)
    rtol_s, atol_s = tolerance(torch.float16, torch.float16, torch.float32, 16, 0.9)
    assert err <= atol_b + rtol_b * 60.0 and err > atol_s + rtol_s * 0.9
    outs = [(ref_big + err).half(), (ref_small + err).half()]
    with pytest.raises(AssertionError) as info:
        check(outs, [ref_big, ref_small], in_dtype=torch.float16, k=[4096, 16])
    assert "1 of 2 groups fail" in str(info.value)
    check(outs[:1], [ref_big], in_dtype=torch.float16, k=[4096])


def test_integers_are_exact():
    gen = generator("check-int")
    ref = torch.randint(-2**20, 2**20, (16, 16), generator=gen, dtype=torch.int64)
    out = ref.to(torch.int32)
    check(out, ref, in_dtype=torch.int8, k=4096)
    out[3, 3] += 1
    with pytest.raises(AssertionError, match=r"\(3, 3\)"):
        check(out, ref, in_dtype=torch.int8, k=4096)
    with pytest.raises(ValueError, match="compared exactly"):
        check(out, ref, rtol=0.1, atol=1.0)


def test_int32_outputs_against_an_int64_reference_wrap_as_the_accumulator():
    """K = 131072 products of (-128)*(-128) sum to 2^31: the exact int64 reference says 2^31, the int32 accumulator
    -2^31 (README). check judges the int32 output against the reference wrapped to int32; anything else fails."""
    exact = torch.tensor([[2**31, 2**31 + 5, -(2**31) - 1, 7]], dtype=torch.int64)
    wrapped = torch.tensor([[-(2**31), -(2**31) + 5, 2**31 - 1, 7]], dtype=torch.int32)
    check(wrapped, exact, in_dtype=torch.int8, k=131072)
    for saturated in (exact.clamp(-(2**31), 2**31 - 1).to(torch.int32), wrapped + torch.tensor([[0, 0, 0, 1]])):
        assert not check(saturated.to(torch.int32), exact, in_dtype=torch.int8, k=131072,
                         raise_on_failure=False).passed


def test_nan_never_passes_even_against_nan():
    ref = torch.tensor([[1.0, float("nan")]])
    with pytest.raises(AssertionError, match="NaN"):
        check(ref.clone(), ref, rtol=1.0, atol=1.0)
    unwritten = torch.full((2, 2), float("nan"))
    with pytest.raises(AssertionError):
        check(unwritten, torch.zeros(2, 2), rtol=1e9, atol=1e9)


def test_calc_diff_is_a_second_criterion():
    gen = generator("check-diff")
    ref = torch.randn(64, 64, generator=gen)
    out = ref * 1.01  # within rtol 0.05 everywhere, calc_diff = 0.01^2 / (1 + 1.01^2) ~ 5e-5
    check(out, ref, rtol=0.05, atol=0.0, max_diff=1e-4)
    with pytest.raises(AssertionError, match="calc_diff .* exceeds the bound"):
        check(out, ref, rtol=0.05, atol=0.0, max_diff=1e-5)


def test_explicit_tolerances_and_argument_errors():
    outs, refs = _groups("check-explicit", [(4, 4), (4, 4)], torch.float32)
    outs[1] = outs[1] + 0.5
    check(outs, refs, rtol=[0.0, 0.0], atol=[0.0, 0.51])
    with pytest.raises(AssertionError):
        check(outs, refs, rtol=[0.0, 0.0], atol=[0.0, 0.49])
    with pytest.raises(ValueError, match="both rtol and atol"):
        check(outs, refs, rtol=0.1)
    with pytest.raises(ValueError, match="in_dtype and k together"):
        check(outs, refs, in_dtype=torch.float32)
    with pytest.raises(ValueError, match="in_dtype and k together"):
        check(outs, refs, k=64)
    with pytest.raises(ValueError, match="scaled=True derives"):  # never silently assert_close's defaults
        check(outs, refs, scaled=True)
    check(outs, refs, scaled=True, rtol=[0.0, 0.0], atol=[0.0, 0.51])  # explicit tolerances still rule
    with pytest.raises(ValueError, match="2 entries for 3 groups"):
        check(outs + outs[:1], refs + refs[:1], rtol=[0, 0], atol=[0, 0])
    with pytest.raises(AssertionError, match="shape"):
        check(torch.zeros(2, 3), torch.zeros(3, 2), rtol=0, atol=0)


def _ulps_up(x: torch.Tensor, steps: int) -> torch.Tensor:
    """Positive ``x`` moved up by ``steps`` units in the last place of its own dtype."""
    ints = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}[x.dtype]
    return (x.view(ints) + steps).view(x.dtype)


def test_without_tolerances_it_uses_assert_close_defaults():
    """No rtol/atol and no in_dtype/k: the defaults torch.testing.assert_close uses for the dtypes
    (fp16 rtol 1e-3, bf16 1.6e-2, fp32 1.3e-6): one ulp passes, a few ulps fail, as torch decides."""
    gen = generator("check-defaults")
    ref = (torch.randn(32, 32, generator=gen).abs() + 1.0) * 1000  # atol (1e-5) negligible: rtol decides
    for dtype, fail_steps in ((torch.float32, 30), (torch.float16, 3), (torch.bfloat16, 5)):
        r = ref.to(dtype)
        report = check(_ulps_up(r, 1), r)
        assert (report.groups[0].stats.rtol, report.groups[0].stats.atol) == ASSERT_CLOSE_DEFAULTS[dtype]
        torch.testing.assert_close(_ulps_up(r, 1), r)  # torch agrees on both sides
        with pytest.raises(AssertionError, match="1 of 1 groups fail"):
            check(_ulps_up(r, fail_steps), r)
        with pytest.raises(AssertionError):
            torch.testing.assert_close(_ulps_up(r, fail_steps), r)
    # mixed dtypes: the looser of the two; fp8 and integers: exact, as in assert_close
    assert check(ref.half(), ref).groups[0].stats.rtol == 1e-3
    f8 = (ref / 1000).to(torch.float8_e4m3fn)
    check(f8, f8.clone())
    with pytest.raises(AssertionError):
        check(f8, (ref / 1000 * 1.2).to(torch.float8_e4m3fn))
    ints = torch.arange(12, dtype=torch.int32)
    check(ints, ints.clone())
    with pytest.raises(AssertionError, match=r"\(5,\)"):
        check(ints, torch.where(ints == 5, 6, ints))


def test_raise_on_failure_false_returns_the_failed_report():
    outs, refs = _groups("check-noraise", [(4, 4), (3, 5)])
    outs[1] = outs[1].clone()
    outs[1][2, 3] += 1.0
    report = check(outs, refs, in_dtype=torch.float16, k=64, raise_on_failure=False)
    assert not report.passed and [g.passed for g in report.groups] == [True, False]
    assert report.groups[1].stats.examples[0][0] == (2, 3) and "FAILED: 1 of 2 groups fail" in str(report)


@pytest.mark.parametrize("fault", ["times 1.01", "rounded to e4m3"])
def test_unscaled_fp8_outputs_off_by_a_percent_or_rounded_to_fp8_fail(fault):
    """fp8 x fp8 products are exact in fp32: the check uses the accumulation model, not CK-tile's 3-bit compute
    term (rtol 2^-4), under which these faults passed."""
    gen = torch.Generator().manual_seed(5)
    a = (torch.randn(64, 512, generator=gen) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(96, 512, generator=gen) * 4).to(torch.float8_e4m3fn)
    ref = a.float() @ b.float().t()
    out = ref * 1.01 if fault == "times 1.01" else ref.to(torch.float8_e4m3fn).float()
    assert check(ref.clone(), ref, in_dtype=torch.float8_e4m3fn, k=512).passed
    with pytest.raises(AssertionError):
        check(out, ref, in_dtype=torch.float8_e4m3fn, k=512)


def test_check_refuses_what_it_cannot_judge_and_compares_big_integers_exactly():
    from ckgemm.testing import gpu_verify

    with pytest.raises(ValueError, match="both be tensors or both be lists"):
        check(torch.ones(2), [torch.ones(2)])
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        check([torch.ones(2)], [[1.0, 1.0]])
    with pytest.raises(TypeError, match="in_dtype must be a torch.dtype"):
        check(torch.ones(2), torch.ones(2), in_dtype="bf16", k=8)
    for fn in (lambda a, b: check(a, b), lambda a, b: gpu_verify(a, b, 0.0, 0.0)):
        with pytest.raises(TypeError, match="complex"):
            fn(torch.tensor([1 + 1j]), torch.tensor([1 + 2j]))
    with pytest.raises(AssertionError, match="1 mismatches"):  # float64 would call them equal
        check(torch.tensor([2**53 + 1]), torch.tensor([2**53]))
