"""CKGEMM_NATIVE's modes at build time (build_support): "auto" (the default) builds the native extension when
the toolkit and the kernel headers are there and otherwise installs the pure-Python package with a warning;
"on" (CKGEMM_NATIVE=1) makes a missing piece an error, and so does a header location the user named that
holds nothing usable. Planted environments, nothing compiled."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from torch.utils import cpp_extension

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # build_support is not an installed package
from build_support import cuda, rocm  # noqa: E402


@pytest.fixture
def cuda_without_cutlass(tmp_path, monkeypatch):
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUTLASS_DIR", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cutlass_library" else real(name, *a))


@pytest.fixture
def rocm_without_ck(tmp_path, monkeypatch):
    monkeypatch.setattr(cpp_extension, "ROCM_HOME", str(tmp_path / "rocm"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    monkeypatch.delenv("CK_DIR", raising=False)


# backend: (its planted environment, its build module, what a missing header says, the variable naming a
# location, what a named empty location says)
BUILDS = {"cuda": ("cuda_without_cutlass", cuda, "CUTLASS headers not found", "CUTLASS_DIR", "CUTLASS include dirs missing"),
          "rocm": ("rocm_without_ck", rocm, "no CK-tile headers", "CK_DIR", "holds no include/ck_tile/core.hpp")}


@pytest.mark.parametrize("backend", sorted(BUILDS))
def test_auto_without_headers_installs_pure_python_and_on_stops(backend, request):
    fixture, module, missing, _, _ = BUILDS[backend]
    request.getfixturevalue(fixture)
    with pytest.warns(UserWarning, match=f"building without the native extension: {missing}"):
        assert module.extension("auto") == ([], {})
    with pytest.raises(SystemExit, match=missing):
        module.extension("on")


@pytest.mark.parametrize("backend", sorted(BUILDS))
def test_a_named_header_location_that_holds_nothing_stops_an_auto_build(backend, request, tmp_path, monkeypatch):
    fixture, module, _, variable, empty = BUILDS[backend]
    request.getfixturevalue(fixture)
    monkeypatch.setenv(variable, str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match=empty):
        module.extension("auto")
