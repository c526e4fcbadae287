"""op_tests/test_grouped_gemm.py, the command users run on a GPU box, run here in-process on the CPU:
smoke and MoE runs pass and write reports; a wrong or unwritten result, a validation hole and a perf
regression against a baseline each make it exit non-zero."""
from __future__ import annotations

import csv
import json

import pytest
import torch

import ckgemm.backends.reference as reference_backend
import ckgemm.validate
from support import op_tests_on_one_thread, report_rows


@pytest.fixture(scope="module")
def cli():
    yield from op_tests_on_one_thread("ckgemm_op_tests_cli")


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
    printed = capsys.readouterr().out
    assert "perf:" in printed
    # the summary's ratio comes with ckgemm's time in the paired rounds it divides, not the median column's
    assert "us paired)" in printed and "loop_ours_ms" in text


def test_peer_ratio_cell_names_the_paired_ckgemm_time():
    from grouped_gemm_cli.summary import case_row
    row = {"median_ms": 0.081, "loop_peer": "matmul loop", "loop_ms": 0.084, "loop_ours_ms": 0.1377,
           "vs_loop": "0.61x", "passed": True}
    cells = case_row(row)
    assert cells["ckgemm us"] == "81" and cells["loop us"] == "84"
    assert cells["ckgemm vs loop"] == "0.61x (ckgemm 137.7 us paired)"
    assert case_row({"loop_peer": "matmul loop", "vs_loop": "n/a"})["ckgemm vs loop"] == "n/a"


