"""Subprocesses of the selftest (pytest, op_tests): where the checkout's scripts are, how to run one with a
timeout and keep its output as a log, and the interpreter and import path it gets."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import ckgemm

LOG_TAIL_LINES = 30


def repo_root() -> Path | None:
    """The ckgemm checkout this ckgemm was imported from (an editable install), or None (a wheel)."""
    root = Path(ckgemm.__file__).resolve().parents[1]
    return root if (root / "op_tests" / "test_grouped_gemm.py").is_file() and (root / "tests").is_dir() else None


@dataclass
class Run:
    cmd: list[str]
    returncode: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float
    log: Path

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join((self.stdout + self.stderr).strip().splitlines()[-lines:])


def child_env(root: Path | None) -> dict:
    """The parent's environment, with the checkout first on PYTHONPATH so the child imports this ckgemm.
    Without a GPU the children get one intra-op thread (unless OMP_NUM_THREADS is set): the reference
    backend's small matmuls gain nothing from threads, whose wake-ups cost milliseconds on a busy CPU."""
    env = dict(os.environ)
    if not torch.cuda.is_available():
        env.setdefault("OMP_NUM_THREADS", "1")
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run(args: list[str], log: Path, timeout: float, cwd: Path | None = None) -> Run:
    """``python <args>`` with this interpreter; stdout and stderr kept in ``log``."""
    cmd = [sys.executable, *args]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=child_env(repo_root()), check=False)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        err += f"\n[selftest] timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - started
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(cmd)}\n[exit {code}, {seconds:.1f} s]\n{out}\n--- stderr ---\n{err}")
    return Run(cmd, code, out, err, seconds, log)
