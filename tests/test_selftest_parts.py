"""The selftest's parts on their own: pytest's JUnit XML judged right (failures with their messages, all
skipped, none collected), the build checks on a machine they cannot see here (a GPU torch without the
extension, a ROCm build with and without its CK record), a broken check reported as an error."""
from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from ckgemm.selftest import build, gpu_suite, procs
from ckgemm.selftest.checks import Check, guarded
from ckgemm.selftest.report import verdict

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
 <testcase classname="tests.test_gpu_native" name="test_list_forms[bf16-RC]" time="0.1"/>
 <testcase classname="tests.test_gpu_native" name="test_packed_form[fp8-RR]" time="0.2">
  <failure message="AssertionError: check 'fp8 RR packed' FAILED: 1 of 3 groups fail">Traceback ...
E   AssertionError: check 'fp8 RR packed' FAILED: 1 of 3 groups fail (2 mismatches in 4096 elements)
E   group 1: first mismatches: (0, 5): out 3.5 ref 3.25, (7, 1): out nan ref 1
  </failure></testcase>
 <testcase classname="tests.test_harness_gpu" name="test_verify" time="0.0">
  <error message="RuntimeError: CUDA error: an illegal memory access was encountered">E   RuntimeError: CUDA error</error>
 </testcase>
 <testcase classname="tests.test_gpu_native" name="test_graph" time="0.0"><skipped message="no graphs here"/></testcase>
