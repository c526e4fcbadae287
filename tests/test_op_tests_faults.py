"""op_tests/test_grouped_gemm.py against faults its first check could not see: an op that writes its inputs,
one whose later (timed) calls go wrong, one that raises while timed, and unscaled fp8 off by a percent. Each
must fail the run (exit 1), and the run must go on past the failing cell."""
from __future__ import annotations

import json

import pytest
import torch

import ckgemm
import ckgemm.backends.reference as reference_backend
from support import op_tests_on_one_thread

SMALL = ["--groups", "2", "--m", "24", "--n", "16", "--k", "40"]


@pytest.fixture(scope="module")
def cli():
    yield from op_tests_on_one_thread("ckgemm_op_tests_faults")


def test_an_op_that_writes_its_inputs_fails(cli, monkeypatch, capsys):
    real = reference_backend.matmul

    def rounds_a_in_place(a, b, layout, rule):
        a.copy_(a.to(torch.float8_e4m3fn).to(a.dtype))  # computes correctly on the input it has damaged
        return real(a, b, layout, rule)

    monkeypatch.setattr(reference_backend, "matmul", rounds_a_in_place)
    assert cli.main([*SMALL, "--backend", "torch", "--dtype", "bf16", "--layout", "RC", "--no-perf"]) == 1
    assert "the op changed its inputs" in capsys.readouterr().out


def test_wrong_results_on_the_timed_calls_fail(cli, monkeypatch, capsys, tmp_path):
    real, calls = reference_backend.matmul, {"n": 0}

    def right_first_then_zeros(a, b, layout, rule):
        calls["n"] += 1
        c = real(a, b, layout, rule)
        return c if calls["n"] <= 2 else torch.zeros_like(c)  # two groups: the first call is right

    monkeypatch.setattr(reference_backend, "matmul", right_first_then_zeros)
    out = tmp_path / "r.json"
    argv = [*SMALL, "--backend", "torch", "--dtype", "bf16", "--layout", "RC", "--warmup", "1", "--repeat", "2",
            "--json", str(out)]
    assert cli.main(argv) == 1
    assert "outputs of the timed calls no longer pass" in capsys.readouterr().out
    failed = [r for r in json.loads(out.read_text())["rows"] if not r["passed"]]
    assert failed and all(r["error"].get("mismatches", 0) > 0 for r in failed)


def test_an_error_while_timing_fails_the_cell_and_the_run_goes_on(cli, monkeypatch, capsys):
    real, calls = reference_backend.matmul, {"n": 0}

    def raises_on_a_later_call(a, b, layout, rule):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("workspace not reset")
        return real(a, b, layout, rule)

    monkeypatch.setattr(reference_backend, "matmul", raises_on_a_later_call)
    argv = [*SMALL, "--backend", "torch", "--dtype", "bf16", "fp16", "--layout", "RC", "--warmup", "1", "--repeat", "2"]
    assert cli.main(argv) == 1
    text = capsys.readouterr().out
    assert "while timing: RuntimeError: workspace not reset" in text and "FAILED: 1 failure" in text
    assert "PASS fp16" in text  # the next cell ran


def test_unscaled_fp8_off_by_a_percent_fails(cli, monkeypatch, capsys):
    real = reference_backend.matmul
    monkeypatch.setattr(reference_backend, "matmul", lambda a, b, layout, rule: real(a, b, layout, rule) * 1.01)
    assert cli.main([*SMALL, "--k", "256", "--backend", "torch", "--dtype", "fp8", "--layout", "RC", "--no-perf"]) == 1
    assert "FAIL fp8" in capsys.readouterr().out


def test_fp8_asked_for_on_a_device_without_it_exits_2(cli, monkeypatch, capsys):
    """Nothing asked for can run: 2, as the epilog says, not 1 (a failed check)."""
    def no_fp8(device):
        raise ValueError(f"device {device} has no fp8 support")

    monkeypatch.setattr(ckgemm, "fp8_dtype_for", no_fp8)
    with pytest.raises(SystemExit) as exit_:
        cli.main([*SMALL, "--dtype", "fp8", "--no-perf"])
    assert exit_.value.code == 2 and "--dtype fp8: device" in capsys.readouterr().err


def test_timed_calls_that_stop_writing_fail(cli, monkeypatch, capsys):
    """The outputs are poisoned again before timing, so calls that write nothing after the first are seen."""
    real, calls = reference_backend.run_list, {"n": 0}

    def writes_once(problem, a_list, b_list, c_list, scale_a=None, scale_b=None):
        calls["n"] += 1
        if calls["n"] == 1:
            return real(problem, a_list, b_list, c_list, scale_a, scale_b)
        return ("skipped",) * len(c_list)

    monkeypatch.setattr(reference_backend, "run_list", writes_once)
    argv = [*SMALL, "--backend", "torch", "--dtype", "bf16", "--layout", "RC", "--warmup", "1", "--repeat", "2"]
    assert cli.main(argv) == 1
    assert "outputs of the timed calls no longer pass" in capsys.readouterr().out


def test_a_reference_that_raises_fails_its_cell_and_the_run_goes_on(cli, monkeypatch, capsys):
    """A harness reference that cannot be computed (it once raised on a single decode token) is a FAIL row of its
    cell, not a traceback that ends the run."""
    import sys

    correctness = sys.modules["grouped_gemm_cli.correctness"]
    real = correctness.grouped_gemm_reference

    def raises_for_fp16(a, b, **kwargs):
        if a[0].dtype == torch.float16:
            raise IndexError("slice() cannot be applied to a 0-dim tensor")
        return real(a, b, **kwargs)

    monkeypatch.setattr(correctness, "grouped_gemm_reference", raises_for_fp16)
    assert cli.main([*SMALL, "--backend", "torch", "--dtype", "fp16", "bf16", "--layout", "RC", "--no-perf"]) == 1
    text = capsys.readouterr().out
    assert "the reference raised IndexError" in text and "FAIL fp16" in text and "PASS bf16" in text
