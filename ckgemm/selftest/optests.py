"""op_tests as a subprocess: ``op_tests/test_grouped_gemm.py --smoke --moe --quant <recipes> --no-perf``
(every dtype x recipe x layout x form over edge shapes and MoE splits, NaN-poisoned outputs, the bad-input
catalogue), judged by its exit status and its JSON report; the first failures are taken from its output
(each FAIL line with the check report's first mismatches and their indices)."""
from __future__ import annotations

import json
from pathlib import Path

from . import procs
from .checks import FAIL, PASS, SKIP, Check, Failure

NAME = "optests"
SCRIPT = Path("op_tests") / "test_grouped_gemm.py"
RECIPES = ("none", "tensor", "row", "block")
QUICK_MOE = ["--m", "16", "--n", "64", "--k", "160"]  # --moe on a CPU: 4 experts x 16 tokens; K = 160 > 128
_DETAIL_KEYS = ("first mismatches", "exceeds the bound", "all zeros", "Error", "error", "FAILED", "disagree")
_STARTS = ("PASS ", "FAIL ", "SKIP ", "perf: ", "summary (markdown)", "FAILED: ", "ALL PASSED")


def script(root: Path | None) -> Path | None:
    return root / SCRIPT if root is not None and (root / SCRIPT).is_file() else None


def failures_from_output(text: str) -> list[Failure]:
    """Each ``FAIL`` line of op_tests' output with the lines of its report that say what broke."""
    failures, current = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(_STARTS):
            current = None
            if stripped.startswith("FAIL "):  # a case, or "FAIL bad input: <name>: <what went wrong>"
                current = Failure(stripped[:400], "")
                failures.append(current)
        elif current is not None and any(k in stripped for k in _DETAIL_KEYS):
            current.message = "\n".join(filter(None, [current.message, stripped]))[:2000]
    return failures


def summarise_rows(rows: list[dict]) -> dict:
    """Counts per kind of row, and the (dtype, recipe) variants and layouts/forms covered."""
    cases = [r for r in rows if r.get("op") != "bad_input"]
    bad = [r for r in rows if r.get("op") == "bad_input"]
    return {
        "cases": len(cases), "cases_failed": sum(not r.get("passed") for r in cases),
        "bad_inputs": len(bad), "bad_inputs_failed": sum(not r.get("passed") for r in bad),
        "variants": sorted({f"{r['dtype']}/{r.get('quant', 'none')}" for r in cases}),
        "layouts_forms": sorted({f"{r['layout']}/{r.get('form', '')}" for r in cases}),
        "kernels": sorted({r.get("kernel", "") for r in cases} - {""})[:20],
    }


def command(quick: bool, recipes=RECIPES) -> list[str]:
    return ["--smoke", "--moe", "--quant", *recipes, "--no-perf", *(QUICK_MOE if quick else [])]


def run(out_dir: Path, timeout: float, quick: bool, path: Path | None = None) -> Check:
    path = path or script(procs.repo_root())
    if path is None:
        return Check(NAME, SKIP, f"no {SCRIPT} here (a wheel install): run the selftest from a ckgemm checkout")
    report = out_dir / "op-tests.json"
    result = procs.run([str(path), *command(quick), "--json", str(report)], out_dir / "op-tests.log", timeout,
                       cwd=path.parents[1])
    details = {"log": result.log.name, "exit_status": result.returncode, "command": " ".join(result.cmd[1:])}
    failures = failures_from_output(result.stdout)
    if result.timed_out:
        return Check(NAME, FAIL, f"timed out after {timeout:.0f} s", result.seconds, details,
                     failures or [Failure("op_tests", result.tail())])
    if report.is_file():
        details.update(summarise_rows(json.loads(report.read_text())["rows"]))
    verdict_line = next((ln for ln in reversed(result.stdout.splitlines()) if ln.startswith(("ALL PASSED", "FAILED"))),
                        "")
    if result.returncode != 0 or not report.is_file():
        return Check(NAME, FAIL, f"op_tests exit {result.returncode}: {verdict_line or 'no verdict line'}",
                     result.seconds, details, failures or [Failure("op_tests", result.tail())])
    if not details.get("cases"):
        return Check(NAME, FAIL, "op_tests passed without running a case", result.seconds, details)
    return Check(NAME, PASS, f"{details['cases']} cases ({', '.join(details['variants'])}) and "
                 f"{details['bad_inputs']} bad inputs passed", result.seconds, details)
