#!/usr/bin/env python
"""Arithmetic model of how ckgemm's own 16-bit kernel (csrc/cuda/ws_fp8.cuh) shares a packed call's tiles among
its clusters, on the CPU: no GPU, no timing. It answers "how much of the call's time is the schedule's" for a
benchmark case (benchmarks/cases.py), the argument of docs/PERF_2026-12-06i.md.

- A unit is one 128-row M-block of a group and a pair of adjacent BN-wide N-blocks (the cluster of two CTAs
  sharing A). A group's last M-block with 64 rows or fewer runs one warp group (the other skips its wgmmas) and
  costs --half of a whole unit; every other unit costs 1.
- stride: cluster c takes units c, c + C, c + 2C, ... (C clusters); drawn: each unit goes, in order, to the cluster
  that is free first (ws_units.cuh's counter, modelled greedily); stride+drawn K: the stride, then the last K
  rounds of units drawn; stride+split SxR (drawn+split SxR): the stride (every unit drawn) with the last R
  rounds' units split along K into S slices, drawn, each slice costing 1/S of its unit plus --slice-overhead (the
  split tail built in f3bdbd7 and taken out again: on an H100 each slice cost 0.3-0.66 of a unit more than its
  share, fitted to docs/PERF_2026-12-07.md's runs, so it lost 1.4-1.7% where this model without the overhead
  gains 0.9-1.6%); balanced: the stride's rounds, each permuted among the clusters so that the call's cheap
  units go to the clusters in turn (balanced_unit, built in d68e767's ws_fp8_schedule.h and host-checked there, then
  taken out of main's tree again; on an H100 it ran 3.4% slower than the stride on Mixtral, and 2.3% on 8 x 4096^3
  where it is the stride: the model has no cost for the per-unit lookups, docs/PERF_2026-12-07c.md).
- Reported: the units (and how many run one warp group), their mean cost per cluster, each schedule's makespan
  (the busiest cluster's cost) and its loss against that mean, and the rows computed but never stored (whole
  64-row warp-group tiles). --seed draws the cases' other splits.

    python benchmarks/units_model.py --cases Mixtral
"""
from __future__ import annotations

import argparse
import heapq
import math
import sys

from tabulate import tabulate

from cases import all_cases  # benchmarks/cases.py: this script's folder is on sys.path


def unit_costs(ms: list[int], n: int, bn: int = 256, half: float = 0.5) -> list[float]:
    """Each unit's cost in the kernel's order: groups in turn, each group's N-block pairs in turn, M-fastest."""
    pairs = math.ceil(math.ceil(n / bn) / 2)
    costs = []
    for m in ms:
        blocks = [min(128, m - 128 * i) for i in range(math.ceil(m / 128))]
        costs += [half if rows <= 64 else 1.0 for rows in blocks] * pairs
    return costs


def makespan(costs: list[float], clusters: int, drawn_rounds: int | None = 0, slices: int = 1,
             body_drawn: bool = False, overhead: float = 0.0) -> float:
    """The busiest cluster's total cost: by stride (or, ``body_drawn``, drawn in turn), then the last
    ``drawn_rounds`` rounds of units drawn in turn (None: every unit drawn), each drawn unit split along K into
    ``slices`` equal parts drawn one by one, each costing ``overhead`` more where there are two or more."""
    extra = overhead if slices > 1 else 0.0
    tail = len(costs) if drawn_rounds is None else min(len(costs), drawn_rounds * clusters)
    static = len(costs) - tail
    load = [0.0] * clusters if body_drawn else [sum(costs[c:static:clusters]) for c in range(clusters)]
    heap = [(x, c) for c, x in enumerate(load)]
    heapq.heapify(heap)
    for cost in costs[:static] if body_drawn else ():
        x, c = heapq.heappop(heap)
        heapq.heappush(heap, (x + cost, c))
    for cost in costs[static:]:
        for _ in range(slices):
            x, c = heapq.heappop(heap)
            heapq.heappush(heap, (x + cost / slices + extra, c))
    return max(x for x, _ in heap)


def balanced(costs: list[float], clusters: int) -> float:
    """The busiest cluster's total cost under balanced_unit (d68e767's ws_fp8_schedule.h): round j (units [jC, jC + C))
    permuted among the clusters in turn from the pointer p (the call's cheap units before the round, mod C): the
    round's missing units first (the last round's), then its cheap units, then its whole ones."""
    load = [0.0] * clusters
    cheap_before = 0
    for x0 in range(0, len(costs), clusters):
        rnd = costs[x0:x0 + clusters]
        cheap = [x for x in rnd if x < 1]
        slots = [0.0] * (clusters - len(rnd)) + cheap + [x for x in rnd if x >= 1]
        for o, cost in enumerate(slots):
            load[(cheap_before + o) % clusters] += cost
        cheap_before += len(cheap)
    return max(load)


def waste(ms: list[int]) -> float:
    """Rows computed and never stored, as a share of the rows: each warp group computes 64 rows or none."""
    computed = sum(128 * (m // 128) + 64 * math.ceil((m % 128) / 64) for m in ms)
    return computed / sum(ms) - 1


def model(ms: list[int], n: int, clusters: int, half: float, bn: int = 256, overhead: float = 0.0) -> dict:
    costs = unit_costs(ms, n, bn, half)
    mean = sum(costs) / clusters
    row = {"units": len(costs), "one-warp-group units": sum(c < 1 for c in costs), "mean per cluster": mean}
    for label, rounds, slices, body_drawn in (("stride", 0, 1, False), ("stride+drawn 2", 2, 1, False),
                                              ("drawn", None, 1, False), ("stride+split 2x1", 1, 2, False),
                                              ("drawn+split 2x1", 1, 2, True), ("stride+split 4x2", 2, 4, False)):
        span = makespan(costs, clusters, rounds, slices, body_drawn, overhead)
        row[label] = span
        row[f"{label} loss %"] = 100 * (span / mean - 1)
    row["balanced"] = balanced(costs, clusters)
    row["balanced loss %"] = 100 * (row["balanced"] / mean - 1)
    row["rows not stored %"] = 100 * waste(ms)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shapes (default 0)")
    parser.add_argument("--sms", type=int, default=132, help="SMs: clusters of two (default 132, an H100/H200)")
    parser.add_argument("--half", type=float, default=0.5, help="cost of a one-warp-group unit (default 0.5)")
    parser.add_argument("--slice-overhead", type=float, default=0.0,
                        help="a split slice's cost beyond its share, in units (default 0; measured 0.3-0.66)")
    args = parser.parse_args()
    wanted = [w for w in args.cases.split(",") if w]
    rows = []
    for case in all_cases(args.seed):
        if case.decode or (wanted and not any(w in case.name for w in wanted)):
            continue
        ns = set(case.case.ns)
        if len(ns) != 1:
            continue
        rows.append({"case": case.name, **model(list(case.case.ms), ns.pop(), args.sms // 2, args.half,
                                                   overhead=args.slice_overhead)})
    print(tabulate(rows, headers="keys", floatfmt=".3g"))
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
