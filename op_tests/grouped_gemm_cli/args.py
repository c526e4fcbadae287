"""Command-line options of op_tests/test_grouped_gemm.py."""
from __future__ import annotations

import argparse

DTYPE_CHOICES = ("fp16", "bf16", "fp8", "int8", "all")
LAYOUT_CHOICES = ("RC", "RR", "all")
MOE_DISTS = ("balanced", "zipf", "empty", "multinomial")

EPILOG = """
examples:
  python op_tests/test_grouped_gemm.py --smoke                       # quick check of everything here
  python op_tests/test_grouped_gemm.py --groups 8 --m 4096 --n 4096 --k 4096 --dtype bf16
  python op_tests/test_grouped_gemm.py --moe --groups 32 --m 1024 --n 4096 --k 7168 --dtype fp8
  python op_tests/test_grouped_gemm.py --bad-input                   # every bad call must raise
  python op_tests/test_grouped_gemm.py --json run.json --baseline base.json   # gate on a baseline

Correctness: every run is checked against ckgemm.testing's reference with CK-tile's per-group tolerances
(int8: exact); outputs start NaN-poisoned so an unwritten element fails. Exit status is 1 on any failure
(and on a perf regression against --baseline), 2 when --backend cannot run here.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="test_grouped_gemm.py", description="Check and time ckgemm's grouped GEMM against a reference and peers.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    shape = p.add_argument_group("shape")
    shape.add_argument("--groups", type=int, default=4, help="number of groups (experts with --moe); default 4")
    shape.add_argument("--m", type=int, default=256, help="rows per group (mean with --variable/--moe); default 256")
    shape.add_argument("--n", type=int, default=512, help="N; default 512")
    shape.add_argument("--k", type=int, default=512, help="K; default 512")
    shape.add_argument("--variable", action="store_true", help="M drawn per group in m*(1 +- 0.3)")
    shape.add_argument("--heterogeneous", action="store_true", help="M, N and K drawn independently per group")
    shape.add_argument("--moe", action="store_true",
                       help="MoE token splits (groups*m rows over `groups` experts) through grouped_gemm_packed")
    shape.add_argument("--moe-dist", choices=MOE_DISTS + ("all",), default="all",
                       help="token split for --moe (default: all four)")
    what = p.add_argument_group("what to run")
    what.add_argument("--smoke", action="store_true",
                      help="a fixed small set: every dtype x layout x form over edge shapes, plus bad inputs")
    what.add_argument("--dtype", choices=DTYPE_CHOICES, default="all",
                      help="input dtype; fp8 is the device's flavour (e4m3fn, or e4m3fnuz on gfx942)")
    what.add_argument("--layout", choices=LAYOUT_CHOICES, default="all", help="RC: b is [N,K]; RR: b is [K,N]")
    what.add_argument("--bad-input", action="store_true", help="run the bad-input checks (each must raise)")
    what.add_argument("--backend", default=None, help="ckgemm backend (default: best available)")
    what.add_argument("--seed", type=int, default=0, help="seed of shapes and data (printed); default 0")
    what.add_argument("--no-perf", action="store_true", help="skip timing")
    timing = p.add_argument_group("timing")
    timing.add_argument("--warmup", type=int, default=5, help="untimed calls first; default 5")
    timing.add_argument("--repeat", type=int, default=20, help="timed calls; default 20")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="PATH", help="write the report as JSON")
    out.add_argument("--markdown", metavar="PATH", help="write the report as markdown")
    out.add_argument("--baseline", metavar="PATH",
                     help="compare timings with this report JSON (exit 1 on regression); written when absent")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("groups", "warmup", "repeat"):
        if getattr(args, name) < (1 if name != "warmup" else 0):
            parser.error(f"--{name} must be positive")
    for name in ("m", "n", "k"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0")
    return args
