"""The host-checked arithmetic of ckgemm's own kernels, built with g++ from tests/cpp and run on the CPU.

- test_ws_schedule.cpp, the tile schedule (csrc/cuda/ws_fp8_schedule.h), which both own kernels run. Every real
  tile of every group is computed exactly once across the clusters' units. The two CTAs of a unit share the
  operand they multicast. Only a pair's overhang is a dummy tile.
- test_ws_s8_layout.cpp, the int8 RR kernels' data movement (csrc/cuda/ws_s8_layout.h), against TMA's 128-byte
  swizzle and the plain byte transpose written there independently. The register form and the TMA form each
  move every byte of a random B tile to its K-major place exactly once. Every 16-byte shared load and store is
  free of bank conflicts."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPP = ROOT / "tests" / "cpp"


@pytest.mark.smoke
@pytest.mark.parametrize("name,min_checks", [("test_ws_schedule", 100000), ("test_ws_s8_layout", 40000)])
def test_own_kernel_host_arithmetic(tmp_path, name, min_checks):
    cxx = shutil.which("g++") or shutil.which("clang++") or shutil.which("c++")
    if cxx is None:
        pytest.skip(f"no C++ compiler on PATH to build tests/cpp/{name}.cpp")
    exe = tmp_path / name
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'csrc'}", f"-I{CPP}",
           str(CPP / f"{name}.cpp"), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"build failed: {' '.join(cmd)}\n{build.stdout}{build.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    match = re.search(rf"{name}: (\d+) checks, (\d+) failures", run.stdout)
    assert match, f"no summary line (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    checks, failures = int(match.group(1)), int(match.group(2))
    assert failures == 0 and run.returncode == 0, f"{failures} of {checks} checks failed:\n{run.stderr[-3000:]}"
    assert checks >= min_checks, f"only {checks} checks ran; cases were lost"
