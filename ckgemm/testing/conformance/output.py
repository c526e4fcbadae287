"""The conformance matrix and its renderings: a console table (tabulate), markdown, JSON and CSV, and
the exit code: 0 when every applicable check passed, 1 when any failed (or the suite itself erred), 3
when nothing applied (every row unsupported or n/a). Usage errors exit with 2 before any row exists.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from tabulate import tabulate

from ..report import Report, jsonable
from .checks import STATUSES, Row

SCHEMA = "ckgemm.conformance/1"
EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NOTHING_APPLIED = 0, 1, 2, 3
CSV_FIELDS = ("kind", "check", "title", "form", "layout", "dtype", "quant", "status", "failed", "case", "seed",
              "detail", "max_abs_err", "worst_group", "calc_diff", "mismatches", "purpose")
_SHOWN = {"pass": "pass", "fail": "FAIL", "unsupported": "unsupported", "n/a": "n/a", "error": "ERROR"}


def _column(row: Row) -> str:
    return f"{row.dtype} {row.form} {row.layout}"


def _cell(row: Row) -> str:
    return _SHOWN[row.status] + (f" ({row.failed})" if row.status == "fail" and row.failed else "")


@dataclass
class Result:
    meta: dict
    rows: list[Row]
    perf: Report | None = None

    def counts(self) -> dict:
        return {status: sum(r.status == status for r in self.rows) for status in STATUSES}

    @property
    def exit_code(self) -> int:
        counts = self.counts()
        if counts["fail"] or counts["error"]:
            return EXIT_FAIL
        return EXIT_PASS if counts["pass"] else EXIT_NOTHING_APPLIED

    def verdict(self) -> str:
        counts = self.counts()
        tally = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s] or s in ("pass", "fail"))
        head = {EXIT_PASS: "CONFORMS", EXIT_FAIL: "FAILED",
                EXIT_NOTHING_APPLIED: "NOTHING APPLIED (every check unsupported or n/a)"}[self.exit_code]
        return f"{head}: {tally}"

    def matrix(self, tablefmt: str = "simple") -> str:
        """Checks down, (dtype, form, layout) across, the status in each cell."""
        columns = list(dict.fromkeys(_column(r) for r in self.rows))
        by_check: dict = {}
        for r in self.rows:
            by_check.setdefault(r.check, {"title": r.title})[_column(r)] = _cell(r)
        body = [[check, cells["title"]] + [cells.get(c, "") for c in columns] for check, cells in by_check.items()]
        return tabulate(body, headers=["check", "what"] + columns, tablefmt=tablefmt, disable_numparse=True)

    def not_passed(self, tablefmt: str = "simple", with_na: bool = False) -> str:
        """One line per row that did not pass (n/a only with ``with_na``), with its reason."""
        keep = ("fail", "error", "unsupported") + (("n/a",) if with_na else ())
        groups: dict = {}  # rows of one column with the same verdict and reason share a line
        for r in self.rows:
            if r.status in keep:
                groups.setdefault((_column(r), _cell(r), r.detail), []).append(r)
        if not groups:
            return ""
        body = []
        for (column, cell, detail), rows in groups.items():
            checks = ", ".join(r.check for r in rows) if len(rows) <= 3 else \
                f"{len(rows)} checks: {rows[0].check} .. {rows[-1].check}"
            body.append([checks, column, cell, rows[0].case if len(rows) == 1 else "", detail])
        return tabulate(body, headers=["check", "where", "status", "case", "why"], tablefmt=tablefmt,
                        disable_numparse=True, maxcolwidths=[None, None, None, None, 110])

    def console(self) -> str:
        parts = [self.matrix()]
        rest = self.not_passed()
        if rest:
            parts += ["", rest]
        if self.perf is not None and self.perf.rows:
            parts += ["", self.perf.table()]
        parts += ["", self.verdict()]
        return "\n".join(parts)

    def to_markdown(self) -> str:
        lines = [f"# Conformance: `{self.meta.get('op', '?')}`", ""]
        lines += [f"- {k}: {v}" for k, v in self.meta.items() if k != "op"] + [""]
        lines += ["## Matrix", "", self.matrix("github"), "", f"**{self.verdict()}**", ""]
        rest = self.not_passed("github", with_na=True)
        if rest:
            lines += ["## Rows that did not pass", "", rest, ""]
        purposes = list(dict.fromkeys((r.check, r.purpose) for r in self.rows))
        lines += ["## Checks", "", tabulate(purposes, headers=["check", "purpose"], tablefmt="github"), ""]
        if self.perf is not None and self.perf.rows:
            lines += ["## Perf", "", self.perf.table("github"), ""]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return jsonable({"schema": SCHEMA, "meta": self.meta,
                         "summary": {**self.counts(), "exit_code": self.exit_code, "verdict": self.verdict()},
                         "rows": [asdict(r) for r in self.rows],
                         "perf": [] if self.perf is None else self.perf.to_json()["rows"]})

    def to_csv(self) -> str:
        records = [{"kind": "check", **{k: v for k, v in asdict(r).items() if k not in ("metrics", "report")},
                    **r.metrics} for r in self.rows]
        records += [{"kind": "perf", **row} for row in ([] if self.perf is None else self.perf.rows)]
        fields = list(CSV_FIELDS)
        for record in records:
            fields += [k for k in record if k not in fields]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=fields, restval="", extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({k: _csv_value(v) for k, v in jsonable(record).items()})
        return buffer.getvalue()

    def write(self, *, json_path=None, markdown_path=None, csv_path=None) -> list[Path]:
        written = []
        for path, text in ((json_path, lambda: json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n"),
                           (markdown_path, self.to_markdown), (csv_path, self.to_csv)):
            if path:
                path = Path(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text())
                written.append(path)
        return written


def _csv_value(value):
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value


def load(path) -> dict:
    """A conformance JSON written by ``Result.write`` (schema checked)."""
    data = json.loads(Path(path).read_text())
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a conformance report (schema {data.get('schema')!r}, expected {SCHEMA!r})")
    return data
