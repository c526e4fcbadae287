"""Benchmark and test reports: rows collected in a ``Report``, printed with tabulate, written as markdown
and JSON (never pickle), and read back for baseline comparison (``baseline.py``) and plots (``plot.py``).

A row is a plain dict. ``Report.add`` fills the standard keys (``ROW_KEYS``) from a timing result, the work
(FLOPs, bytes) and the ceilings, and keeps any extra keyword as an extra column::

    report = Report("grouped gemm, H200", meta=device_info.environment())
    report.add(op="grouped_gemm", backend="cutlass", dtype="bf16", layout="RC", shape=case.id,
               time=bench_result, flops=case.flops, nbytes=nbytes, ceilings=ceilings,
               error=check_report.summary(), passed=True, peer_ratio=1.23)
    print(report.table()); report.write_json("run.json"); report.write_markdown("run.md")
"""
from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from tabulate import tabulate

from .roofline import Ceilings, percent_of_roofline

SCHEMA = "ckgemm.report/1"
KEY_FIELDS = ("op", "backend", "dtype", "layout", "shape", "config")
ROW_KEYS = KEY_FIELDS + ("median_ms", "p10_ms", "p90_ms", "min_ms", "tflops", "gbps", "pct_roofline", "flops",
                         "bytes", "error", "passed")
_SHOWN = ("op", "backend", "dtype", "layout", "shape", "config", "median_ms", "p10_ms", "p90_ms", "tflops", "gbps",
          "pct_roofline", "error", "passed")


def writable_path(path) -> bool:
    """Whether a report can be written at ``path``: not a folder, and a file can be made in its nearest
    existing folder (the writers make the missing ones; a real file, not os.access, which says yes to root
    everywhere, /proc included). Checked before a long run, not after it."""
    folder = Path(path).resolve().parent
    while not folder.exists():
        folder = folder.parent
    if Path(path).is_dir() or not folder.is_dir():
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def unwritable(args, flags=("--json", "--markdown", "--csv")) -> str | None:
    """What a command line refuses (exit 2) before it runs anything: the report paths of ``args`` (an argparse
    namespace) under ``flags`` that are given and cannot be written (``writable_path``), as one message; None
    when every given path can be."""
    paths = [(flag, getattr(args, flag[2:].replace("-", "_"), None)) for flag in flags]
    bad = [f"{flag} {path}" for flag, path in paths if path and not writable_path(path)]
    return f"cannot write {', '.join(bad)}: a folder, under a file, or not writable" if bad else None


def row_key(row: dict) -> tuple:
    """What identifies a row across runs (baseline matching)."""
    return tuple(str(row.get(k, "")) for k in KEY_FIELDS)


def _time_stats(time) -> dict:
    if time is None:
        return {}
    stats = time.stats() if hasattr(time, "stats") else dict(time)
    return {k: stats.get(k) for k in ("median_ms", "p10_ms", "p90_ms", "min_ms") if stats.get(k) is not None} | (
        {"timing": f"{stats['method']}, {stats['cold']}"} if "method" in stats and "cold" in stats else {})


class Report:
    def __init__(self, title: str = "", meta: dict | None = None, rows: list[dict] | None = None):
        self.title = title
        self.meta = dict(meta or {})
        self.rows: list[dict] = list(rows or [])

    def add(self, *, op: str, backend: str, dtype: str, layout: str = "", shape: str = "", config: str = "",
            time=None, flops: float | None = None, nbytes: float | None = None, ceilings: Ceilings | None = None,
            error=None, passed: bool | None = None, **extra) -> dict:
        """Append a row. ``time`` is a ``BenchResult`` (or a dict with median_ms/p10_ms/p90_ms/min_ms);
        TFLOP/s, GB/s and % of roofline are derived when ``flops``/``nbytes``/``ceilings`` are given."""
        row = {"op": op, "backend": backend, "dtype": dtype, "layout": layout, "shape": shape, "config": config}
        row.update(_time_stats(time))
        median = row.get("median_ms")
        if flops is not None:
            row["flops"] = flops
        if nbytes is not None:
            row["bytes"] = nbytes
        if median:
            seconds = median / 1e3
            if flops is not None:
                row["tflops"] = flops / seconds / 1e12
            if nbytes is not None:
                row["gbps"] = nbytes / seconds / 1e9
            if ceilings is not None and flops is not None and nbytes is not None and dtype in ceilings.tflops:
                row["pct_roofline"] = percent_of_roofline(seconds, flops, nbytes, ceilings, dtype)
        if error is not None:
            row["error"] = error
        if passed is not None:
            row["passed"] = bool(passed)
        row.update(extra)
        self.rows.append(row)
        return row

    @property
    def passed(self) -> bool:
        return all(r.get("passed", True) for r in self.rows)

    def columns(self) -> list[str]:
        extra = []
        for row in self.rows:
            extra += [k for k in row if k not in ROW_KEYS and k not in extra and k != "timing"]
        present = [k for k in _SHOWN if any(k in r for r in self.rows)]
        return present + extra

    def table(self, tablefmt: str = "simple") -> str:
        cols = self.columns()
        body = [[_cell(r.get(c)) for c in cols] for r in self.rows]
        return tabulate(body, headers=cols, tablefmt=tablefmt, disable_numparse=True)

    def to_markdown(self) -> str:
        lines = [f"# {self.title}" if self.title else "# report", ""]
        if self.meta:
            lines += [f"- {k}: {_cell(v)}" for k, v in self.meta.items()] + [""]
        lines.append(self.table("github"))
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "title": self.title, "meta": jsonable(self.meta), "rows": jsonable(self.rows)}

    def write_json(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=False, allow_nan=False) + "\n")
        return path

    def write_markdown(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_markdown())
        return path

    @classmethod
    def from_json(cls, data: dict) -> "Report":
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a ckgemm report (schema {data.get('schema')!r}, expected {SCHEMA!r})")
        return cls(data.get("title", ""), data.get("meta"), [_unjson(r) for r in data.get("rows", [])])

    @classmethod
    def load(cls, path) -> "Report":
        return cls.from_json(json.loads(Path(path).read_text()))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items() if v is not None)
    return str(value)


def jsonable(obj):
    """Plain JSON values; non-finite floats become the strings 'nan', 'inf', '-inf' (strict JSON)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
_NUMERIC = ("median_ms", "p10_ms", "p90_ms", "min_ms", "tflops", "gbps", "pct_roofline")


def _unjson(row: dict) -> dict:
    return {k: _NONFINITE.get(v, v) if k in _NUMERIC and isinstance(v, str) else v for k, v in row.items()}
