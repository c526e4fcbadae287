"""CK backend host logic, checked on the CPU: builds tests/cpp/test_host_plan.cpp, test_rules.cpp and
test_ck_routing.cpp with the real instance table (csrc/hip/registry.cpp over instances.inc, every dtype)
and fake kernels carrying the real tile traits, and runs it. Purpose: regression of the ABI's host half
(instance ids and infos, the acceptance rule with its upstream-bug workarounds, kind refusals,
preference order, scratch sizes), the router over that table, descriptor packing and the fp8 flavour per
AMD arch, none of which can be run here on an AMD GPU."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # build_support is not an installed package
from build_support import rocm  # noqa: E402

CPP = ROOT / "tests" / "cpp"
SOURCES = [CPP / "test_host_plan.cpp", CPP / "test_rules.cpp", CPP / "test_ck_routing.cpp",
           ROOT / "csrc" / "hip" / "registry.cpp"]


def _compiler() -> str | None:
    for name in (os.environ.get("CXX"), "g++", "clang++", "clang++-19", "c++"):
        if name and shutil.which(name):
            return name
    return None


@pytest.mark.smoke
def test_ck_host_plan(tmp_path):
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++/clang++/c++ or $CXX) on PATH to build tests/cpp/test_host_plan.cpp")
    exe = tmp_path / "test_host_plan"
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'csrc'}", f"-I{CPP}",
           *rocm.dtype_macros(rocm.DTYPES), *map(str, SOURCES), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"build failed: {' '.join(cmd)}\n{build.stdout}{build.stderr}"

    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    print(run.stdout + run.stderr)
    match = re.search(r"test_host_plan: (\d+) checks, (\d+) failures", run.stdout)
    assert match, f"no summary line in output (exit {run.returncode}):\n{run.stdout}{run.stderr}"
    checks, failures = int(match.group(1)), int(match.group(2))
    assert failures == 0 and run.returncode == 0, f"{failures} of {checks} checks failed:\n{run.stderr}"
    assert checks >= 400, f"only {checks} checks ran; test cases were lost"
