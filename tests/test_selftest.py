"""``python -m ckgemm.selftest`` on this CPU machine (torch reference backend): it runs every part, passes,
and writes a markdown and a JSON report that match the schema; a failing part makes it exit 1 with the
failure (and its mismatch indices) in the report."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ckgemm.selftest import SCHEMA, cli, validate

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_CHECKS = ["extension", "device", "backend", "fp8", "build_record", "gpu_suite", "optests", "benchmark"]


@pytest.fixture(scope="module")
def selftest_run(tmp_path_factory):
    """One real run, as a user starts it (a subprocess), with --quick shapes."""
    out = tmp_path_factory.mktemp("selftest")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "ckgemm.selftest", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env,
                          timeout=300 if not torch.cuda.is_available() else 1200)  # a GPU box runs its GPU suite
    return done, out


def test_cpu_run_passes_with_a_one_line_verdict(selftest_run):
    done, out = selftest_run
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    where = "cpu" if not torch.cuda.is_available() else ""  # on a GPU box: the device's name
    assert last.startswith(f"ckgemm selftest: PASS on {where}") and str(out / "selftest.md") in last


def test_json_report_matches_the_schema(selftest_run):
    _, out = selftest_run
    report = json.loads((out / "selftest.json").read_text())
    assert validate(report) == []
    assert report["schema"] == SCHEMA and report["verdict"] == "PASS" and report["quick"] is True
    assert [c["name"] for c in report["checks"]] == EXPECTED_CHECKS
    verdicts = {c["name"]: c["verdict"] for c in report["checks"]}
    assert verdicts["extension"] == "skip" and verdicts["fp8"] == "pass"
    assert verdicts["gpu_suite"] == "skip", "every GPU test skips on a CPU machine, with pytest's reason"
    assert verdicts["optests"] == verdicts["benchmark"] == "pass"
    env = report["environment"]
    assert env["platform"] == "cpu" and env["fp8"] == "float8_e4m3fn" and env["backends"]["torch"] == "available"
    optests = next(c for c in report["checks"] if c["name"] == "optests")["details"]
    assert optests["cases_failed"] == 0 and optests["bad_inputs"] >= 25
    assert {"fp8/tensor", "fp8/row", "fp8/block", "int8/tensor", "int8/row"} <= set(optests["variants"])
    assert set(optests["layouts_forms"]) == {"RC/list", "RC/packed", "RR/list", "RR/packed"}
    timed = report["timings"]
    assert {(t["dtype"], t["quant"]) for t in timed} >= {("bf16", "none"), ("fp8", "row"), ("fp8", "block")}
    for t in timed:
        assert t["ckgemm_ms"] > 0 and t["tflops"] > 0 and t["kernel"].startswith("torch") and t["peers"]
        assert all((p["ms"] is None) == (p["speedup"] is None) == (p["ckgemm_ms"] is None) for p in t["peers"])
        for p in t["peers"]:  # the ratio is the peer's median over ckgemm's in the same paired rounds
            if p["ms"] is not None:
                assert p["ckgemm_ms"] > 0 and abs(p["ms"] / p["ckgemm_ms"] - p["speedup"]) <= 0.005 + 1e-9, p
    assert any(p["name"] == "matmul loop" and p["ms"] for t in timed for p in t["peers"])
    for log in report["logs"].values():
        assert (out / log).is_file()


def test_markdown_report_has_every_section(selftest_run):
    _, out = selftest_run
    text = (out / "selftest.md").read_text()
    for heading in ("# ckgemm selftest", "## Environment", "## Checks", "## Timings", "## Logs"):
        assert heading in text
    assert "| optests" in text and "PASS" in text and "matmul loop" in text
    assert "us in the same rounds (ckgemm " in text  # each ratio beside the ckgemm time it divides


def _valid_report() -> dict:
    return {"schema": SCHEMA, "verdict": "PASS", "verdict_line": "ckgemm selftest: PASS", "started": "t",
            "seconds": 1.0, "argv": [], "quick": True, "environment": {},
            "checks": [{"name": "fp8", "verdict": "pass", "summary": "ok", "seconds": 0.1, "details": {},
                        "failures": []}],
            "timings": [{"dtype": "bf16", "quant": "none", "layout": "RC", "form": "list", "shape": "1x1x1x1",
                         "kernel": "torch x1", "ckgemm_ms": 1.0, "tflops": 1.0, "mfu_pct": None,
                         "peers": [{"name": "matmul loop", "ms": None, "speedup": None, "reason": "n/a"}]}],
            "logs": {}}


def test_a_peers_paired_ckgemm_time_is_optional():
    report = _valid_report()  # reports written before ckgemm_ms existed still validate
    report["timings"][0]["peers"][0].update(ckgemm_ms=None)
    assert validate(report) == []
    report["timings"][0]["peers"][0].update(ms=2.0, speedup=0.5, ckgemm_ms=4.0)
    assert validate(report) == []


@pytest.mark.parametrize("corrupt,expected", [
    (lambda r: r.pop("checks"), "missing key 'checks'"),
    (lambda r: r.update(extra=1), "unexpected key 'extra'"),
    (lambda r: r.update(schema="other/1"), "report.schema"),
    (lambda r: r["checks"][0].update(verdict="ok"), "checks[0].verdict"),
    (lambda r: r["checks"][0].update(verdict="fail"), "report.verdict: 'PASS' but a check failed"),
    (lambda r: r["checks"][0]["failures"].append({"where": "x"}), "checks[0].failures[0]: missing key 'message'"),
    (lambda r: r["timings"][0].update(ckgemm_ms="1"), "timings[0].ckgemm_ms"),
    (lambda r: r["timings"][0].update(tflops=True), "timings[0].tflops"),
    (lambda r: r["timings"][0]["peers"][0].pop("reason"), "timings[0].peers[0]: missing key 'reason'"),
    (lambda r: r["timings"][0]["peers"][0].update(ckgemm_ms="1"), "timings[0].peers[0].ckgemm_ms"),
    (lambda r: r["timings"][0]["peers"][0].update(paired=1), "timings[0].peers[0]: unexpected key 'paired'"),
    (lambda r: r["logs"].update(x=3), "logs.x"),
])
def test_schema_validator_catches_each_departure(corrupt, expected):
    report = _valid_report()
    assert validate(report) == []
    corrupt(report)
    problems = validate(report)
    assert any(expected in p for p in problems), problems


FAKE_OPTESTS = '''import json, sys
args = sys.argv[1:]
print("PASS fp16 RC list   3x64x96x128 (uniform groups)  [torch x3]")
print("FAIL fp8/row RR packed 6x16x64x96 (MoE balanced split)  [ck:compute_v4_128x128x64 x6]")
print("check 'fp8/row RR packed' FAILED: 1 of 6 groups fail (3 mismatches in 6144 elements)")
print("group 4: first mismatches: (2, 17): out 1.5 ref 0.25, (2, 18): out nan ref 0.5")
print("FAIL bad input: packed: sizes sum: no error raised")
rows = [{"op": "grouped_gemm_packed", "dtype": "fp8", "quant": "row", "layout": "RR", "form": "packed",
         "shape": "6x16x64x96", "passed": False}, {"op": "bad_input", "passed": False}]
json.dump({"schema": "ckgemm.report/1", "rows": rows}, open(args[args.index("--json") + 1], "w"))
print("FAILED: 2 failure(s) (0.1 s)")
sys.exit(1)
'''


def test_a_failing_part_fails_the_run_with_its_first_failures(tmp_path, monkeypatch, capsys):
    from ckgemm.selftest import optests

    fake = tmp_path / "op_tests" / "test_grouped_gemm.py"
    fake.parent.mkdir()
    fake.write_text(FAKE_OPTESTS)
    monkeypatch.setattr(optests, "script", lambda root: fake)
    out = tmp_path / "report"
    assert cli.main(["--skip", "gpu_suite", "benchmark", "--out", str(out)]) == 1
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("ckgemm selftest: FAIL (optests failed)")
    report = json.loads((out / "selftest.json").read_text())
    assert validate(report) == [] and report["verdict"] == "FAIL"
    check = next(c for c in report["checks"] if c["name"] == "optests")
    assert check["verdict"] == "fail" and check["details"]["cases_failed"] == 1
    first, second = check["failures"]
    assert first["where"].startswith("FAIL fp8/row RR packed 6x16x64x96")
    assert "group 4: first mismatches: (2, 17)" in first["message"]
    assert second == {"where": "FAIL bad input: packed: sizes sum: no error raised", "message": ""}
    assert [c["verdict"] for c in report["checks"] if c["name"] in ("gpu_suite", "benchmark")] == ["skip", "skip"]
    assert "### First failures: optests" in (out / "selftest.md").read_text()


@pytest.mark.parametrize("options", [["--out", "FILE"], ["--timeout", "nan"], ["--timeout", "0"]])
def test_an_unusable_report_folder_or_timeout_is_a_usage_error(options, tmp_path, capsys):
    """Refused before any check runs (exit 2), not a traceback after them."""
    (tmp_path / "FILE").write_text("")
    options = [str(tmp_path / o) if o == "FILE" else o for o in options]
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(options)
    assert exc.value.code == 2 and options[0] in capsys.readouterr().err
