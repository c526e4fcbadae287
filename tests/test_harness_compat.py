"""ckgemm.testing.compat: DeepGEMM's and aiter's testing helpers on the harness, on the CPU (their GPU paths
carry the gpu marker in test_harness_gpu.py): their signatures and units, and the places where they must not
pass silently as the originals can."""
from __future__ import annotations

import inspect
import json
import time

import pytest
import torch

from ckgemm.testing.compat import aiter, ck, deep_gemm
from ckgemm.testing.numeric import assert_bitwise_equal, calc_diff, count_bytes

# The originals' signatures (deep_gemm/testing/bench.py and numeric.py, aiter/test_common.py, CK-tile's
# check_err.hpp with its template arguments first): a ported script passes these names, positionally or by
# keyword, so they are part of the contract.
ORIGINAL_PARAMETERS = {
    deep_gemm.bench: ["fn", "num_warmups", "num_tests", "high_precision"],
    deep_gemm.bench_kineto: ["fn", "kernel_names", "num_tests", "suppress_kineto_output", "trace_path", "flush_l2",
                             "with_multiple_kernels", "barrier"],
    aiter.checkAllclose: ["a", "b", "rtol", "atol", "tol_err_ratio", "msg", "printNum", "printLog", "max_abs_delta",
                          "catastrophic_check", "mask"],
    aiter.run_perftest: ["func", "args", "num_iters", "num_warmup", "testGraph", "num_rotate_args", "needTrace",
                         "use_cuda_event"],
    aiter.perftest: ["num_iters", "num_warmup", "testGraph", "num_rotate_args", "needTrace", "use_cuda_event"],
    aiter.benchmark: [],
    deep_gemm.calc_diff: ["x", "y"],
    deep_gemm.count_bytes: ["tensors"],
    deep_gemm.assert_bitwise_equal: ["x", "y", "label"],
    ck.check_err: ["out", "ref", "msg", "rtol", "atol", "allow_infinity_ref"],
    ck.get_relative_threshold: ["compute", "out", "acc", "number_of_accumulations"],
    ck.calculate_rtol_atol: ["K", "kbatch", "max_accumulated_value"],
}


@pytest.mark.parametrize("fn", list(ORIGINAL_PARAMETERS), ids=lambda f: f.__name__)
def test_the_originals_parameters_come_first_in_their_order(fn):
    names = [p for p in inspect.signature(fn).parameters]
    assert names[:len(ORIGINAL_PARAMETERS[fn])] == ORIGINAL_PARAMETERS[fn]


def test_count_bytes_walks_lists_and_skips_none():
    a = torch.empty(3, 5, dtype=torch.bfloat16)
    b = torch.empty(7, dtype=torch.int32)
    assert count_bytes(a, None, [b, (a, None)]) == 30 + 28 + 30
    assert deep_gemm.count_bytes() == 0
    with pytest.raises(TypeError, match="got int"):
        count_bytes(a, 3)
    assert deep_gemm.calc_diff is calc_diff and deep_gemm.assert_bitwise_equal is assert_bitwise_equal


def _mm_case():
    gen = torch.Generator().manual_seed(11)
    x, y = torch.randn(64, 64, generator=gen), torch.randn(64, 64, generator=gen)
    return x, y


def test_bench_kineto_times_a_named_cpu_operator_in_seconds():
    x, y = _mm_case()
    calls = []

    def fn():
        calls.append(1)
        torch.mm(x, y)
        torch.mm(x, y)

    t = deep_gemm.bench_kineto(fn, "aten::mm", num_tests=4, device="cpu")
    assert len(calls) == 1 + 4  # one unprofiled call, then num_tests
    assert isinstance(t, float) and 0 < t < 1.0
    per_call = deep_gemm.bench_kineto(fn, ("aten::mm",), num_tests=4, with_multiple_kernels=True, device="cpu")
    assert isinstance(per_call, tuple) and len(per_call) == 1 and per_call[0] > 0


