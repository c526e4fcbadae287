"""The benchmark scripts (benchmarks/*.py) as modules for the tests that check their pieces on the CPU."""
from __future__ import annotations

import importlib
import os
import sys

import pytest

# The scripts' modules a test may import (each script puts its own folder on the path and imports its siblings).
SCRIPT_MODULES = ("bench_env", "bench_grouped_gemm", "bench_scaled", "common", "cases", "units_model")


@pytest.fixture
def benchmark_module(monkeypatch):
    """``benchmark_module(name)`` imports a benchmark script as a module, with its folder first on a copy of the
    path; the scripts' modules are taken out of ``sys.modules`` before and after the test (what was there
    before is put back), so no later ``import common`` finds them."""
    monkeypatch.setattr(sys, "path", [os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"), *sys.path])
    saved = {name: sys.modules.pop(name) for name in SCRIPT_MODULES if name in sys.modules}
    yield importlib.import_module
    for name in SCRIPT_MODULES:
        sys.modules.pop(name, None)
    sys.modules.update(saved)
