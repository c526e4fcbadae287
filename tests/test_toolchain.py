"""build_support/toolchain.py: the probe of how the host toolchain links libstdc++, its cure, and what the build
and the selftest make of it. The compilers here are this machine's, wrapped by small scripts (set as CXX, which
both torch's compile and setuptools' link read) that link the way a broken toolchain does."""
import shutil
import sys
import types
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from build_support import toolchain  # noqa: E402

CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")


@pytest.fixture
def cxx(tmp_path, monkeypatch):
    """``use(name, body)`` writes a shell script of that body and sets CXX to it (LDFLAGS cleared)."""
    monkeypatch.delenv("LDFLAGS", raising=False)

    def use(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        monkeypatch.setenv("CXX", str(path))
        return str(path)
    return use


def _link(expect_warning: bool | None):
    """libstdcxx_link()'s flags and record, and its warnings, which must be there or not as expected (None:
    not checked)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flags, record = toolchain.libstdcxx_link()
    ours = [str(w.message) for w in caught if "ckgemm: the probe library" in str(w.message)]
    assert expect_warning is None or bool(ours) == expect_warning, (ours, record)
    return flags, record, ours


@needs_cxx
def test_this_machines_compiler_links_the_shared_libstdcxx(cxx):
    cxx("plain-cxx", f'exec {CXX} "$@"\n')
    flags, record, _ = _link(expect_warning=False)
    assert flags == [] and record["cxx_probe"] == "ok"
    assert record["cxx"].startswith("plain-cxx: ")


@needs_cxx
@pytest.mark.parametrize("how", ["CXX", "LDFLAGS"])
def test_a_static_libstdcxx_is_caught_and_cured_by_naming_the_shared_one(cxx, monkeypatch, how):
    """What the lent H100's /opt/gcc/bin/g++ did: libstdc++.a linked into the library (there it crashed on the
    first formatted number; here the number comes out empty). Through the compiler, or through LDFLAGS, which
    setuptools adds to the extension's link."""
    if how == "CXX":
        cxx("static-cxx", f'exec {CXX} "$@" -static-libstdc++\n')
    else:
        cxx("plain-cxx", f'exec {CXX} "$@"\n')
        monkeypatch.setenv("LDFLAGS", "-static-libstdc++")
    flags, record, warned = _link(expect_warning=None)
    if record["cxx_probe"].startswith("not run"):
        pytest.skip(f"no static libstdc++ to link here: {record['cxx_probe']}")
    assert len(warned) == 1, (warned, record)
    assert flags == [toolchain.SHARED_LIBSTDCXX] and "which cured it" in warned[0]
    probe = record["cxx_probe"]
    assert probe.startswith(f"ok with {toolchain.SHARED_LIBSTDCXX} (without it: ")
    assert "crashed: signal" in probe or "wrong: 'v=' << 7 came out" in probe


@needs_cxx
def test_a_probe_nothing_cures_is_recorded_as_wrong_and_warned(cxx, tmp_path):
    """A toolchain whose every library answers wrongly: no flag is added, and the record says so."""
    source = tmp_path / "liar.cpp"
    source.write_text('extern "C" int ckgemm_probe(long) { return 2; }\n')
    find_out = 'out=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done\n'
    cxx("liar-cxx", find_out + f'case "$out" in *.so) exec {CXX} -shared -fPIC {source} -o "$out";; esac\n'
        f'exec {CXX} "$@"\n')
    flags, record, warned = _link(expect_warning=True)
    assert flags == [] and "did not cure it" in warned[0]
    assert record["cxx_probe"].startswith("wrong: 'v=' << 7 came out 2 characters long, not 3")
    assert f"{toolchain.SHARED_LIBSTDCXX} did not cure it (wrong:" in record["cxx_probe"]


@needs_cxx
def test_the_answer_decides_not_the_runners_exit(cxx, monkeypatch):
    """A right answer followed by a crash or chatter is ok; a death before any answer is a crash, named by its
    signal; a runner that fails before the call (no torch, say) judges nothing."""
    cxx("plain-cxx", f'exec {CXX} "$@"\n')
    load = "import ctypes, os, signal, sys\nn = ctypes.CDLL(sys.argv[1]).ckgemm_probe(7)\n"
    runners = {
        "print('banner')\nprint('CKGEMM_PROBE=' + str(n), flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)":
            ("ok", []),
        "os.kill(os.getpid(), signal.SIGSEGV)": ("crashed", ["signal 11"]),
        "raise ImportError('no torch here')": ("not run", ["the probe's runner failed (exit 1: ", "no torch here"]),
    }
    for tail, (outcome, parts) in runners.items():
        monkeypatch.setattr(toolchain, "RUNNER", load + tail)
        flags, record, _ = _link(expect_warning=outcome == "crashed")
        assert record["cxx_probe"].startswith(outcome), (tail, record)
        assert all(p in record["cxx_probe"] for p in parts), (parts, record)
        assert flags == []


