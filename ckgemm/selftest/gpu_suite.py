"""The GPU test suite: ``pytest -m gpu`` on the checkout's tests/ as a subprocess, judged from its JUnit XML
(counts, and the first failures with their messages) and its exit status.

pytest's exit status 5 (no tests collected) is a failure; a run where every GPU test was skipped (no
GPU) is a skip with pytest's reason."""
from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

from . import procs
from .checks import FAIL, PASS, SKIP, Check, Failure

NAME = "gpu_suite"
MESSAGE_LINES = 8  # lines of a failure's text kept: the assertion, and the check report's first mismatches
_KEEP = ("Error", "error", "assert", "mismatch", "FAILED", "exceeds", "differs", "expected")


def _message(element) -> str:
    """The failure's message attribute and the lines of its text that say what broke."""
    head = (element.get("message") or "").strip().splitlines()[:2]
    lines = [ln.strip() for ln in (element.text or "").splitlines() if any(k in ln for k in _KEEP)]
    return "\n".join(dict.fromkeys(head + lines[:MESSAGE_LINES]))


def parse_junit(path: Path) -> dict:
    """{"tests", "passed", "failed", "errors", "skipped", "failures": [Failure], "skip_reasons": [str]}."""
    root = ET.parse(path).getroot()
    counts = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
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


def run(out_dir: Path, timeout: float) -> Check:
    root = procs.repo_root()
    if root is None:
        return Check(NAME, SKIP, "no ckgemm checkout here (a wheel install has no tests/): run the selftest from "
                     "a checkout installed with pip install -e .")
    if importlib.util.find_spec("pytest") is None:
        return Check(NAME, SKIP, 'pytest is not installed: pip install -e ".[test]"')
    xml = out_dir / "gpu-suite.xml"
    result = procs.run(["-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                        str(root / "tests")], out_dir / "gpu-suite.log", timeout, cwd=root)
    return judge(result, xml, timeout)


def judge(result: procs.Run, xml: Path, timeout: float) -> Check:
    """The verdict of a pytest run from its exit status and JUnit XML."""
    details = {"log": result.log.name, "exit_status": result.returncode, "command": " ".join(result.cmd[1:])}
    if result.timed_out or not xml.is_file():
        why = f"timed out after {timeout:.0f} s" if result.timed_out else f"pytest wrote no report (exit {result.returncode})"
        return Check(NAME, FAIL, why, result.seconds, details, [Failure("pytest", result.tail())])
    parsed = parse_junit(xml)
    failures = parsed.pop("failures")
    reasons = parsed.pop("skip_reasons")
    details.update(parsed)
    counts = ", ".join(f"{v} {k}" for k, v in parsed.items() if k != "tests" and v)
    if result.returncode not in (0, 5) or parsed["failed"] or parsed["errors"]:
        return Check(NAME, FAIL, f"pytest -m gpu: {counts or 'exit ' + str(result.returncode)}", result.seconds,
                     details, failures or [Failure("pytest", result.tail())])
    if parsed["passed"] == 0:
        if parsed["skipped"]:
            details["skip_reasons"] = reasons[:5]
            return Check(NAME, SKIP, f"all {parsed['skipped']} GPU tests skipped: {reasons[0] if reasons else '?'}",
                         result.seconds, details)
        return Check(NAME, FAIL, "pytest -m gpu collected no tests", result.seconds, details)
    return Check(NAME, PASS, f"pytest -m gpu: {counts}", result.seconds, details)
