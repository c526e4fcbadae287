#!/usr/bin/env python
"""op_tests/test_grouped_gemm.py's correctness sweep sharded over ranks, one GPU each: rank r runs every
world-th (dtype, layout, case) cell of the same plan, rank 0 gathers every rank's result rows into one report,
and every rank exits 1 when any cell on any rank failed. Takes test_grouped_gemm.py's options plus
--nproc/--comm/--timeout; a sharded sweep checks correctness only, so the timing options are ignored and
--aiter, --csv and --baseline are refused (exit 2).

  torchrun --nproc-per-node 8 op_tests/test_grouped_gemm_sharded.py --moe -g 32 -m 1024 --json all.json
  python op_tests/test_grouped_gemm_sharded.py --nproc 2 --smoke     # self-started: gloo ranks on a CPU box

Under torchrun use the short options -g/-m/-n/-k: torchrun reads --m and --n as ambiguous abbreviations of its own.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helper package beside this file

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from ckgemm.testing import Report, device_info  # noqa: E402
from ckgemm.testing.distributed.world import exit_rank, init_from_env, launch, pick_backend  # noqa: E402
from ckgemm.testing.distributed.verdict import gather_to_rank0  # noqa: E402
from grouped_gemm_cli.args import parse_args  # noqa: E402
from grouped_gemm_cli.bad_input import run_bad_inputs  # noqa: E402
from grouped_gemm_cli.correctness import cell_row, run_correctness  # noqa: E402
from grouped_gemm_cli.plan import cells, make_plan  # noqa: E402
from grouped_gemm_cli.preflight import without_a_gpu  # noqa: E402


SHARDED_EPILOG = """The options below --timeout are test_grouped_gemm.py's; each rank checks its share of the cells
(correctness only). --aiter, --csv and --baseline time or compare timings and are refused (exit 2); the
timing options --warmup/--repeat/--no-perf are ignored. Exit status: 0 when every cell on every rank passed,
1 on any failure, 2 for refused options."""


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its "invalid int value" message
    return parse


def launch_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # "--n 512" is the shape's N, not --nproc
    p.add_argument("--nproc", type=_positive(int), default=None,
                   help="self-start N >= 1 ranks (fork on CPU, spawn on GPU); default 1")
    p.add_argument("--comm", default="auto", choices=("auto", "gloo", "nccl"),
                   help="auto: nccl when every rank of this host gets a GPU, else gloo")
    p.add_argument("--timeout", type=_positive(float), default=300, help="collective timeout in seconds (> 0)")
    return p


def split_argv(argv):
    """(launch options, the rest for test_grouped_gemm.py's parser)."""
    return launch_parser().parse_known_args(argv)


def run_shard(world, args) -> dict:
    """This rank's cells; returns {"failures": failures on every rank} (the rows on rank 0)."""
    torch.backends.mkldnn.enabled = False  # as test_grouped_gemm.py on CPU: no per-shape oneDNN JIT
    plan = make_plan(args)
    rows = []
    for variant, layout, item in cells(plan)[world.rank::world.size]:
        outcome, _, _ = run_correctness(item.case, variant, layout, item.form, args.seed, plan.device, args.backend)
        print(f"[rank {world.rank}] {'PASS' if outcome.passed else 'FAIL'} {variant.label:4s} {layout} "
              f"{item.form:6s} {item.case}" + ("" if outcome.passed else f"\n{outcome.report}"), flush=True)
        rows.append({**cell_row(variant, layout, item, outcome, args.backend), "rank": world.rank})
    if world.rank == 0 and (args.bad_input or args.smoke):
        rows += [{"op": "bad_input", "backend": args.backend or "auto", "dtype": "", "shape": case, "passed": ok,
                  "rank": 0} for case, ok, _ in run_bad_inputs(plan.device, args.seed, backend=args.backend)]
    failures = torch.tensor([sum(not r["passed"] for r in rows)], dtype=torch.int64)
    dist.all_reduce(failures, group=world.control)
    gathered = gather_to_rank0(rows, world.control, world.rank, world.size)
    if gathered is not None:
        report = Report("ckgemm grouped GEMM, sharded", meta={**device_info.environment(plan.device),
                                                             "world": world.size, "seed": args.seed},
                        rows=[row for part in gathered for row in part])
        print(report.table(), flush=True)
        for path, write in ((args.json, report.write_json), (args.markdown, report.write_markdown)):
            if path:
                print(f"report: {write(path)}", flush=True)
        print(f"{'ALL PASSED' if not int(failures) else f'FAILED: {int(failures)} failure(s)'} "
              f"({len(report.rows)} rows from {world.size} ranks)", flush=True)
    return {"failures": int(failures)}


def main(argv=None) -> int:
    launch_opts, rest = split_argv(sys.argv[1:] if argv is None else argv)
    args = parse_args(rest, prog="test_grouped_gemm_sharded.py", parents=[launch_parser()],
                      description=__doc__, epilog=SHARDED_EPILOG)
    refused = [flag for flag, given in (("--aiter", args.aiter), ("--csv", args.csv), ("--baseline", args.baseline))
               if given]
    if refused:
        print(f"error: {', '.join(refused)}: a sharded sweep times nothing; run test_grouped_gemm.py for that",
              file=sys.stderr)
        return 2
    problem = without_a_gpu(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        world = init_from_env(launch_opts.comm, launch_opts.timeout)
        failures = run_shard(world, args)["failures"]
        dist.barrier(group=world.control)
        exit_rank(1 if failures else 0)
    try:
        backend = pick_backend(launch_opts.comm, launch_opts.nproc or 1)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    outcomes = launch(run_shard, launch_opts.nproc or 1, args, backend=backend,
                      timeout_s=launch_opts.timeout, deadline_s=3600)
    for o in outcomes:
        if not o.ok:
            print(f"rank {o.rank} failed: {o.error}", file=sys.stderr)
    if not outcomes:  # never expected (--nproc >= 1): a run of no ranks checked nothing
        print("error: no rank ran", file=sys.stderr)
        return 1
    return 0 if all(o.ok and not o.value["failures"] for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
