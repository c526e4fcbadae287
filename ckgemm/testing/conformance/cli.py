"""``python -m ckgemm.testing.conformance``: options, the plan they make, the run, the outputs."""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import torch
from tabulate import tabulate

from . import catalogue
from .checks import Context, run_check
from .kernel import FORMS, LAYOUTS, Kernel, OpSpecError, declared_form, load_op
from .operands import QUANT_DTYPES, QUANTS
from .output import EXIT_USAGE, Result
from .perf import run_perf
from .. import device_info
from ...dtypes import fp8_dtype_for
from .. import data
from ..report import Report, unwritable

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}  # fp8: the device's flavour
OUT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

EPILOG = """
calling conventions (docs/CONFORMANCE.md has the details):
  list form    fn(a_list, b_list) -> list of outputs
  packed form  fn(a, b, group_sizes) -> out;  a [sum M, K], b [G, N, K] (RC) or [G, K, N] (RR), sizes int32 [G]
  with scales  fn(a_list, b_list, scale_a_list, scale_b_list) / fn(a, b, group_sizes, scale_a, scale_b)
  keywords layout=, out=, out_dtype= are passed when the function names them

examples:
  python -m ckgemm.testing.conformance --op ckgemm --device cpu
  python -m ckgemm.testing.conformance --op mypkg.moe:grouped_mm --form packed --dtype bf16 --json run.json
  python -m ckgemm.testing.conformance --op torch_scaled_grouped_mm --quant row --full --perf
  python -m ckgemm.testing.conformance --op deep_gemm --quant block --full --perf --markdown dg.md

exit status: 0 every applicable check passed; 1 a check failed (or the suite erred); 2 bad options;
3 nothing applied (every check unsupported or n/a).
"""


class UsageError(ValueError):
    pass


@dataclass
class Plan:
    kernels: list
    dtypes: list  # (name, torch dtype)
    device: torch.device
    tier: str
    checks: list
    out_dtype: torch.dtype | None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ckgemm.testing.conformance", epilog=EPILOG,
                                description="A conformance suite for any grouped GEMM: edge cases, quantization-"
                                "aware precision, poisoned outputs, determinism, graphs, perf against peers.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", help="pkg.module:function, path/to/file.py:function, or a built-in adapter: "
                   "ckgemm, torch_grouped_mm, torch_scaled_grouped_mm, deep_gemm, deep_gemm_masked, aiter_gmm")
    p.add_argument("--form", help="list, packed, or list,packed (default: the forms the op declares)")
    p.add_argument("--layout", default="RC", help="RC (b[i] stored [N, K]), RR ([K, N]) or RC,RR; default RC")
    p.add_argument("--dtype", help="comma-separated fp16,bf16,fp8,int8 (default: every dtype --quant takes); fp8 "
                   "is the device's e4m3 flavour")
    p.add_argument("--quant", choices=QUANTS, default="none", help="scale recipe (default none)")
    p.add_argument("--out-dtype", choices=tuple(OUT_DTYPES), help="output dtype the op must return (default: "
                   "ckgemm's dtype table; bf16 with scales)")
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when visible, else cpu")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--smoke", action="store_true", help="small shapes, seconds on a CPU (the default)")
    size.add_argument("--full", action="store_true", help="realistic MoE sizes (for a GPU)")
    p.add_argument("--seed", type=int, default=0, help="seed of shapes and data (printed; default 0)")
    p.add_argument("--checks", help="comma-separated check ids to run (default: all; see --list-checks)")
    p.add_argument("--bad-input", action="store_true", help="also check that invalid calls raise")
    p.add_argument("--perf", action="store_true", help="time the op against the roofline and torch peers")
    p.add_argument("--iters", type=int, default=20, help="timed calls per measurement with --perf; default 20")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first; default 5")
    p.add_argument("--json", metavar="PATH", help="write the matrix as JSON")
    p.add_argument("--markdown", metavar="PATH", help="write the matrix as markdown")
    p.add_argument("--csv", metavar="PATH", help="write the rows as CSV")
    p.add_argument("--list-checks", action="store_true", help="print the catalogue and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="print the per-group report of failed comparisons")
    return p


def _names(text: str | None, known, what: str) -> list[str]:
    names = list(dict.fromkeys(t.strip() for t in (text or "").split(",") if t.strip()))  # each once
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"--{what} {','.join(unknown)}: unknown; expected from {', '.join(known)}")
    return names