def test_bench_kineto_averages_per_launch_or_sums_per_call(monkeypatch):
    table = {"gemm_kernel<128>": (30.0, 6), "gemm_kernel<256>": (10.0, 2), "reduce_kernel": (5.0, 3)}
    seen = []

    def fake_profile(fn, iters, *, gpu, before=None, trace_path=None):
        seen.append(iters)
        return dict(table)

    monkeypatch.setattr(deep_gemm.kineto, "profile_table", fake_profile)
    fn = lambda: None  # noqa: E731
    assert deep_gemm.bench_kineto(fn, "gemm_kernel<128>", num_tests=2, device="cpu") == pytest.approx(5e-6)  # 30 us / 6 launches
    both = deep_gemm.bench_kineto(fn, ("gemm_kernel", "reduce"), num_tests=2, with_multiple_kernels=True,
                                  device="cpu")
    assert both == pytest.approx((20e-6, 2.5e-6))  # (30 + 10) us / 2 calls, 5 us / 2 calls
    with pytest.raises(ValueError, match="2 CPU operators contain 'gemm_kernel'"):
        deep_gemm.bench_kineto(fn, "gemm_kernel", num_tests=2, device="cpu")
    assert seen == [2, 2, 2]


def test_bench_kineto_refuses_names_it_cannot_time():
    x, y = _mm_case()
    fn = lambda: torch.mm(x, y).add_(1.0)  # noqa: E731
    with pytest.raises(ValueError, match=r"no CPU operator name contains 'no_such_kernel'.*aten::mm"):
        deep_gemm.bench_kineto(fn, "no_such_kernel", num_tests=2, device="cpu")
    with pytest.raises(ValueError, match=r"CPU operators contain 'aten::'.*with_multiple_kernels=True"):
        deep_gemm.bench_kineto(fn, "aten::", num_tests=2, device="cpu")
    for bad in ("", ("aten::mm", ""), ["aten::mm"], ()):
        with pytest.raises(TypeError, match="kernel_names"):
            deep_gemm.bench_kineto(fn, bad, num_tests=2, device="cpu")
    with pytest.raises(ValueError, match="num_tests must be >= 1"):
        deep_gemm.bench_kineto(fn, "aten::mm", num_tests=0, device="cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no GPU"):
            deep_gemm.bench_kineto(fn, "aten::mm", device="cuda")


def test_bench_kineto_runs_the_barrier_and_writes_the_trace(tmp_path, capfd):
    x, y = _mm_case()
    barriers = []
    path = tmp_path / "trace.json"
    deep_gemm.bench_kineto(lambda: torch.mm(x, y), "aten::mm", num_tests=3, barrier=lambda: barriers.append(1),
                           trace_path=str(path), suppress_kineto_output=True, device="cpu")
    assert len(barriers) == 3
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("name") == "aten::mm" for e in events)
    print("stdout is back")
    assert "stdout is back" in capfd.readouterr().out  # suppress_kineto_output restored the descriptors


def test_deep_gemm_bench_returns_seconds():
    t = deep_gemm.bench(lambda: time.sleep(0.002), num_warmups=1, num_tests=3, device="cpu")
    assert isinstance(t, float) and 0.002 <= t < 0.5


def test_check_allclose_returns_zero_when_close_and_the_ratio_when_within_tolerance(capsys):
    ref = torch.linspace(-1, 1, 100)
    assert aiter.checkAllclose(ref + 0.001, ref, msg="close ") == 0.0
    assert "passed~" in capsys.readouterr().out
    out = ref.clone()
    out[:3] += 1.0  # 3% of the elements: under the default tol_err_ratio of 5%
    assert aiter.checkAllclose(out, ref) == pytest.approx(0.03)
    assert "warning!" in capsys.readouterr().out
    assert aiter.checkAllclose(out.bfloat16(), ref, atol=0.01, rtol=0.01) == pytest.approx(0.03)  # dtypes may differ
    capsys.readouterr()
    assert aiter.checkAllclose(out, ref, printLog=False) == pytest.approx(0.03)
    assert capsys.readouterr().out == ""


