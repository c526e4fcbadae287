"""``python -m ckgemm.selftest [--quick] [--out DIR] [--skip PART ...] [--aiter]``: run every check, write
the report, print the one-line verdict; exit 0 when nothing failed, 1 otherwise (2: bad options)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import benchmark, build, environment, gpu_suite, optests, report
from .checks import ERROR, SKIP, Check, guarded

PARTS = ("gpu_suite", "optests", "benchmark")
DEFAULT_TIMEOUT_S = {"gpu_suite": 3600.0, "optests": 1800.0, "benchmark": 1200.0}

EPILOG = """
On an MI300/MI355 (or any GPU box): install ckgemm from a checkout as the README says, then run
    python -m ckgemm.selftest
and send back the directory it names (selftest.md, selftest.json and the logs beside them).
--quick shrinks the op_tests and benchmark shapes (what a CPU machine runs in well under a minute).
"""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ckgemm.selftest", description="Check ckgemm on this machine and "
                                "write one report.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="ckgemm-selftest", metavar="DIR",
                   help="directory for selftest.md, selftest.json and the logs (default ./ckgemm-selftest)")
    p.add_argument("--quick", action="store_true", help="small op_tests and benchmark shapes (default on a CPU)")
    p.add_argument("--skip", nargs="+", choices=PARTS, default=[], metavar="PART",
                   help=f"leave out parts ({', '.join(PARTS)}); each is reported as skipped")
    p.add_argument("--aiter", action="store_true", help="time aiter's GEMMs too (aiter JIT-compiles them: minutes)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="time limit of each subprocess in seconds (default: "
                        + ", ".join(f"{k} {v:.0f}" for k, v in DEFAULT_TIMEOUT_S.items()) + ")")
    args = p.parse_args(argv)
    if args.timeout is not None and not (0 < args.timeout < float("inf")):
        p.error("--timeout must be a positive number of seconds")
    out_dir = Path(args.out).resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        p.error(f"--out {args.out}: cannot make the report folder ({type(exc).__name__}: {exc})")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        p.error(f"--out {args.out}: the report folder is not writable")
    return args


def _timeout(args, part: str) -> float:
    return args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S[part]


def run_checks(args, out_dir: Path, quick: bool) -> tuple[list[Check], list[dict]]:
    checks: list[Check] = []
    for fn in build.checks():
        checks += guarded(fn.__name__.removeprefix("check_"), fn)
        print(f"[selftest] {checks[-1].name}: {checks[-1].verdict} - {checks[-1].summary}", flush=True)
    timings: list[dict] = []
    for part in PARTS:
        if part in args.skip:
            checks.append(Check(part, SKIP, "left out by --skip"))
        elif part == "gpu_suite":
            checks += guarded(part, gpu_suite.run, out_dir, _timeout(args, part))
        elif part == "optests":
            checks += guarded(part, optests.run, out_dir, _timeout(args, part), quick)
        else:
            found: list = []
            checks += guarded(part, lambda: _bench(args, out_dir, quick, found))
            timings = found
        print(f"[selftest] {checks[-1].name}: {checks[-1].verdict} - {checks[-1].summary}", flush=True)
    return checks, timings


def _bench(args, out_dir: Path, quick: bool, found: list) -> Check:
    check, timings = benchmark.run(out_dir, _timeout(args, "benchmark"), quick, args.aiter)
    found += timings
    return check


def main(argv=None) -> int:
    args = parse_args(argv)
    started, clock = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    out_dir = Path(args.out).resolve()  # made and checked by parse_args
    env, env_error = environment.collect_or_minimal()
    quick = args.quick or env["device_count"] == 0
    print(f"[selftest] {env['device']} ({env['arch'] or env['platform']}), torch {env['torch']}, ckgemm "
          f"{env['ckgemm']} at {env['commit'] or env['ckgemm_path']}; writing to {out_dir}"
          + ("; quick shapes" if quick else ""), flush=True)
    checks, timings = run_checks(args, out_dir, quick)
    if env_error:
        checks.insert(0, Check("environment", ERROR, f"reading this machine failed: {env_error}"[:300]))
    doc = report.build(checks, env, timings, started=started, seconds=time.perf_counter() - clock,
                       argv=list(sys.argv[1:] if argv is None else argv), quick=quick, out_dir=out_dir)
    report.write(doc, out_dir)
    print(doc["verdict_line"], flush=True)
    return 1 if doc["verdict"] == "FAIL" else 0