def test_moe_runs_the_packed_and_list_forms(cli, tmp_path):
    out = tmp_path / "moe.json"
    assert cli.main(["--moe", *SMALL, "--groups", "4", "--dtype", "int8", "--layout", "RR", "--no-perf",
                     "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 8 and all(r["passed"] for r in rows)
    for op in ("grouped_gemm_packed", "grouped_gemm_list"):  # each split in both forms, unscaled as scaled
        dists = {r["config"].split()[1] for r in rows if r["op"] == op}
        assert dists == {"balanced", "zipf", "empty", "multinomial"}, op


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


def test_unreadable_baseline_stops_the_run_before_any_case(cli, tmp_path, capsys):
    base = tmp_path / "base.json"
    base.write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        cli.main([*SMALL, "--dtype", "bf16", "--layout", "RC", "--no-perf", "--baseline", str(base)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "not a readable ckgemm report" in captured.err and "PASS" not in captured.out
    row = {"op": "gemm", "backend": "mine", "dtype": "bf16", "median_ms": 1.0}
    base.write_text(json.dumps({"schema": "ckgemm.report/1", "title": "", "meta": {}, "rows": [row, row]}))
    with pytest.raises(SystemExit) as exc:  # rows that cannot be matched one to one: refused before any case
        cli.main([*SMALL, "--dtype", "bf16", "--layout", "RC", "--no-perf", "--baseline", str(base)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "2 rows of key gemm/mine/bf16" in captured.err and "PASS" not in captured.out


def test_an_unwritable_report_path_stops_the_run_before_any_case(cli, tmp_path, capsys):
    (tmp_path / "a file").write_text("")
    under_a_file = tmp_path / "a file" / "run.json"
    assert cli.main([*SMALL, "--dtype", "bf16", "--layout", "RC", "--no-perf", "--json", str(under_a_file)]) == 2
    captured = capsys.readouterr()
    assert "cannot write --json" in captured.err and "PASS" not in captured.out


def test_summary_numbers_never_use_e_notation():
    from grouped_gemm_cli.summary import _num

    assert _num(192000.4) == "192000" and _num(12.345678) == "12.35" and _num(None) == ""


def test_options_are_checked(cli):
    with pytest.raises(SystemExit):
        cli.main(["--groups", "0"])
    with pytest.raises(SystemExit):
        cli.main(["--dtype", "fp4"])
    assert cli.main(["--backend", "nope"]) == 2, "an unusable backend stops the run before any case"
    for argv in (["--seed", "-1"], ["--seed", str(2**64)], ["--moe-dist", "zipf"]):  # zipf without --moe
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2


def test_a_moe_split_reruns_alone_with_the_printed_seed(cli, capsys):
    """Every --moe split comes from --seed, so --moe-dist d reruns the d case of a run of all four."""
    argv = ["--moe", "--seed", "5", "-g", "4", "-m", "16", "-n", "32", "-k", "32", "-d", "bf16", "-l", "RC",
            "--no-perf"]
    assert cli.main(argv) == 0
    every = [line for line in capsys.readouterr().out.splitlines() if "zipf" in line and "packed" in line]
    assert cli.main([*argv, "--moe-dist", "zipf"]) == 0
    alone = [line for line in capsys.readouterr().out.splitlines() if "zipf" in line and "packed" in line]
    assert len(every) == 1 and alone == every and "shape seed 5" in alone[0]


def test_device_choice(cli, capsys):
    from grouped_gemm_cli.args import parse_args
    from grouped_gemm_cli.plan import make_plan

    assert make_plan(parse_args(["--device", "cpu", "--dtype", "bf16"])).device == torch.device("cpu")
    auto = make_plan(parse_args(["--dtype", "bf16"])).device
    assert auto.type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit) as exc:
            parse_args(["--device", "cuda"])
        assert exc.value.code == 2 and "--device cuda: no GPU is visible" in capsys.readouterr().err


# The seed script's documented command lines (issue 14 item 5), each as written; on the CPU the shape flags
# after them keep the torch reference's run to seconds (the timed ones time 4 dtypes x 2 layouts x peers).
CPU_SIZE = ["--m", "32", "--n", "48", "--k", "64"]
SEED_COMMANDS = [
    ["--smoke", "--dtype", "fp16"],
    ["--smoke", "--dtype", "all", "--variable"],
    ["--moe", "--dtype", "fp16"],
    ["--moe", "--dtype", "fp8"],
    ["--moe", "--dtype", "all"],
    ["--moe", "--dtype", "fp16", "--groups", "3"],
    ["--dtype", "fp8"],
    ["--dtype", "all", "--variable", "--warmup", "10", "--repeat", "100"],
    ["--heterogeneous", "--dtype", "fp16"],
    ["--layout"],
    ["--bad-input"],
]


@pytest.mark.parametrize("command", SEED_COMMANDS, ids=" ".join)
def test_seed_command_lines_run_and_pass(cli, command, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert cli.main([*command, *CPU_SIZE, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ALL PASSED" in text and "summary (markdown):" in text
    rows = report_rows(out)
    cases = [r for r in rows if r["op"] != "bad_input"]
    assert cases and all(r["passed"] for r in rows)
    dtypes = {r["dtype"] for r in cases}
    named = command[command.index("--dtype") + 1] if "--dtype" in command else "all"
    assert dtypes == ({"fp16", "bf16", "fp8", "int8"} if named == "all" else {named})
    if "--moe" in command:
        assert {r["op"] for r in cases} == {"grouped_gemm_packed", "grouped_gemm_list"}  # both forms of each split
        groups = int(command[command.index("--groups") + 1]) if "--groups" in command else 4
        assert all(r["shape"].startswith(f"{groups}x") for r in cases)
    if "--layout" in command:  # bare: the layout-variant tests, both layouts in both forms
        assert {(r["layout"], r["form"]) for r in cases} == {(l, f) for l in ("RC", "RR") for f in ("list", "packed")}
    if "--bad-input" in command:
        assert sum(r["op"] == "bad_input" for r in rows) >= 25
    if "--variable" in command:
        assert any("variable M" in r["config"] for r in cases)
    if "--smoke" not in command:  # every case is timed: its perf line has shape, config, time and rate
        timed = [r for r in cases if "median_ms" in r]
        assert len(timed) == len(cases)
        for r in timed:
            line = next(l for l in text.splitlines() if l.strip().startswith(f"perf: {r['dtype']} {r['layout']} "
                                                                              f"{r['form']} {r['shape']} "))
            assert f"[{r['kernel']}]" in line and " ms, " in line and "TFLOP/s" in line
            assert "torch" in r["kernel"]  # the reference backend runs on the CPU


def test_layout_takes_a_value_too(cli, tmp_path):
    out = tmp_path / "rr.json"
    assert cli.main([*SMALL, "--layout", "rr", "--dtype", "bf16", "--no-perf", "--json", str(out)]) == 0
    assert {(r["layout"], r["form"]) for r in report_rows(out)} == {("RR", "list")}
    with pytest.raises(SystemExit):
        cli.main(["--layout", "CR"])


def test_aiter_aliases_and_dtype_names(cli, tmp_path):
    out = tmp_path / "alias.json"
    assert cli.main(["-g", "2", "-m", "8", "-n", "16", "-k", "32", "-d", "i8", "bf16", "-l", "RC", "--no-perf",
                     "--json", str(out)]) == 0
    rows = report_rows(out)
    assert {r["dtype"] for r in rows} == {"int8", "bf16"} and {r["shape"] for r in rows} == {"2x8x16x32"}


def test_aiter_mnk_is_a_shape_list_and_group_shapes_one_call(cli, tmp_path, capsys):
    out = tmp_path / "mnk.json"
    assert cli.main(["-mnk", "1,16,32", "40,8,48", "-g", "3", "-d", "bf16", "-l", "RC", "--device", "cpu", "--no-perf",
                     "--json", str(out)]) == 0
    assert [r["shape"] for r in report_rows(out)] == ["3x1x16x32", "3x40x8x48"]  # one case per shape, -g groups each
    assert cli.main(["--group-shapes", "1,16,160", "0,16,160", "37,16,160", "-d", "fp8", "-q", "block", "-l", "RC",
                     "--device", "cpu", "--no-perf", "--json", str(out)]) == 0
    rows = report_rows(out)
    assert {r["op"] for r in rows} == {"grouped_gemm_list", "grouped_gemm_packed"}  # one N and K: both forms
    assert all(r["passed"] and r["shape"] == "3x[0..37]x16x160" for r in rows), rows
    assert cli.main(["--group-shapes", "3,8,32", "5,16,48", "-d", "bf16", "-l", "RC", "--device", "cpu", "--no-perf",
                     "--json", str(out)]) == 0
    assert [r["op"] for r in report_rows(out)] == ["grouped_gemm_list"]  # N and K per group: the list form only
    with pytest.raises(SystemExit) as stop:
        cli.main(["-mnk", "1,2"])
    assert stop.value.code == 2 and "expected M,N,K" in capsys.readouterr().err


def test_csv_and_markdown_summary(cli, tmp_path, capsys):
    path = tmp_path / "sub" / "run.csv"
    assert cli.main([*SMALL, "-d", "fp16", "int8", "--layout", "RC", "--warmup", "0", "--repeat", "2",
                     "--csv", str(path)]) == 0
    text = capsys.readouterr().out
    table = text[text.index("timed cases and failures (markdown):"):]
    assert "| ckgemm us" in table and "| ckgemm TFLOPS" in table and "| torch x2" in table
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["dtype"] for r in rows] == ["fp16", "int8"]
    for r in rows:
        assert r["shape"] == "2x24x16x40" and r["kernel"] == "torch x2" and r["passed"] == "PASS"
        assert float(r["ckgemm us"]) > 0 and float(r["ckgemm TFLOPS"]) > 0 and r["loop peer"]


def test_mfu_against_the_device_peak(cli, monkeypatch, tmp_path, capsys):
    from ckgemm.testing import roofline

    fake = roofline.Ceilings("test device", {"bf16": 0.001}, 0.01, "datasheet: a pretend 1 GFLOP/s part")
    monkeypatch.setattr(roofline, "peak_for_device", lambda device=None: fake)
    out = tmp_path / "mfu.json"
    assert cli.main([*SMALL, "-d", "bf16", "-l", "RC", "--warmup", "0", "--repeat", "2", "--json", str(out)]) == 0
    (row,) = report_rows(out)
    assert row["mfu_pct"] == pytest.approx(row["tflops"] / 0.001 * 100, rel=1e-9)
    assert f"MFU {row['mfu_pct']:.3g}%" in capsys.readouterr().out
