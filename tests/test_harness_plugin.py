"""The pytest plugin (entry point ``ckgemm``, also loadable by module name): markers, options, header, fixtures,
clean gpu skips, report."""
from __future__ import annotations

import json
import os

import pytest

from ckgemm.testing import pytest_plugin

pytest_plugins = ["pytester"]

SUITE = """
import pytest

@pytest.mark.gpu
def test_needs_gpu():
    assert False, "must not run without a GPU"

@pytest.mark.smoke
def test_fixtures(ckgemm_seed, ckgemm_backend, ckgemm_report):
    ckgemm_report.add(op="probe", backend=str(ckgemm_backend), dtype="bf16", shape="1x1x1x1",
                      time={"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "min_ms": 0.9}, passed=True)
    assert (ckgemm_seed, ckgemm_backend) == (EXPECTED_SEED, EXPECTED_BACKEND)

@pytest.mark.full
def test_full():
    pass

@pytest.mark.perf
def test_perf():
    pass
"""


def _suite(pytester, seed, backend):
    pytester.makepyfile(SUITE.replace("EXPECTED_SEED", str(seed)).replace("EXPECTED_BACKEND", repr(backend)))


@pytest.mark.skipif(pytest_plugin.gpu_skip_reason() is None, reason="checks the skip path; a GPU is visible")
def test_options_header_fixtures_and_gpu_skip(pytester, tmp_path):
    _suite(pytester, 1234, "torch")
    report = tmp_path / "r.json"
    result = pytester.runpytest("--strict-markers", "-rs",
                                "--ckgemm-seed", "1234", "--ckgemm-backend", "torch", "--ckgemm-report", str(report))
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(["ckgemm: seed 1234, backend torch, report *r.json",
                                 "SKIPPED*gpu test: no GPU visible to torch*"])
    data = json.loads(report.read_text())
    assert data["meta"]["seed"] == 1234 and data["rows"][0]["op"] == "probe"
    assert (tmp_path / "r.json.md").read_text().startswith("# pytest session")


def test_defaults_come_from_the_environment(pytester, monkeypatch):
    monkeypatch.setenv("CKGEMM_SEED", "77")
    monkeypatch.setenv("CKGEMM_BACKEND", "cutlass")
    _suite(pytester, 77, "cutlass")
    result = pytester.runpytest("-m", "smoke")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(["ckgemm: seed 77, backend cutlass, report none"])


def test_a_bad_seed_or_report_path_is_a_usage_error_and_the_option_sets_the_environment(pytester, monkeypatch,
                                                                                       tmp_path):
    pytester.makepyfile(test_env="""
import os

def test_seed_reaches_the_environment(ckgemm_seed):
    assert os.environ["CKGEMM_SEED"] == str(ckgemm_seed) == "5"
""")
    before = os.environ.get("CKGEMM_SEED")
    pytester.runpytest("--ckgemm-seed", "5").assert_outcomes(passed=1)
    assert os.environ.get("CKGEMM_SEED") == before, "the session's seed does not outlive it"
    monkeypatch.setenv("CKGEMM_SEED", "abc")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*CKGEMM_SEED='abc' is not an integer*"])
    monkeypatch.delenv("CKGEMM_SEED")
    (tmp_path / "a file").write_text("")
    result = pytester.runpytest("--ckgemm-report", str(tmp_path / "a file" / "r.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_markers_are_registered(pytester):
    result = pytester.runpytest("--markers")
    for name in ("smoke", "full", "perf", "gpu"):
        result.stdout.fnmatch_lines([f"@pytest.mark.{name}: *"])


def test_gpu_skip_reason_matches_this_machine():
    import torch

    reason = pytest_plugin.gpu_skip_reason()
    assert (reason is None) == torch.cuda.is_available()


@pytest.mark.parametrize("how", ["-p", "conftest"])
def test_loading_the_plugin_by_module_name_as_well_is_harmless(pytester, how):
    """Where the entry point already loaded it, ``-p ckgemm.testing.pytest_plugin`` or a conftest's
    ``pytest_plugins`` naming it (how it is loaded without the entry point) must neither fail nor load it twice;
    ``-p no:ckgemm`` keeps it out. Only meaningful where ckgemm is installed (the entry point is what loads it)."""
    from importlib.metadata import entry_points

    installed = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    if "ckgemm" not in installed:
        pytest.skip("ckgemm is not installed here: no entry point to load the plugin twice")
    assert installed["ckgemm"] == "ckgemm.testing._pytest_entry", "a stale install: pip install -e . again"
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    if how == "conftest":
        pytester.makeconftest('pytest_plugins = ["ckgemm.testing.pytest_plugin"]\n')
        result = pytester.runpytest()
    else:
        result = pytester.runpytest("-p", "ckgemm.testing.pytest_plugin")
    result.assert_outcomes(passed=1)
    assert sum(line.startswith("ckgemm: seed") for line in result.stdout.lines) == 1
    if how == "-p":
        result = pytester.runpytest("-p", "no:ckgemm")
        result.assert_outcomes(passed=1)
        assert not any(line.startswith("ckgemm: seed") for line in result.stdout.lines)
