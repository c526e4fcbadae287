"""The end-of-run summary in aiter's op_tests habit: one row per case with ``<impl> us`` / ``TFLOPS`` /
``err`` columns, printed as markdown (tabulate's github format, no pandas) and written as CSV.

Printed: a pass/fail count per (dtype, recipe, layout, form) and the timed cases (and any failure) in
full; the CSV holds every case."""
from __future__ import annotations

import csv
from pathlib import Path

from tabulate import tabulate

CASE_COLUMNS = ("dtype", "quant", "layout", "form", "shape", "purpose", "kernel", "ckgemm us", "ckgemm TFLOPS",
                "MFU %", "roofline %", "loop peer", "loop us", "ckgemm vs loop", "grouped peer", "grouped us",
                "ckgemm vs grouped", "aiter peer", "aiter us", "ckgemm vs aiter", "err", "passed")
PEERS = ("loop", "grouped", "aiter")


def _num(value, digits: int = 4) -> str:
    """``digits`` significant digits, never in e-notation (a 0.19 s call reads 192000, not 1.92e+05)."""
    if value is None:
        return ""
    return f"{value:.0f}" if abs(value) >= 10 ** digits else f"{value:.{digits}g}"


def _err(error) -> str:
    if not isinstance(error, dict):
        return "" if error is None else str(error)
    return ", ".join(f"{k}={_num(v) if isinstance(v, float) else v}" for k, v in error.items() if v is not None)


def case_row(row: dict) -> dict:
    """A report row (op_tests' keys) -> the summary's columns."""
    median = row.get("median_ms")
    return {
        "dtype": row.get("dtype", ""), "quant": row.get("quant", "none"), "layout": row.get("layout", ""),
        "form": row.get("form", ""), "shape": row.get("shape", ""), "purpose": row.get("config", ""),
        "kernel": row.get("kernel", ""), "ckgemm us": _num(median * 1e3 if median else None),
        "ckgemm TFLOPS": _num(row.get("tflops")), "MFU %": _num(row.get("mfu_pct"), 3),
        "roofline %": _num(row.get("pct_roofline"), 3), "err": _err(row.get("error")),
        "passed": "PASS" if row.get("passed") else "FAIL",
    } | {k: v for peer in PEERS for k, v in _peer_cells(row, peer).items()}


def _peer_cells(row: dict, peer: str) -> dict:
    # the ratio comes from paired rounds, not from "ckgemm us": ckgemm's median in those rounds goes beside it
    ms, ours = row.get(f"{peer}_ms"), row.get(f"{peer}_ours_ms")
    ratio = row.get(f"vs_{peer}", "")
    if ratio and ours:
        ratio = f"{ratio} (ckgemm {_num(ours * 1e3)} us paired)"
    return {f"{peer} peer": row.get(f"{peer}_peer", ""), f"{peer} us": _num(ms * 1e3 if ms else None),
            f"ckgemm vs {peer}": ratio}


def case_rows(report) -> list[dict]:
    return [case_row(r) for r in report.rows if r.get("op") != "bad_input"]


def counts_table(report) -> str:
    """Cases passed / failed per (dtype, quant, layout, form), and the bad-input checks, as markdown."""
    counts: dict[tuple, list[int]] = {}
    for r in report.rows:
        key = ("bad input", "", "", "") if r.get("op") == "bad_input" else (
            r.get("dtype", ""), r.get("quant", "none"), r.get("layout", ""), r.get("form", ""))
        entry = counts.setdefault(key, [0, 0])
        entry[0 if r.get("passed") else 1] += 1
    body = [[*key, ok, bad] for key, (ok, bad) in counts.items()]
    return tabulate(body, headers=["dtype", "quant", "layout", "form", "passed", "failed"], tablefmt="github")


def shown_table(report) -> str:
    """Timed cases and failures in full, as markdown ('' when there are none)."""
    rows = [case_row(r) for r in report.rows
            if r.get("op") != "bad_input" and ("median_ms" in r or not r.get("passed"))]
    if not rows:
        return ""
    cols = [c for c in CASE_COLUMNS if any(row[c] for row in rows)]
    return tabulate([[row[c] for c in cols] for row in rows], headers=cols, tablefmt="github",
                    disable_numparse=True)


def print_summary(report) -> None:
    print("\nsummary (markdown):\n" + counts_table(report))
    shown = shown_table(report)
    if shown:
        print("\ntimed cases and failures (markdown):\n" + shown)


def write_csv(report, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CASE_COLUMNS)
        writer.writeheader()
        writer.writerows(case_rows(report))
    return path
