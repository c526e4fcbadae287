"""Decides what setup.py builds. The torch build decides the backend: CUDA -> CUTLASS, ROCm -> CK-tile,
CPU -> nothing (pure Python, the reference backend). CKGEMM_NATIVE=0 forces the native build off;
CKGEMM_NATIVE=1 turns "cannot build" into an error instead of a pure-Python install."""
import json
import os
import subprocess
import warnings
from pathlib import Path

# The backend-independent half of ckgemm._C (the torch ops, the executor, the shared launches, the verifier);
# each backend adds its runner and instances (cuda.py, rocm.py). torch's ROCm build hipifies these.
SHARED_SOURCES = ["csrc/bindings.cpp", "csrc/eager.cpp", "csrc/execute.cpp", "csrc/launch.cu", "csrc/common/verify.cu"]

# Where the build writes ckgemm_build_info.h (on the include path of every TU; only csrc/bindings.cpp reads it,
# so a new record rebuilds that one file).
GENERATED = Path(__file__).resolve().parents[1] / "build" / "generated"

# Hidden by default for every GCC-compiled TU of both backends (cuda.py: g++ and nvcc's host pass; rocm.py: g++;
# hipcc is clang, which emits no STB_GNU_UNIQUE): only the module's entry (PyInit__C, exported by pybind11) leaves
# the library. With default visibility GCC makes each inline function's static local (the once-per-process
# cudaFuncSetAttribute of every kernel, the cached cluster counts) a STB_GNU_UNIQUE symbol, which the dynamic
# linker binds process-wide even across RTLD_LOCAL libraries: a second library holding the same kernels (a
# benchmark's C entry, another ckgemm build) then found its kernels' shared-memory limit "already raised" and
# every launch failed with "invalid argument" (thirtieth session; likely also the tenth's "two libraries in one
# process" failure).
HIDDEN = "-fvisibility=hidden"

_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}


def native_mode() -> str:
    mode = os.environ.get("CKGEMM_NATIVE", "auto").strip().lower()
    if mode in _OFF:
        return "off"
    if mode in _ON:
        return "on"
    if mode != "auto":
        raise SystemExit(f"CKGEMM_NATIVE={mode!r}: expected 0, 1 or auto")
    return "auto"


def _skip(mode: str, why: str):
    if mode == "on":
        raise SystemExit(f"CKGEMM_NATIVE=1 but the native extension cannot be built: {why}")
    warnings.warn(f"ckgemm: building without the native extension: {why}")
    return [], {}


def find_headers(mode: str, find, named_by: str):
    """``find()``'s headers, or None when the "auto" build finds none (a pure-Python install, with a warning).
    A location the user named in ``named_by`` that holds nothing, or CKGEMM_NATIVE=1, stops the build."""
    try:
        return find()
    except SystemExit as exc:
        if mode == "on" or os.environ.get(named_by):
            raise
        _skip(mode, str(exc).removeprefix("ckgemm: "))
        return None


def native_extension():
    """(ext_modules, cmdclass) for setuptools.setup."""
    mode = native_mode()
    if mode == "off":
        return [], {}
    try:
        import torch
    except ImportError:
        return _skip(mode, "torch is not importable in the build environment (use --no-build-isolation)")
    if torch.version.cuda is not None:
        from .cuda import extension
    elif torch.version.hip is not None:
        from .rocm import extension
    else:
        if mode == "on":
            return _skip(mode, f"torch {torch.__version__} is a CPU build")
        return [], {}
    return extension(mode)


def source_commit() -> str:
    """The checkout's git commit (with ``+dirty`` for uncommitted changes), or ``unknown`` outside git."""
    root = GENERATED.parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def compiler_version(command: str | list[str]) -> str:
    """The first line of ``command --version`` that names a release (nvcc: "Cuda compilation tools, release
    13.0, V13.0.88"; hipcc: "HIP version: ..."), or ``unknown``. A list is a command of several words
    (``["ccache", "g++"]``), named by its last."""
    argv = [command] if isinstance(command, str) else list(command)
    try:
        run = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = [line.strip() for line in run.stdout.splitlines() if line.strip()]
    named = [line for line in lines if "release" in line or "version" in line.lower()]
    return f"{os.path.basename(argv[-1])}: {(named or lines or ['unknown'])[0]}"


def build_info_header(info: dict, where: Path = GENERATED) -> Path:
    """``ckgemm_build_info.h`` defining CKGEMM_BUILD_INFO, the JSON record of this build as a C string, which
    csrc/bindings.cpp serves as ``ckgemm._C.build_info()`` (docs/SELFTEST.md): a file, not a -D, so no shell
    or ninja quoting can mangle it."""
    where.mkdir(parents=True, exist_ok=True)
    header = where / "ckgemm_build_info.h"
    text = "#pragma once\n#define CKGEMM_BUILD_INFO " + json.dumps(json.dumps(info, sort_keys=True)) + "\n"
    if not header.is_file() or header.read_text() != text:  # unchanged: no rebuild of bindings.cpp
        header.write_text(text)
    return header
