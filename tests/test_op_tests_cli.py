"""op_tests/test_grouped_gemm.py, the command users run on a GPU box, run here in-process on the CPU:
smoke and MoE runs pass and write reports; a wrong or unwritten result, a validation hole and a perf
regression against a baseline each make it exit non-zero."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import ckgemm.backends.reference as reference_backend
import ckgemm.validate

CLI_PATH = Path(__file__).resolve().parents[1] / "op_tests" / "test_grouped_gemm.py"


@pytest.fixture(scope="module")
def cli():
    spec = importlib.util.spec_from_file_location("ckgemm_op_tests_cli", CLI_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMALL = ["--groups", "2", "--m", "24", "--n", "16", "--k", "40"]


def test_smoke_all_dtypes_and_layouts_pass(cli, tmp_path, capsys):
    out = tmp_path / "smoke.json"
    assert cli.main(["--smoke", "--no-perf", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ALL PASSED" in text and "seed 0" in text
    rows = json.loads(out.read_text())["rows"]
    combos = {(r["dtype"], r["layout"], r["op"]) for r in rows if r["op"] != "bad_input"}
    assert {d for d, _, _ in combos} == {"fp16", "bf16", "fp8", "int8"}
    assert {layout for _, layout, _ in combos} == {"RC", "RR"}
    assert {op for _, _, op in combos} == {"grouped_gemm_list", "grouped_gemm_packed"}
    bad = [r for r in rows if r["op"] == "bad_input"]
    assert len(bad) >= 25 and all(r["passed"] for r in bad)
    assert any("K=0" in r["config"] for r in rows) and any("empty" in r["config"] for r in rows)


def test_smoke_with_perf_writes_markdown(cli, tmp_path, capsys):
    md = tmp_path / "smoke.md"
    assert cli.main(["--smoke", "--dtype", "bf16", "--layout", "RC", "--markdown", str(md)]) == 0
    text = md.read_text()
    assert "vs_loop" in text and "median_ms" in text and "grouped_gemm_packed" in text
    assert "perf:" in capsys.readouterr().out


def test_moe_runs_the_packed_form(cli, tmp_path):
    out = tmp_path / "moe.json"
    assert cli.main(["--moe", *SMALL, "--groups", "4", "--dtype", "int8", "--layout", "RR", "--no-perf",
                     "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 4 and all(r["op"] == "grouped_gemm_packed" and r["passed"] for r in rows)
    assert {r["config"].split()[1] for r in rows} == {"balanced", "zipf", "empty", "multinomial"}


def test_wrong_results_fail(cli, monkeypatch, capsys):
    real = reference_backend.matmul

    def off_by_a_bit(a, b, layout, rule):
        c = real(a, b, layout, rule)
        c[-1, -1] += 4  # a single wrong element in every group
        return c

    monkeypatch.setattr(reference_backend, "matmul", off_by_a_bit)  # the fault lives in the torch backend
    assert cli.main([*SMALL, "--backend", "torch", "--dtype", "fp16", "--layout", "RR", "--no-perf"]) == 1
    text = capsys.readouterr().out
    assert "FAIL fp16 RR" in text and "first mismatches: (23, 15)" in text and "FAILED: 1 failure" in text
    assert cli.main([*SMALL, "--backend", "torch", "--dtype", "int8", "--layout", "RC", "--no-perf"]) == 1


def test_unwritten_outputs_fail(cli, monkeypatch, capsys):
    real = reference_backend.run_list

    def forgets_last_group(problem, a_list, b_list, c_list, scale_a=None, scale_b=None):
        paths = real(problem, a_list[:-1], b_list[:-1], c_list[:-1])
        return paths + ("forgot",)

    monkeypatch.setattr(reference_backend, "run_list", forgets_last_group)
    assert cli.main([*SMALL, "--backend", "torch", "--dtype", "bf16", "--layout", "RC", "--no-perf"]) == 1
    assert "out nan ref" in capsys.readouterr().out


def test_a_validation_hole_fails_the_bad_input_checks(cli, monkeypatch, capsys):
    monkeypatch.setattr(ckgemm.validate, "check_layout", lambda op, layout: "RC")
    assert cli.main(["--bad-input", *SMALL, "--dtype", "bf16", "--layout", "RC", "--no-perf"]) == 1
    assert "FAIL bad input: unknown layout" in capsys.readouterr().out


def test_baseline_gate_detects_a_planted_regression(cli, tmp_path, capsys):
    base = tmp_path / "base.json"
    args = [*SMALL, "--dtype", "bf16", "--layout", "RC", "--warmup", "0", "--repeat", "3"]
    assert cli.main([*args, "--baseline", str(base)]) == 0
    assert "baseline written" in capsys.readouterr().out
    data = json.loads(base.read_text())
    timed = [r for r in data["rows"] if "median_ms" in r]
    assert timed, "the run must have timed rows"
    for r in timed:  # pretend the baseline was a thousand times faster
        for key in ("median_ms", "p10_ms", "p90_ms", "min_ms"):
            r[key] /= 1000.0
    base.write_text(json.dumps(data))
    assert cli.main([*args, "--baseline", str(base)]) == 1
    assert "regression" in capsys.readouterr().out


def test_options_are_checked(cli):
    with pytest.raises(SystemExit):
        cli.main(["--groups", "0"])
    with pytest.raises(SystemExit):
        cli.main(["--dtype", "fp4"])
    assert cli.main(["--backend", "nope"]) == 2, "an unusable backend stops the run before any case"
