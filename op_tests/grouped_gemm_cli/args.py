"""Command-line options of op_tests/test_grouped_gemm.py.

Long options are the seed script's (``--smoke``, ``--moe``, ``--dtype``, ``--layout`` bare or with a
value, ...); short aliases and dtype names follow aiter's op_tests (``-d bf16 fp8``, ``i8``)."""
from __future__ import annotations

import argparse

import torch

from ckgemm.testing import data

DTYPE_NAMES = ("fp16", "bf16", "fp8", "int8")
DTYPE_ALIASES = {"i8": "int8", "half": "fp16", "float16": "fp16", "bfloat16": "bf16"}
LAYOUT_CHOICES = ("RC", "RR", "all")
MOE_DISTS = ("balanced", "zipf", "empty", "multinomial")
QUANT_RECIPES = ("none", "tensor", "row", "block")

EPILOG = """
examples:
  python op_tests/test_grouped_gemm.py --smoke                       # quick check of everything here
  python op_tests/test_grouped_gemm.py --smoke --dtype all --variable
  python op_tests/test_grouped_gemm.py -g 8 -m 4096 -n 4096 -k 4096 -d bf16
  python op_tests/test_grouped_gemm.py -mnk 1,4096,7168 128,4096,7168 -d bf16   # aiter's shape list, -g groups each
  python op_tests/test_grouped_gemm.py --group-shapes 1,4096,7168 300,4096,7168 -d fp8 -q block  # one call's groups
  python op_tests/test_grouped_gemm.py --moe --groups 32 --m 1024 --n 4096 --k 7168 --dtype fp8
  python op_tests/test_grouped_gemm.py --smoke --moe --quant row block   # scaled fp8/int8 -> bf16
  python op_tests/test_grouped_gemm.py --layout                      # the case in RC and RR, list and packed
  python op_tests/test_grouped_gemm.py --bad-input                   # every bad call must raise
  python op_tests/test_grouped_gemm.py --json run.json --baseline base.json   # gate on a baseline
  python op_tests/test_grouped_gemm.py -d bf16 --csv run.csv         # the summary table as CSV too

Correctness: every run is checked against ckgemm.testing's reference with CK-tile's per-group tolerances
(int8: exact); outputs start NaN-poisoned so an unwritten element fails. --quant cases are checked against
the reference with the same quantization (the harness casts' codes and scales), with the scaled tolerance
and a calc_diff bound. Each timed case prints one line with its shape, the kernel config that ran
(ckgemm.last_dispatch()), the time, TFLOP/s and MFU (against the device's datasheet peak), and its peers;
a markdown summary table follows at the end. Exit status is 1 on any failure (and on a perf regression
against --baseline), 2 when --backend cannot run here, nothing selected can run (e.g. -d fp16 -q row),
--baseline names a file that is not a report, or a --json/--markdown/--csv path cannot be written (both found
before anything runs; missing folders are made).
"""


def _dtype(text: str) -> str:
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in DTYPE_NAMES + ("all",):
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r}; choose from {', '.join(DTYPE_NAMES)}, i8, all")
    return name


def _layout(text: str) -> str:
    name = "all" if text.lower() == "all" else text.upper()
    if name not in LAYOUT_CHOICES:
        raise argparse.ArgumentTypeError(f"unknown layout {text!r}; choose from {', '.join(LAYOUT_CHOICES)}")
    return name


def _mnk(text: str) -> tuple[int, int, int]:
    """``M,N,K`` (aiter's -mnk spelling; ``MxNxK`` too): three integers >= 0."""
    parts = text.replace("x", ",").split(",")
    try:
        sizes = tuple(int(p) for p in parts)
    except ValueError:
        sizes = ()
    if len(sizes) != 3 or min(sizes) < 0:
        raise argparse.ArgumentTypeError(f"expected M,N,K (three integers >= 0, e.g. 128,4096,7168), got {text!r}")
    return sizes


def _quant(text: str) -> str:
    name = text.lower()
    if name not in QUANT_RECIPES + ("all",):
        raise argparse.ArgumentTypeError(f"unknown --quant recipe {text!r}; choose from {', '.join(QUANT_RECIPES)}, all")
    return name


DESCRIPTION = "Check and time ckgemm's grouped GEMM against a reference and peers."


