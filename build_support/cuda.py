"""CUDA build: the CUTLASS SM90 extension `ckgemm._C`, one instance per .cu, built in parallel.

CUTLASS headers come from CUTLASS_DIR (a CUTLASS checkout: include/ and tools/util/include/) or the
`nvidia-cutlass` wheel (`pip install --no-deps nvidia-cutlass==4.2.0.0`). Each instance TU takes
about 1.5 min and 3.5 GB of RAM to compile (docs/PERF_2026-11.md), so MAX_JOBS defaults to what RAM allows.
CKGEMM_DTYPES (e.g. "bf16,fp8") builds a subset of the instances.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

from . import (GENERATED, HIDDEN, SHARED_SOURCES, build_info_header, compiler_version, find_headers, source_commit,
               toolchain)

ROOT = Path(__file__).resolve().parents[1]
CUDA_DIR = ROOT / "csrc" / "cuda"
GB_PER_JOB = 4.0
DTYPE_MACROS = {"fp16": "F16", "bf16": "BF16", "fp8": "FP8", "int8": "I8"}
# CKGEMM_INSTANCE(key, dtype, out, layout, scaling, schedule, tile_m, tile_n, tile_k, cluster_m, cluster_n)
_INSTANCE_RE = re.compile(r"^CKGEMM_INSTANCE\((\w+), (\w+), (\w+), (\w+), (\w+), (\w+), (\d+), (\d+), (\d+),",
                          re.MULTILINE)
_ABI_TO_FILTER = {"F16": "fp16", "BF16": "bf16", "FP8_E4M3": "fp8", "I8": "int8"}


# Everything but the instances: the torch bindings and executor, the verifier, the CUTLASS runner and rules.
NATIVE_SOURCES = SHARED_SOURCES + ["csrc/cuda/runner.cu", "csrc/cuda/rules.cpp", "csrc/cuda/stages.cu"]


def cutlass_include_dirs() -> list[str]:
    """Both CUTLASS include dirs, or SystemExit with how to get them."""
    root = os.environ.get("CUTLASS_DIR")
    if root is None:
        spec = importlib.util.find_spec("cutlass_library")  # the nvidia-cutlass wheel; not imported
        if spec is not None and spec.submodule_search_locations:
            root = str(Path(list(spec.submodule_search_locations)[0]) / "source")
    if root is None:
        raise SystemExit("ckgemm: CUTLASS headers not found. `pip install --no-deps nvidia-cutlass==4.2.0.0` or set "
                         "CUTLASS_DIR to a CUTLASS 4.x checkout (or CKGEMM_NATIVE=0 for a pure-Python install)")
    dirs = [Path(root) / "include", Path(root) / "tools" / "util" / "include"]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise SystemExit(f"ckgemm: CUTLASS include dirs missing under {root}: {missing}")
    major = int(cutlass_version(dirs[0]).split(".")[0])
    if major < 4:
        raise SystemExit(f"ckgemm: CUTLASS {major}.x found at {root}; ckgemm needs CUTLASS 4.x (SM90 ptr-array grouped)")
    return [str(d) for d in dirs]


def cutlass_version(include: Path) -> str:
    """``major.minor.patch`` from ``cutlass/version.h`` under ``include``."""
    text = (Path(include) / "cutlass" / "version.h").read_text()
    return ".".join(re.search(rf"#define CUTLASS_{part} (\d+)", text).group(1) for part in ("MAJOR", "MINOR", "PATCH"))


def build_info(include: Path, dtypes, cuda: str) -> dict:
    """What the extension records about its own build (ckgemm._C.build_info(); docs/SELFTEST.md)."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else "nvcc"
    return {"backend": "cutlass", "archs": "sm_90a", "dtypes": ",".join(sorted(dtypes)),
            "cutlass_version": cutlass_version(include), "cutlass_include": str(include), "cuda": cuda,
            "compiler": compiler_version(nvcc), "torch": torch.__version__, "ckgemm_commit": source_commit()}


