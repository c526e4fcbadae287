"""The selftest report's JSON schema (``ckgemm.selftest/1``) and a validator for it (no jsonschema needed).

    {
      "schema": "ckgemm.selftest/1",
      "verdict": "PASS" | "FAIL",
      "verdict_line": str,                      # the one line the command printed last
      "started": str (ISO 8601, UTC), "seconds": float, "argv": [str], "quick": bool,
      "environment": {str: str | int | float | bool | None | list | dict},   # see environment.collect()
      "checks": [{"name": str, "verdict": "pass" | "fail" | "skip" | "error", "summary": str,
                  "seconds": float, "details": {...},
                  "failures": [{"where": str, "message": str}]}],         # first failures, indices included
      "timings": [{"dtype": str, "quant": str, "layout": str, "form": str, "shape": str, "kernel": str,
                   "ckgemm_ms": float, "tflops": float, "mfu_pct": float | None,
                   "peers": [{"name": str, "ms": float | None, "speedup": float | None, "reason": str,
                              "ckgemm_ms": float | None}]}],   # ckgemm_ms: optional (reports before it lack it)
      "logs": {str: str}                        # check name -> log file, relative to the report
    }

``verdict`` is FAIL exactly when some check's verdict is fail or error. A peer's ``speedup`` is its time over
ckgemm's in the paired rounds both were timed in: ``ms`` and ``ckgemm_ms`` are those rounds' medians (a timing's
``ckgemm_ms`` is ckgemm's own, longer run).
"""
from __future__ import annotations

from .checks import ERROR, FAIL, VERDICTS

SCHEMA = "ckgemm.selftest/1"
NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))

TOP = {"schema": str, "verdict": str, "verdict_line": str, "started": str, "seconds": NUMBER, "argv": list,
       "quick": bool, "environment": dict, "checks": list, "timings": list, "logs": dict}
CHECK = {"name": str, "verdict": str, "summary": str, "seconds": NUMBER, "details": dict, "failures": list}
FAILURE = {"where": str, "message": str}
TIMING = {"dtype": str, "quant": str, "layout": str, "form": str, "shape": str, "kernel": str, "ckgemm_ms": NUMBER,
          "tflops": NUMBER, "mfu_pct": OPTIONAL_NUMBER, "peers": list}
PEER = {"name": str, "ms": OPTIONAL_NUMBER, "speedup": OPTIONAL_NUMBER, "reason": str}
PEER_OPTIONAL = {"ckgemm_ms": OPTIONAL_NUMBER}


def _fields(obj, spec: dict, where: str, optional: dict | None = None) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: expected an object, got {type(obj).__name__}"]
    optional = optional or {}
    problems = [f"{where}: missing key {key!r}" for key in spec if key not in obj]
    problems += [f"{where}: unexpected key {key!r}" for key in obj if key not in spec and key not in optional]
    for key, types in (spec | optional).items():
        if key in obj and (not isinstance(obj[key], types) or (types is NUMBER and isinstance(obj[key], bool))):
            problems.append(f"{where}.{key}: expected {getattr(types, '__name__', types)}, "
                            f"got {type(obj[key]).__name__}")
    return problems


def validate(report: dict) -> list[str]:
    """Every way ``report`` departs from the schema (an empty list: it conforms)."""
    problems = _fields(report, TOP, "report")
    if problems:
        return problems
    if report["schema"] != SCHEMA:
        problems.append(f"report.schema: expected {SCHEMA!r}, got {report['schema']!r}")
    for i, check in enumerate(report["checks"]):
        where = f"checks[{i}]"
        problems += _fields(check, CHECK, where)
        if isinstance(check, dict) and check.get("verdict") not in VERDICTS:
            problems.append(f"{where}.verdict: {check.get('verdict')!r} is not one of {VERDICTS}")
        for j, failure in enumerate(check.get("failures", []) if isinstance(check, dict) else []):
            problems += _fields(failure, FAILURE, f"{where}.failures[{j}]")
    for i, timing in enumerate(report["timings"]):
        problems += _fields(timing, TIMING, f"timings[{i}]")
        for j, peer in enumerate(timing.get("peers", []) if isinstance(timing, dict) else []):
            problems += _fields(peer, PEER, f"timings[{i}].peers[{j}]", PEER_OPTIONAL)
    problems += [f"logs.{k}: expected a path string" for k, v in report["logs"].items() if not isinstance(v, str)]
    failed = any(isinstance(c, dict) and c.get("verdict") in (FAIL, ERROR) for c in report["checks"])
    if report["verdict"] != ("FAIL" if failed else "PASS"):
        problems.append(f"report.verdict: {report['verdict']!r} but {'a' if failed else 'no'} check failed")
    return problems