def build_parser(prog: str = "test_grouped_gemm.py", parents=(), description: str = DESCRIPTION,
                 epilog: str = EPILOG) -> argparse.ArgumentParser:
    """``parents``: parsers whose options the command adds (test_grouped_gemm_sharded.py's launch options), so
    that ``--help`` lists them too; that command gives its own description and epilog."""
    p = argparse.ArgumentParser(
        prog=prog, parents=list(parents), description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    shape = p.add_argument_group("shape")
    shape.add_argument("-g", "--groups", type=int, default=4, help="number of groups (experts with --moe); default 4")
    shape.add_argument("-m", "--m", type=int, default=256, help="rows per group (mean with --variable/--moe); default 256")
    shape.add_argument("-n", "--n", type=int, default=512, help="N; default 512")
    shape.add_argument("-k", "--k", type=int, default=512, help="K; default 512")
    shape.add_argument("-mnk", "--mnk", type=_mnk, nargs="+", default=None, metavar="M,N,K",
                       help="aiter's shape list: each M,N,K its own case of --groups groups of that shape. "
                            "e.g.: -mnk 1,4096,7168 128,4096,7168")
    shape.add_argument("--group-shapes", type=_mnk, nargs="+", default=None, metavar="M,N,K",
                       help="the groups of one call, one M,N,K each (with one N and K for all, the packed form "
                            "runs them too). e.g.: --group-shapes 1,4096,7168 300,4096,7168 0,4096,7168")
    shape.add_argument("--variable", action="store_true", help="M drawn per group in m*(1 +- 0.3)")
    shape.add_argument("--heterogeneous", action="store_true", help="M, N and K drawn independently per group")
    shape.add_argument("--moe", action="store_true",
                       help="MoE token splits (groups*m rows over `groups` experts) through grouped_gemm_packed "
                            "and the list form")
    shape.add_argument("--moe-dist", choices=MOE_DISTS + ("all",), default=None,
                       help="token split for --moe (default: all four, each from --seed)")
    what = p.add_argument_group("what to run")
    what.add_argument("--smoke", action="store_true",
                      help="a fixed small set: every dtype x layout, the list form over edge shapes and the packed "
                           "form over MoE splits, plus bad inputs (with --moe/--variable/--heterogeneous: those cases "
                           "too); timed with --warmup 1 --repeat 3 unless they are given")
    what.add_argument("-d", "--dtype", type=_dtype, nargs="+", default=["all"], metavar="DTYPE",
                      help="input dtype(s): fp16 bf16 fp8 int8 (aiter's i8 too) or all (default); fp8 is the "
                           "device's flavour (e4m3fn, or e4m3fnuz on gfx942). e.g.: -d bf16 fp8")
    what.add_argument("-l", "--layout", type=_layout, nargs="?", const=None, default="all", metavar="RC|RR|all",
                      help="RC: b is [N,K]; RR: b is [K,N]; all (default). Bare --layout runs the layout-variant "
                           "tests: the case in both layouts, in the list and the packed form")
    what.add_argument("-q", "--quant", type=_quant, nargs="+", default=["none"], metavar="RECIPE",
                      help="scale recipe(s) for fp8/int8 inputs: none (default), tensor, row, block (fp8 only), "
                           "or all; inputs are quantized with ckgemm.testing's casts, outputs bf16. "
                           "fp16/bf16 have no recipes (skipped). e.g.: -q row block")
    what.add_argument("--bad-input", action="store_true", help="run the bad-input checks (each must raise)")
    what.add_argument("-b", "--backend", default=None, help="ckgemm backend (default: best available)")
    what.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                      help="where the tensors live: auto (the GPU where one is visible, else the CPU; default), "
                           "cpu (the torch reference backend, also on a GPU box) or cuda (ROCm GPUs too)")
    what.add_argument("--seed", type=int, default=0,
                      help=f"seed of shapes and data (printed), 0 <= seed < 2^{data.SEED_BITS}; default 0")
    what.add_argument("--no-perf", action="store_true", help="skip timing")
    what.add_argument("--aiter", action="store_true",
                      help="also time a loop of aiter's GEMMs where aiter is importable (ROCm); aiter may "
                           "JIT-compile its modules on the first call, which takes minutes")
    timing = p.add_argument_group("timing")
    timing.add_argument("--warmup", type=int, default=None, help="untimed calls first; default 5 (1 with --smoke)")
    timing.add_argument("--repeat", type=int, default=None, help="timed calls; default 20 (3 with --smoke)")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="PATH", help="write the report as JSON")
    out.add_argument("--markdown", metavar="PATH", help="write the report as markdown")
    out.add_argument("--csv", metavar="PATH", help="write the summary table (one row per case) as CSV")
    out.add_argument("--baseline", metavar="PATH",
                     help="compare timings with this report JSON (exit 1 on regression); written when absent")
    return p


def _normalise(args: argparse.Namespace) -> None:
    """One spelling per choice: dtypes and recipes as ordered tuples, layout variants as a flag."""
    args.layout_variants = args.layout is None
    if args.layout is None:
        args.layout = "all"
    names = DTYPE_NAMES if "all" in args.dtype else args.dtype
    args.dtypes = tuple(dict.fromkeys(names))
    args.dtype = "all" if "all" in args.dtype else ",".join(args.dtypes)
    recipes = QUANT_RECIPES if "all" in args.quant else args.quant
    args.quant = tuple(dict.fromkeys(recipes))


def parse_args(argv=None, prog: str = "test_grouped_gemm.py", parents=(), **texts) -> argparse.Namespace:
    """``texts``: build_parser's description and epilog."""
    parser = build_parser(prog, parents, **texts)
    args = parser.parse_args(argv)
    for name in ("groups", "warmup", "repeat"):
        value = getattr(args, name)
        if value is not None and value < (1 if name != "warmup" else 0):
            parser.error(f"--{name} must be positive")
    for name, default, smoke in (("warmup", 5, 1), ("repeat", 20, 3)):  # --smoke times briefly unless told
        if getattr(args, name) is None:
            setattr(args, name, smoke if args.smoke else default)
    for name in ("m", "n", "k"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0")
    if problem := data.seed_problem(args.seed):
        parser.error(problem)
    if args.moe_dist is not None and not args.moe:
        parser.error("--moe-dist picks the token split of the --moe cases; add --moe")
    args.moe_dist = args.moe_dist or "all"
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no GPU is visible to torch")
    _normalise(args)
    return args