def test_check_allclose_fails_loudly_above_the_ratio_unless_told_otherwise(capsys):
    ref = torch.linspace(-1, 1, 100)
    out = ref.clone()
    out[:10] += 1.0
    with pytest.raises(AssertionError, match=r"mismatch above tol_err_ratio.*10\.0% \(10 of 100\)"):
        aiter.checkAllclose(out, ref, msg="case 7: ")
    assert "failed!" in capsys.readouterr().out
    assert aiter.checkAllclose(out, ref, strict=False) == pytest.approx(0.10)
    assert aiter.checkAllclose(out, ref, tol_err_ratio=0.2) == pytest.approx(0.10)
    with pytest.raises(ValueError, match="shapes differ"):
        aiter.checkAllclose(ref[:50], ref)  # never broadcast


def test_check_allclose_catastrophic_results_raise_even_when_not_strict():
    ref = torch.linspace(-1, 1, 1000)
    out = ref.clone()
    out[0] = float("nan")  # one element in a thousand: under the ratio
    assert aiter.checkAllclose(out, ref, printLog=False) == pytest.approx(0.001)  # NaN counts as a mismatch
    with pytest.raises(AssertionError, match="catastrophic"):
        aiter.checkAllclose(out, ref, catastrophic_check=True, strict=False)
    assert aiter.checkAllclose(out, ref, catastrophic_check=True, strict=False, printLog=False) == 1.0  # aiter's quiet path
    out[:100] = float("nan")  # 10%: at or above tol_err_ratio the quiet path returns the ratio itself
    assert aiter.checkAllclose(out, ref, catastrophic_check=True, strict=False, printLog=False) == pytest.approx(0.1)
    codes = torch.tensor([1.0, 2.0, 448.0]).to(torch.float8_e4m3fn)  # fp8 has no isfinite: compared widened
    assert aiter.checkAllclose(codes, codes.clone(), catastrophic_check=True) == 0.0
    with pytest.raises(AssertionError, match="catastrophic"):
        aiter.checkAllclose(codes, torch.tensor([1.0, 2.0, 0.0]).to(torch.float8_e4m3fn), catastrophic_check=True,
                            tol_err_ratio=0.5)
    out = ref.clone()
    out[5] += 0.6  # more than half of max|ref| = 1
    with pytest.raises(AssertionError, match="catastrophic"):
        aiter.checkAllclose(out, ref, catastrophic_check=True, printLog=False)
    assert aiter.checkAllclose(out, ref, max_abs_delta=1.0, printLog=False) == pytest.approx(0.001)
    with pytest.raises(AssertionError, match="catastrophic"):
        aiter.checkAllclose(out, ref, max_abs_delta=0.5, printLog=False)


def test_check_allclose_mask_compares_only_where_true():
    ref = torch.zeros(4, 10)
    out = ref.clone()
    out[0] = 5.0  # a padding row, masked out
    rows = torch.tensor([False, True, True, True]).view(4, 1)
    assert aiter.checkAllclose(out, ref, mask=rows, printLog=False) == 0.0
    out[1, 0] = 5.0
    assert aiter.checkAllclose(out, ref, mask=rows, printLog=False) == pytest.approx(1 / 30)
    assert aiter.checkAllclose(out, ref, mask=torch.zeros(4, 1, dtype=torch.bool), printLog=False) == 0.0
    out[0], out[1, 0] = float("nan"), 0.3  # NaN in the masked-out row is not catastrophic, 0.3 < max(|ref|, 1) / 2
    assert aiter.checkAllclose(out, ref, mask=rows, catastrophic_check=True, max_abs_delta=None,
                               printLog=False) == pytest.approx(1 / 30)
    ints = torch.arange(10, dtype=torch.int32)
    assert aiter.checkAllclose(ints, ints.clone(), rtol=0, atol=0) == 0.0