def _kernels(args, spec: str) -> list:
    fns = load_op(spec)
    forms = _names(args.form, FORMS, "form")
    declared = [declared_form(fn) for fn in fns]
    if not forms:
        if None in declared:
            raise UsageError(f"--form is needed: {spec} does not declare its form (a conformance_form attribute)")
        forms = declared
    chosen = []
    for form in forms:
        matching = [fn for fn, d in zip(fns, declared) if d in (form, None)]
        if not matching:
            raise UsageError(f"--form {form}: {spec} has no {form} form (it has: {', '.join(filter(None, declared))})")
        chosen.append((form, matching[0]))
    if len(fns) == 1 and declared[0] is None and len(forms) > 1:
        raise UsageError(f"--form {args.form}: one function serves one calling convention; run each form separately")
    layouts = _names(args.layout, LAYOUTS, "layout") or ["RC"]
    return [Kernel.wrap(fn, spec if len(fns) == 1 else f"{spec} ({getattr(fn, '__name__', form)})", form, layout)
            for form, fn in chosen for layout in layouts]


def make_plan(args) -> Plan:
    if args.op is None:
        raise UsageError("--op is required (pkg.module:function or a built-in adapter name)")
    if args.iters < 1 or args.warmup < 0:
        raise UsageError("--iters must be >= 1 and --warmup >= 0")
    problem = data.seed_problem(args.seed) or unwritable(args)
    if problem:
        raise UsageError(problem)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible here")
    allowed = QUANT_DTYPES[args.quant]
    names = _names(args.dtype, DTYPES.keys() | {"fp8"}, "dtype") or list(allowed)
    refused = [n for n in names if n not in allowed]
    if refused:
        raise UsageError(f"--quant {args.quant} takes {', '.join(allowed)}, not {', '.join(refused)}")
    dtypes = []
    for name in names:
        try:
            dtypes.append((name, fp8_dtype_for(device) if name == "fp8" else DTYPES[name]))
        except ValueError as exc:
            raise UsageError(f"--dtype fp8: {exc}") from None
    try:
        checks = catalogue.find(_names(args.checks, [c.id for c in catalogue.CATALOGUE + catalogue.BAD_INPUT],
                                       "checks") or None)
    except KeyError as exc:
        raise UsageError(str(exc)) from None
    if args.bad_input:  # also with --checks: every bad-input check, each once
        checks += [c for c in catalogue.BAD_INPUT if c not in checks]
    return Plan(_kernels(args, args.op), dtypes, device, "full" if args.full else "smoke", checks,
                OUT_DTYPES.get(args.out_dtype))


def list_checks() -> str:
    rows = [(c.id, c.kind, c.title, c.purpose) for c in catalogue.CATALOGUE + catalogue.BAD_INPUT]
    return tabulate(rows, headers=["check", "kind", "what", "purpose"], tablefmt="simple")


def _progress(row) -> None:
    print(f"  {row.status:11s} {row.check:13s} {row.dtype:4s} {row.form:6s} {row.layout} {row.case:24s} "
          f"{row.failed + ': ' if row.failed else ''}{row.detail[:120]}", flush=True)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_checks:
        print(list_checks())
        return 0
    try:
        plan = make_plan(args)
    except (UsageError, OpSpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    meta = {"op": args.op, "forms": ",".join(dict.fromkeys(k.form for k in plan.kernels)),
            "layouts": ",".join(dict.fromkeys(k.layout for k in plan.kernels)), "quant": args.quant,
            "dtypes": ",".join(n for n, _ in plan.dtypes), "sizes": plan.tier, "seed": args.seed,
            **device_info.environment(plan.device), "argv": " ".join(sys.argv[1:] if argv is None else argv)}
    print("conformance: " + "; ".join(f"{k} {v}" for k, v in meta.items() if k != "argv"), flush=True)
    threads = torch.get_num_threads()
    if plan.device.type == "cpu" and plan.tier == "smoke" and not args.perf:
        torch.set_num_threads(1)  # tiny shapes: intra-op thread wake-ups would cost more than the work
    try:
        result = _run(args, plan, meta)
    finally:
        torch.set_num_threads(threads)
    print(result.console())
    if args.verbose:
        for row in result.rows:
            if row.report:
                print(f"\n{row.check} ({row.dtype} {row.form} {row.layout}):\n{row.report}")
    for path in result.write(json_path=args.json, markdown_path=args.markdown, csv_path=args.csv):
        print(f"wrote {path}")
    return result.exit_code


def _run(args, plan: Plan, meta: dict) -> Result:
    started, rows = time.perf_counter(), []
    perf = Report(f"conformance perf: {args.op}", meta=meta) if args.perf else None
    for kernel in plan.kernels:
        for name, dtype in plan.dtypes:
            ctx = Context(kernel, plan.device, dtype, name, args.quant, catalogue.TIERS[plan.tier], args.seed,
                          plan.out_dtype)
            for check in plan.checks:
                rows.append(run_check(ctx, check))
                _progress(rows[-1])
            if perf is not None:
                for row in run_perf(ctx, perf, iters=args.iters, warmup=args.warmup, tier=plan.tier):
                    rows.append(row)
                    _progress(row)
    return Result({**meta, "seconds": round(time.perf_counter() - started, 1)}, rows, perf)
