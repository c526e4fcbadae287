"""What the benchmark scripts share: the standard options, the GPU guard, case filtering, and the closing
table and reports."""
from __future__ import annotations

import argparse
import contextlib
import os

import torch
from tabulate import tabulate


def parser(doc: str | None, *, iters: int | None, warmup: int | None, cases: bool = True) -> argparse.ArgumentParser:
    """--iters, --warmup (unless None: a script that times otherwise), --seed, --json, --markdown (and --cases)
    with this script's defaults."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if iters is not None:
        p.add_argument("--iters", type=int, default=iters, help=f"timed calls (default {iters})")
    if warmup is not None:
        p.add_argument("--warmup", type=int, default=warmup, help=f"untimed calls first (default {warmup})")
    p.add_argument("--seed", type=int, default=0, help="seed of the shapes and data (default 0)")
    if cases:
        p.add_argument("--cases", default="", help="comma-separated substrings of case names (default: all)")
    p.add_argument("--json", help="write the report as JSON")
    p.add_argument("--markdown", help="write the report as markdown")
    return p


def gpu_device(needs_native: bool = False) -> torch.device | None:
    """The GPU to benchmark on, or None (after saying why) when there is none or no native extension."""
    from ckgemm.backends.native import _C

    if not torch.cuda.is_available() or (needs_native and _C is None):
        print("benchmarks need a GPU" + (" and the native extension" if needs_native else "") + "; nothing to do")
        return None
    return torch.device("cuda")


def selected(name: str, args) -> bool:
    """Whether --cases selects the case called ``name``."""
    return not args.cases or any(s in name for s in args.cases.split(","))


def finish(report, rows: list[dict], args, floatfmt: str = ".4g") -> None:
    """The whole table (none for no rows), then the report files asked for."""
    if rows:
        print(tabulate(rows, headers="keys", floatfmt=floatfmt))
    if args.json:
        report.write_json(args.json)
    if args.markdown:
        report.write_markdown(args.markdown)


@contextlib.contextmanager
def env_set(name: str, value: str):
    """``name=value`` in the environment while the block runs, then the variable as it was (a knob the op reads
    at each call: a graph captured inside keeps what the op read)."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def forced_instance(name: str):
    """CKGEMM_CONFIG=name while the block runs: the router tries that instance first, and a graph captured
    inside keeps it."""
    return env_set("CKGEMM_CONFIG", name)
