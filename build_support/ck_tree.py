"""Which CK headers a build is given, and whether csrc/hip can be built against them.

CK-tile's API changed three times in 2025: G1 (early 2025), G2 (mid 2025, the CK
in flash-attn 2.8.3), G3 (late 2025 on: templated grouped-GEMM arguments). csrc/hip is written against
G3 as pinned (ck_fetch.PINNED) and also needs two things inside G3 that moved during 2025 (REQUIRED).
A tree without them stops the build here, with the fetch command, instead of failing in a compiler.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from . import ck_fetch

SUPPORTED_GENERATIONS = ("G3",)
_KERNEL = Path("ck_tile/ops/gemm/kernel")
# What csrc/hip uses beyond the generation marker: (header, text it must contain, what it is).
REQUIRED = (
    (_KERNEL / "universal_gemm_kernel.hpp", "const index_t k_size)",
     "UniversalGemmKernel::MakeGemmTensorViews taking the K extent (ck_kernel.hpp: run_tile)"),
    (Path("ck_tile/ops/epilogue/cshuffle_epilogue.hpp"), "const ScaleM& scale_m",
     "CShuffleEpilogue with row/column scale windows (the scaled instances)"),
)


def ck_include_dir(path: str | os.PathLike) -> Path | None:
    """The directory holding ck_tile/ for a CK root or include dir, or None."""
    path = Path(path)
    for candidate in (path / "include", path):
        if (candidate / "ck_tile" / "core.hpp").is_file():
            return candidate
    return None


def ck_generation(include: Path) -> str:
    """CK-tile API generation of a CK include dir: G1, G2, G3 or unknown."""
    universal = include / _KERNEL / "universal_gemm_kernel.hpp"
    grouped = include / _KERNEL / "grouped_gemm_kernel.hpp"
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


def missing_features(include: Path) -> list[str]:
    missing = []
    for header, needle, what in REQUIRED:
        path = include / header
        if not path.is_file() or needle not in path.read_text(errors="replace"):
            missing.append(what)
    return missing


def how_to_fix() -> str:
    return (f"csrc/hip supports CK-tile generation {', '.join(SUPPORTED_GENERATIONS)} as pinned: {ck_fetch.PINNED}. "
            f"Fetch it from the ckgemm checkout (pip download, sha256-checked, only CK's include/ and LICENSE "
            f"are unpacked into $CKGEMM_CACHE) and point CK_DIR at it:\n  {ck_fetch.FETCH_COMMAND}\n"
            f"  export CK_DIR={ck_fetch.pinned_ck_root()}")


def require_supported_ck(include: Path, where: str) -> str:
    """The generation of a supported tree; SystemExit naming what was found and how to fix it."""
    generation = ck_generation(include)
    if generation not in SUPPORTED_GENERATIONS:
        raise SystemExit(f"ckgemm: the CK headers in {include} ({where}) are CK-tile generation {generation}. "
                         + how_to_fix())
    missing = missing_features(include)
    if missing:
        raise SystemExit(f"ckgemm: the CK headers in {include} ({where}) are CK-tile generation {generation} but "
                         f"lack what csrc/hip uses: {'; '.join(missing)}. " + how_to_fix())
    return generation


def find_ck() -> Path:
    """CK_DIR, else $ROCM_PATH/include, checked."""
    if os.environ.get("CK_DIR"):
        include = ck_include_dir(os.environ["CK_DIR"])
        if include is None:
            raise SystemExit(f"ckgemm: CK_DIR={os.environ['CK_DIR']!r} holds no include/ck_tile/core.hpp. "
                             + how_to_fix())
        where = "CK_DIR"
    else:
        rocm = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME") or "/opt/rocm"
        include = ck_include_dir(Path(rocm) / "include")
        if include is None:
            raise SystemExit(f"ckgemm: no CK-tile headers under {rocm}/include and CK_DIR is not set. "
                             + how_to_fix())
        where = "$ROCM_PATH/include"
    require_supported_ck(include, where)
    return include
