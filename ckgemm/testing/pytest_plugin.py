"""pytest plugin (entry point ``ckgemm``): markers for ckgemm's and users' kernel tests."""
from __future__ import annotations

MARKERS = {
    "smoke": "quick correctness checks, run by default",
    "full": "wide sweeps of shapes and dtypes",
    "perf": "benchmarks; never gate on absolute times",
    "gpu": "needs a GPU; skipped cleanly when none is visible",
}


def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
