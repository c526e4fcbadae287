"""pytest plugin (entry point ``ckgemm``, through ``_pytest_entry``; ``-p ckgemm.testing.pytest_plugin`` where
ckgemm is not installed), for ckgemm's tests and for anyone testing kernels with the harness.

Markers: ``smoke``, ``full``, ``perf``, ``gpu``. Tests marked ``gpu`` are skipped, with the reason, when no
GPU is visible to torch.
Options: ``--ckgemm-backend NAME`` (also ``CKGEMM_BACKEND``), ``--ckgemm-seed N`` (also ``CKGEMM_SEED``; printed in
the session header, and set as ``CKGEMM_SEED`` for the session), ``--ckgemm-report PATH`` (rows added to the ``ckgemm_report`` fixture are written there
as JSON, and as markdown beside it, when the session ends).
Fixtures: ``ckgemm_seed`` (int), ``ckgemm_backend`` (str or None), ``ckgemm_report`` (a ``report.Report``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

MARKERS = {
    "smoke": "quick correctness checks (every marker runs by default; select with -m)",
    "full": "wide sweeps of shapes and dtypes",
    "perf": "benchmarks; never gate on absolute times",
    "gpu": "needs a GPU; skipped cleanly when none is visible",
}
DEFAULT_SEED = 20261129
_REPORT_KEY = pytest.StashKey[object]()
_SEED_ENV_KEY = pytest.StashKey[object]()


def _env_seed():
    """CKGEMM_SEED as an int; an unreadable value is reported by pytest_configure as a usage error (this
    plugin loads in every pytest run of the environment, so it must not break them at import)."""
    raw = os.environ.get("CKGEMM_SEED", "").strip()
    if not raw:
        return DEFAULT_SEED
    try:
        return int(raw)
    except ValueError:
        return None


def pytest_addoption(parser):
    group = parser.getgroup("ckgemm", "ckgemm kernel harness")
    group.addoption("--ckgemm-backend", default=os.environ.get("CKGEMM_BACKEND") or None,
                    help="backend for ckgemm tests (default: best available; env CKGEMM_BACKEND)")
    group.addoption("--ckgemm-seed", type=int, default=_env_seed(),
                    help=f"base seed of random test data (default {DEFAULT_SEED}; env CKGEMM_SEED; the option "
                         "also sets CKGEMM_SEED for the session, which ckgemm's own tests read)")
    group.addoption("--ckgemm-report", default=None, metavar="PATH",
                    help="write rows added to the ckgemm_report fixture to PATH (JSON) and PATH.md")


def pytest_configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    seed = config.getoption("--ckgemm-seed", default=DEFAULT_SEED)
    if seed is None:
        raise pytest.UsageError(f"CKGEMM_SEED={os.environ.get('CKGEMM_SEED')!r} is not an integer")
    config.stash[_SEED_ENV_KEY] = os.environ.get("CKGEMM_SEED")  # restored by pytest_unconfigure
    os.environ["CKGEMM_SEED"] = str(seed)  # one seed for the fixture and for code that reads the environment
    report = config.getoption("--ckgemm-report", default=None)
    if report:
        from .report import writable_path

        if not writable_path(report):
            raise pytest.UsageError(f"--ckgemm-report {report}: cannot be written there")


def pytest_unconfigure(config):
    if _SEED_ENV_KEY not in config.stash:  # pytest_configure stopped before setting it
        return
    previous = config.stash[_SEED_ENV_KEY]  # as it was before the session: an in-process run leaks nothing
    if previous is None:
        os.environ.pop("CKGEMM_SEED", None)
    else:
        os.environ["CKGEMM_SEED"] = previous


def pytest_report_header(config):
    backend = config.getoption("--ckgemm-backend") or "best available"
    report = config.getoption("--ckgemm-report") or "none"
    return [f"ckgemm: seed {config.getoption('--ckgemm-seed')}, backend {backend}, report {report}"]


def gpu_skip_reason() -> str | None:
    """Why ``gpu`` tests cannot run here, or None when a GPU is visible."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        build = "CPU" if torch.version.cuda is None and torch.version.hip is None else "GPU"
        return f"no GPU visible to torch {torch.__version__} ({build} build)"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = gpu_skip_reason()
    if reason is None:
        return
    marker = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in gpu_items:
        item.add_marker(marker)


@pytest.fixture(scope="session")
def ckgemm_seed(pytestconfig) -> int:
    return pytestconfig.getoption("--ckgemm-seed")


@pytest.fixture(scope="session")
def ckgemm_backend(pytestconfig) -> str | None:
    return pytestconfig.getoption("--ckgemm-backend")


@pytest.fixture(scope="session")
def ckgemm_report(pytestconfig):
    from .report import Report

    report = Report("pytest session", meta={"seed": pytestconfig.getoption("--ckgemm-seed")})
    pytestconfig.stash[_REPORT_KEY] = report
    return report


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--ckgemm-report")
    report = session.config.stash.get(_REPORT_KEY, None)
    if not path or report is None or not report.rows:
        return
    json_path = report.write_json(path)
    report.write_markdown(Path(str(json_path) + ".md"))
