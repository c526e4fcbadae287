#!/usr/bin/env python
"""Check and time ckgemm's grouped GEMM on this machine: every case against ckgemm.testing's reference
(CK-tile tolerances per group, int8 exact, NaN-poisoned outputs; --quant recipes against the reference with
the same quantization), bad inputs as pass/fail checks, and timings (shape, kernel config, TFLOP/s, MFU)
beside the peers available here, then a markdown summary. Exits non-zero on any failure. Run with --help."""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helper package beside this file

import torch  # noqa: E402

import ckgemm  # noqa: E402
from ckgemm.testing import Report, baseline, device_info, roofline  # noqa: E402
from ckgemm.testing.report import unwritable  # noqa: E402
from grouped_gemm_cli.args import parse_args  # noqa: E402
from grouped_gemm_cli.bad_input import run_bad_inputs  # noqa: E402
from grouped_gemm_cli.correctness import cell_row, output_dtype, run_correctness  # noqa: E402
from grouped_gemm_cli.perf import mfu_pct, perf_line, time_run, work  # noqa: E402
from grouped_gemm_cli.plan import cells, make_plan  # noqa: E402
from grouped_gemm_cli.preflight import NOTHING_TO_RUN, backend_problem  # noqa: E402
from grouped_gemm_cli.summary import print_summary, write_csv  # noqa: E402

def _header(args, plan) -> None:
    backend = args.backend or (ckgemm.available_backends(plan.device) or ["?"])[0]
    print(f"ckgemm grouped GEMM: seed {args.seed}; device {device_info.device_name(plan.device)}; backend {backend}; "
          f"torch {torch.__version__}; dtypes {[v.label for v in plan.variants]}; layouts {list(plan.layouts)}; "
          f"{len(plan.items)} shape case(s)")
    for note in plan.skipped:
        print(f"SKIP {note}")


def _timed_row(item, variant, layout, outcome, prepared, ceilings, timing, device, aiter) -> dict:
    """Time one passed case, print its perf line, and return the report columns of the timing."""
    flops, nbytes = work(item.case, variant.dtype, output_dtype(variant))
    timed = time_run(prepared, item.case, variant.quant, timing["warmup"], timing["repeat"], device, aiter)
    print("     " + perf_line(f"{variant.label} {layout} {item.form}", item.case, outcome.kernel, timed, ceilings,
                              variant.name))
    mfu = mfu_pct(flops, timed.ms, ceilings, variant.name)
    return dict(time=timed.ours, flops=flops, nbytes=nbytes, ceilings=ceilings, **timed.columns(),
                **({"mfu_pct": mfu} if mfu is not None else {}))


def _checked_timing(item, variant, layout, outcome, prepared, recheck, ceilings, timing, device, aiter) -> dict:
    """The timing columns, after which the outputs the timed calls left are judged again; an error while
    timing, or outputs that no longer pass, fail the cell (``passed``/``error`` in the returned columns)."""
    label = f"{variant.label} {layout} {item.form} {item.case}"
    try:
        prepared.poison()
        columns = _timed_row(item, variant, layout, outcome, prepared, ceilings, timing, device, aiter)
        again = recheck()
    except Exception as exc:  # noqa: BLE001 - an error while timing fails this cell; the run goes on
        print(f"FAIL {label}: while timing: {type(exc).__name__}: {exc}")
        return {"passed": False, "error": {"error": f"while timing: {type(exc).__name__}"}}
    if not again.passed:
        print(f"FAIL {label}: the outputs of the timed calls no longer pass\n{again.report}")
        return {**columns, "passed": False, "error": {**again.summary, "error": "after timing"}}
    return columns


