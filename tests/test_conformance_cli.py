"""``python -m ckgemm.testing.conformance`` end to end: exit codes, --op errors, output files (JSON, CSV,
markdown), --perf and --bad-input on the CPU, and the built-in adapters that run here."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ckgemm.testing.conformance import main
from ckgemm.testing.conformance.output import SCHEMA, load
from conformance_kernels import one_cpu_thread  # noqa: F401 - the autouse fixture

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "conformance_kernels"  # importable here: tests/ is on sys.path under pytest
QUICK = ["--device", "cpu", "--checks", "basic,k0,moe_empty,poison"]


def test_module_entry_point_end_to_end(tmp_path):
    """A fresh process, the op named by file path, all three output files."""
    out = {ext: tmp_path / f"run.{ext}" for ext in ("json", "csv", "md")}
    cmd = [sys.executable, "-m", "ckgemm.testing.conformance", "--op",
           f"{ROOT / 'tests' / 'conformance_kernels.py'}:reference_packed", "--dtype", "fp16,int8", *QUICK,
           "--seed", "7", "--json", str(out["json"]), "--csv", str(out["csv"]), "--markdown", str(out["md"])]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CONFORMS: 8 pass, 0 fail" in done.stdout and "seed 7" in done.stdout
    report = load(out["json"])
    assert report["schema"] == SCHEMA and report["summary"]["exit_code"] == 0 and report["meta"]["seed"] == 7
    rows = report["rows"]
    assert {(r["check"], r["dtype"], r["status"]) for r in rows} == {
        (c, d, "pass") for c in ("basic", "k0", "moe_empty", "poison") for d in ("fp16", "int8")}
    assert all(r["case"] and r["seed"] is not None and r["purpose"] for r in rows)
    with out["csv"].open() as f:
        records = list(csv.DictReader(f))
    assert len(records) == 8 and {r["kind"] for r in records} == {"check"}
    assert {"check", "status", "failed", "detail", "max_abs_err"} <= set(records[0])
    markdown = out["md"].read_text()
    assert "## Matrix" in markdown and "| basic " in markdown and "**CONFORMS" in markdown


def test_a_failing_kernel_exits_1_and_names_the_row(capsys, tmp_path):
    path = tmp_path / "fail.json"
    rc = main(["--op", f"{KERNELS}:skip_k0", "--form", "packed", "--dtype", "fp16", *QUICK, "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL (unwritten)" in out and "FAILED: 3 pass, 1 fail" in out
    rows = {r["check"]: r for r in json.loads(path.read_text())["rows"]}
    assert rows["k0"]["status"] == "fail" and rows["k0"]["failed"] == "unwritten"
    assert "never written" in rows["k0"]["detail"] and rows["basic"]["status"] == "pass"


def test_values_failures_carry_the_per_group_report(capsys):
    rc = main(["--op", f"{KERNELS}:wrong_m_tail", "--form", "packed", "--device", "cpu", "--checks",
               "tile_edges", "-v"])
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL (values)" in out
    assert "group 0 (M=127, N=128, K=192)" in out and "first mismatches" in out  # the -v report


def test_nothing_applied_exits_3(capsys):
    rc = main(["--op", f"{KERNELS}:refuses_fp8", "--form", "packed", "--dtype", "fp8", *QUICK])
    out = capsys.readouterr().out
    assert rc == 3 and "NOTHING APPLIED" in out and "no fp8 kernel in this build" in out


@pytest.mark.parametrize("argv,message", [
    (["--op", ""], "--op is empty"),
    (["--op", "nomodule"], "expected pkg.module:function"),
    (["--op", "no_such_pkg.mod:fn", "--form", "list"], "cannot import module 'no_such_pkg.mod': ModuleNotFoundError"),
    (["--op", "conformance_kernels:nothing_here", "--form", "list"], "module 'conformance_kernels' has no "
                                                                     "attribute 'nothing_here'"),
    (["--op", "conformance_kernels:GRAN", "--form", "list"], "'GRAN' is a int, not a callable"),
    (["--op", "conformance_kernels:"], "both the module"),
    (["--op", "missing.py:fn"], "no file 'missing.py'"),
    (["--op", "conformance_kernels:skip_k0"], "--form is needed"),
    (["--op", "conformance_kernels:reference_packed", "--form", "list"], "has no list form"),
    (["--op", "ckgemm", "--form", "mixed"], "--form mixed: unknown"),
    (["--op", "ckgemm", "--layout", "CR"], "--layout CR: unknown"),
    (["--op", "ckgemm", "--dtype", "fp64"], "--dtype fp64: unknown"),
    (["--op", "ckgemm", "--quant", "block", "--dtype", "int8"], "--quant block takes fp8"),
    (["--op", "ckgemm", "--checks", "basic,nope"], "--checks nope: unknown; expected from basic, m1"),
    (["--op", "ckgemm", "--seed", "-1"], "--seed must be in [0, 2^62)"),
    (["--op", "ckgemm", "--json", "/proc/ckgemm-conformance.json"], "cannot write --json /proc/"),
    ([], "--op is required"),
])
def test_usage_errors_exit_2_with_a_clear_message(argv, message, capsys):
    assert main(argv + ["--device", "cpu"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given where no GPU is visible")
def test_asking_for_cuda_without_a_gpu_is_a_usage_error(capsys):
    assert main(["--op", "ckgemm", "--device", "cuda"]) == 2
    assert "no CUDA device is visible" in capsys.readouterr().err


def test_list_checks_prints_the_catalogue(capsys):
    assert main(["--list-checks"]) == 0
    out = capsys.readouterr().out
    for check in ("m1", "tile_edges", "k0", "int8_exact", "poison", "determinism", "graph", "bad_sizes"):
        assert f"\n{check} " in out


def test_ckgemm_adapter_both_forms_and_layouts_on_cpu(capsys):
    rc = main(["--op", "ckgemm", "--layout", "RC,RR", "--dtype", "bf16,int8", "--device", "cpu", "--checks",
               "basic,empty_groups,k0,odd_nk,hetero,poison"])
    out = capsys.readouterr().out
    assert rc == 0 and "CONFORMS: 44 pass, 0 fail, 4 n/a" in out
    assert "bf16 list RR" in out and "int8 packed RC" in out


def test_perf_on_cpu_times_the_op_and_its_peers(tmp_path, capsys):
    path = tmp_path / "perf.json"
    rc = main(["--op", "torch_grouped_mm", "--dtype", "bf16", "--device", "cpu", "--checks", "basic", "--perf",
               "--iters", "3", "--warmup", "1", "--json", str(path)])
    assert rc == 0, capsys.readouterr().out
    report = json.loads(path.read_text())
    (perf,) = report["perf"]
    assert perf["op"] == "torch_grouped_mm" and perf["shape"] == "8x128x512x512" and perf["passed"] is True
    assert 0 < perf["p10_ms"] <= perf["median_ms"] <= perf["p90_ms"] and perf["tflops"] > 0
    assert isinstance(perf["vs matmul loop"], float) and isinstance(perf["vs _grouped_mm"], float)
    assert "CPU: perf_counter timing" in perf["notes"] and "pct_roofline" not in perf  # no CPU roofline
    assert [r["status"] for r in report["rows"] if r["check"].startswith("perf")] == ["pass"]


def test_bad_input_checks_pass_a_validating_kernel_and_fail_one_that_accepts_garbage(capsys):
    assert main(["--op", f"{KERNELS}:reference_packed", "--dtype", "bf16", "--device", "cpu", "--checks",
                 "bad_k,bad_groups,bad_sizes,bad_negative,bad_scale"]) == 0
    out = capsys.readouterr().out
    assert "CONFORMS: 4 pass, 0 fail, 1 n/a" in out and "needs scales" in out
    assert main(["--op", f"{KERNELS}:returns_garbage_for_bad_k", "--form", "packed", "--dtype", "bf16",
                 "--device", "cpu", "--bad-input", "--checks", "bad_k"]) == 1
    assert "returned a result for an invalid call" in capsys.readouterr().out
    # --bad-input adds every bad-input check to the ones --checks names: a kernel accepting garbage fails
    assert main(["--op", f"{KERNELS}:returns_garbage_for_bad_k", "--form", "packed", "--dtype", "bf16",
                 "--device", "cpu", "--bad-input", "--checks", "basic"]) == 1
    out = capsys.readouterr().out
    assert "bad_k" in out and "returned a result for an invalid call" in out


@pytest.mark.parametrize("op,quant,reason", [
    ("torch_scaled_grouped_mm", "row", "_scaled_grouped_mm"),  # no CPU kernel in torch
    ("deep_gemm", "block", "CUDA tensors only"),
    ("deep_gemm_masked", "block", "CUDA tensors only"),
    ("aiter_gmm", "none", "aiter.ops.triton.gmm is not importable"),
])
def test_adapters_that_cannot_run_here_are_unsupported_with_the_reason(op, quant, reason, capsys):
    assert main(["--op", op, "--quant", quant, "--dtype", "fp8" if quant != "none" else "bf16", "--device", "cpu",
                 "--checks", "basic,moe_empty"]) == 3
    out = capsys.readouterr().out
    assert "NOTHING APPLIED" in out and reason in out


def test_ckgemm_scaled_api_through_the_adapter_on_cpu(capsys):
    """ckgemm's scale_a/scale_b/out_dtype keywords get the recipes' layouts in both forms and layouts."""
    for quant, dtype in (("tensor", "int8"), ("row", "fp8"), ("block", "fp8")):
        rc = main(["--op", "ckgemm", "--quant", quant, "--dtype", dtype, "--layout", "RC,RR", "--device", "cpu",
                   "--checks", "basic,k0,odd_nk,moe_empty"])
        out = capsys.readouterr().out
        assert rc == 0 and "CONFORMS: 16 pass, 0 fail" in out, out


def test_the_documented_minimal_kernel_conforms(tmp_path, capsys):
    """docs/CONFORMANCE.md's minimal kernel file, as printed there, passes the default run on the CPU."""
    doc = (ROOT / "docs" / "CONFORMANCE.md").read_text()
    intro = doc.index("A minimal packed kernel file")
    code = doc[doc.index("```python\n", intro) + len("```python\n"):doc.index("```", doc.index("```python\n", intro) + 3)]
    (tmp_path / "my_kernel.py").write_text(code)
    assert main(["--op", f"{tmp_path / 'my_kernel.py'}:grouped_mm", "--device", "cpu"]) == 0
    passes, na = re.search(r"\((\d+) pass; (\d+) n/a", doc[intro:]).groups()  # the counts the doc states
    assert f"CONFORMS: {passes} pass, 0 fail, {na} n/a" in capsys.readouterr().out
