"""ROCm build of ``ckgemm._C``: the CK-tile backend (csrc/hip) plus the shared bindings.

torch's CUDAExtension hipifies the shared CUDA-style sources (csrc/bindings.cpp and the csrc/common
headers it reaches) and compiles .hip files with hipcc; csrc/hip is written in HIP, so hipify leaves it
alone. Environment:

  CK_DIR          CK source root (or its include/ dir); default $ROCM_PATH/include. Must be a CK-tile
                  generation this code supports (SUPPORTED_GENERATIONS); the pinned one is the CK in
                  the flash-attn 2.8.3 sdist (see docs/ROCM.md for the one-line fetch).
  GPU_ARCHS       e.g. "gfx942" or "gfx942;gfx950"; default: the visible GPUs' archs, else both.
  CKGEMM_DTYPES   e.g. "fp16,bf16": build only these dtypes' instances (others report NotInstantiated).
  MAX_JOBS        parallel compile jobs; default min(cores, RAM / 4 GiB) (a CK TU peaks near 3 GiB).

This module imports torch only inside extension(), so scripts/check_hip_compile.py can reuse the
source lists, flags and CK checks below without a ROCm torch.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIP_DIR = ROOT / "csrc" / "hip"
DTYPES = ("fp16", "bf16", "fp8", "int8")  # instance file prefixes; fp8 serves both fp8 flavours
SUPPORTED_ARCHS = ("gfx942", "gfx950")
SUPPORTED_GENERATIONS = ("G2",)
PINNED_CK = "flash-attn==2.8.3 (sdist: csrc/composable_kernel)"
FETCH_CK = ("CUDA_HOME=/usr/local/cuda FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE pip download --no-deps "
            "--no-binary :all: --no-build-isolation flash-attn==2.8.3 -d <dir>  "
            "# then: tar xzf <dir>/flash_attn-2.8.3.tar.gz; CK_DIR=<...>/flash_attn-2.8.3/csrc/composable_kernel")
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


def instance_sources(dtypes) -> list[Path]:
    files = sorted(p for p in (HIP_DIR / "instances").glob("*.hip") if p.name.split("_")[0] in dtypes)
    if len(files) != 4 * len(dtypes):
        raise SystemExit(f"ckgemm: expected 4 instance files per dtype in {HIP_DIR / 'instances'}, found {len(files)}")
    return files


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


def ck_include_dir(path: str | os.PathLike) -> Path | None:
    """The directory holding ck_tile/ for a CK root or include dir, or None."""
    path = Path(path)
    for candidate in (path / "include", path):
        if (candidate / "ck_tile" / "core.hpp").is_file():
            return candidate
    return None


def ck_generation(include: Path) -> str:
    """CK-tile API generation of a CK include dir (research/ck_tile.md): G1 (early 2025), G2 (mid
    2025, what csrc/hip is written against), G3 (late 2025+: templated grouped-GEMM args)."""
    kernel_dir = include / "ck_tile" / "ops" / "gemm" / "kernel"
    universal = kernel_dir / "universal_gemm_kernel.hpp"
    grouped = kernel_dir / "grouped_gemm_kernel.hpp"
    if not universal.is_file() or not grouped.is_file():
        return "G1"
    grouped_text = grouped.read_text(errors="replace")
    if re.search(r"template\s*<[^>]*NumDTensor[^>]*>\s*struct\s+GroupedGemmHostArgs", grouped_text):
        return "G3"
    universal_text = universal.read_text(errors="replace")
    takes_split_offset = "const SplitKBatchOffset& splitk_batch_offset)" in universal_text
    if takes_split_offset and "struct GroupedGemmHostArgs" in grouped_text:
        return "G2"
    return "unknown"


def require_supported_ck(include: Path, where: str) -> None:
    generation = ck_generation(include)
    if generation not in SUPPORTED_GENERATIONS:
        raise SystemExit(
            f"ckgemm: the CK headers in {include} ({where}) are CK-tile generation {generation}; csrc/hip is "
            f"written against {', '.join(SUPPORTED_GENERATIONS)} (the CK pinned in {PINNED_CK}). Point CK_DIR "
            f"at that CK:\n  {FETCH_CK}")


def find_ck() -> Path:
    if os.environ.get("CK_DIR"):
        include = ck_include_dir(os.environ["CK_DIR"])
        if include is None:
            raise SystemExit(f"CK_DIR={os.environ['CK_DIR']!r} holds no include/ck_tile/core.hpp")
        where = "CK_DIR"
    else:
        rocm = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME") or "/opt/rocm"
        include = ck_include_dir(Path(rocm) / "include")
        if include is None:
            raise SystemExit(f"ckgemm: no CK-tile headers under {rocm}/include and CK_DIR is not set:\n  {FETCH_CK}")
        where = "$ROCM_PATH/include"
    require_supported_ck(include, where)
    return include


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


def _hip_version(torch) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", torch.version.hip.split("-")[0])[:3])


def extension(mode: str):
    """(ext_modules, cmdclass) for setuptools.setup on a ROCm torch."""
    import torch
    from torch.utils import cpp_extension

    from . import _skip

    if cpp_extension.ROCM_HOME is None:
        return _skip(mode, "torch is a ROCm build but no ROCm installation was found (set ROCM_PATH)")
    ck_include = find_ck()
    dtypes, archs = selected_dtypes(), gpu_archs()
    os.environ["MAX_JOBS"] = str(max_jobs())  # read by torch's ninja build

    rel = lambda p: str(Path(p).relative_to(ROOT))  # noqa: E731  setup() wants /-separated relative paths
    sources = ["csrc/bindings.cpp", "csrc/common/verify.cu", rel(HIP_DIR / "runner.hip"), rel(HIP_DIR / "registry.cpp")]
    sources += [rel(p) for p in instance_sources(dtypes)]
    macros = dtype_macros(dtypes) + [f"-DCKGEMM_ARCH_{a.upper()}=1" for a in archs]  # read by built_archs()
    hipcc = (CK_HIPCC_FLAGS + ck_compiler_flags(_hip_version(torch)) + macros + [f"-I{ck_include}"]
             + [f"--offload-arch={a}" for a in archs])
    print(f"ckgemm: CK-tile backend for {', '.join(archs)}; dtypes {', '.join(dtypes)}; CK headers {ck_include}; "
          f"MAX_JOBS={os.environ['MAX_JOBS']}")
    ext = cpp_extension.CUDAExtension(
        name="ckgemm._C",
        sources=sources,
        include_dirs=[str(ROOT / "csrc")],
        extra_compile_args={"cxx": ["-O3"] + macros, "nvcc": hipcc},
    )
    return [ext], {"build_ext": cpp_extension.BuildExtension.with_options(use_ninja=True)}
