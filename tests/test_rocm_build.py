"""The ROCm build's CPU-checkable parts (build_support/ck_tree.py, ck_fetch.py, rocm.py): which CK a build
accepts and the error it stops with otherwise (planted header trees of each generation), the pinned CK's
fetch (sha256 check, only include/ and LICENSE unpacked; a fabricated wheel, no network), what a build
records about the CK it used, and that csrc/hip/instances.inc and the instance sources agree."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # build_support is not an installed package
from build_support import build_info_header, ck_fetch, ck_tree, rocm, source_commit  # noqa: E402

KERNEL = "include/ck_tile/ops/gemm/kernel"
G2_UNIVERSAL = "CK_TILE_DEVICE static auto MakeGemmTensorViews(const SplitKBatchOffset& splitk_batch_offset)\n"
G3_UNIVERSAL = "MakeGemmTensorViews(const KernelArgs& kargs,\n                        const index_t k_size)\n"
G3_GROUPED = "template <index_t NumDTensor = 0>\nstruct GroupedGemmHostArgs\n{};\n"
SCALED_EPILOGUE = "CK_TILE_DEVICE auto operator()(ODramWindow& w, const ScaleM& scale_m = {})\n"


def plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"include/ck_tile/core.hpp": "// core\n", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def g3_tree(root: Path, epilogue: str = SCALED_EPILOGUE) -> Path:
    return plant(root, {f"{KERNEL}/universal_gemm_kernel.hpp": G3_UNIVERSAL,
                        f"{KERNEL}/grouped_gemm_kernel.hpp": G3_GROUPED,
                        "include/ck_tile/ops/epilogue/cshuffle_epilogue.hpp": epilogue})


def build_error(monkeypatch, ck_dir: Path | None, rocm_path: Path | None = None) -> str:
    monkeypatch.delenv("CK_DIR", raising=False)
    if ck_dir is not None:
        monkeypatch.setenv("CK_DIR", str(ck_dir))
    monkeypatch.setenv("ROCM_PATH", str(rocm_path or "/nonexistent-rocm"))
    with pytest.raises(SystemExit) as err:
        ck_tree.find_ck()
    return str(err.value)


def assert_explains_fix(message: str):
    assert "supports CK-tile generation G3" in message and ck_fetch.PACKAGE in message
    assert ck_fetch.FETCH_COMMAND in message and "export CK_DIR=" in message


def test_g2_tree_stops_the_build_naming_generations_and_fetch(tmp_path, monkeypatch):
    tree = plant(tmp_path / "fa283", {f"{KERNEL}/universal_gemm_kernel.hpp": G2_UNIVERSAL,
                                      f"{KERNEL}/grouped_gemm_kernel.hpp": "struct GroupedGemmHostArgs\n{};\n"})
    message = build_error(monkeypatch, tree)
    assert "are CK-tile generation G2" in message and "(CK_DIR)" in message
    assert_explains_fix(message)


def test_g1_tree_from_rocm_path_stops_the_build(tmp_path, monkeypatch):
    rocm_root = tmp_path / "rocm"
    plant(rocm_root, {f"{KERNEL}/gemm_kernel.hpp": "// early 2025: no universal kernel\n"})
    message = build_error(monkeypatch, None, rocm_root)
    assert "are CK-tile generation G1" in message and "($ROCM_PATH/include)" in message
    assert_explains_fix(message)


def test_g3_tree_without_scale_windows_stops_the_build(tmp_path, monkeypatch):
    message = build_error(monkeypatch, g3_tree(tmp_path / "old_g3", epilogue="// no scales\n"))
    assert "generation G3 but lack what csrc/hip uses: CShuffleEpilogue with row/column scale windows" in message
    assert_explains_fix(message)


def test_missing_headers_name_the_fetch(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    message = build_error(monkeypatch, tmp_path / "empty")
    assert "holds no include/ck_tile/core.hpp" in message
    assert_explains_fix(build_error(monkeypatch, None))  # neither CK_DIR nor a ROCm CK


def test_supported_g3_tree_is_accepted(tmp_path, monkeypatch):
    tree = g3_tree(tmp_path / "g3")
    monkeypatch.setenv("CK_DIR", str(tree))
    assert ck_tree.find_ck() == tree / "include"
    monkeypatch.setenv("CK_DIR", str(tree / "include"))  # the include dir itself also works
    assert ck_tree.find_ck() == tree / "include"
    monkeypatch.delenv("CK_DIR")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "g3"))
    assert ck_tree.find_ck() == tree / "include"


def fake_wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


CK = ck_fetch.CK_IN_WHEEL
WHEEL_MEMBERS = {f"{CK}include/ck_tile/core.hpp": "// core\n", f"{CK}include/ck/ck.hpp": "// ck\n",
                 f"{CK}LICENSE": "MIT\n", f"{CK}example/ck_tile/x.cpp": "// example\n",
                 f"{CK}test/t.cpp": "// test\n", "aiter/__init__.py": "# aiter\n"}


def test_fetch_verifies_and_unpacks_only_include_and_license(tmp_path, monkeypatch):
    wheel = fake_wheel(tmp_path / ck_fetch.WHEEL, WHEEL_MEMBERS)
    with pytest.raises(SystemExit, match="not the pinned"):
        ck_fetch.fetch(cache=tmp_path / "cache", wheel=wheel)
    assert not ck_fetch.pinned_ck_root(tmp_path / "cache").exists()

    monkeypatch.setattr(ck_fetch, "WHEEL_SHA256", ck_fetch.sha256_of(wheel))
    root = ck_fetch.fetch(cache=tmp_path / "cache", wheel=wheel)
    assert root == ck_fetch.pinned_ck_root(tmp_path / "cache")
    unpacked = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert unpacked == ["LICENSE", "include/ck/ck.hpp", "include/ck_tile/core.hpp"]
    assert not any((tmp_path / "cache").rglob("*.py"))
    assert ck_fetch.fetch(cache=tmp_path / "cache") == root  # cached: no download, no wheel needed


def test_unpack_refuses_unsafe_names_and_wheels_without_ck(tmp_path):
    evil = fake_wheel(tmp_path / "evil.whl", {f"{CK}include/ck_tile/core.hpp": "", f"{CK}include/../../../x": ""})
    with pytest.raises(SystemExit, match="unsafe member name"):
        ck_fetch.extract(evil, tmp_path / "out")
    empty = fake_wheel(tmp_path / "empty.whl", {"aiter/__init__.py": ""})
    with pytest.raises(SystemExit, match="holds no"):
        ck_fetch.extract(empty, tmp_path / "out2")


DEFINE_RE = re.compile(r"^CKGEMM_DEFINE_INSTANCE\((\w+), (\w+), (\w+), (\w+), (\w+)\)$", re.MULTILINE)


def test_instance_list_matches_the_instance_sources():
    specs = rocm.instance_specs()
    assert len(specs) == 32 and len({s.file for s in specs}) == 32
    for spec in specs:
        defined = DEFINE_RE.findall(spec.source.read_text())
        assert defined == [(spec.dtype, spec.out, spec.layout, spec.scaling, spec.tile)], spec.file
        assert spec.file.startswith(spec.dtype_name + "_")
    listed = {s.source for s in specs}
    assert set((rocm.HIP_DIR / "instances").glob("*.hip")) == listed  # no unlisted source
    assert [p.stem for p in rocm.instance_sources(["fp16"])] == [
        "fp16_rc_compute_v4", "fp16_rc_padded", "fp16_rr_compute_v4", "fp16_rr_padded"]
    assert len(rocm.instance_sources(["fp8", "int8"])) == 24


def test_build_records_the_ck_it_was_built_from(tmp_path, monkeypatch):
    tree = g3_tree(tmp_path / "g3") / "include"
    assert ck_fetch.commit_of(tree).startswith("unknown (not the pinned tree")
    monkeypatch.setattr(ck_fetch, "CK_TILE_DIGEST", ck_fetch.tree_digest(tree))
    assert ck_fetch.commit_of(tree) == ck_fetch.CK_COMMIT
    (tree / "ck_tile" / "core.hpp").write_text("// edited\n")  # any changed header is another tree
    assert ck_fetch.commit_of(tree) != ck_fetch.CK_COMMIT

    monkeypatch.setenv("CK_DIR", str(tree))
    info = rocm.build_info(tree, ["gfx942", "gfx950"], ["fp16", "fp8"], "7.0.2")
    assert info["ck_generation"] == "G3" and info["ck_source"] == f"CK_DIR={tree}"
    assert (info["backend"], info["archs"], info["dtypes"]) == ("ck", "gfx942;gfx950", "fp16,fp8")
    assert info["ckgemm_commit"] == source_commit()
    import torch

    assert info["torch"] == torch.__version__ and info["compiler"]  # "hipcc: ..." here, or "unknown" without one
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to check the generated header")
    header = build_info_header(info, tmp_path / "gen")
    main = tmp_path / "main.cpp"  # as csrc/bindings.cpp reads it: from the include path
    main.write_text(f'#include <cstdio>\n#include "{header.name}"\nint main() {{ std::fputs(CKGEMM_BUILD_INFO, stdout); }}\n')
    subprocess.run([cxx, f"-I{header.parent}", str(main), "-o", str(tmp_path / "main")], check=True)
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == info


def test_both_builds_compile_the_shared_half_and_every_source_exists():
    """The torch ops, executor and shared launches are in the ROCm build as in the CUDA one (a ROCm build
    without csrc/execute.cpp would not link)."""
    from build_support import SHARED_SOURCES, cuda

    hip = rocm.extension_sources(["fp16", "bf16", "fp8", "int8"])
    nv = cuda.NATIVE_SOURCES + cuda.instance_sources({"fp16", "bf16", "fp8", "int8"})
    for sources in (hip, nv):
        assert set(SHARED_SOURCES) <= set(sources)
        assert all((ROOT / s).is_file() for s in sources), [s for s in sources if not (ROOT / s).is_file()]
    assert "csrc/hip/runner.hip" in hip and "csrc/cuda/runner.cu" in nv


def test_cuda_build_records_cutlass_and_the_commit(tmp_path):
    from build_support import cuda

    include = tmp_path / "include"
    (include / "cutlass").mkdir(parents=True)
    (include / "cutlass" / "version.h").write_text(
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n")
    info = cuda.build_info(include, {"fp8", "bf16"}, "13.0")
    assert (info["backend"], info["archs"], info["dtypes"], info["cutlass_version"], info["cuda"]) == (
        "cutlass", "sm_90a", "bf16,fp8", "4.2.0", "13.0")
    import torch

    assert info["torch"] == torch.__version__ and (info["compiler"] == "unknown" or info["compiler"].startswith("nvcc: "))
    commit = source_commit()
    assert commit == "unknown" or re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit)
