"""ROCm build of ``ckgemm._C``: the CK-tile backend (csrc/hip) plus the shared bindings.

torch's CUDAExtension hipifies the shared CUDA-style sources (csrc/bindings.cpp and the csrc/common
headers it reaches) and compiles .hip files with hipcc; csrc/hip is written in HIP, so hipify leaves it
alone. Environment:

  CK_DIR          CK source root (or its include/ dir); default $ROCM_PATH/include. Must be a CK-tile
                  generation this code supports (ck_tree.py); the pinned one is the CK in the amd-aiter
                  0.1.7.post2.dev18 wheel: `python -m build_support.ck_fetch` fetches it (docs/ROCM.md).
  GPU_ARCHS       e.g. "gfx942" or "gfx942;gfx950"; default: the visible GPUs' archs, else both.
  CKGEMM_DTYPES   e.g. "fp16,bf16": build only these dtypes' instances (others report NotInstantiated).
  MAX_JOBS        parallel compile jobs; default min(cores, RAM / 4 GiB) (a CK TU peaks near 3 GiB).

This module imports torch only inside extension(), so scripts/check_hip_compile.py can reuse the
source lists and flags below (and ck_tree's CK checks) without a ROCm torch.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import (GENERATED, HIDDEN, SHARED_SOURCES, build_info_header, ck_fetch, compiler_version, find_headers,
               source_commit, toolchain)
from .ck_tree import ck_generation, find_ck

ROOT = Path(__file__).resolve().parents[1]
HIP_DIR = ROOT / "csrc" / "hip"
DTYPES = ("fp16", "bf16", "fp8", "int8")  # CKGEMM_DTYPES names; fp8 serves both fp8 flavours
_ABI_DTYPES = {"F16": "fp16", "BF16": "bf16", "FP8_E4M3_FNUZ": "fp8", "I8": "int8"}
SUPPORTED_ARCHS = ("gfx942", "gfx950")
INSTANCE_LIST = HIP_DIR / "instances.inc"
# CKGEMM_INSTANCE(file, dtype, out, layout, scaling, tile) at the start of a line (comments do not count).
_INSTANCE_RE = re.compile(r"^CKGEMM_INSTANCE\((\w+), (\w+), (\w+), (\w+), (\w+), (\w+)\)", re.MULTILINE)
GIB = 1 << 30
RAM_PER_JOB = 4 * GIB

# Device-compile flags of every CK translation unit; the compile check uses exactly these.
CK_HIPCC_FLAGS = [
    "-O3",
    "-std=c++17",
    "-U__HIP_NO_HALF_OPERATORS__",  # torch defines these for its own sources; CK-tile needs neither
    "-U__HIP_NO_HALF_CONVERSIONS__",
    "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3",  # round-to-nearest-even bf16 C (this CK defaults to truncation)
    "-Wno-invalid-constexpr",  # clang < 20 rejects a constexpr in ck_tile's pk_fp4.hpp
]


def host_cxx_flags(macros: list[str]) -> list[str]:
    """The g++ flags of the extension's host-only TUs (HIDDEN: see build_support/__init__.py)."""
    return ["-O3", HIDDEN] + macros


def ck_compiler_flags(hip_version: tuple[int, ...]) -> list[str]:
    """Flags CK's own CMake adds for newer ROCm compilers (as flash-attn's CK build does)."""
    flags = []
    if hip_version > (5, 5):
        flags += ["-mllvm", "--lsr-drop-solution=1"]
    if hip_version > (5, 7, 23302):
        flags += ["-fno-offload-uniform-block"]
    if hip_version > (6, 1, 40090):
        flags += ["-mllvm", "-enable-post-misched=0"]
    if hip_version > (6, 2, 41132):
        flags += ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]
    return flags


def dtype_macros(dtypes) -> list[str]:
    return [f"-DCKGEMM_CK_{d.upper()}" for d in dtypes]


@dataclass(frozen=True)
class InstanceSpec:
    """One line of csrc/hip/instances.inc."""

    file: str
    dtype: str  # ABI name, e.g. FP8_E4M3_FNUZ
    out: str
    layout: str
    scaling: str
    tile: str

    @property
    def source(self) -> Path:
        return HIP_DIR / "instances" / f"{self.file}.hip"

    @property
    def dtype_name(self) -> str:  # the CKGEMM_DTYPES name
        return _ABI_DTYPES[self.dtype]


def instance_specs() -> list[InstanceSpec]:
    return [InstanceSpec(*m.groups()) for m in _INSTANCE_RE.finditer(INSTANCE_LIST.read_text())]


def instance_sources(dtypes) -> list[Path]:
    specs = [s for s in instance_specs() if s.dtype_name in dtypes]
    missing = [str(s.source) for s in specs if not s.source.is_file()]
    if missing or not specs:
        raise SystemExit(f"ckgemm: {INSTANCE_LIST} lists missing sources {missing}" if missing else
                         f"ckgemm: {INSTANCE_LIST} lists no instance for dtypes {list(dtypes)}")
    return [s.source for s in specs]


