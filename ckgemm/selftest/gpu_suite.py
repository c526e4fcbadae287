"""The GPU test suite: ``pytest -m gpu`` on the checkout's tests/ as subprocesses, judged from their JUnit XML
(counts, and the first failures with their messages) and exit statuses.

With a GPU, each test file that holds GPU tests runs in its own process (as scripts/device_suite.sh does), so
a crash or a lost device context in one file does not hide the other files' results; the files come from
``pytest --collect-only -m gpu``. Without one, every GPU test skips, so one process runs them all.
A crash without a report, a timeout, or no GPU test collected is a failure; a run where every GPU test was
skipped is a skip with pytest's reason."""
from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

from . import procs
from .checks import FAIL, PASS, SKIP, Check, Failure

NAME = "gpu_suite"
MESSAGE_LINES = 8  # lines of a failure's text kept: the assertion, and the check report's first mismatches
_KEEP = ("Error", "error", "assert", "mismatch", "FAILED", "exceeds", "differs", "expected")
COUNTS = ("tests", "passed", "failed", "errors", "skipped")
PYTEST = ["-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]


def _message(element) -> str:
    """The failure's message attribute and the lines of its text that say what broke."""
    head = (element.get("message") or "").strip().splitlines()[:2]
    lines = [ln.strip() for ln in (element.text or "").splitlines() if any(k in ln for k in _KEEP)]
    return "\n".join(dict.fromkeys(head + lines[:MESSAGE_LINES]))


def parse_junit(path: Path) -> dict:
    """{"tests", "passed", "failed", "errors", "skipped", "failures": [Failure], "skip_reasons": [str]}."""
    root = ET.parse(path).getroot()
    counts = dict.fromkeys(COUNTS, 0)
    failures, reasons = [], []
    for case in root.iter("testcase"):
        counts["tests"] += 1
        where = f"{case.get('classname', '')}::{case.get('name', '')}"
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        if failure is not None or error is not None:
            counts["failed" if failure is not None else "errors"] += 1
            failures.append(Failure(where, _message(failure if failure is not None else error)))
        elif skipped is not None:
            counts["skipped"] += 1
            reasons.append((skipped.get("message") or "").strip())
        else:
            counts["passed"] += 1
    return {**counts, "failures": failures, "skip_reasons": list(dict.fromkeys(reasons))}


def gpu_test_files(tests: Path, out_dir: Path, timeout: float) -> list[str]:
    """The test files holding tests that ``-m gpu`` selects (relative to the checkout), in collection order."""
    result = procs.run([*PYTEST, "--collect-only", str(tests)], out_dir / "gpu-suite-collect.log", timeout,
                       cwd=tests.parent)
    ids = [line.split("::")[0] for line in result.stdout.splitlines() if "::" in line]
    return list(dict.fromkeys(ids))


def _one(target: str, name: str, out_dir: Path, timeout: float, cwd: Path) -> tuple[procs.Run, Path]:
    xml = out_dir / f"gpu-suite-{name}.xml"
    xml.unlink(missing_ok=True)
    return procs.run([*PYTEST, f"--junitxml={xml}", target], out_dir / f"gpu-suite-{name}.log", timeout, cwd=cwd), xml


def run(out_dir: Path, timeout: float, per_file: bool | None = None, tests: Path | None = None) -> Check:
    if tests is None:
        root = procs.repo_root()
        if root is None:
            return Check(NAME, SKIP, "no ckgemm checkout here (a wheel install has no tests/): run the selftest "
                         "from a checkout installed with pip install -e .")
        tests = root / "tests"
    if importlib.util.find_spec("pytest") is None:
        return Check(NAME, SKIP, 'pytest is not installed: pip install -e ".[test]"')
    per_file = torch.cuda.is_available() if per_file is None else per_file
    targets = gpu_test_files(tests, out_dir, timeout) if per_file else [str(tests)]
    if not targets:
        return Check(NAME, FAIL, f"pytest -m gpu collected no tests in {tests} (see gpu-suite-collect.log)",
                     details={"log": "gpu-suite-collect.log"})
    runs = [_one(t, Path(t).stem if per_file else "all", out_dir, timeout, tests.parent) for t in targets]
    check = judge(runs, timeout)
    if per_file:
        check.details["logs"].insert(0, "gpu-suite-collect.log")
    return check


def _judge_file(result: procs.Run, xml: Path, timeout: float, totals: dict, failures: list, reasons: list) -> str:
    """Adds one process's results to the totals; returns why it broke ('' when it did not)."""
    if result.timed_out or not xml.is_file():
        failures.append(Failure(result.cmd[-1], result.tail()))
        return f"{Path(result.cmd[-1]).name}: " + (f"timed out after {timeout:.0f} s" if result.timed_out
                                                   else f"no report (exit {result.returncode})")
    parsed = parse_junit(xml)
    failures += parsed.pop("failures")
    reasons += parsed.pop("skip_reasons")
    for key in COUNTS:
        totals[key] += parsed[key]
    if result.returncode not in (0, 5) and not (parsed["failed"] or parsed["errors"]):
        failures.append(Failure(result.cmd[-1], result.tail()))
        return f"{Path(result.cmd[-1]).name}: exit {result.returncode}"
    return ""


def judge(runs: list[tuple[procs.Run, Path]], timeout: float) -> Check:
    """The verdict of pytest runs (one per file, or one for all) from exit statuses and JUnit XML."""
    totals, failures, reasons, broken = dict.fromkeys(COUNTS, 0), [], [], []
    for result, xml in runs:
        why = _judge_file(result, xml, timeout, totals, failures, reasons)
        if why:
            broken.append(why)
    seconds = sum(r.seconds for r, _ in runs)
    details = {**totals, "processes": len(runs), "logs": [r.log.name for r, _ in runs],
               "command": " ".join(runs[0][0].cmd[1:-1]) + " <tests>"}
    counts = ", ".join(f"{v} {k}" for k, v in totals.items() if k != "tests" and v)
    if broken or totals["failed"] or totals["errors"]:
        summary = "pytest -m gpu: " + "; ".join(filter(None, [counts] + broken))
        return Check(NAME, FAIL, summary, seconds, details, failures)
    if totals["passed"] == 0:
        if totals["skipped"]:
            details["skip_reasons"] = list(dict.fromkeys(reasons))[:5]
            return Check(NAME, SKIP, f"all {totals['skipped']} GPU tests skipped: {reasons[0] if reasons else '?'}",
                         seconds, details)
        return Check(NAME, FAIL, "pytest -m gpu collected no tests", seconds, details)
    return Check(NAME, PASS, f"pytest -m gpu: {counts} ({len(runs)} process{'es' if len(runs) > 1 else ''})",
                 seconds, details)
