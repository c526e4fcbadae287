#!/usr/bin/env python
"""One line per case x dtype from a bench_grouped_gemm.py JSON report: ckgemm against the best peer of
the same run, eagerly (host overhead included) and under CUDA-graph replay (kernel time only).

    python benchmarks/summarize.py bench.json > summary.md
"""
from __future__ import annotations

import sys

from tabulate import tabulate

from ckgemm.testing.report import Report


def _best(rows, key):
    timed = [r for r in rows if r.get(key)]
    return min(timed, key=lambda r: r[key]) if timed else None


def summarize(report: Report) -> list[dict]:
    lines = []
    cases = {}
    for row in report.rows:
        cases.setdefault((row["shape"], row["dtype"]), []).append(row)
    for (shape, dtype), rows in cases.items():
        ours = next(r for r in rows if r["op"] == "ckgemm packed")
        peers = [r for r in rows if not r["op"].startswith("ckgemm")]
        peer, peer_g = _best(peers, "median_ms"), _best(peers, "graph_ms")
        line = {"case": shape, "dtype": dtype, "config": ours.get("config", ""), "ckgemm ms": ours["median_ms"],
                "TFLOP/s": ours.get("tflops"), "best peer": peer["op"] if peer else "none",
                "peer ms": peer["median_ms"] if peer else None,
                "ratio": peer["median_ms"] / ours["median_ms"] if peer else None}
        if ours.get("graph_ms"):
            line["graph ms"] = ours["graph_ms"]
            line["graph peer"] = peer_g["op"] if peer_g else "none"
            line["graph ratio"] = peer_g["graph_ms"] / ours["graph_ms"] if peer_g else None
        lines.append(line)
    return lines


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    report = Report.load(sys.argv[1])
    print(tabulate(summarize(report), headers="keys", tablefmt="github", floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