def test_perftest_returns_the_output_and_microseconds():
    calls = []

    @aiter.perftest(num_iters=5, num_warmup=1, device="cpu")
    def run(x, scale=1.0, num_iters=None):  # a keyword named like a timing option goes to the function
        calls.append(num_iters)
        time.sleep(0.001)
        return x * scale

    out, us = run(torch.ones(3), scale=2.0, num_iters="mine")
    assert torch.equal(out, torch.full((3,), 2.0))
    assert isinstance(us, float) and 1000.0 <= us < 500_000.0
    assert calls == ["mine"] * (1 + 1 + 5)  # the returned output's call, the warm-up, the timed calls
    seen = []

    def add(x, *, y):
        seen.append((x.data_ptr(), y.data_ptr()))
        return x + y

    out, us = aiter.perftest(num_iters=4, num_warmup=0, num_rotate_args=3, device="cpu")(add)(torch.zeros(2),
                                                                                          y=torch.ones(2))
    assert torch.equal(out, torch.ones(2)) and us > 0
    assert len(set(seen[1:])) == 3  # positional and keyword tensors both rotate through three copies
    with pytest.raises(ValueError, match="num_iters >= 1"):
        aiter.run_perftest(lambda: None, num_iters=0)
    if not torch.cuda.is_available():  # (run_perftest times on the GPU where there is one)
        with pytest.raises(ValueError, match="graph replay needs a GPU"):
            aiter.run_perftest(lambda: None, num_iters=2, testGraph=True)
        devices = []
        aiter.run_perftest(lambda x, device=None: devices.append(device), torch.ones(2), device="mine", num_iters=2)
        assert set(devices) == {"mine"}  # every keyword run_perftest does not name goes to the function, as aiter's


def test_perftest_writes_a_trace_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    aiter.perftest(num_iters=2, needTrace=True, device="cpu")(lambda x: torch.mm(x, x))(torch.ones(8, 8))
    traces = list((tmp_path / "ckgemm_logs").glob("perftest_*.json"))
    assert len(traces) == 1 and "aten::mm" in traces[0].read_text()


def test_benchmark_rows_hold_the_arguments_and_the_results():
    @aiter.benchmark()
    def case(dtype, m, n=16, k=32):
        return {"ck us": 1.5, "ck err": 0.0}

    assert case(torch.bfloat16, 8, k=64) == {"dtype": torch.bfloat16, "m": 8, "n": 16, "k": 64, "ck us": 1.5,
                                              "ck err": 0.0}

    @aiter.benchmark()
    def pairs(m):
        return [("ck us", 2.0)]

    assert pairs(4) == {"m": 4, "ck us": 2.0}

    @aiter.benchmark()
    def bad(m):
        return 3.0

    with pytest.raises(TypeError, match="returned float"):
        bad(1)


def test_ck_thresholds_match_the_worked_values():
    f16, bf16, f32, e4m3 = torch.float16, torch.bfloat16, torch.float32, torch.float8_e4m3fn
    assert ck.get_relative_threshold(f16, f16, f32, 4096) == pytest.approx(4.8828125e-4)
    assert ck.get_absolute_threshold(f16, f16, f32, 64.0, 4096) == pytest.approx(0.0625)
    assert ck.get_relative_threshold(bf16, bf16, f32, 4096) == pytest.approx(3.90625e-3)
    assert ck.get_absolute_threshold(bf16, bf16, f32, 64.0, 4096) == pytest.approx(0.5)
    assert (ck.get_relative_threshold(e4m3, f32, f32, 4096), ck.get_absolute_threshold(e4m3, f32, f32, 64.0, 4096)) \
        == (0.0625, 4.0)
    assert ck.get_relative_threshold(torch.int8, torch.int32, torch.int32, 4096) == 0.0
    assert ck.get_relative_threshold(f16, f16) == ck.get_relative_threshold(f16, f16, f16)  # acc defaults to compute
    # the signed maximum of CK's example is taken by magnitude; the narrower of A and B is the compute type
    assert ck.calculate_rtol_atol(4096, 1, -64.0, f16, f16, f32, f16) == pytest.approx((4.8828125e-4, 0.0625))
    assert ck.calculate_rtol_atol(4096, 1, 64.0, e4m3, bf16, f32, f32) == (0.0625, 4.0)
    # equal widths: CK takes B (sizeof(A) < sizeof(B) ? A : B)
    assert ck.calculate_rtol_atol(4096, 1, 64.0, f16, bf16, f32, f32) == ck.calculate_rtol_atol(4096, 1, 64.0, bf16, bf16,
                                                                                              f32, f32)


