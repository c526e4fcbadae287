#!/usr/bin/env python3
"""Compile check of the CUTLASS backend (csrc/cuda) for sm_90a on a machine without a GPU.

The instance TUs, the runner and the rules (none includes a torch header) are compiled to object files with
the CUDA toolkit's nvcc, in parallel, with build_support/cuda.py's flags. ``--subset ci`` (what CI runs)
compiles one instance per family — scaling x schedule x input size x integer-ness, so every mainloop,
epilogue and wgmma flavour is built — and the GPU suite's build compiles them all. The PTX nvcc keeps on the way is
then checked: each instance must issue the Hopper warpgroup MMA of its dtype (wgmma ...f16 / bf16 /
e4m3 / s8), so a config that silently fell back to a slower path fails; and ptxas must report no
register spills in the GEMM kernels.

Needs (installs nothing): nvcc from CUDA 12.3 or newer, and CUTLASS 4.x headers (CUTLASS_DIR, or
`pip install --no-deps nvidia-cutlass==4.2.0.0`). Exit status: 0 ok, 1 a check failed, 2 missing tools.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from build_support import cuda  # noqa: E402

def ci_subset(table: list[dict]) -> set[str]:
    """One instance key per family (first in table order): every schedule, scaling, input dtype (each its own
    wgmma flavour) and output type (each its own epilogue), and every tile of each schedule and scaling (each
    its own collective shapes); CUTLASS's RR twins differ only in B's layout tag, while ckgemm's own RR rows are
    other kernels (ws_s8_rr_rs.cuh), so for own rows the layout is part of both families."""
    seen, keys = set(), set()
    for row in table:
        own = (row["layout"],) if row["schedule"] == "OwnWarpSpecialized" else ()
        families = ((row["scaling"], row["schedule"], row["dtype"], row["out"]) + own,
                    (row["scaling"], row["schedule"], row["tile"]) + own)
        if any(f not in seen for f in families):
            seen.update(families)
            keys.add(row["key"])
    return keys


WGMMA = {  # PTX of the warpgroup MMA each instance dtype must use
    "f16": r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16",
    "bf16": r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16",
    "e4m3": r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3",
    "s8": r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.s32\.s8\.s8",
}
SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def compile_one(source: str, flags: list[str], workdir: Path) -> dict:
    name = Path(source).stem
    keep = workdir / name
    keep.mkdir()
    cmd = ["nvcc", *flags, "-Xptxas", "-v", "--keep", "--keep-dir", str(keep), "-c", str(ROOT / source),
           "-o", str(keep / f"{name}.o")]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    result = {"tu": name, "seconds": time.time() - start, "ok": proc.returncode == 0, "notes": []}
    if proc.returncode != 0:
        result["notes"].append("compile error:\n" + (proc.stderr or proc.stdout)[-3000:])
        return result
    spills = [(int(s), int(l)) for s, l in SPILL.findall(proc.stdout + proc.stderr)]
    if any(s or l for s, l in spills):
        result["ok"] = False
        result["notes"].append(f"register spills: {spills}")
    kind = name.split("_")[0]
    if kind in WGMMA and source.startswith("csrc/cuda/instances/"):
        ptx = "".join(p.read_text(errors="replace") for p in keep.glob("*.ptx"))
        count = len(re.findall(WGMMA[kind], ptx))
        result["wgmma"] = count
        if count == 0:
            result["ok"] = False
            result["notes"].append(f"no {kind} wgmma in the PTX: the kernel does not use Hopper tensor cores")
    shutil.rmtree(keep, ignore_errors=True)  # the kept .ii/.ptx files are large
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", "--jobs", type=int, default=0, help="parallel compiles (default: cores and RAM allow)")
    parser.add_argument("--only", default="", help="comma-separated substrings of TU names to check")
    parser.add_argument("--subset", choices=("all", "ci"), default="all",
                        help="ci: one instance per family (see ci_subset); all: every instance")
    args = parser.parse_args()
    if shutil.which("nvcc") is None:
        print("check_cuda_compile: no nvcc on PATH (CUDA 12.3+ toolkit needed)", file=sys.stderr)
        return 2
    try:
        includes = cuda.cutlass_include_dirs()
    except SystemExit as exc:
        print(f"check_cuda_compile: {exc}", file=sys.stderr)
        return 2
    dtypes = cuda.selected_dtypes()
    sources = ["csrc/cuda/runner.cu", "csrc/cuda/rules.cpp", "csrc/cuda/stages.cu"] + cuda.instance_sources(dtypes)
    if args.subset == "ci":
        keep = ci_subset(cuda.instance_table())
        sources = [s for s in sources if not s.startswith("csrc/cuda/instances/") or Path(s).stem in keep]
    if args.only:
        sources = [s for s in sources if any(o in s for o in args.only.split(","))]
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS  # what torch's extension build adds (no bf16/half
    # conversions or operators), so code that compiles only without them fails here as it would in the build

    flags = ["-std=c++17", *COMMON_NVCC_FLAGS, *cuda.nvcc_flags(dtypes), f"-I{ROOT / 'csrc'}",
             *(f"-I{d}" for d in includes)]
    jobs = args.jobs or cuda.default_max_jobs()
    print(f"check_cuda_compile: {len(sources)} TUs, {jobs} parallel jobs, nvcc flags: {' '.join(flags[:6])} ...",
          flush=True)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="ckgemm-cuda-check-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = []
        for result in pool.map(lambda s: compile_one(s, flags, Path(tmp)), sources):
            results.append(result)
            status = "ok" if result["ok"] else "FAIL"
            print(f"  {status:4s} {result['tu']:34s} {result['seconds']:6.1f} s  wgmma={result.get('wgmma', '-')}",
                  flush=True)
            for note in result["notes"]:
                print("       " + note.replace("\n", "\n       "))
    failed = [r["tu"] for r in results if not r["ok"]]
    print(f"check_cuda_compile: {len(results) - len(failed)}/{len(results)} ok in {time.time() - start:.0f} s"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
