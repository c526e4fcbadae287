"""ckgemm.testing.bench on the CPU fallback (device paths carry the gpu marker in test_harness_gpu.py),
paired A/B ordering, rotating copies, and the telemetry parsers."""
from __future__ import annotations

import math
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from bench_scripts import benchmark_module  # noqa: F401 - a fixture
from ckgemm.testing import Breakdown, bench, breakdown, device_info, paired_ab, rotating_copies
from ckgemm.testing.bench import BenchResult, quantile


def _sleeper(ms: float):
    def fn(*_):
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            pass
    return fn


def test_cpu_fallback_returns_sane_statistics():
    calls = []
    res = bench(lambda: (calls.append(1), _sleeper(2.0)()), warmup=2, iters=9, device="cpu")
    assert len(calls) == 11 and len(res.times_ms) == 9
    assert res.method == "perf_counter" and res.device == "cpu" and res.cold == "warm"
    assert 2.0 <= res.min_ms <= res.p10_ms <= res.median_ms <= res.p90_ms
    assert res.median_ms < 50.0
    assert res.telemetry_before is None and not res.throttled
    stats = res.stats()
    assert set(stats) >= {"median_ms", "p10_ms", "p90_ms", "min_ms", "mean_ms", "iters", "method", "cold"}
    assert "median" in str(res)


def test_quantiles_interpolate_like_numpy():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert quantile(values, 0.5) == 3.0 and quantile(values, 0.0) == 1.0 and quantile(values, 1.0) == 5.0
    assert quantile(values, 0.1) == pytest.approx(1.4) and quantile(values, 0.9) == pytest.approx(4.6)
    res = BenchResult([3.0, 1.0, 2.0, 10.0], "perf_counter", "warm", 0, "cpu")
    assert (res.median_ms, res.min_ms, res.mean_ms) == (2.5, 1.0, 4.0)
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_rotation_cycles_argument_sets():
    seen = []
    sets = [(torch.full((2,), float(i)),) for i in range(3)]
    res = bench(lambda t: seen.append(float(t[0])), warmup=0, iters=7, rotate=sets, device="cpu")
    assert seen == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0] and res.cold == "rotate 3 copies"
    with pytest.raises(ValueError, match="GPU"):
        bench(lambda: None, graph=True, device="cpu")
    with pytest.raises(ValueError):
        bench(lambda: None, iters=0, device="cpu")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="warmup_ms"):
            bench(lambda: None, warmup_ms=bad, device="cpu")


def test_rotating_copies_exceed_the_budget_and_keep_strides():
    a = torch.randn(64, 32)[:, :16]  # a strided view: copies keep its strides
    b = torch.randn(8)
    copies = rotating_copies((a, {"b": b}, 3), device="cpu", budget_bytes=64 * 1024)
    per = a.untyped_storage().nbytes() + b.untyped_storage().nbytes()
    assert copies[0][0] is a and len(copies) * per > 64 * 1024
    assert all(c[0].stride() == a.stride() and torch.equal(c[0], a) and c[2] == 3 for c in copies)
    assert copies[1][0].data_ptr() != a.data_ptr() and torch.equal(copies[1][1]["b"], b)
    assert len(rotating_copies((a,), device="cpu", budget_bytes=1 << 40, max_copies=5)) == 5