def selected_dtypes() -> list[str]:
    raw = os.environ.get("CKGEMM_DTYPES", "").strip()
    if not raw:
        return list(DTYPES)
    names = [n.strip().lower() for n in raw.replace(";", ",").split(",") if n.strip()]
    names = ["fp8" if n == "fp8_fnuz" else n for n in names]
    unknown = sorted(set(names) - set(DTYPES))
    if unknown or not names:
        raise SystemExit(f"CKGEMM_DTYPES={raw!r}: unknown {unknown}; choose from {', '.join(DTYPES)}")
    return [d for d in DTYPES if d in names]


def gpu_archs() -> list[str]:
    raw = os.environ.get("GPU_ARCHS", "").strip()
    if raw:
        archs = [a.strip() for a in re.split(r"[;,\s]+", raw) if a.strip()]
    else:
        import torch

        visible = {torch.cuda.get_device_properties(i).gcnArchName.split(":")[0]
                   for i in range(torch.cuda.device_count())}
        archs = sorted(a for a in visible if a in SUPPORTED_ARCHS) or list(SUPPORTED_ARCHS)
    bad = [a for a in archs if a not in SUPPORTED_ARCHS]
    if bad:
        raise SystemExit(f"GPU_ARCHS={raw!r}: {bad} not supported; the CK instances target "
                         f"{', '.join(SUPPORTED_ARCHS)}")
    return archs


def max_jobs() -> int:
    if os.environ.get("MAX_JOBS"):
        return max(1, int(os.environ["MAX_JOBS"]))
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 16 * GIB
    return max(1, min(os.cpu_count() or 1, ram // RAM_PER_JOB))


def build_info(ck_include: Path, archs, dtypes, hip: str) -> dict:
    """What the extension records about its own build (ckgemm._C.build_info(); docs/SELFTEST.md)."""
    import torch
    from torch.utils.cpp_extension import ROCM_HOME

    source = f"CK_DIR={os.environ['CK_DIR']}" if os.environ.get("CK_DIR") else "$ROCM_PATH/include"
    hipcc = os.path.join(ROCM_HOME, "bin", "hipcc") if ROCM_HOME else "hipcc"
    return {"backend": "ck", "archs": ";".join(archs), "dtypes": ",".join(dtypes),
            "ck_generation": ck_generation(ck_include), "ck_commit": ck_fetch.commit_of(ck_include),
            "ck_source": source, "ck_include": str(ck_include), "hip": hip, "compiler": compiler_version(hipcc),
            "torch": torch.__version__, "ckgemm_commit": source_commit()}


def _hip_version(torch) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", torch.version.hip.split("-")[0])[:3])


def extension_sources(dtypes) -> list[str]:
    """Every TU of the ROCm ckgemm._C: the shared half, the HIP runner and registry, the selected instances."""
    rel = lambda p: str(Path(p).relative_to(ROOT))  # noqa: E731  setup() wants /-separated relative paths
    return (SHARED_SOURCES + [rel(HIP_DIR / "runner.hip"), rel(HIP_DIR / "registry.cpp")]
            + [rel(p) for p in instance_sources(dtypes)])


def extension(mode: str):
    """(ext_modules, cmdclass) for setuptools.setup on a ROCm torch."""
    import torch
    from torch.utils import cpp_extension

    from . import _skip

    if cpp_extension.ROCM_HOME is None:
        return _skip(mode, "torch is a ROCm build but no ROCm installation was found (set ROCM_PATH)")
    ck_include = find_headers(mode, find_ck, "CK_DIR")
    if ck_include is None:
        return [], {}
    dtypes, archs = selected_dtypes(), gpu_archs()
    os.environ["MAX_JOBS"] = str(max_jobs())  # read by torch's ninja build

    sources = extension_sources(dtypes)
    link_args, link_record = toolchain.libstdcxx_link()
    info = {**build_info(ck_include, archs, dtypes, torch.version.hip), **link_record}
    macros = dtype_macros(dtypes) + [f"-DCKGEMM_ARCH_{a.upper()}=1" for a in archs]  # read by built_archs()
    build_info_header(info)
    hipcc = (CK_HIPCC_FLAGS + ck_compiler_flags(_hip_version(torch)) + macros + [f"-I{ck_include}"]
             + [f"--offload-arch={a}" for a in archs])
    print(f"ckgemm: CK-tile backend for {', '.join(archs)}; dtypes {', '.join(dtypes)}; CK headers {ck_include} "
          f"({info['ck_generation']}, commit {info['ck_commit']}); MAX_JOBS={os.environ['MAX_JOBS']}")
    ext = cpp_extension.CUDAExtension(
        name="ckgemm._C",
        sources=sources,
        include_dirs=[str(ROOT / "csrc"), str(GENERATED)],
        extra_compile_args={"cxx": host_cxx_flags(macros), "nvcc": hipcc},
        extra_link_args=link_args,
    )
    return [ext], {"build_ext": cpp_extension.BuildExtension.with_options(use_ninja=True)}
