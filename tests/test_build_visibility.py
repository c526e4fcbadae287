"""build_support HIDDEN (both backends' GCC-compiled code): the extension is built with hidden visibility,
because GCC binds the static locals of inline functions of a default-visibility library process-wide
(STB_GNU_UNIQUE), even across libraries loaded RTLD_LOCAL. Two libraries holding the same kernels (the extension
and a benchmark's C entry) then shared one "shared memory already raised" flag, and the second one's launches
failed. Here two copies of a small library show the hazard and the cure with this machine's g++; on a machine
with the built extension, its file is read."""
from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from elf_symbols import dynamic_symbols, unique_symbols

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # build_support is not an installed package
from build_support import cuda  # noqa: E402

CXX = shutil.which("g++")
SOURCE = """
template <int N> inline int& flag() { static int value = N; return value; }  // once per process or per library?
extern "C" __attribute__((visibility("default"))) int bump() { return ++flag<0>(); }
"""


def _two_copies(directory: Path, flags: list[str]):
    (directory / "flag.cpp").write_text(SOURCE)
    libs = []
    for copy in ("one", "two"):
        lib = directory / f"lib{copy}.so"
        cmd = [CXX, "-std=c++17", "-shared", "-fPIC", *flags, str(directory / "flag.cpp"), "-o", str(lib)]
        build = subprocess.run(cmd, capture_output=True, text=True)
        assert build.returncode == 0, f"{' '.join(cmd)}\n{build.stderr}"
        libs.append(lib)
    return libs


@pytest.mark.skipif(CXX is None, reason="needs g++ (GCC emits STB_GNU_UNIQUE)")
@pytest.mark.parametrize("hidden", [False, True], ids=["default-visibility", "build-flags"])
def test_two_libraries_share_an_inline_static_only_with_default_visibility(tmp_path, hidden):
    flags = cuda.cxx_flags(set()) if hidden else ["-O3"]
    assert (cuda.HIDDEN in flags) == hidden
    one, two = _two_copies(tmp_path, flags)
    unique = unique_symbols(one)
    assert bool(unique) != hidden, unique
    assert ("bump", 1, True) in dynamic_symbols(one)  # the named entry stays exported (STB_GLOBAL, defined)
    first = ctypes.CDLL(str(one), mode=ctypes.RTLD_LOCAL)
    second = ctypes.CDLL(str(two), mode=ctypes.RTLD_LOCAL)
    assert first.bump() == 1
    assert second.bump() == (1 if hidden else 2), "the second library's static is the first's"


def test_nvcc_gets_the_same_visibility_as_the_host_compiler():
    assert f"-Xcompiler={cuda.HIDDEN}" in cuda.nvcc_flags(set())


def test_the_rocm_build_hides_its_gcc_compiled_host_code_too():
    from build_support import rocm

    flags = rocm.host_cxx_flags(["-DX=1"])
    assert "-fvisibility=hidden" in flags and flags[-1] == "-DX=1"
    source = (Path(rocm.__file__)).read_text()
    assert '"cxx": host_cxx_flags(macros)' in source, "the extension's g++ flags are host_cxx_flags'"


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("ckgemm._C") is None, reason="the native extension is not built here")
def test_the_built_extension_binds_nothing_process_wide():
    import ckgemm._C as ext

    # ckgemm's own names only: torch's headers declare their singletons (c10::Dispatcher::singleton()'s static)
    # visible on purpose, and those are one per process by design.
    ours = [name for name in unique_symbols(ext.__file__) if "6ckgemm" in name]
    assert ours == [], ours
    exported = {name for name, _, defined in dynamic_symbols(ext.__file__) if defined}
    assert "PyInit__C" in exported
