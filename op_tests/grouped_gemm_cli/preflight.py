"""What stops a run of op_tests/test_grouped_gemm.py (and its sharded form) before anything runs, exit 2:
a report path that cannot be written, a --backend that cannot run on the plan's device, nothing selected."""
from __future__ import annotations

import ckgemm
from ckgemm.testing.report import unwritable

NOTHING_TO_RUN = "nothing to run: no selected dtype takes the selected --quant recipe(s)"


def unwritable_outputs(args) -> str | None:
    """--json/--markdown/--csv paths that cannot be written: a folder, under a file, or not writable (the
    writers make missing folders)."""
    return unwritable((flag, getattr(args, flag[2:], None)) for flag in ("--json", "--markdown", "--csv"))


def backend_problem(args, plan) -> str | None:
    if args.backend is None:
        return None
    reason = ckgemm.backend_status(plan.device).get(args.backend, f"unknown backend {args.backend!r}")
    return None if reason == "available" else f"--backend {args.backend}: cannot run on {plan.device}: {reason}"
