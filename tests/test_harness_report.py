"""ckgemm.testing.roofline, .report, .baseline and .plot: work counted over real sizes, the peak table,
measured ceilings (CPU), the JSON round trip, markdown, the regression gate and the optional plot."""
from __future__ import annotations

import json
import sys

import pytest

from ckgemm.testing import Report, baseline, plot, roofline
from ckgemm.testing.bench import BenchResult


def test_flops_and_bytes_over_real_sizes():
    shapes = [(128, 256, 512), (0, 256, 512), (3, 0, 512), (5, 256, 0)]
    assert roofline.group_flops(shapes) == 2 * 128 * 256 * 512
    # A and B read once, C written once; M=0 / N=0 groups move nothing; K=0 still writes its zeros.
    assert roofline.group_bytes(shapes, 2, 2) == (128 * 512 + 256 * 512) * 2 + 128 * 256 * 2 + 5 * 256 * 2
    assert roofline.group_bytes([(64, 64, 64)], 1, 4) == 2 * 64 * 64 + 64 * 64 * 4


def test_peak_table_and_roofline_time():
    names = {"NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H200": "H200",
             "NVIDIA B200": "B200", "AMD Instinct MI300X": "MI300X", "AMD Instinct MI325X": "MI325X",
             "AMD Instinct MI355X": "MI355X"}
    for device_name, row in names.items():
        c = roofline.peak_for_name(device_name)
        assert c.name == row and {"fp16", "bf16", "fp8", "int8"} <= set(c.tflops) and c.hbm_tbs > 0
        assert c.tflops["fp8"] == pytest.approx(2 * c.tflops["bf16"], rel=0.01)
    assert roofline.peak_for_name("NVIDIA GeForce RTX 4090") is None
    for other_part in ("NVIDIA GH200 480GB", "NVIDIA GB200", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA H20"):
        assert roofline.peak_for_name(other_part) is None, f"{other_part} has no row: no MFU, not a wrong one"
    assert roofline.peak_for_device("cpu") is None
    h200 = roofline.peak_for_name("NVIDIA H200")
    # 8 x 4096^3 bf16 is compute-bound: 1.1 TFLOP at 989.4 TFLOP/s
    flops = 8 * 2 * 4096**3
    nbytes = roofline.group_bytes([(4096, 4096, 4096)] * 8, 2, 2)
    assert roofline.roofline_time_s(flops, nbytes, h200, "bf16") == pytest.approx(flops / 989.4e12)
    # decode-like: memory-bound
    small = [(16, 4096, 7168)] * 32
    t = roofline.roofline_time_s(roofline.group_flops(small), roofline.group_bytes(small, 2, 2), h200, "bf16")
    assert t == pytest.approx(roofline.group_bytes(small, 2, 2) / 4.8e12)
    assert roofline.percent_of_roofline(2 * t, 1.0, roofline.group_bytes(small, 2, 2), h200, "bf16") == pytest.approx(50.0)
    with pytest.raises(KeyError):
        roofline.roofline_time_s(1, 1, h200, "fp4")


def test_measured_ceilings_on_the_cpu():
    c = roofline.measure_ceilings("cpu", size=128, copy_bytes=1 << 22, iters=3)
    assert c.source.startswith("measured") and c.hbm_tbs > 0
    assert set(c.tflops) == {"bf16", "fp16"} and all(v > 0 for v in c.tflops.values())


def _report(median=1.0, spread=0.02, passed=True, shape="8x4096x4096x4096"):
    r = Report("t", meta={"device": "test"})
    r.add(op="grouped_gemm", backend="cutlass", dtype="bf16", layout="RC", shape=shape, config="large",
          time={"median_ms": median, "p10_ms": median * (1 - spread), "p90_ms": median * (1 + spread),
                "min_ms": median * (1 - spread)},
          flops=8 * 2 * 4096**3, nbytes=roofline.group_bytes([(4096, 4096, 4096)] * 8, 2, 2),
          ceilings=roofline.peak_for_name("H200"), error={"max_abs_err": 0.125, "calc_diff": float("nan")},
          passed=passed, vs_loop="1.10x")
    return r


def test_rows_derive_rates_and_json_round_trips(tmp_path):
    r = _report()
    r.add(op="grouped_gemm", backend="cutlass", dtype="int8", layout="RR", shape="1x1x1x1",
          time=BenchResult([1.0, 2.0, 3.0], "cuda-events", "flush 256 MiB", 5, "gpu"), passed=False)
    row = r.rows[0]
    assert row["tflops"] == pytest.approx(8 * 2 * 4096**3 / 1e-3 / 1e12)
    assert row["pct_roofline"] == pytest.approx(100 * (8 * 2 * 4096**3 / 989.4e12) / 1e-3)
    assert r.rows[1]["median_ms"] == 2.0 and r.rows[1]["timing"] == "cuda-events, flush 256 MiB"
    assert not r.passed
    path = r.write_json(tmp_path / "sub" / "run.json")
    text = path.read_text()
    assert "NaN" not in text and "pickle" not in text
    json.loads(text)  # strict JSON
    back = Report.load(path)
    assert back.title == "t" and back.meta == {"device": "test"} and len(back.rows) == 2
    assert back.rows[0]["median_ms"] == row["median_ms"] and back.rows[0]["vs_loop"] == "1.10x"
    assert back.rows[0]["error"]["calc_diff"] == "nan"
    with pytest.raises(ValueError, match="not a ckgemm report"):
        Report.from_json({"rows": []})


def test_markdown_and_console_table(tmp_path):
    r = _report()
    md = r.write_markdown(tmp_path / "run.md").read_text()
    assert md.startswith("# t") and "- device: test" in md and "| op" in md and "| PASS" in md.replace("|  ", "| ")
    table = r.table()
    assert "vs_loop" in table and "1.10x" in table and "tflops" in table


def test_baseline_flags_a_planted_regression(tmp_path):
    base = baseline.save_baseline(_report(median=1.0), tmp_path / "base.json")
    same = baseline.compare(_report(median=1.01), base)
    assert same.ok and [d.status for d in same.deltas] == ["same"]
    slower = baseline.compare(_report(median=1.30), base)
    assert not slower.ok and slower.regressions[0].status == "regression"
    assert slower.regressions[0].change == pytest.approx(0.30)
    assert "1 regression" in str(slower)
    # The same 30% slowdown inside very noisy runs (bands overlap) is not called a regression.
    noisy_base = _report(median=1.0, spread=0.5)
    assert baseline.compare(_report(median=1.30, spread=0.5), noisy_base).ok
    faster = baseline.compare(_report(median=0.5), base)
    assert faster.ok and faster.deltas[0].status == "improvement"
    broken = baseline.compare(_report(median=1.0, passed=False), base)
    assert not broken.ok and broken.regressions[0].status == "correctness"
    moved = baseline.compare(_report(shape="other"), base)
    assert moved.ok and sorted(d.status for d in moved.deltas) == ["missing", "new"]
    assert not baseline.compare(_report(shape="other"), base, fail_on_missing=True).ok


def test_baseline_command_line_exit_status(tmp_path, capsys):
    base = baseline.save_baseline(_report(median=1.0), tmp_path / "base.json")
    good = _report(median=1.0).write_json(tmp_path / "good.json")
    bad = _report(median=2.0).write_json(tmp_path / "bad.json")
    assert baseline.main([str(good), str(base)]) == 0
    assert baseline.main([str(bad), str(base)]) == 1
    assert "regression" in capsys.readouterr().out
    assert baseline.main([str(bad), str(base), "--threshold", "1.5"]) == 0
    (tmp_path / "garbage.json").write_text("{not json")
    for unreadable in (tmp_path / "garbage.json", tmp_path / "missing.json"):
        assert baseline.main([str(unreadable), str(base)]) == 2
        assert "error: " in capsys.readouterr().err


def test_baseline_refuses_rows_it_cannot_match_one_to_one(tmp_path, capsys):
    def sweep(fast_ms):  # sizes kept in an extra column, outside the matching key
        r = Report()
        for m, ms in ((1, fast_ms), (4096, 5.0)):
            r.add(op="gemm", backend="mine", dtype="bf16", time={"median_ms": ms, "p10_ms": ms, "p90_ms": ms},
                  m=m, passed=True)
        return r
    base = baseline.save_baseline(sweep(0.01), tmp_path / "base.json")
    slower = sweep(0.5).write_json(tmp_path / "new.json")  # the m=1 row 50x slower
    with pytest.raises(ValueError, match="2 rows of key gemm/mine/bf16"):
        baseline.compare(slower, base)
    assert baseline.main([str(slower), str(base)]) == 2
    assert "put what tells them apart" in capsys.readouterr().err


def test_baseline_never_passes_a_nan_time_or_a_failing_row(tmp_path):
    base = baseline.save_baseline(_report(median=1.0), tmp_path / "base.json")
    assert [d.status for d in baseline.compare(_report(median=float("nan")), base).deltas] == ["regression"]
    twice = _report(median=1.0, passed=False)  # a failing row, then a passing one of the same key
    twice.rows += _report(median=1.0).rows
    assert not baseline.compare(twice, base).ok
    assert not baseline.compare(_report(shape="other", passed=False), base).ok, "a new row that fails"
    broken = baseline.save_baseline(_report(median=float("nan")), tmp_path / "broken.json")
    loose = baseline.compare(_report(median=1.0), broken)  # a NaN baseline time compares with nothing
    assert [d.status for d in loose.deltas] == ["base unusable"] and loose.ok
    assert not baseline.compare(_report(median=1.0), broken, fail_on_missing=True).ok
    for bad in (float("nan"), -0.1):
        with pytest.raises(ValueError, match="threshold"):
            baseline.compare(_report(median=1.0), base, threshold=bad)


def test_plot_skips_cleanly_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    assert not plot.matplotlib_available()
    assert plot.plot_roofline(_report().rows, roofline.peak_for_name("H200"), tmp_path / "r.png") is None
    assert not (tmp_path / "r.png").exists()


def test_plot_writes_a_png_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip("matplotlib")
    path = plot.plot_roofline(_report().rows, roofline.peak_for_name("H200"), tmp_path / "r.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
