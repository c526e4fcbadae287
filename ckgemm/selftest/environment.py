"""Facts about the machine the selftest runs on: Python, torch and its CUDA/HIP, the device, its arch and
fp8 flavour, ckgemm's version and checkout commit, the ``CKGEMM_*``/``CK_DIR``/``GPU_ARCHS`` settings, and
the toolchain (nvcc / hipcc / ROCm version, driver). Reading a fact never fails the run: what cannot be
read is recorded as None."""
from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path

import torch

import ckgemm
from ckgemm.testing import device_info

from .procs import repo_root

_TOOL_TIMEOUT_S = 10.0
BUILD_VARIABLES = ("CKGEMM_NATIVE", "CKGEMM_DTYPES", "CKGEMM_CONFIG", "CKGEMM_FP8_PROMOTION", "CK_DIR", "GPU_ARCHS",
                   "CUTLASS_DIR", "ROCM_PATH", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "MAX_JOBS")


def _output(cmd: list[str]) -> str | None:
    """stdout of a tool (first 2000 characters), or None when it is missing or fails."""
    text = device_info.tool_output(cmd, _TOOL_TIMEOUT_S)
    return None if text is None else text.strip()[:2000]


def _first_match(text: str | None, pattern: str) -> str | None:
    match = re.search(pattern, text or "")
    return match.group(1) if match else None


def platform_kind() -> str:
    """'rocm', 'cuda' or 'cpu': what the installed torch was built for."""
    if torch.version.hip is not None:
        return "rocm"
    return "cuda" if torch.version.cuda is not None else "cpu"


def device() -> torch.device:
    return device_info.default_device()


def arch(dev: torch.device) -> str | None:
    """'gfx942' on AMD, 'sm_90' on NVIDIA, None on the CPU."""
    if not device_info.is_gpu(dev):
        return None
    return device_info.gcn_arch(dev) or "sm_%d%d" % torch.cuda.get_device_capability(dev)


def fp8_flavour(dev: torch.device) -> str | None:
    try:
        return str(ckgemm.fp8_dtype_for(dev)).replace("torch.", "")
    except ValueError:
        return None


def git_commit(root: Path | None) -> str | None:
    if root is None or not (root / ".git").exists():
        return None
    commit = _output(["git", "-C", str(root), "rev-parse", "HEAD"])
    dirty = _output(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return None if commit is None else commit + ("+dirty" if dirty else "")


def rocm_version() -> str | None:
    rocm = Path(os.environ.get("ROCM_PATH") or "/opt/rocm")
    for name in (".info/version", ".info/version-dev"):
        path = rocm / name
        if path.is_file():
            return path.read_text().strip()
    return _first_match(_output(["hipconfig", "--version"]), r"^(\S+)")


def toolchain() -> dict:
    """Compiler and driver versions where the tools are on PATH (None otherwise)."""
    kind = platform_kind()
    facts = {}
    if kind == "cuda":
        facts["nvcc"] = _first_match(_output(["nvcc", "--version"]), r"release ([\d.]+)")
        facts["driver"] = _output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if kind == "rocm":
        facts["rocm"] = rocm_version()
        facts["hipcc"] = _first_match(_output(["hipcc", "--version"]), r"(?:HIP version|clang version)[: ]+(\S+)")
        facts["amd_smi"] = _first_match(_output(["amd-smi", "version"]), r"(ROCm version: \S+|amdgpu version: \S+)")
        facts["rocminfo_archs"] = sorted(set(re.findall(r"\b(gfx9\d\w*)\b", _output(["rocminfo"]) or ""))) or None
    facts["cxx"] = _first_match(_output(["c++", "--version"]), r"^(.*)$")
    return facts


def collect() -> dict:
    """The report's ``environment`` section."""
    dev = device()
    gpu = device_info.is_gpu(dev)
    root = repo_root()
    env = {
        "host": platform.node(), "os": platform.platform(), "python": sys.version.split()[0],
        "torch": torch.__version__, "torch_cuda": torch.version.cuda, "torch_hip": torch.version.hip,
        "platform": platform_kind(), "device": device_info.device_name(dev), "device_count":
            torch.cuda.device_count() if gpu else 0, "arch": arch(dev), "fp8": fp8_flavour(dev),
        "ckgemm": ckgemm.__version__, "ckgemm_path": str(Path(ckgemm.__file__).resolve().parent),
        "checkout": str(root) if root else None, "commit": git_commit(root),
        "backends": ckgemm.backend_status(dev if gpu else None),
        "settings": {k: os.environ[k] for k in BUILD_VARIABLES if k in os.environ},
    }
    if gpu:
        props = torch.cuda.get_device_properties(dev)
        env["memory_gib"] = round(props.total_memory / 2**30, 1)
        env["multiprocessors"] = props.multi_processor_count
        env["telemetry"] = device_info.read_telemetry(dev)
    env["toolchain"] = toolchain()
    return env


def collect_or_minimal() -> tuple[dict, str | None]:
    """``collect()``, or when reading the machine itself fails (a broken driver, say) the facts that need
    no device, and the error."""
    try:
        return collect(), None
    except Exception as exc:  # noqa: BLE001 - the report must still be written
        return {"device": "unknown (reading it failed)", "platform": platform_kind(), "arch": None, "device_count": 0,
                "torch": torch.__version__, "python": sys.version.split()[0], "ckgemm": ckgemm.__version__,
                "ckgemm_path": str(Path(ckgemm.__file__).resolve().parent), "commit": git_commit(repo_root())}, \
            f"{type(exc).__name__}: {exc}"
