"""``python -m ckgemm.testing.conformance``: the harness as a conformance suite for anyone's grouped GEMM.

Point it at a function (``--op pkg.module:function``) that follows one of the calling conventions
(``kernel``), or at a built-in adapter (``adapters``: ckgemm, torch._grouped_mm, torch._scaled_grouped_mm,
DeepGEMM, aiter); it runs the check catalogue (``catalogue``) on seeded inputs against a reference with
the same quantization (``operands``, ``judge``) into poisoned, guard-banded outputs (``guard``), times the
op against the roofline and torch peers with ``--perf`` (``perf``), and writes the matrix as a console
table, markdown, JSON and CSV with an exit code (``output``). docs/CONFORMANCE.md is the manual.

From Python: ``main(["--op", "mypkg:fn", "--form", "packed"])`` returns the exit code; ``run_check``
runs one check on one ``Context``.
"""
from .catalogue import BAD_INPUT, CATALOGUE, Check
from .checks import Context, Row, run_check
from .cli import main
from .kernel import Kernel, OpSpecError, load_op
from .output import Result

__all__ = ["BAD_INPUT", "CATALOGUE", "Check", "Context", "Kernel", "OpSpecError", "Result", "Row", "load_op",
           "main", "run_check"]
