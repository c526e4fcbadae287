"""Baselines: store a report as JSON and gate a new run against it with a noise-aware threshold.

A row regresses when its median time grew by more than ``threshold`` (default 5%) AND the growth stands
out of both runs' noise: the new p10 is slower than the baseline p90. A NaN or infinite new time is a
regression. A row that fails its correctness check now is a regression ("correctness") whatever its time and
whatever the baseline said, a new row too; every new row counts, also several of one key. Rows are matched on
(op, backend, dtype, layout, shape, config); a baseline with several rows of one key is refused (ValueError,
exit status 2), since no new row could say which of them it compares with: put what tells them apart (sizes,
recipe) in ``shape`` or ``config``.

Command line (exit status 1 on any regression, 2 when a report cannot be read)::

    python -m ckgemm.testing.baseline NEW.json BASELINE.json [--threshold 0.05] [--fail-on-missing]
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from .report import KEY_FIELDS, Report, row_key

STATUSES = ("regression", "correctness", "improvement", "same", "missing", "new", "untimed", "base unusable")


def save_baseline(report: Report, path) -> Path:
    """A baseline is simply a report's JSON."""
    return report.write_json(path)


def load_baseline(path) -> Report:
    """A stored baseline; ValueError when several of its rows share a key (see the module docstring)."""
    report = Report.load(path)
    _unique_rows(report.rows)
    return report


@dataclass
class RowDelta:
    key: tuple
    status: str
    base_ms: float | None = None
    new_ms: float | None = None

    @property
    def change(self) -> float | None:
        """new / base - 1 of the median time (positive: slower)."""
        if self.base_ms and self.new_ms is not None:
            return self.new_ms / self.base_ms - 1.0
        return None


@dataclass
class Comparison:
    deltas: list[RowDelta]
    threshold: float
    fail_on_missing: bool = False

    @property
    def regressions(self) -> list[RowDelta]:
        bad = {"regression", "correctness"} | ({"missing", "base unusable"} if self.fail_on_missing else set())
        return [d for d in self.deltas if d.status in bad]

    @property
    def ok(self) -> bool:
        return not self.regressions

    def __str__(self) -> str:
        rows = [["/".join(d.key), d.status, _ms(d.base_ms), _ms(d.new_ms),
                 "" if d.change is None else f"{d.change:+.1%}"] for d in self.deltas]
        head = (f"baseline comparison (threshold {self.threshold:.0%}, noise: new p10 vs base p90): "
                f"{len(self.regressions)} regression(s)")
        return head + "\n" + tabulate(rows, headers=["row", "status", "base ms", "new ms", "change"],
                                      tablefmt="simple", disable_numparse=True)


def _ms(value) -> str:
    return "" if value is None else f"{value:.4g}"


def _as_report(obj) -> Report:
    if isinstance(obj, Report):
        return obj
    if isinstance(obj, dict):
        return Report.from_json(obj)
    return Report.load(obj)


def _classify(base: dict, new: dict, threshold: float) -> str:
    if new.get("passed") is False:  # a failing row fails the gate, whatever the baseline said
        return "correctness"
    b, n = base.get("median_ms"), new.get("median_ms")
    if isinstance(b, (int, float)) and not math.isfinite(b):
        return "base unusable"  # a NaN or infinite baseline time compares with nothing: as a missing row
    if isinstance(b, (int, float)) and b > 0 and isinstance(n, (int, float)) and not math.isfinite(n):
        return "regression"  # a NaN or infinite time is a broken measurement, never "same"
    if not isinstance(b, (int, float)) or not isinstance(n, (int, float)) or b <= 0:
        return "untimed"
    b_p10, b_p90 = base.get("p10_ms", b), base.get("p90_ms", b)
    n_p10, n_p90 = new.get("p10_ms", n), new.get("p90_ms", n)
    if n > b * (1.0 + threshold) and n_p10 > b_p90:
        return "regression"
    if n < b * (1.0 - threshold) and n_p90 < b_p10:
        return "improvement"
    return "same"


def _unique_rows(rows: list[dict]) -> dict:
    """The baseline's rows by key, refusing a key that several rows share (a silent pick would compare a new
    row with another case's time: a sweep that keeps its sizes outside the key passes a 50x regression)."""
    by_key: dict = {}
    for r in rows:
        by_key.setdefault(row_key(r), []).append(r)
    repeated = {key: len(group) for key, group in by_key.items() if len(group) > 1}
    if repeated:
        key, count = next(iter(repeated.items()))
        raise ValueError(f"the baseline has {count} rows of key {'/'.join(key)} ({len(repeated)} key(s) "
                         f"repeated); rows are matched on ({', '.join(KEY_FIELDS)}), so put what tells them apart "
                         "(sizes, recipe) in shape or config")
    return {key: group[0] for key, group in by_key.items()}


def compare(new, baseline, *, threshold: float = 0.05, fail_on_missing: bool = False) -> Comparison:
    """Compare a new report with a baseline (each a Report, its JSON dict, or a path)."""
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"compare: threshold must be a finite number >= 0, got {threshold!r}")
    new_r, base_r = _as_report(new), _as_report(baseline)
    new_rows: dict = {}
    for r in new_r.rows:  # every new row counts: a failing one is not hidden by a passing one of the same key
        new_rows.setdefault(row_key(r), []).append(r)
    base_rows = _unique_rows(base_r.rows)
    deltas = []
    for key, base in base_rows.items():
        rows = new_rows.get(key)
        if rows is None:
            deltas.append(RowDelta(key, "missing", base.get("median_ms")))
            continue
        deltas += [RowDelta(key, _classify(base, row, threshold), base.get("median_ms"), row.get("median_ms"))
                   for row in rows]
    deltas += [RowDelta(key, "correctness" if r.get("passed") is False else "new", None, r.get("median_ms"))
               for key, rows in new_rows.items() if key not in base_rows for r in rows]
    return Comparison(deltas, threshold, fail_on_missing)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ckgemm.testing.baseline",
                                     description="Gate a benchmark report against a baseline (exit 1 on regression, "
                                                 "2 when a report cannot be read).")
    parser.add_argument("new", help="report JSON of the new run")
    parser.add_argument("baseline", help="baseline report JSON")
    parser.add_argument("--threshold", type=float, default=0.05, help="relative slowdown that counts (default 0.05)")
    parser.add_argument("--fail-on-missing", action="store_true",
                        help="a baseline row absent from the new run, or one whose time is NaN or infinite, fails")
    args = parser.parse_args(argv)
    try:
        result = compare(args.new, args.baseline, threshold=args.threshold, fail_on_missing=args.fail_on_missing)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # unreadable report or bad threshold
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(result)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