def run_cases(args, plan, report: Report, ceilings) -> int:
    failures = 0
    timing = {"warmup": args.warmup, "repeat": args.repeat}
    for variant, layout, item in cells(plan):
        outcome, prepared, recheck = run_correctness(item.case, variant, layout, item.form, args.seed, plan.device,
                                                     args.backend)
        failures += not outcome.passed
        status = "PASS" if outcome.passed else "FAIL"
        print(f"{status} {variant.label:4s} {layout} {item.form:6s} {item.case}  [{outcome.kernel}]")
        if not outcome.passed:
            print(outcome.report)
        row = cell_row(variant, layout, item, outcome, args.backend)
        if outcome.passed and item.perf and not args.no_perf and item.case.flops > 0:
            timed = _checked_timing(item, variant, layout, outcome, prepared, recheck, ceilings, timing, plan.device,
                                    args.aiter)
            row.update(timed)
            failures += not timed.get("passed", True)
        report.add(**row)
    return failures


def run_bad(args, plan, report: Report) -> int:
    failures = 0
    for name, passed, detail in run_bad_inputs(plan.device, args.seed, args.backend):
        failures += not passed
        print(f"{'PASS' if passed else 'FAIL'} bad input: {name}" + ("" if passed else f": {detail}"))
        report.add(op="bad_input", backend=args.backend or "auto", dtype="", shape=name, passed=passed)
    return failures


def read_baseline(args):
    """The --baseline report, read before anything runs so that an unreadable file stops the run at once
    (None: no --baseline, or the file does not exist yet and this run writes it)."""
    if not args.baseline or not Path(args.baseline).exists():
        return None
    try:
        return baseline.load_baseline(args.baseline)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"--baseline {args.baseline}: not a readable ckgemm report ({type(exc).__name__}: {exc})", file=sys.stderr)
        raise SystemExit(2) from None


def gate(args, report: Report, base) -> int:
    if not args.baseline:
        return 0
    path = Path(args.baseline)
    if base is None:
        baseline.save_baseline(report, path)
        print(f"baseline written to {path} (no baseline existed)")
        return 0
    comparison = baseline.compare(report, base)
    print(comparison)
    return 0 if comparison.ok else 1


def main(argv=None) -> int:
    # CPU runs: oneDNN JIT-compiles a matmul kernel per new shape (~10 ms each) and the smoke set visits a
    # hundred shapes, so use MKL's sgemm; and the smoke's tiny tensors gain nothing from intra-op threads,
    # whose wake-ups cost milliseconds on a busy machine. Neither setting affects GPU work.
    saved = torch.backends.mkldnn.enabled, torch.get_num_threads()
    torch.backends.mkldnn.enabled = False
    if "--smoke" in (sys.argv[1:] if argv is None else argv):
        torch.set_num_threads(1)
    try:
        return _main(argv)
    finally:
        torch.backends.mkldnn.enabled = saved[0]
        torch.set_num_threads(saved[1])


def _main(argv) -> int:
    args = parse_args(argv)
    problem = unwritable(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    base = read_baseline(args)
    started = time.perf_counter()
    plan = make_plan(args)
    problem = backend_problem(args, plan)
    if problem:
        print(problem)
        return 2
    _header(args, plan)
    if not plan.variants:
        print(NOTHING_TO_RUN)
        return 2
    ceilings = roofline.peak_for_device(plan.device)
    report = Report("ckgemm grouped GEMM", meta={**device_info.environment(plan.device), "seed": args.seed,
                                                 "backend": args.backend or "auto",
                                                 "variants": [v.label for v in plan.variants], "argv": " ".join(argv or sys.argv[1:])})
    failures = run_cases(args, plan, report, ceilings)
    if args.bad_input or args.smoke:
        failures += run_bad(args, plan, report)
    print_summary(report)
    if args.csv:
        print(f"summary: {write_csv(report, args.csv)}")
    if args.json:
        print(f"report: {report.write_json(args.json)}")
    if args.markdown:
        print(f"report: {report.write_markdown(args.markdown)}")
    regression = gate(args, report, base)
    elapsed = time.perf_counter() - started
    verdict = "ALL PASSED" if not failures and not regression else (
        f"FAILED: {failures} failure(s)" + (", perf regression" if regression else ""))
    print(f"{verdict} ({elapsed:.1f} s)")
    return 1 if failures or regression else 0


if __name__ == "__main__":
    sys.exit(main())
