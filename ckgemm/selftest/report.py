"""The selftest report: one JSON document (``schema.SCHEMA``) and the same content as markdown, to send
back as they are. The verdict is FAIL exactly when a check failed or errored."""
from __future__ import annotations

import json
from pathlib import Path

from tabulate import tabulate

from .checks import Check
from .schema import SCHEMA, validate

MD_NAME, JSON_NAME = "selftest.md", "selftest.json"
_ENV_SHOWN = ("platform", "device", "arch", "fp8", "device_count", "memory_gib", "torch", "torch_cuda", "torch_hip",
              "python", "ckgemm", "commit", "checkout", "os", "host")


def verdict(checks: list[Check]) -> str:
    return "FAIL" if any(c.failed for c in checks) else "PASS"


def verdict_line(checks: list[Check], env: dict, seconds: float, out_dir: Path) -> str:
    counts: dict[str, int] = {}
    for c in checks:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    failed = [c.name for c in checks if c.failed]
    where = f"{env.get('device')} ({env.get('arch') or env.get('platform')})"
    tally = ", ".join(f"{n} {v}" for v, n in counts.items())
    return (f"ckgemm selftest: {verdict(checks)}" + (f" ({', '.join(failed)} failed)" if failed else "")
            + f" on {where}: {tally} in {seconds:.0f} s; report {out_dir / MD_NAME}")


def build(checks: list[Check], env: dict, timings: list[dict], *, started: str, seconds: float, argv: list[str],
          quick: bool, out_dir: Path) -> dict:
    logs = {c.name: log for c in checks for log in [c.details.get("log")] if isinstance(log, str)}
    for c in checks:
        for log in c.details.get("logs", []):
            logs[f"{c.name}:{Path(log).stem}"] = log
        for run in c.details.get("runs", []):
            logs[f"{c.name}:{run['case']}"] = run["log"]
    return {"schema": SCHEMA, "verdict": verdict(checks), "verdict_line": verdict_line(checks, env, seconds, out_dir),
            "started": started, "seconds": round(seconds, 2), "argv": list(argv), "quick": quick,
            "environment": _plain(env), "checks": [_plain(c.to_dict()) for c in checks], "timings": timings,
            "logs": logs}


def _plain(obj):
    """JSON values only (paths and other objects become strings; non-finite floats their names)."""
    return json.loads(json.dumps(obj, default=str), parse_constant=str)


def _cell(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def _peer_text(p: dict) -> str:
    if p["ms"] is None:
        return f"{p['name']} n/a ({p['reason']})"
    ours = p.get("ckgemm_ms")  # the ratio's own rounds, not the table's ckgemm column
    paired = "" if ours is None else f" against ckgemm {ours * 1e3:.4g} us in the same rounds"
    return f"{p['name']} {p['ms'] * 1e3:.4g} us{paired} (ckgemm {p['speedup']:.2f}x)"


def _timing_rows(timings: list[dict]) -> list[list[str]]:
    rows = []
    for t in timings:
        peers = "; ".join(_peer_text(p) for p in t["peers"])
        mfu = "" if t["mfu_pct"] is None else f"{t['mfu_pct']:.3g}"
        rows.append([t["dtype"], t["quant"], t["layout"], t["form"], t["shape"], t["kernel"],
                     f"{t['ckgemm_ms'] * 1e3:.4g}", f"{t['tflops']:.4g}", mfu, peers])
    return rows


def to_markdown(report: dict) -> str:
    env = report["environment"]
    lines = ["# ckgemm selftest", "", f"**{report['verdict_line']}**", "",
             f"Started {report['started']} (UTC), {report['seconds']:.0f} s; command "
             f"`python -m ckgemm.selftest {' '.join(report['argv'])}`" + (" (quick)" if report["quick"] else ""), "",
             "## Environment", ""]
    shown = [(k, env[k]) for k in _ENV_SHOWN if env.get(k) not in (None, "")]
    shown += [(k, env[k]) for k in ("backends", "toolchain", "settings", "telemetry") if env.get(k)]
    lines += [tabulate([[k, _cell(v)] for k, v in shown], headers=["", ""], tablefmt="github"), "", "## Checks", ""]
    lines += [tabulate([[c["name"], c["verdict"].upper(), c["summary"], f"{c['seconds']:.1f}"]
                        for c in report["checks"]], headers=["check", "verdict", "summary", "s"], tablefmt="github")]
    for c in report["checks"]:
        if c["failures"]:
            lines += ["", f"### First failures: {c['name']}", ""]
            for f in c["failures"]:
                lines += [f"- `{f['where']}`"] + ([f"  ```\n  {f['message'].replace(chr(10), chr(10) + '  ')}\n  ```"]
                                                   if f["message"] else [])
    if report["timings"]:
        lines += ["", "## Timings (median, cold caches; peers in the same process)", "",
                  tabulate(_timing_rows(report["timings"]), headers=["dtype", "quant", "layout", "form", "shape",
                                                                     "kernel", "ckgemm us", "TFLOP/s", "MFU %", "peers"],
                           tablefmt="github", disable_numparse=True)]
    details = [c for c in report["checks"] if c["details"]]
    lines += ["", "## Details", ""] + [f"- **{c['name']}**: {_cell(c['details'])}" for c in details]
    if report["logs"]:
        lines += ["", "## Logs (beside this file)", ""] + [f"- {k}: `{v}`" for k, v in report["logs"].items()]
    return "\n".join(lines) + "\n"


def write(report: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write both files; a report that breaks the schema is a bug of the selftest and raises."""
    problems = validate(report)
    if problems:
        raise ValueError("selftest report does not match its schema: " + "; ".join(problems[:5]))
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / JSON_NAME, out_dir / MD_NAME
    json_path.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    md_path.write_text(to_markdown(report))
    return md_path, json_path
