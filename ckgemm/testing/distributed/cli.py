"""``python -m ckgemm.testing.distributed``: the expert-parallel correctness flow (and its fault self-test
and benchmark) from the command line, under ``torchrun`` or self-started with ``--nproc N``.
Rank 0 prints; every rank learns the all-reduced verdict; the exit status is 1 when anything failed."""
from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist

from ..device_info import device_name
from .. import data
from ..report import Report, unwritable
from .bench import bench_layer, bench_text
from .config import DTYPE_NAMES, MODES, QUANTS, Case, MoEConfig, grid
from .flow import run_flow
from .world import exit_rank, init_from_env, launch, pick_backend, run_in_process
from .router import SCENARIOS, routes_nothing
from .selftest import run_self_test
from .verdict import summary_table

EPILOG = """
examples:
  python -m ckgemm.testing.distributed --nproc 4                          # CPU: 4 gloo ranks, every scenario
  torchrun --nproc-per-node 8 -m ckgemm.testing.distributed --dtype bf16,fp8 --backend cutlass
  python -m ckgemm.testing.distributed --nproc 2 --self-test              # every fault must be caught
  torchrun --nproc-per-node 8 -m ckgemm.testing.distributed --mode numeric --tokens 4096 --hidden 7168 \\
      --out 2048 --experts 64 --topk 8 --scenario balanced --dtype fp8 --bench
"""
NVLINK_MULTICAST_ENV = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


def _names(value: str, known, what: str) -> list[str]:
    names = list(known) if value == "all" else list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--{what}: unknown {unknown or value!r}; known: {', '.join(known)}, all")
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ckgemm.testing.distributed", epilog=EPILOG,
                                description="Expert-parallel MoE correctness under torch.distributed: every rank "
                                            "checks its stages against a reference rebuilt from one shared seed.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=int, default=None,
                   help="start N ranks from this process (fork on CPU, spawn on GPU); leave out under torchrun")
    p.add_argument("--scenario", default="all", help=f"comma list of {', '.join(SCENARIOS)} or all (default)")
    p.add_argument("--dtype", default="bf16,fp8,int8", help=f"comma list of {', '.join(DTYPE_NAMES)}, or all")
    p.add_argument("--quant", default="none", help=f"comma list of {', '.join(QUANTS)} (default none: unscaled)")
    p.add_argument("--mode", default="both", choices=MODES + ("both",), help="exact, numeric or both (default)")
    p.add_argument("--steps", type=int, default=4, help="steps per case, fresh tokens each (default 4), then a rerun")
    p.add_argument("--experts", type=int, default=None,
                   help="experts, a multiple of the world size (default: max(8, 2 x world size), rounded up to one)")
    p.add_argument("--topk", type=int, default=MoEConfig.topk)
    p.add_argument("--hidden", type=int, default=MoEConfig.hidden,
                   help=f"K (default {MoEConfig.hidden}: two 128-deep scale blocks; exact mode: at most 256 for bf16)")
    p.add_argument("--out", type=int, default=MoEConfig.out,
                   help=f"N (default {MoEConfig.out}: two 128-wide weight-scale blocks)")
    p.add_argument("--tokens", type=int, default=MoEConfig.tokens,
                   help="tokens on rank 0 (rank r: fewer, see router.py)")
    p.add_argument("--seed", type=int, default=0, help="the one seed every rank rebuilds the data from")
    p.add_argument("--backend", default=None, help="ckgemm backend of the grouped GEMM (default: best available)")
    p.add_argument("--comm", default="auto", choices=("auto", "gloo", "nccl"), help="auto: nccl when every rank of this host gets a GPU, else gloo (CPU)")
    p.add_argument("--timeout", type=float, default=120, help="collective timeout in seconds (default 120)")
    p.add_argument("--self-test", action="store_true", help="run every fault; each must be caught by its stage")
    p.add_argument("--bench", action="store_true", help="per-phase times, all-to-all GB/s, GEMM TFLOP/s")
    p.add_argument("--warmup", type=int, default=3, help="bench: untimed iterations (default 3)")
    p.add_argument("--iters", type=int, default=10, help="bench: timed iterations (default 10)")
    p.add_argument("--json", metavar="PATH", help="rank 0 writes the report (every case x rank) as JSON")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.scenarios = _names(args.scenario, tuple(SCENARIOS), "scenario")
        args.dtypes = _names(args.dtype, DTYPE_NAMES, "dtype")
        args.quants = _names(args.quant, QUANTS, "quant")
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    args.modes = list(MODES) if args.mode == "both" else [args.mode]
    if args.nproc is not None and args.nproc < 1:
        parser.error("--nproc must be >= 1")
    if min(args.steps, args.iters) < 1 or args.warmup < 0:
        parser.error("--steps and --iters must be >= 1, --warmup >= 0")
    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0, got {args.timeout}")
    problem = data.seed_problem(args.seed) or unwritable(args, ("--json",))
    if problem:
        parser.error(problem)
    if args.backend is not None:
        import ckgemm  # the op, imported lazily (the GEMM this flow runs; layer.py)

        known = tuple(ckgemm.backend_status())
        if args.backend not in known:
            parser.error(f"--backend: unknown backend {args.backend!r}; known: {', '.join(known)}")
    return args


