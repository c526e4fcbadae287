"""The command line: once self-started (``--nproc 2``: cases, the fault self-test and the benchmark, with a
JSON report), once under torchrun (env:// rendezvous, a rank per process), and once in this process at world
size 1 with a GEMM that cannot run here, which must fail the run with a non-zero exit."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from ckgemm.testing.distributed import FAULTS
from ckgemm.testing.distributed.cli import main
from ckgemm.testing.distributed.world import pick_backend
from ckgemm.testing.distributed.layer import PHASES

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def test_cli_self_started_world_runs_cases_faults_and_bench(tmp_path):
    out = tmp_path / "ep.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "ckgemm.testing.distributed", "--nproc", "2", "--comm", "gloo", "--scenario", "balanced,empty-rank",
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
           "ckgemm.testing.distributed", "--comm", "gloo", "--scenario", "zero-token-rank", "--dtype", "int8", "--steps", "1"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "world 2 on gloo" in run.stdout and "ALL PASSED" in run.stdout
    assert run.stdout.count("zero-token-rank int8 exact") == 2  # one summary row per rank, printed by rank 0


def test_cli_exits_non_zero_when_a_rank_fails(capsys):
    # cutlass cannot run on gloo's CPU tensors (on any box): every GEMM raises, which the GEMM stage must report
    code = main(["--nproc", "1", "--comm", "gloo", "--backend", "cutlass", "--scenario", "balanced", "--dtype", "bf16",
                 "--mode", "exact", "--steps", "1"])
    text = capsys.readouterr().out
    assert code == 1 and "FAILED" in text
    assert "GEMM" in text and "the GEMM raised" in text


def test_comm_auto_gives_each_rank_a_gpu_or_falls_back_to_gloo(monkeypatch, capsys):
    for gpus, ranks, want in ((0, 1, "gloo"), (1, 1, "nccl"), (1, 2, "gloo"), (8, 8, "nccl")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda g=gpus: g > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda g=gpus: g)
        assert pick_backend("auto", ranks) == want, (gpus, ranks)
        assert pick_backend("gloo", ranks) == "gloo"
    assert pick_backend("nccl", 2) == "nccl"  # 8 GPUs
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=r"nccl needs one GPU per rank: 2 rank\(s\) on this host, 1 GPU"):
        pick_backend("nccl", 2)
    assert main(["--nproc", "2", "--comm", "nccl", "--dtype", "bf16"]) == 2
    assert "nccl needs one GPU per rank" in capsys.readouterr().err


BAD_CONFIGS = {  # options that parse but cannot run: exit 2 before any rank starts, with the reason
    "experts not split over the ranks": (["--experts", "7"], "7 experts do not split evenly over 2 ranks"),
    "no experts": (["--experts", "0"], "sizes must be positive"),
    "topk above the experts": (["--topk", "9"], "topk 9 exceeds the 8 experts"),
    "negative tokens": (["--tokens", "-1"], "sizes must be positive"),
    "no output columns": (["--out", "0"], "sizes must be positive"),
    "exact mode past its K": (["--hidden", "512"], "exact mode with bf16 needs hidden <= 256"),
    "a recipe no dtype takes": (["--dtype", "fp16", "--quant", "row"], "recipes \\['row'\\] take none of the dtypes"),
    "a scenario routing nothing": (["--scenario", "empty-rank", "--topk", "5"],
                                   "scenario empty-rank routes no token at world size 2"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_configurations_that_cannot_run_exit_2_before_any_rank_starts(name, capsys):
    options, message = BAD_CONFIGS[name]
    assert main(["--nproc", "2", "--comm", "gloo", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and re.search(message, err), err


@pytest.mark.parametrize("options, message", [(["--backend", "bogus"], "unknown backend 'bogus'"),
                                              (["--timeout", "0"], "--timeout must be > 0")])
def test_bad_backend_and_timeout_are_usage_errors(options, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--nproc", "2", *options])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_default_experts_split_over_any_world_size_and_world_one_leaves_out_what_routes_nothing():
    from ckgemm.testing.distributed.cli import default_experts, parse_args, plan

    assert [default_experts(w) for w in (1, 2, 3, 4, 5, 8)] == [8, 8, 9, 8, 10, 16]
    cases, notes = plan(parse_args(["--dtype", "bf16", "--mode", "exact"]), 1)
    assert {c.scenario for c in cases} == {"balanced", "zipf", "empty-expert"}
    assert [n.split(":")[0] for n in notes] == ["note", "note"] and "zero-token-rank" in notes[0]