def test_rotating_copies_copy_any_argument_as_deepcopy_does():
    from collections import namedtuple
    from ckgemm.testing import quant
    from ckgemm.testing.compat.aiter import run_perftest
    pair = quant.per_token_cast_to_fp8(torch.randn(16, 256))  # the casts' (x_q, scale) pair
    Args = namedtuple("Args", "x y")
    wide = torch.randn(1, 8).expand(8, 8)  # stride 0: every row the same memory
    base = torch.randn(4, 8)
    view = base[1:]  # aliases base at an offset
    copies = rotating_copies((pair, Args(1, wide), base, view), device="cpu", budget_bytes=1 << 40, max_copies=3)
    for c in copies[1:]:
        assert type(c[0]) is type(pair) and all(torch.equal(x, y) for x, y in zip(c[0], pair))
        assert type(c[1]) is Args and c[1].x == 1 and c[1].y.stride() == (0, 1) and torch.equal(c[1].y, wide)
        assert c[1].y.data_ptr() != wide.data_ptr()
        c[2][1, 0] = 123.0  # the copied view still aliases the copied base, at the same offset
        assert c[3][0, 0] == 123.0 and c[3].storage_offset() == view.storage_offset() and base[1, 0] != 123.0
    budget = 100 * base.untyped_storage().nbytes()  # a view of base adds no bytes to a copy: as many copies
    assert len(rotating_copies((base, view), device="cpu", budget_bytes=budget)) == \
        len(rotating_copies((base,), device="cpu", budget_bytes=budget)) == 64
    assert len(rotating_copies((base, base.clone()), device="cpu", budget_bytes=budget)) == 51
    out, us = run_perftest(lambda p: quant.dequant(p).sum(), pair, num_iters=4, num_rotate_args=2)
    assert torch.equal(out, quant.dequant(pair).sum()) and us > 0


def test_paired_ab_interleaves_and_takes_the_ratio_of_medians(monkeypatch):
    # A fake clock (each call advances it by its own cost) keeps the arithmetic exact on a loaded runner:
    # busy-waits measured 0.66 here once while nvcc shared the two cores.
    now = [0.0]
    monkeypatch.setattr(sys.modules["ckgemm.testing.bench"], "time", SimpleNamespace(perf_counter=lambda: now[0]))
    order = []

    def work(side, ms):
        def fn(*_):
            order.append(side)
            now[0] += ms / 1e3
        return fn

    res = paired_ab(work("A", 4.0), work("B", 12.0), rounds=4, iters=3, warmup=0, device="cpu")
    blocks = [order[i] for i in range(0, len(order), 3)]
    assert blocks == ["A", "B", "B", "A", "A", "B", "B", "A"] == res.order
    assert len(res.a.times_ms) == len(res.b.times_ms) == 12 and len(res.round_ratios) == 4
    assert res.ratio == pytest.approx(1 / 3) and res.round_ratios == pytest.approx([1 / 3] * 4)
    assert res.speedup == pytest.approx(3.0)
    assert "A/B time ratio" in str(res)