def default_experts(world_size: int) -> int:
    """max(8, 2 x world size), rounded up to a multiple of the world size so the experts split evenly."""
    least = max(8, 2 * world_size)
    return -(-least // world_size) * world_size


def plan(args, world_size: int) -> tuple[list[Case], list[str]]:
    """The run's cases and notes on scenarios left out; ValueError for a configuration that cannot run (the
    CLI's exit status 2, found before any rank starts)."""
    experts = args.experts if args.experts is not None else default_experts(world_size)
    sizes = {"experts": experts, "topk": args.topk, "hidden": args.hidden, "out": args.out, "tokens": args.tokens}
    MoEConfig(**sizes, mode="numeric").local_experts(world_size)  # the sizes' own errors first
    scenarios, notes = [], []
    for name in args.scenarios:  # a scenario that routes no token would pass without checking anything
        why = routes_nothing(SCENARIOS[name], tokens=args.tokens, experts=experts, topk=args.topk, world=world_size)
        if why is None:
            scenarios.append(name)
        elif args.scenario == "all":
            notes.append(f"note: scenario {name} left out at world size {world_size}: {why}")
        else:
            raise ValueError(f"scenario {name} routes no token at world size {world_size} ({why}): nothing to check")
    if not scenarios:
        raise ValueError(f"no scenario routes a token with these sizes ({'; '.join(notes)})")
    cases = grid(scenarios, args.dtypes, args.modes, sizes=sizes, quants=args.quants, steps=args.steps)
    if not cases:
        raise ValueError(f"no case: recipes {args.quants} take none of the dtypes {args.dtypes}")
    return cases, notes



def _header(world, args) -> str:
    env = ", ".join(f"{k}={os.environ[k]}" for k in NVLINK_MULTICAST_ENV if k in os.environ) or "none set"
    return (f"ckgemm expert-parallel flow: world {world.size} on {world.backend}, device {device_name(world.device)}, "
            f"ckgemm backend {args.backend or 'best available'}, seed {args.seed}, torch {torch.__version__}; "
            f"NVLink multicast env: {env}")


def rank_main(world, args) -> dict:
    """One rank's whole run; returns {"passed": bool, "rows": [...]} (the rows on rank 0)."""
    lead = world.rank == 0
    report = Report("ckgemm expert-parallel flow", meta={"world": world.size, "comm": world.backend,
                                                         "seed": args.seed, "backend": args.backend or "auto"})
    cases, notes = plan(args, world.size)
    if lead:
        print(_header(world, args), flush=True)
        for note in notes:
            print(note, flush=True)
    results = run_flow(world, cases, seed=args.seed, backend=args.backend)
    passed = all(r.passed for r in results) and not any(r.broken for r in results)
    for r in results:
        for row in r.rows or []:
            report.add(op="ep_moe", backend=args.backend or "auto", dtype=r.label, shape=r.scenario, passed=r.passed,
                       **{k: v for k, v in row.items() if k != "case"})
    if lead:
        print(summary_table([row for r in results for row in r.rows or []]), flush=True)
    if args.self_test:
        outcomes = run_self_test(world, seed=args.seed, backend=args.backend)
        passed &= all(o.ok for o in outcomes)
        for o in outcomes:
            report.add(op="ep_fault", backend=args.backend or "auto", dtype=o.label, shape=o.fault, passed=o.ok,
                       **{k: v for k, v in o.row().items() if k != "ok"})
        if lead:
            print(Report(rows=[o.row() for o in outcomes]).table(), flush=True)
    if args.bench and passed:
        for case in cases[::len(args.modes)]:
            summary = bench_layer(world, case.config, case.scenario, seed=args.seed, backend=args.backend,
                                  warmup=args.warmup, iters=args.iters)
            if lead:
                print(bench_text(summary), flush=True)
                report.add(op="ep_bench", backend=args.backend or "auto", dtype=case.config.label,
                           shape=case.scenario, passed=True, **summary)
    if lead:
        print("ALL PASSED" if passed else "FAILED", flush=True)
        if args.json:
            print(f"report: {report.write_json(args.json)}", flush=True)
    return {"passed": passed, "rows": report.rows if lead else None}


def main(argv=None) -> int:
    args = parse_args(argv)
    torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    try:  # a configuration that cannot run stops here, before any rank starts (exit 2, as a bad option)
        plan(args, int(os.environ["WORLD_SIZE"]) if torchrun else (args.nproc or 1))
    except ValueError as exc:
        if not torchrun or os.environ.get("RANK") == "0":
            print(f"error: {exc}", file=sys.stderr)
        return 2
    if torchrun:  # under torchrun: this process is one rank
        if args.nproc is not None:
            print("note: --nproc is ignored under torchrun", file=sys.stderr)
        world = init_from_env(args.comm, args.timeout)
        passed = rank_main(world, args)["passed"]
        dist.barrier(group=world.control)  # nobody leaves while rank 0 still gathers
        exit_rank(0 if passed else 1)
    nproc = args.nproc or 1
    try:
        backend = pick_backend(args.comm, nproc)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if nproc == 1:
        return 0 if run_in_process(rank_main, args, backend=backend, timeout_s=args.timeout)["passed"] else 1
    outcomes = launch(rank_main, nproc, args, backend=backend, timeout_s=args.timeout)
    for o in outcomes:
        if not o.ok:
            print(f"rank {o.rank} failed: {o.error}", file=sys.stderr)
    return 0 if all(o.ok and o.value["passed"] for o in outcomes) else 1
