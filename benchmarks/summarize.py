#!/usr/bin/env python
"""One line per case x dtype from a bench_grouped_gemm.py JSON report: ckgemm against the best peer of
the same run, eagerly and under CUDA-graph replay (kernel time only). The eager time includes all host
overhead only from a run with --sync (device idle at each call's start: end to end); without it calls queue
behind the cache flush and the host's cost shows only where it exceeds that (the report's ``method`` says
which).

    python benchmarks/summarize.py bench.json > summary.md
"""
from __future__ import annotations

import argparse
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
            # bench_grouped_gemm's rows carry the paired (per-round) ratio; older reports only their medians
            paired = peer_g.get("graph_vs_ours") if peer_g else None
            line["graph ratio"] = paired or (peer_g["graph_ms"] / ours["graph_ms"] if peer_g else None)
        lines.append(line)
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", help="a benchmark report (JSON) of bench_grouped_gemm.py")
    args = p.parse_args(argv)
    try:
        report = Report.load(args.report)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"error: {args.report}: not a readable report ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    print(tabulate(summarize(report), headers="keys", tablefmt="github", floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
