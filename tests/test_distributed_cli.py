"""The command line: once self-started (``--nproc 2``: cases, the fault self-test and the benchmark, with a
JSON report), once under torchrun (env:// rendezvous, a rank per process), and once in this process at world
size 1 with a GEMM that cannot run here, which must fail the run with a non-zero exit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

from ckgemm.testing.distributed import FAULTS
from ckgemm.testing.distributed.cli import main
from ckgemm.testing.distributed.layer import PHASES

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def test_cli_self_started_world_runs_cases_faults_and_bench(tmp_path):
    out = tmp_path / "ep.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "ckgemm.testing.distributed", "--nproc", "2", "--scenario", "balanced,empty-rank",
           "--dtype", "bf16,fp8", "--steps", "2", "--self-test", "--bench", "--iters", "2", "--warmup", "1",
           "--seed", "5", "--json", str(out)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    text = run.stdout
    assert "world 2 on gloo" in text and "seed 5" in text and "ALL PASSED" in text
    assert all(phase in text for phase in PHASES) and "plain all_to_all_single" in text and "TFLOP/s" in text
    rows = json.loads(out.read_text())["rows"]
    cases = [r for r in rows if r["op"] == "ep_moe"]
    assert len(cases) == 2 * 2 * 2 * 2 and all(r["passed"] and r["stage"] is None for r in cases)  # x 2 ranks
    faults = [r for r in rows if r["op"] == "ep_fault"]
    assert {r["fault"] for r in faults} == set(FAULTS) and all(r["passed"] for r in faults)
    bench = [r for r in rows if r["op"] == "ep_bench"]
    assert len(bench) == 2 * 2 and all(set(PHASES) <= set(r["phases_ms"]) for r in bench)


def test_cli_under_torchrun():
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
           "ckgemm.testing.distributed", "--scenario", "zero-token-rank", "--dtype", "int8", "--steps", "1"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "world 2 on gloo" in run.stdout and "ALL PASSED" in run.stdout
    assert run.stdout.count("zero-token-rank int8 exact") == 2  # one summary row per rank, printed by rank 0


def test_cli_exits_non_zero_when_a_rank_fails(capsys):
    # cutlass cannot run on this CPU box: every GEMM raises, which the GEMM stage must report
    code = main(["--nproc", "1", "--backend", "cutlass", "--scenario", "balanced", "--dtype", "bf16",
                 "--mode", "exact", "--steps", "1"])
    text = capsys.readouterr().out
    assert code == 1 and "FAILED" in text
    assert "GEMM" in text and "the GEMM raised" in text
