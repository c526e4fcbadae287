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


def test_cuda_auto_without_cutlass_headers_installs_pure_python_with_a_warning(cuda_without_cutlass):
    with pytest.warns(UserWarning, match="building without the native extension: CUTLASS headers not found"):
        assert cuda.extension("auto") == ([], {})


def test_cuda_on_without_cutlass_headers_stops_the_build(cuda_without_cutlass):
    with pytest.raises(SystemExit, match="CUTLASS headers not found.*nvidia-cutlass"):
        cuda.extension("on")


def test_a_named_cutlass_dir_that_holds_nothing_stops_an_auto_build(cuda_without_cutlass, tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "no-cutlass"))
    with pytest.raises(SystemExit, match="CUTLASS include dirs missing"):
        cuda.extension("auto")


@pytest.fixture
def rocm_without_ck(tmp_path, monkeypatch):
    monkeypatch.setattr(cpp_extension, "ROCM_HOME", str(tmp_path / "rocm"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    monkeypatch.delenv("CK_DIR", raising=False)


def test_rocm_auto_without_ck_headers_installs_pure_python_with_a_warning(rocm_without_ck):
    with pytest.warns(UserWarning, match="building without the native extension: no CK-tile headers"):
        assert rocm.extension("auto") == ([], {})
    with pytest.raises(SystemExit, match="no CK-tile headers"):
        rocm.extension("on")


def test_a_named_ck_dir_that_holds_nothing_stops_an_auto_build(rocm_without_ck, tmp_path, monkeypatch):
    monkeypatch.setenv("CK_DIR", str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match="holds no include/ck_tile/core.hpp"):
        rocm.extension("auto")