def test_telemetry_parsers_and_throttle_flag():
    nv = device_info.parse_nvidia_smi("1980, 3201, 612.48, 51\n")
    assert nv == {"sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "power_w": 612.48, "temperature_c": 51.0}
    assert device_info.parse_nvidia_smi("1980, 3201, [N/A], 51")["power_w"] is None
    amd = device_info.parse_amd_smi(
        '[{"gpu": 0, "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}}, "mem_0": {"clk": {"value": 1300}}},'
        ' "power": {"socket_power": {"value": 650, "unit": "W"}}, "temperature": {"hotspot": {"value": 71}}}]')
    assert amd == {"sm_clock_mhz": 2100.0, "mem_clock_mhz": 1300.0, "power_w": 650.0, "temperature_c": 71.0}
    assert device_info.throttled({"sm_clock_mhz": 1980.0}, {"sm_clock_mhz": 1500.0})
    assert not device_info.throttled({"sm_clock_mhz": 1980.0}, {"sm_clock_mhz": 1900.0})
    assert not device_info.throttled(None, {"sm_clock_mhz": 1.0})
    assert device_info.read_telemetry("cpu") is None


def test_flush_size_rules(monkeypatch):
    monkeypatch.setattr(device_info, "l2_cache_bytes", lambda d: 60 * 2**20)
    monkeypatch.setattr(device_info, "is_mi300_class", lambda d: False)
    assert device_info.flush_bytes("cpu") == 256 * 2**20
    monkeypatch.setattr(device_info, "l2_cache_bytes", lambda d: 200 * 2**20)
    assert device_info.flush_bytes("cpu") == 400 * 2**20
    monkeypatch.setattr(device_info, "is_mi300_class", lambda d: True)
    monkeypatch.setattr(device_info, "l2_cache_bytes", lambda d: 4 * 2**20)
    assert device_info.flush_bytes("cpu") == 512 * 2**20


def test_results_are_usable_as_their_median_in_ms():
    """Like the floats triton.testing.do_bench and DeepGEMM's bench return: float(), arithmetic,
    comparisons, min/sorted/sum, round and format specs all see the median in ms."""
    slow = BenchResult([3.0, 1.0, 2.0, 10.0], "perf_counter", "warm", 0, "cpu")  # median 2.5
    fast = BenchResult([1.0, 1.0, 2.0], "perf_counter", "warm", 0, "cpu")  # median 1.0
    assert float(slow) == 2.5 and slow * 1e3 == 2500.0 and 1e3 * slow == 2500.0
    assert slow / fast == 2.5 and 5.0 / slow == 2.0 and slow - 0.5 == 2.0 and 3.0 - slow == 0.5
    assert slow + fast == 3.5 and sum([slow, fast]) == 3.5
    assert fast < slow and slow > 2.0 and slow >= 2.5 and fast <= 1.0 and slow == 2.5 and slow != fast
    assert min([slow, fast]) is fast and sorted([slow, fast]) == [fast, slow]
    assert round(slow) == 2 and round(slow, 1) == 2.5 and f"{slow:.2f}" == "2.50"
    assert f"{slow}" == str(slow) and str(slow).startswith("median 2.5 ms")
    assert math.isclose(slow, 2.5) and pytest.approx(2.5) == slow
    assert slow.__eq__("2.5") is NotImplemented and slow != "2.5"
    with pytest.raises(TypeError):
        hash(slow)
    measured = bench(_sleeper(1.0), warmup=0, iters=3, device="cpu")
    assert 1.0 <= float(measured) == measured.median_ms < 50.0


def test_warm_up_batches_fill_the_remaining_time_at_the_last_pace():
    from ckgemm.testing.bench import _MAX_WARMUP, _next_batch

    assert _next_batch(20.0, 1.0, 5, 5) == 100  # 0.2 ms a call: 100 more calls fill 20 ms
    assert _next_batch(0.05, 1.0, 5, 5) == 1  # a little left: at least one call
    assert _next_batch(0.0, 1.0, 5, 5) == 0 and _next_batch(-3.0, 1.0, 5, 5) == 0  # done
    assert _next_batch(25.0, 0.0, 5, 5) == _MAX_WARMUP - 5  # no device time measured: bounded
    assert _next_batch(25.0, 1.0, 5, _MAX_WARMUP) == 0


def test_there_and_back_times_forwards_then_backwards():
    from ckgemm.testing import there_and_back

    order, clock = [], iter([1.0, 2.0, 3.0, 5.0, 4.0, 3.0])
    got = there_and_back(["a", "b", "c"], lambda label: order.append(label) or next(clock))
    assert order == ["a", "b", "c", "c", "b", "a"]
    assert got["a"] == (2.0, 100.0, [1.0, 3.0]) and got["c"] == (4.0, 50.0, [3.0, 5.0])
    assert got["b"][0] == 3.0 and abs(got["b"][1] - 200 / 3) < 1e-9



def test_pool_joins_runs_and_keeps_the_last_runs_record():
    from ckgemm.testing.bench import pool

    first = BenchResult([1.0, 3.0], "cuda-events", "flush 1 MiB", 5, "dev0", {"sm_clock_mhz": 1980.0}, notes=["x"])
    last = BenchResult([2.0], "cuda-graph", "warm", 2, "dev1", None, {"sm_clock_mhz": 1500.0})
    joined = pool([first, last], "two passes")
    assert joined.telemetry_before == {"sm_clock_mhz": 1980.0} and joined.throttled  # first run's before, last's after
    assert joined.times_ms == [1.0, 3.0, 2.0] and joined.median_ms == 2.0 and joined.notes == ["two passes"]
    assert (joined.method, joined.cold, joined.warmup, joined.device) == ("cuda-graph", "warm", 2, "dev1")


@pytest.mark.parametrize("scaled", [False, True])
def test_the_benchmarks_output_check_fails_on_any_wrong_group(benchmark_module, scaled):
    """The output check bench_grouped_gemm, bench_tiles and bench_swapab run before they time anything (against
    the harness reference, with the same quantization for the scaled kinds): a wrong element in any group
    fails it."""
    from ckgemm.testing import grouped_gemm_reference_packed, quant

    verify_output = benchmark_module("bench_grouped_gemm").verify_output
    gen = torch.Generator().manual_seed(7)
    ms, k = [3, 0, 70], 256
    a, b = torch.randn((sum(ms), k), generator=gen), torch.randn((3, 64, k), generator=gen)
    if scaled:
        (a, sa), (b, sb) = quant.cast_for(a, "block", "a"), quant.cast_for(b, "block", "b")
        ref = grouped_gemm_reference_packed((a, sa), (b, sb), ms)
    else:
        a, b = a.bfloat16(), b.bfloat16()
        ref = grouped_gemm_reference_packed(a, b, ms)
    out = ref.to(torch.bfloat16)
    verify_output(out, ref, ms, a.dtype, k, "pick", scaled=scaled)
    for row in (2, 72):  # the first group's last row, the last group's last row
        bad = out.clone()
        bad[row, 5] += 10 * float(ref.abs().max())
        with pytest.raises(AssertionError):
            verify_output(bad, ref, ms, a.dtype, k, "pick", scaled=scaled)


def test_breakdown_separates_kernels_from_the_host_gap():
    b = Breakdown(calls=4, wall_us=50.0, kernel_us=30.0, kernels={"gemm": 28.0, "args": 2.0}, launches=2.0)
    assert b.host_gap_us == 20.0
    assert [r["kernel"] for r in b.rows()] == ["gemm", "args", "(all kernels)", "(host gap)", "(wall)"]
    assert "30.0 us in 2.0 kernels + 20.0 us host gap" in str(b) and "gemm 28.0" in str(b)
    assert Breakdown(1, 10.0, 12.0).host_gap_us == 0.0  # overlapping kernels never give a negative gap


def test_breakdown_on_the_cpu_says_it_has_no_device_kernels():
    calls = []
    b = breakdown(lambda: calls.append(torch.ones(64).sum()), iters=3, warmup=2, device="cpu")
    assert len(calls) == 5 and b.calls == 3 and b.wall_us > 0
    assert not b.on_gpu and b.kernels == {} and "no device kernels" in str(b)
    assert b.rows() == [{"kernel": "(wall)", "us/call": b.wall_us}]  # no kernel or host-gap rows to mislead
    with pytest.raises(ValueError, match="iters >= 1"):
        breakdown(lambda: None, iters=0)
    with pytest.raises(ValueError, match="warmup >= 0"):
        breakdown(lambda: None, warmup=-1)
    for measure in (breakdown, bench):
        with pytest.raises(ValueError, match="device meta has nothing to run"):
            measure(lambda: None, device="meta")
    if not torch.cuda.is_available():  # a GPU asked for and absent is an error, as in bench, not a CPU profile
        with pytest.raises(ValueError, match="sees no GPU"):
            breakdown(lambda: None, device="cuda")


def test_bench_can_attach_the_eager_breakdown():
    from ckgemm.testing.bench import breakdown as from_bench_module

    assert from_bench_module is breakdown
    plain = bench(lambda: torch.ones(8).sum(), warmup=1, iters=3, device="cpu")
    assert plain.breakdown is None and plain.to_dict()["breakdown"] is None
    r = bench(lambda: torch.ones(8).sum(), warmup=1, iters=3, device="cpu", breakdown=True)
    assert isinstance(r.breakdown, Breakdown) and r.breakdown.calls == 3
    assert r.to_dict()["breakdown"][-1]["kernel"] == "(wall)" and "eager call:" in str(r)
    import ckgemm.testing

    assert ckgemm.testing.bench.breakdown is breakdown  # the package's bench is the function; it carries it too


def test_paired_ab_keeps_the_breakdowns():
    from ckgemm.testing import paired_ab

    r = paired_ab(lambda: torch.ones(8).sum(), lambda: torch.ones(9).sum(), rounds=2, iters=2, warmup=0,
                  device="cpu", breakdown=True)
    assert isinstance(r.a.breakdown, Breakdown) and isinstance(r.b.breakdown, Breakdown)


def test_bench_result_is_a_number_everywhere():
    r = BenchResult([1.5, 2.5, 3.5], "perf_counter", "warm", 0, "cpu")
    assert (int(r), abs(r), -r, r ** 2, r // 2, 5 // r) == (2, 2.5, -2.5, 6.25, 1.0, 2.0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_bench_on_a_gpu_device_without_one_is_an_error():
    with pytest.raises(ValueError, match="torch sees no GPU here"):
        bench(lambda: None, device="cuda")


def test_bench_grouped_gemm_pairs_its_ratios_per_round(benchmark_module, monkeypatch):
    """Eager calls (each after a device synchronisation with --sync: end to end) and, with --graph, graph
    replays are timed round-robin (ckgemm.testing.rounds): each ratio is the median of the best peer's time over
    ours per round, with its p10-p90 beside it. Run on the CPU with the reference backend, round_robin (GPU only)
    replaced by the same loop over plain calls."""
    import argparse

    from ckgemm.testing import Report, shapes
    from ckgemm.testing.roofline import Ceilings
    from ckgemm.testing.rounds import RoundRobinResult

    bench_grouped_gemm = benchmark_module("bench_grouped_gemm")
    cases = benchmark_module("cases")
    seen = []

    def fake_round_robin(fns, *, reference, rounds, device, graph=True, sync=False):
        seen.append(dict(labels=list(fns), reference=reference, rounds=rounds, graph=graph, sync=sync))
        for fn in fns.values():
            fn()
        ours = [1.0 + r for r in range(rounds)]
        slower = 2 if graph else 3  # every peer takes twice ours in graph replay, three times eagerly
        return RoundRobinResult({label: ours if label == reference else [slower * t for t in ours] for label in fns},
                                reference)

    monkeypatch.setattr(bench_grouped_gemm, "round_robin", fake_round_robin)
    bc = cases.BenchCase("small", shapes.uniform(2, 24, 32, 64, "test"))
    args = argparse.Namespace(seed=0, iters=4, warmup=None, sync=True, graph=True, only_ours=False)
    ceilings = Ceilings("cpu", {"bf16": 1.0}, 1.0, "test")
    report = Report("t")
    line = bench_grouped_gemm.run_case(bc, "bf16", torch.bfloat16, "cpu", args, report, ceilings, {})
    eager, graph = seen
    assert (eager["graph"], eager["sync"], graph["graph"]) == (False, True, True), seen
    assert all(s["reference"] == "ckgemm packed" and s["rounds"] == 4 and s["labels"][0] == "ckgemm packed"
               for s in seen)
    assert "matmul loop" in graph["labels"], seen  # the torch.matmul loop, a capturable peer on any device
    assert "ckgemm list" in eager["labels"] and "ckgemm list" not in graph["labels"]  # the list form: eager only
    assert line["ckgemm ms"] == 2.5 and line["graph ms"] == 2.5  # the median of ours, 1.0 .. 4.0
    assert line["ratio"] == 3.0 and line["p10-p90"] == "3.000-3.000"  # the peer's time over ours, eagerly
    assert line["graph ratio"] == 2.0 and line["graph p10-p90"] == "2.000-2.000"
    rows = {r["op"]: r for r in report.rows}
    assert rows["matmul loop"]["vs_ours"] == 3.0 and rows["matmul loop"]["graph_vs_ours"] == 2.0
    assert rows["matmul loop"]["graph_vs_ours_p10_p90"] == "2.000-2.000"
    assert rows["ckgemm packed"]["vs_best_peer"] == 3.0 and rows["ckgemm packed"]["graph_vs_ours"] == 1.0
    assert rows["ckgemm packed"]["median_ms"] == 2.5 and rows["ckgemm packed"]["runs_ms"] == [1.0, 2.0, 3.0, 4.0]


def test_forced_instance_sets_ckgemm_config_only_inside_the_block(benchmark_module, monkeypatch):
    import os

    common = benchmark_module("common")
    monkeypatch.delenv("CKGEMM_CONFIG", raising=False)
    with common.forced_instance("coop_256x128x64_c1x2"):
        assert os.environ["CKGEMM_CONFIG"] == "coop_256x128x64_c1x2"
    assert "CKGEMM_CONFIG" not in os.environ
    with pytest.raises(RuntimeError), common.forced_instance("x"):
        raise RuntimeError("a failed call")
    assert "CKGEMM_CONFIG" not in os.environ, "cleared on the way out of a failed call too"
