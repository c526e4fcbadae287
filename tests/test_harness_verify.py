"""gpu_verify's torch fallback gives the same verdict and statistics as the CPU error_stats/check path on
random and adversarial inputs (NaN, Inf, exact ties at the tolerance boundary), across chunk boundaries;
and the stats layout in Python matches the one documented in csrc/common/verify.cuh."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from ckgemm.testing import check, error_stats, gpu_verify
from ckgemm.testing import verify
from support import generator

VERIFY_CUH = Path(__file__).resolve().parents[1] / "csrc" / "common" / "verify.cuh"


def _assert_same(out, ref, rtol, atol, chunk=1 << 22):
    v = gpu_verify(out, ref, rtol, atol, chunk_elems=chunk)
    s = error_stats(out, ref, rtol, atol)
    assert v.path.startswith(verify.FALLBACK)
    assert (v.mismatches, v.nan_out, v.inf_out, v.nan_ref, v.inf_ref) == \
        (s.mismatches, s.nan_out, s.inf_out, s.nan_ref, s.inf_ref)
    assert v.max_abs_err == s.max_abs_err and v.max_abs_ref == s.max_abs_ref and v.numel == s.numel
    expected_index = -1 if s.max_abs_index is None else int(torch.tensor(s.max_abs_index) @ torch.tensor(
        [int(torch.tensor(out.shape[i + 1:]).prod()) for i in range(out.dim())]))
    assert v.max_abs_index == expected_index
    assert v.out_all_zero == s.out_all_zero and v.passed == s.passed
    return v


@pytest.mark.parametrize("chunk", [7, 64, 1 << 22])
@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float32), (torch.float16, torch.float32),
                                    (torch.bfloat16, torch.bfloat16), (torch.int32, torch.int64)],
                         ids=["f32", "f16-vs-f32", "bf16", "i32-vs-i64"])
def test_random_inputs_same_verdict(dtypes, chunk):
    out_dtype, ref_dtype = dtypes
    gen = generator(f"verify-{out_dtype}-{chunk}")
    if out_dtype.is_floating_point:
        ref = (torch.randn(23, 41, generator=gen) * 8).to(ref_dtype)
        out = (ref.double() + 0.01 * torch.randn(ref.shape, generator=gen, dtype=torch.float64)).to(out_dtype)
        for rtol, atol in ((0.0, 0.0), (1e-3, 1e-3), (1e-2, 0.05), (1.0, 1.0)):
            _assert_same(out, ref, rtol, atol, chunk)
    else:
        ref = torch.randint(-2**30, 2**30, (23, 41), generator=gen, dtype=ref_dtype)
        out = ref.to(out_dtype)
        out[torch.rand(ref.shape, generator=gen) < 0.05] += 3
        v = _assert_same(out, ref, 0.0, 0.0, chunk)
        assert v.mismatches > 0 and not v.passed


def _adversarial():
    """Specials everywhere, and finite pairs sitting exactly on, just inside and just outside the bound."""
    rtol, atol = 0.25, 0.5  # powers of two: bound = atol + rtol*|ref| is exact in float64
    ref = torch.tensor([2.0, 2.0, 2.0, -4.0, 0.0, float("nan"), 1.0, float("nan"), float("inf"), float("inf"),
                        float("-inf"), 3.0, float("inf"), 5.0, 7.0, -7.0], dtype=torch.float64)
    tie = 0.5 + 0.25 * 2.0
    out = torch.tensor([2.0 + tie, 2.0 + tie + 2.0**-50, 2.0 - tie, -4.0 - 1.5, 0.5, 1.0, float("nan"), float("nan"),
                        float("inf"), float("-inf"), float("-inf"), float("inf"), 3.0, 5.0, 7.0, -7.0 - 2.25],
                       dtype=torch.float64)
    return out, ref, rtol, atol


@pytest.mark.parametrize("chunk", [1, 3, 1 << 22])
def test_adversarial_inputs_same_verdict(chunk):
    out, ref, rtol, atol = _adversarial()
    v = _assert_same(out, ref, rtol, atol, chunk)
    # 0: tie passes; 1: one ulp past fails; 2: tie passes; 3: -5.5 vs -4 is |1.5| = 0.5+1.0 tie passes;
    # 4: 0.5 vs 0 tie passes; 5-7: NaN fail; 8: inf==inf passes; 9: -inf vs inf fails; 10 passes;
    # 11: inf vs 3 fails; 12: 3 vs inf fails; 13, 14 pass; 15: |2.25| = 0.5+1.75 tie passes.
    assert v.mismatches == 7 and v.nan_out == 2 and v.inf_out == 4 and v.nan_ref == 2 and v.inf_ref == 4
    assert v.max_abs_err == 2.25 and v.max_abs_index == 15
    with pytest.raises(AssertionError):
        check(out, ref, rtol=rtol, atol=atol)


def test_argmax_ties_pick_the_first_index_across_chunks():
    out = torch.zeros(10, dtype=torch.float64)
    ref = torch.zeros(10, dtype=torch.float64)
    out[[3, 8]] = 1.5  # equal maxima in different chunks
    out[0] = float("nan")
    for chunk in (2, 4, 100):
        assert gpu_verify(out, ref, 0.0, 0.0, chunk_elems=chunk).max_abs_index == 3


def test_empty_all_special_and_all_zero():
    empty = gpu_verify(torch.zeros(0, 5), torch.zeros(0, 5), 0.0, 0.0)
    assert empty.numel == 0 and empty.passed and empty.max_abs_index == -1 and empty.out_all_zero
    nan = torch.full((4,), float("nan"))
    v = _assert_same(nan, torch.ones(4), 1.0, 1.0)
    assert v.max_abs_index == -1 and v.max_abs_err == 0.0 and v.mismatches == 4 and not v.out_all_zero
    zero = _assert_same(torch.zeros(6), torch.ones(6), 0.0, 2.0)
    assert zero.passed and zero.out_all_zero


def test_op_selection_and_shape_errors():
    calls = []

    def fake_op(out, ref, rtol, atol):
        calls.append(1)
        return torch.zeros(verify.STATS_SIZE, dtype=torch.float64)

    v = gpu_verify(torch.ones(3), torch.ones(3), 0.0, 0.0, op=fake_op)
    assert calls == [] and "tensors on cpu" in v.path, "the fused op only runs on GPU tensors"
    expected = "no fused op registered" if verify.registered_op() is None else "tensors on cpu"
    assert expected in gpu_verify(torch.ones(3), torch.ones(3), 0.0, 0.0).path
    with pytest.raises(ValueError, match="shape"):
        gpu_verify(torch.ones(3), torch.ones(4), 0.0, 0.0)
    with pytest.raises(ValueError, match="10"):
        verify.VerifyStats.from_tensor(torch.zeros(9), 0.0, 0.0, "x")


def test_stats_layout_matches_verify_cuh():
    """The index names and order in the header's enum are the ones VerifyStats reads."""
    text = VERIFY_CUH.read_text()
    enum = re.search(r"enum StatsIndex : int \{(.*?)\};", text, re.S).group(1)
    entries = re.findall(r"k(\w+) = (\d+)", enum)
    names = [re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() for name, _ in entries]
    assert [int(i) for _, i in entries] == list(range(len(entries)))
    assert names[-1] == "stats_size" and int(entries[-1][1]) == verify.STATS_SIZE
    assert names[:-1] == list(verify.STATS_FIELDS)
    for i, field in enumerate(verify.STATS_FIELDS):
        assert f"[{i}] {field}" in (verify.__doc__ or ""), f"verify.py's docstring lacks [{i}] {field}"