</testsuite></testsuites>
"""


def _run(tmp_path, code, text="") -> procs.Run:
    log = tmp_path / "gpu-suite.log"
    log.write_text(text)
    return procs.Run(["python", "-m", "pytest", "-m", "gpu", "tests/test_gpu_native.py"], code, text, "", 1.0, log)


def _xml(tmp_path, body: str) -> Path:
    path = tmp_path / "gpu-suite.xml"
    path.write_text(body)
    return path


def test_junit_failures_and_errors_fail_with_their_messages(tmp_path):
    check = gpu_suite.judge([(_run(tmp_path, 1), _xml(tmp_path, JUNIT))], 60)
    assert check.verdict == "fail" and check.summary == "pytest -m gpu: 1 passed, 1 failed, 1 errors, 1 skipped"
    where = [f.where for f in check.failures]
    assert where == ["tests.test_gpu_native::test_packed_form[fp8-RR]", "tests.test_harness_gpu::test_verify"]
    assert "group 1: first mismatches: (0, 5)" in check.failures[0].message
    assert "illegal memory access" in check.failures[1].message


def test_all_skipped_is_a_skip_and_nothing_collected_a_failure(tmp_path):
    skipped = '<testsuites><testsuite><testcase classname="t" name="a"><skipped message="gpu test: no GPU"/>' \
              '</testcase></testsuite></testsuites>'
    check = gpu_suite.judge([(_run(tmp_path, 0), _xml(tmp_path, skipped))], 60)
    assert check.verdict == "skip" and "no GPU" in check.summary
    empty = _xml(tmp_path, "<testsuites><testsuite/></testsuites>")
    assert gpu_suite.judge([(_run(tmp_path, 5), empty)], 60).verdict == "fail"


def test_a_timeout_or_a_crash_before_the_report_fails(tmp_path):
    missing = tmp_path / "none.xml"
    crashed = gpu_suite.judge([(_run(tmp_path, 3, "INTERNALERROR> boom"), missing)], 60)
    assert crashed.verdict == "fail" and "test_gpu_native.py: no report (exit 3)" in crashed.summary
    assert "INTERNALERROR> boom" in crashed.failures[0].message
    timed_out = gpu_suite.judge([(_run(tmp_path, None), missing)], 60)
    assert timed_out.verdict == "fail" and "timed out after 60 s" in timed_out.summary


SUITE_FILES = {
    "test_ok.py": "import pytest\n@pytest.mark.gpu\ndef test_ok():\n    assert 1 + 1 == 2\n",
    "test_wrong.py": "import pytest\n@pytest.mark.gpu\ndef test_wrong():\n"
                     "    assert False, 'group 1: first mismatches: (1, 2): out 3 ref 4'\n",
    "test_crash.py": "import os, pytest\n@pytest.mark.gpu\ndef test_crash():\n    os._exit(3)\n",
    "test_cpu_only.py": "def test_cpu():\n    pass\n",
}


def test_one_process_per_gpu_test_file_so_a_crash_hides_nothing(tmp_path, monkeypatch):
    tests = tmp_path / "checkout" / "tests"
    tests.mkdir(parents=True)
    for name, text in SUITE_FILES.items():
        (tests / name).write_text(text)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:ckgemm")  # run the gpu-marked tests here, without a GPU
    check = gpu_suite.run(tmp_path, 120, per_file=True, tests=tests)
    assert check.verdict == "fail" and check.details["processes"] == 3, check
    assert (check.details["passed"], check.details["failed"]) == (1, 1)
    assert "test_crash.py: no report (exit 3)" in check.summary
    wrong = next(f for f in check.failures if "test_wrong" in f.where)
    assert "first mismatches: (1, 2)" in wrong.message
    assert check.details["logs"][0] == "gpu-suite-collect.log" and len(check.details["logs"]) == 4


def test_gpu_torch_without_the_extension_says_how_to_build(monkeypatch):
    monkeypatch.setattr(build, "platform_kind", lambda: "rocm")
    monkeypatch.setattr(build, "extension_module", lambda: None)
    check = build.check_extension()
    assert check.verdict == "fail" and "pip install --no-build-isolation -e ." in check.summary
    assert "builds nothing" in check.summary and "CK_DIR" in check.summary


def _fake_ck_module(info):
    return types.SimpleNamespace(build_info=lambda: json.dumps(info), built_archs=lambda: ["gfx942"])


def test_rocm_build_record_needs_the_ck_generation_and_commit(monkeypatch):
    monkeypatch.setattr(build.native, "built_kind", lambda: "ck")
    monkeypatch.setattr(build, "visible_ck_headers", lambda: None)
    full = {"backend": "ck", "archs": "gfx942;gfx950", "ck_generation": "G3",
            "ck_commit": "e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40", "compiler": "hipcc 7.0"}
    monkeypatch.setattr(build, "extension_module", lambda: _fake_ck_module(full))
    check = build.check_build_record()
    assert check.verdict == "pass" and "ck_generation G3" in check.summary and "e31a7a4f" in check.summary
    partial = {k: v for k, v in full.items() if k != "ck_commit"}
    monkeypatch.setattr(build, "extension_module", lambda: _fake_ck_module(partial))
    check = build.check_build_record()
    assert check.verdict == "fail" and "no ck_commit recorded" in check.summary
    monkeypatch.setattr(build, "extension_module", lambda: types.SimpleNamespace())
    check = build.check_build_record()
    assert check.verdict == "skip" and "build_info() is missing" in check.summary


def test_build_info_may_be_a_dict_or_json():
    info = {"backend": "cutlass", "cutlass_version": "4.2.0"}
    assert build.build_info(types.SimpleNamespace(build_info=lambda: info)) == info
    assert build.build_info(types.SimpleNamespace(build_info=lambda: json.dumps(info))) == info
    assert build.build_info(types.SimpleNamespace()) is None


def test_a_broken_check_is_an_error_and_fails_the_verdict():
    def broken():
        raise KeyError("gcnArchName")

    (check,) = guarded("device", broken)
    assert check.verdict == "error" and "KeyError" in check.summary and check.failures
    assert verdict([Check("fp8", "pass", "ok"), check]) == "FAIL"
    assert verdict([Check("fp8", "pass", "ok"), Check("device", "skip", "cpu")]) == "PASS"
    with pytest.raises(ValueError):
        Check("x", "ok", "not a verdict")


def test_a_machine_that_cannot_be_read_still_gets_a_report(tmp_path, monkeypatch):
    from ckgemm.selftest import cli, environment, validate

    def broken():
        raise RuntimeError("CUDA driver initialization failed")

    monkeypatch.setattr(environment, "collect", broken)
    out = tmp_path / "report"
    assert cli.main(["--skip", "gpu_suite", "optests", "benchmark", "--out", str(out)]) == 1
    report = json.loads((out / "selftest.json").read_text())
    assert validate(report) == [] and report["checks"][0]["name"] == "environment"
    assert report["checks"][0]["verdict"] == "error" and "driver initialization" in report["checks"][0]["summary"]


def test_visible_ck_headers_reads_the_checkouts_ck_detection(tmp_path, monkeypatch):
    """Purpose: the selftest reports the generation of the CK a ROCm build here would use, through
    build_support.ck_tree (a planted G2 tree: CK-tile generation detection on the CPU)."""
    include = tmp_path / "ck" / "include"
    kernel = include / "ck_tile" / "ops" / "gemm" / "kernel"
    kernel.mkdir(parents=True)
    (include / "ck_tile" / "core.hpp").write_text("// core\n")
    g2_views = "MakeGemmTensorViews(const SplitKBatchOffset& splitk_batch_offset)\n"
    (kernel / "universal_gemm_kernel.hpp").write_text(g2_views)
    (kernel / "grouped_gemm_kernel.hpp").write_text("struct GroupedGemmHostArgs {};\n")
    monkeypatch.setattr(build, "platform_kind", lambda: "rocm")
    monkeypatch.setenv("CK_DIR", str(tmp_path / "ck"))
    headers = build.visible_ck_headers()
    assert headers["where"] == "CK_DIR" and headers["generation"] == "G2" and headers["supported"] == ["G3"]