def test_ck_check_err_passes_quietly_and_fails_loudly(capsys):
    ref = torch.linspace(-1, 1, 50)
    assert ck.check_err(ref + 1e-6, ref) is True
    assert capsys.readouterr().err == ""
    out = ref.clone()
    out[[3, 7, 9, 11, 13]] += 0.5
    with pytest.raises(AssertionError, match=r"check_err: case 2 max err: 0\.5.*number of errors: 5, 10% wrong"):
        ck.check_err(out, ref, "case 2")
    printed = capsys.readouterr().err  # CK's report, on stderr: msg and the first four mismatches, then the summary
    assert "case 2 out[3] != ref[3]" in printed and "case 2 out[11] != ref[11]" in printed
    assert "out[13]" not in printed and "number of errors: 5" in printed
    assert ck.check_err(out, ref, strict=False) is False
    assert ck.check_err(out, ref, "m", 0.0, 0.6) is True  # CK's positional rtol, atol
    with pytest.raises(ValueError, match="shape"):
        ck.check_err(out[:10], ref)


def test_ck_check_err_special_values_and_integers():
    inf = torch.tensor([float("inf"), 1.0])
    with pytest.raises(AssertionError):
        ck.check_err(inf, inf.clone())  # CK: a non-finite value fails ...
    assert ck.check_err(inf, inf.clone(), allow_infinity_ref=True)  # ... unless equal infinities are allowed
    assert not ck.check_err(inf, -inf, allow_infinity_ref=True, strict=False)
    nan = torch.tensor([float("nan")])
    assert not ck.check_err(nan, nan.clone(), allow_infinity_ref=True, strict=False)
    ints = torch.tensor([2**40 + 1, 5], dtype=torch.int64)
    assert ck.check_err(ints, ints.clone())
    assert not ck.check_err(ints, ints - torch.tensor([1, 0]), strict=False)  # exact beyond float precision
    assert ck.check_err(ints, ints - torch.tensor([1, 0]), "m", 0, 1)  # CK's integer atol


def _e4m3(*codes: int) -> torch.Tensor:
    return torch.tensor(codes, dtype=torch.uint8).view(torch.float8_e4m3fn)


def test_ck_check_err_e4m3_rounding_points_and_bf8_float_rule():
    two, two_and_a_quarter, minus_two = 0x40, 0x41, 0xC0  # 2.0, 2.25, -2.0 in e4m3fn
    out, ref = _e4m3(two, two_and_a_quarter), _e4m3(two_and_a_quarter, two_and_a_quarter)
    assert not ck.check_err(out, ref, "m", 0, 0.0, strict=False)  # fourth argument: rounding points (here none)
    assert ck.check_err(out, ref, "m", 1, 0.0)  # one code apart, same sign
    assert ck.check_err(out, ref, atol=0.0, max_rounding_point_distance=1)
    assert ck.check_err(_e4m3(0x18), _e4m3(0x00))  # 0.0625 against 0: within CK's default atol of 0.1
    # -2 against 2: within a distance of 200 in codes, still a failure because the sign differs; atol can pass it
    assert not ck.check_err(_e4m3(minus_two), _e4m3(two), "m", 200, 0.0, strict=False)
    assert ck.check_err(_e4m3(minus_two), _e4m3(two), "m", 0, 4.0)
    with pytest.raises(ValueError, match="ref must be torch.float8_e4m3fn"):
        ck.check_err(out, ref.float())
    with pytest.raises(ValueError, match="give it once"):
        ck.check_err(out, ref, "m", 1, max_rounding_point_distance=1)
    with pytest.raises(ValueError, match="integer >= 0"):
        ck.check_err(out, ref, "m", 0.5)
    bf8 = torch.tensor([2.0]).to(torch.float8_e5m2), torch.tensor([2.5]).to(torch.float8_e5m2)
    assert not ck.check_err(*bf8, strict=False)  # one code apart, but bf8 takes the float rule (1e-3)
