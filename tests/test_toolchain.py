"""build_support/toolchain.py: the probe of how the host C++ compiler links libstdc++, its cure, and what the build
and the selftest make of it. The compilers here are this machine's, wrapped by small scripts that link the way a
broken toolchain does."""
import os
import shutil
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from build_support import toolchain  # noqa: E402

CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@needs_cxx
def test_this_machines_compiler_links_the_shared_libstdcxx():
    flags, record = toolchain.libstdcxx_link(CXX)
    assert flags == [] and record["cxx_probe"] == "ok"
    assert record["cxx"] != "unknown"


@needs_cxx
def test_a_static_libstdcxx_is_caught_and_cured_by_naming_the_shared_one(tmp_path):
    """What the lent H100's /opt/gcc/bin/g++ did: libstdc++.a linked into the library (there it crashed on the
    first formatted number; here the number comes out empty)."""
    static = _script(tmp_path, "static-cxx", f'exec {CXX} "$@" -static-libstdc++\n')
    with pytest.warns(UserWarning, match="cured it"):
        flags, record = toolchain.libstdcxx_link(static)
    if record["cxx_probe"].startswith("not run"):
        pytest.skip(f"no static libstdc++ to link here: {record['cxx_probe']}")
    assert flags == [toolchain.SHARED_LIBSTDCXX]
    probe = record["cxx_probe"]
    assert probe.startswith(f"ok with {toolchain.SHARED_LIBSTDCXX} (") and ("crashed:" in probe or "wrong:" in probe)


@needs_cxx
def test_a_probe_nothing_cures_is_recorded_as_wrong_and_warned(tmp_path):
    """A compiler whose every library answers wrongly: no flag is added, and the record says so."""
    source = tmp_path / "liar.cpp"
    source.write_text('extern "C" int ckgemm_probe(long) { return 2; }\n')
    find_out = 'out=""; prev=""\nfor a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done\n'
    liar = _script(tmp_path, "liar-cxx", find_out + f'exec {CXX} -shared -fPIC {source} -o "$out"\n')
    with pytest.warns(UserWarning, match="did not cure it"):
        flags, record = toolchain.libstdcxx_link(liar)
    assert flags == []
    assert record["cxx_probe"].startswith("wrong: 'v=' << 7 came out 2 characters long, not 3")
    assert f"{toolchain.SHARED_LIBSTDCXX} did not cure it (wrong:" in record["cxx_probe"]


def test_a_crash_is_told_from_a_wrong_answer(tmp_path, monkeypatch):
    """The runner's signal death is "crashed", named by its signal."""
    monkeypatch.setattr(toolchain, "RUNNER", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    outcome, detail = toolchain.probe(CXX, [], tmp_path)
    assert (outcome, detail) == ("crashed", "signal 11")


@needs_cxx
def test_a_runner_that_fails_before_the_call_is_not_run(tmp_path, monkeypatch):
    """No torch in the build's Python, say: nothing is known about the compiler, so nothing is blamed on it."""
    monkeypatch.setattr(toolchain, "RUNNER", "raise ImportError('no torch here')")
    flags, record = toolchain.libstdcxx_link(CXX)
    assert flags == [] and record["cxx_probe"].startswith("not run: the probe's runner failed (exit 1: ")
    assert "no torch here" in record["cxx_probe"]


def test_a_compiler_that_cannot_build_the_probe_is_not_run(tmp_path):
    flags, record = toolchain.libstdcxx_link(str(tmp_path / "no-such-g++"))
    assert flags == [] and record["cxx_probe"].startswith("not run: ") and "no-such-g++" in record["cxx_probe"]
    failing = _script(tmp_path, "failing-cxx", "echo 'error: broken' >&2\nexit 1\n")
    flags, record = toolchain.libstdcxx_link(failing)
    assert flags == [] and record["cxx_probe"].startswith("not run: ") and record["cxx_probe"].endswith("error: broken")


def test_link_flags_are_pythons_shared_library_flags(monkeypatch):
    monkeypatch.setattr(toolchain.sysconfig, "get_config_var",
                        lambda name: "gcc -shared -Wl,-O1 -Wl,-Bsymbolic-functions" if name == "LDSHARED" else None)
    assert toolchain.link_flags() == ["-shared", "-Wl,-O1", "-Wl,-Bsymbolic-functions"]
    monkeypatch.setattr(toolchain.sysconfig, "get_config_var", lambda name: "cc -pthread")
    assert toolchain.link_flags() == ["-shared", "-pthread"]


def test_the_cuda_build_links_with_the_cure_and_records_the_probe(tmp_path, monkeypatch):
    """cuda.extension passes the probe's flags to the link and its record into the build header."""
    from torch.utils import cpp_extension

    from build_support import cuda

    include = tmp_path / "include"
    (include / "cutlass").mkdir(parents=True)
    (include / "cutlass" / "version.h").write_text(
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n")
    record = {"cxx": "g++: fake", "cxx_probe": "ok with -l:libstdc++.so.6 (crashed: signal 11, ...)"}
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


def test_the_selftest_fails_a_build_whose_probe_crashed(monkeypatch):
    from ckgemm.selftest import build

    monkeypatch.setattr(build.native, "built_kind", lambda: "cutlass")
    monkeypatch.setattr(build, "visible_ck_headers", lambda: None)
    base = {"backend": "cutlass", "archs": "sm_90a", "cutlass_version": "4.2.0", "compiler": "nvcc 13.0"}
    cases = {"crashed: signal 11, linked as g++ links a shared library; -l:libstdc++.so.6 did not cure it": "fail",
             "wrong: 'v=' << 7 came out 2 characters long, not 3": "fail",
             "ok with -l:libstdc++.so.6 (crashed: signal 11, linked as g++ links a shared library)": "pass",
             "ok": "pass", "not run: g++: no such file": "pass"}
    for probe, verdict in cases.items():
        info = {**base, "cxx_probe": probe}
        monkeypatch.setattr(build, "extension_module", lambda info=info: types.SimpleNamespace(build_info=lambda: info))
        check = build.check_build_record()
        assert check.verdict == verdict, (probe, check.summary)
        assert probe in check.summary
    monkeypatch.setattr(build, "extension_module", lambda: types.SimpleNamespace(build_info=lambda: base))
    assert build.check_build_record().verdict == "pass"  # builds from before the probe record none
