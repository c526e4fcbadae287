"""A short benchmark: op_tests' timed runs on a few representative cases (each checked for correctness
first, then timed with cold caches beside the peers available here: a loop of ``torch.matmul`` — cuBLAS or
hipBLASLt — ``torch._grouped_mm``, ``torch._scaled_mm`` / ``torch._scaled_grouped_mm`` with the run's
scales, and, with ``--aiter``, a loop of aiter's GEMMs). Times never gate the verdict; a case that fails
its correctness check, or a run that breaks, does."""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from . import procs
from .checks import FAIL, PASS, SKIP, Check
from .optests import failures_from_output, script

NAME = "benchmark"
PEERS = ("loop", "grouped", "aiter")


@dataclass(frozen=True)
class BenchCase:
    name: str
    args: tuple[str, ...]


# GPU: the seed script's default case (3 x 1024^3, every dtype) and a quantized MoE prefill layer.
FULL = (
    BenchCase("uniform", ("-d", "all", "-l", "RC", "-g", "3", "-m", "1024", "-n", "1024", "-k", "1024")),
    BenchCase("moe", ("--moe", "--moe-dist", "multinomial", "-g", "16", "-m", "512", "-n", "4096", "-k", "2048",
                      "-d", "bf16", "fp8", "-q", "none", "row", "block", "-l", "RC")),
)
# --quick (and any CPU run): the same kinds of case, small enough for the torch reference.
QUICK = (
    BenchCase("uniform", ("-d", "all", "-l", "RC", "-g", "3", "-m", "32", "-n", "64", "-k", "64",
                          "--warmup", "1", "--repeat", "3")),
    BenchCase("moe", ("--moe", "--moe-dist", "multinomial", "-g", "4", "-m", "16", "-n", "64", "-k", "160",
                      "-d", "bf16", "fp8", "-q", "none", "row", "block", "-l", "RC", "--warmup", "1", "--repeat", "3")),
)


def _ms(value):
    return float(value) if isinstance(value, (int, float)) else None


def timing(row: dict) -> dict:
    """An op_tests timed row -> the report's ``timings`` entry (schema.TIMING)."""
    peers = []
    for peer in PEERS:
        if f"{peer}_peer" not in row:
            continue
        ratio = row.get(f"vs_{peer}", "n/a")
        peers.append({"name": row[f"{peer}_peer"], "ms": _ms(row.get(f"{peer}_ms")),
                      "speedup": float(ratio[:-1]) if ratio.endswith("x") else None,
                      "reason": row.get(f"{peer}_reason", ""), "ckgemm_ms": _ms(row.get(f"{peer}_ours_ms"))})
    return {"dtype": row["dtype"], "quant": row.get("quant", "none"), "layout": row["layout"],
            "form": row.get("form", ""), "shape": row["shape"], "kernel": row.get("kernel", ""),
            "ckgemm_ms": float(row["median_ms"]), "tflops": float(row.get("tflops", 0.0)),
            "mfu_pct": _ms(row.get("mfu_pct")), "peers": peers}


def aiter_note(with_aiter: bool) -> str:
    if importlib.util.find_spec("aiter") is None:
        return "aiter is not installed here"
    if with_aiter:
        return "aiter's GEMMs timed (--aiter)"
    return "aiter is installed but not timed: its ops JIT-compile on first use (minutes); rerun with --aiter"


def run(out_dir: Path, timeout: float, quick: bool, with_aiter: bool = False,
        path: Path | None = None) -> tuple[Check, list[dict]]:
    """The benchmark check and the timings it measured."""
    path = path or script(procs.repo_root())
    if path is None:
        return Check(NAME, SKIP, "no op_tests script here (a wheel install): run from a ckgemm checkout"), []
    timings, failures, details = [], [], {"aiter": aiter_note(with_aiter), "runs": []}
    broken = []
    for case in QUICK if quick else FULL:
        report = out_dir / f"bench-{case.name}.json"
        args = [str(path), *case.args, "--json", str(report)] + (["--aiter"] if with_aiter else [])
        result = procs.run(args, out_dir / f"bench-{case.name}.log", timeout, cwd=path.parents[1])
        details["runs"].append({"case": case.name, "command": " ".join(result.cmd[1:]), "log": result.log.name,
                                "exit_status": result.returncode, "seconds": round(result.seconds, 1)})
        failures += failures_from_output(result.stdout)
        if result.returncode != 0 or not report.is_file():
            broken.append(f"{case.name}: " + ("timed out" if result.timed_out else f"exit {result.returncode}"))
            continue
        timings += [timing(r) for r in json.loads(report.read_text())["rows"] if "median_ms" in r]
    seconds = sum(r["seconds"] for r in details["runs"])
    if broken:
        return Check(NAME, FAIL, "; ".join(broken), seconds, details, failures), timings
    if not timings:
        return Check(NAME, FAIL, "no case was timed", seconds, details), timings
    ratios = [p["speedup"] for t in timings for p in t["peers"] if p["name"].endswith("matmul loop") and p["speedup"]]
    vs_loop = f"; ckgemm vs matmul loop {min(ratios):.2f}x..{max(ratios):.2f}x" if ratios else ""
    return Check(NAME, PASS, f"{len(timings)} cases timed{vs_loop} ({details['aiter']})", seconds, details), timings