def test_a_compiler_that_cannot_build_the_probe_is_not_run(cxx, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    flags, record, _ = _link(expect_warning=False)
    assert flags == [] and record["cxx_probe"].startswith("not run: ") and "no-such-g++" in record["cxx_probe"]
    assert record["cxx"] == "unknown"
    cxx("failing-cxx", "echo 'error: broken' >&2\nexit 1\n")
    flags, record, _ = _link(expect_warning=False)
    assert flags == [] and record["cxx_probe"].startswith("not run: ") and record["cxx_probe"].endswith("error: broken")
    assert "<tmp>" in record["cxx_probe"] and "ckgemm-cxx-probe-" not in record["cxx_probe"]  # stable record


def test_driver_keeps_a_launcher():
    assert toolchain.driver(["ccache", "g++", "-O2", "-Wall"]) == ["ccache", "g++"]
    assert toolchain.driver(["/opt/gcc/bin/g++"]) == ["/opt/gcc/bin/g++"]


def test_the_cuda_build_links_with_the_cure_and_records_the_probe(tmp_path, monkeypatch):
    """cuda.extension passes the probe's flags to the link and its record into the build header."""
    import os

    from torch.utils import cpp_extension

    from build_support import cuda

    include = tmp_path / "include"
    (include / "cutlass").mkdir(parents=True)
    (include / "cutlass" / "version.h").write_text(
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n")
    record = {"cxx": "g++: fake", "cxx_probe": "ok with -l:libstdc++.so.6 (without it: crashed: signal 11)"}
    monkeypatch.setattr(toolchain, "libstdcxx_link", lambda: ([toolchain.SHARED_LIBSTDCXX], dict(record)))
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(cuda.shutil, "which", lambda name, path=None: os.path.join(str(tmp_path), "bin", name))
    monkeypatch.setattr(cuda, "find_headers", lambda mode, find, named_by: [str(include)])
    headers = []
    monkeypatch.setattr(cuda, "build_info_header", lambda info: headers.append(info))
    monkeypatch.setenv("CKGEMM_DTYPES", "bf16")
    [ext], cmdclass = cuda.extension("on")
    assert ext.extra_link_args == [toolchain.SHARED_LIBSTDCXX] and "build_ext" in cmdclass
    assert len(headers) == 1 and {k: headers[0][k] for k in record} == record
    assert headers[0]["backend"] == "cutlass"


def test_the_rocm_build_links_with_the_cure_and_records_the_probe(tmp_path, monkeypatch):
    from torch.utils import cpp_extension

    from build_support import rocm

    record = {"cxx": "g++: fake", "cxx_probe": "ok with -l:libstdc++.so.6 (without it: crashed: signal 11)"}
    monkeypatch.setattr(toolchain, "libstdcxx_link", lambda: ([toolchain.SHARED_LIBSTDCXX], dict(record)))
    monkeypatch.setattr(cpp_extension, "ROCM_HOME", str(tmp_path))
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path))  # a CPU torch builds CUDAExtension's lists
    monkeypatch.setattr(rocm, "find_headers", lambda mode, find, named_by: tmp_path / "include")
    monkeypatch.setattr(rocm, "gpu_archs", lambda: ["gfx942"])
    monkeypatch.setattr(rocm, "_hip_version", lambda torch: (7, 0, 2))
    monkeypatch.setattr(rocm, "build_info", lambda *args: {"backend": "ck", "ck_generation": "G3", "ck_commit": "x"})
    headers = []
    monkeypatch.setattr(rocm, "build_info_header", lambda info: headers.append(info))
    monkeypatch.setenv("CKGEMM_DTYPES", "fp16")
    [ext], _ = rocm.extension("on")
    assert ext.extra_link_args == [toolchain.SHARED_LIBSTDCXX]
    assert len(headers) == 1 and {k: headers[0][k] for k in record} == record and headers[0]["backend"] == "ck"


def test_the_selftest_fails_a_build_whose_probe_was_not_cured(monkeypatch):
    from ckgemm.selftest import build

    monkeypatch.setattr(build.native, "built_kind", lambda: "cutlass")
    monkeypatch.setattr(build, "visible_ck_headers", lambda: None)
    base = {"backend": "cutlass", "archs": "sm_90a", "cutlass_version": "4.2.0", "compiler": "nvcc 13.0"}
    cases = {"crashed: signal 11; -l:libstdc++.so.6 did not cure it (crashed: signal 11)": "fail",
             "wrong: 'v=' << 7 came out 2 characters long, not 3": "fail",
             "ok with -l:libstdc++.so.6 (without it: crashed: signal 11)": "pass",
             "ok": "pass", "not run: g++: no such file": "pass"}
    for probe, verdict in cases.items():
        info = {**base, "cxx_probe": probe}
        monkeypatch.setattr(build, "extension_module", lambda info=info: types.SimpleNamespace(build_info=lambda: info))
        check = build.check_build_record()
        assert check.verdict == verdict, (probe, check.summary)
        assert probe in check.summary
    monkeypatch.setattr(build, "extension_module", lambda: types.SimpleNamespace(build_info=lambda: base))
    assert build.check_build_record().verdict == "pass"  # builds from before the probe record none
