"""What stops a run of op_tests/test_grouped_gemm.py (and its sharded form) before anything runs, exit 2:
a report path that cannot be written, a --backend that cannot run on the plan's device, nothing selected."""
from __future__ import annotations

import argparse

import torch

import ckgemm
from ckgemm.backends import BACKEND_NAMES
from ckgemm.testing.report import unwritable

from .plan import make_plan

NOTHING_TO_RUN = "nothing to run: no selected dtype takes the selected --quant recipe(s)"


def backend_problem(args, plan) -> str | None:
    if args.backend is None:
        return None
    reason = ckgemm.backend_status(plan.device).get(args.backend, f"unknown backend {args.backend!r}")
    return None if reason == "available" else f"--backend {args.backend}: cannot run on {plan.device}: {reason}"


def without_a_gpu(args) -> str | None:
    """The same refusals found without touching a GPU (the sharded sweep: no CUDA context in its launcher, or on
    GPU 0 in every torchrun rank before it picks its own): the plan made for the CPU (the same cells but for the
    fp8 flavour), and --backend's availability only where the ranks run on the CPU."""
    problem = unwritable(args)
    if problem:
        return problem
    plan = make_plan(argparse.Namespace(**{**vars(args), "device": "cpu"}))
    if not plan.variants:
        return NOTHING_TO_RUN
    if args.backend is not None and args.backend not in BACKEND_NAMES:
        return f"--backend: unknown backend {args.backend!r}; known: {', '.join(BACKEND_NAMES)}"
    on_cpu = args.device == "cpu" or not torch.cuda.is_available()
    return backend_problem(args, plan) if on_cpu else None
