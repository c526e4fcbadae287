"""The tile schedule of ckgemm's own fp8 grouped kernel (csrc/cuda/ws_fp8_schedule.h: the arithmetic the
kernel runs, in plain C++), built with g++ from tests/cpp/test_ws_schedule.cpp and run on the CPU: every real
tile of every group is computed exactly once across the clusters' units, the two CTAs of a unit share the
operand they multicast, and only a pair's overhang is a dummy tile."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPP = ROOT / "tests" / "cpp"


@pytest.mark.smoke
def test_ws_schedule_covers_every_tile_once(tmp_path):
    cxx = shutil.which("g++") or shutil.which("clang++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH to build tests/cpp/test_ws_schedule.cpp")
    exe = tmp_path / "test_ws_schedule"
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'csrc'}", f"-I{CPP}",
           str(CPP / "test_ws_schedule.cpp"), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"build failed: {' '.join(cmd)}\n{build.stdout}{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    match = re.search(r"test_ws_schedule: (\d+) checks, (\d+) failures", run.stdout)
    assert match, f"no summary line (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    checks, failures = int(match.group(1)), int(match.group(2))
    assert failures == 0 and run.returncode == 0, f"{failures} of {checks} checks failed:\n{run.stderr[-3000:]}"
    assert checks >= 100000, f"only {checks} checks ran; cases were lost"