def selected_dtypes() -> set[str]:
    raw = os.environ.get("CKGEMM_DTYPES", "").strip()
    if not raw:
        return set(DTYPE_MACROS)
    chosen = {d.strip().lower() for d in raw.split(",") if d.strip()}
    unknown = chosen - set(DTYPE_MACROS)
    if unknown:
        raise SystemExit(f"ckgemm: CKGEMM_DTYPES has unknown dtypes {sorted(unknown)}; known: {sorted(DTYPE_MACROS)}")
    return chosen


def instance_table() -> list[dict]:
    """The rows of csrc/cuda/instances.inc: key, dtype, out, layout, scaling, schedule and tile ("MxNxK")."""
    text = (CUDA_DIR / "instances.inc").read_text()
    fields = ("key", "dtype", "out", "layout", "scaling", "schedule")
    return [{**dict(zip(fields, m.groups()[:6])), "tile": "x".join(m.groups()[6:])}
            for m in _INSTANCE_RE.finditer(text)]


def instance_sources(dtypes: set[str]) -> list[str]:
    """The instance .cu files (csrc/cuda/instances/<key>.cu) of instances.inc whose dtype is selected."""
    keys = [row["key"] for row in instance_table() if _ABI_TO_FILTER[row["dtype"]] in dtypes]
    return [str((CUDA_DIR / "instances" / f"{k}.cu").relative_to(ROOT)) for k in keys]


def dtype_macros(dtypes: set[str]) -> list[str]:
    """The CKGEMM_WITH_<DTYPE> flags that filter instances.inc. Every translation unit that includes it gets
    them (the C++ rules.cpp as well as the CUDA runner): the rules' instance ids must be the runner's."""
    return [f"-DCKGEMM_WITH_{macro}={int(name in dtypes)}" for name, macro in DTYPE_MACROS.items()]


def cxx_flags(dtypes: set[str]) -> list[str]:
    return ["-O3", HIDDEN] + dtype_macros(dtypes)


def nvcc_flags(dtypes: set[str]) -> list[str]:
    flags = ["-O3", "-DNDEBUG", "--expt-relaxed-constexpr",  # torch picks the C++ standard its headers need
             "-gencode=arch=compute_90a,code=sm_90a",  # wgmma/TMA need sm_90a; names "arch": torch adds none
             "-DCUTLASS_DEBUG_TRACE_LEVEL=0", f"-Xcompiler={HIDDEN}"]
    return flags + dtype_macros(dtypes)


def default_max_jobs() -> int:
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gb = 8.0
    return max(1, min(os.cpu_count() or 1, int(mem_gb // GB_PER_JOB)))


def extension(mode: str):
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

    if CUDA_HOME is None or shutil.which("nvcc", path=os.path.join(CUDA_HOME, "bin")) is None:
        why = "CUDA torch found but no nvcc (set CUDA_HOME to a CUDA 12.3+ toolkit)"
        if mode == "on":
            raise SystemExit(f"ckgemm: CKGEMM_NATIVE=1 but {why}")
        import warnings

        warnings.warn(f"ckgemm: building without the native extension: {why}")
        return [], {}
    include_dirs = find_headers(mode, cutlass_include_dirs, "CUTLASS_DIR")
    if include_dirs is None:
        return [], {}
    os.environ.setdefault("MAX_JOBS", str(default_max_jobs()))
    dtypes = selected_dtypes()
    sources = NATIVE_SOURCES + instance_sources(dtypes)
    import torch

    link_args, link_record = toolchain.libstdcxx_link()
    build_info_header({**build_info(Path(include_dirs[0]), dtypes, torch.version.cuda), **link_record})
    ext = CUDAExtension(
        name="ckgemm._C",
        sources=sources,
        include_dirs=[str(ROOT / "csrc"), str(GENERATED)] + include_dirs,
        extra_compile_args={"cxx": cxx_flags(dtypes), "nvcc": nvcc_flags(dtypes)},
        extra_link_args=link_args,
    )
    return [ext], {"build_ext": BuildExtension.with_options(use_ninja=True)}
