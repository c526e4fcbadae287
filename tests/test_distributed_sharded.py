"""op_tests/test_grouped_gemm_sharded.py at world size 2 on gloo (a bf16 RC smoke subset, so it is fast): the
cells of the single-process plan are split across the ranks, each exactly once, rank 0 gathers every row into
one report, and a failure on a rank makes the whole run exit 1."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

import ckgemm.backends.reference as reference_backend

OP_TESTS = Path(__file__).resolve().parents[1] / "op_tests"
# on the CPU on every box: the forked gloo ranks cannot use a GPU this (pytest) process initialised
SUBSET = ["--smoke", "--no-perf", "--dtype", "bf16", "--layout", "RC", "--device", "cpu"]
LAUNCH = ["--nproc", "2", "--comm", "gloo"]

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


@pytest.fixture(scope="module")
def sharded():
    spec = importlib.util.spec_from_file_location("ckgemm_op_tests_sharded", OP_TESTS / "test_grouped_gemm_sharded.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts op_tests/ on sys.path for grouped_gemm_cli
    return module


def _plan_cells():
    from grouped_gemm_cli.args import parse_args
    from grouped_gemm_cli.plan import cells, make_plan

    return [(variant.name, layout, item.case.id, item.case.purpose) for variant, layout, item in
            cells(make_plan(parse_args(SUBSET)))]


def test_cells_are_split_across_ranks_and_gathered_on_rank0(sharded, tmp_path):
    out = tmp_path / "sharded.json"
    assert sharded.main([*LAUNCH, *SUBSET, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    cell_rows = [r for r in rows if r["op"] != "bad_input"]
    got = sorted((r["dtype"], r["layout"], r["shape"], r["config"]) for r in cell_rows)
    assert got == sorted(_plan_cells()), "every cell of the plan runs exactly once"
    assert {r["rank"] for r in cell_rows} == {0, 1} and all(r["passed"] for r in rows)
    assert {r["rank"] for r in rows if r["op"] == "bad_input"} == {0} and len(rows) > len(cell_rows)


def test_a_failure_on_any_rank_fails_the_run(sharded, tmp_path, monkeypatch):
    real = reference_backend.matmul

    def wrong_in_one_element(a, b, layout, rule):
        c = real(a, b, layout, rule)
        c[-1, -1] += 4
        return c

    monkeypatch.setattr(reference_backend, "matmul", wrong_in_one_element)  # inherited by the forked ranks
    out = tmp_path / "failed.json"
    assert sharded.main([*LAUNCH, *SUBSET, "--json", str(out)]) == 1
    failed = [r for r in json.loads(out.read_text())["rows"] if r["passed"] is False]
    assert {r["rank"] for r in failed} == {0, 1}


def test_launch_options_do_not_reach_the_op_tests_parser(sharded):
    launch_opts, rest = sharded.split_argv(["--nproc", "3", "--comm", "gloo", "--smoke"])
    assert (launch_opts.nproc, launch_opts.comm, rest) == (3, "gloo", ["--smoke"])
    assert str(OP_TESTS) in sys.path


def test_timing_options_are_refused_not_ignored(sharded, capsys):
    assert sharded.main([*LAUNCH, *SUBSET, "--baseline", "b.json", "--csv", "x.csv"]) == 2
    assert "--csv, --baseline: a sharded sweep times nothing" in capsys.readouterr().err


def test_a_sweep_that_cannot_run_is_refused_before_any_rank_starts(sharded, tmp_path, capsys):
    """As test_grouped_gemm.py: nothing selected (fp16 has no row recipe), an unusable backend, an unwritable
    report: exit 2 with the reason, not a run of failures or an empty pass."""
    (tmp_path / "a file").write_text("")
    for extra, reason in ((["-d", "fp16", "-q", "row"], "nothing to run"),
                          (["--backend", "nope"], "unknown backend 'nope'"),
                          (["--json", str(tmp_path / "a file" / "x.json")], "cannot write --json")):
        assert sharded.main([*LAUNCH, *SUBSET, *extra]) == 2
        assert reason in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--nproc", "0"], ["--nproc", "-1"], ["--timeout", "0"]])
def test_launch_options_that_would_run_nothing_are_refused(sharded, option, capsys):
    with pytest.raises(SystemExit) as exc:
        sharded.main([*option, *SUBSET])
    assert exc.value.code == 2 and "must be > 0" in capsys.readouterr().err
