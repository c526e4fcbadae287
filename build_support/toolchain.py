"""Does the host toolchain link an extension against the process's libstdc++? Probed before the long build.

An extension must share the libstdc++ that torch's process already runs. One that carries its own copy
(libstdc++.a linked in) does not share the process's locale state, and the first number it formats through a
stream goes wrong: on a lent H100 host it crashed (SIGSEGV); on a Debian machine, linked with
``-static-libstdc++``, the number came out empty. torch's multi-part ``TORCH_CHECK`` messages format numbers
that way, so such a build crashes on the error paths of torch's header code compiled into it; ckgemm's own
messages do not stream (csrc/common/message.h).

Seen on that host (docs/PERF_2026-12-05d.md): ``CXX=/opt/gcc/bin/g++``, a wrapper script around g++ 13.3,
linked libstdc++ into the libraries it built (they named no ``libstdc++.so.6`` and defined ``std::locale``
themselves; the wrapper's ``-B`` directories are the likely reason, not checked); ``/usr/bin/g++``, the same
release, did not.

The probe is a four-line library, compiled as torch's build compiles (``CXX``, else ``c++``) and linked by
setuptools' own C++ linker as the extension is (its ``CXX``, ``LDCXXSHARED``, ``LDFLAGS``...). A fresh Python
imports torch, loads it and formats 7. When that crashes or prints the wrong length, the probe is linked again
with the runtime's ``libstdc++.so.6`` named after the objects (ahead of the driver's own ``-lstdc++``); the
extension is linked with that flag when it cures the probe. The outcome goes into the build record
(``cxx_probe``), which the selftest's ``build_record`` check reads (docs/SELFTEST.md).
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import setuptools  # noqa: F401  # first, so that ``distutils`` below is setuptools' own copy

from . import compiler_version

SOURCE = r"""
#include <sstream>
#include <string>
extern "C" int ckgemm_probe(long value) {
  std::ostringstream s;
  s << "v=" << value;
  return static_cast<int>(s.str().size());
}
"""
# The answer is the line that starts with MARKER; the runner leaves by os._exit, so nothing torch does at
# interpreter exit can turn a right answer into a crash.
MARKER = "CKGEMM_PROBE="
RUNNER = ("import ctypes, os, sys, torch\n"
          "n = ctypes.CDLL(sys.argv[1]).ckgemm_probe(7)\n"
          f"print('\\n{MARKER}' + str(n), flush=True)\n"
          "os._exit(0)")
EXPECTED = "3"  # len("v=7")
SHARED_LIBSTDCXX = "-l:libstdc++.so.6"
TIMEOUT_S = 300


def cxx_compiler() -> list[str]:
    """The command torch's extension build compiles C++ with (``CXX``, else ``c++``), split into words."""
    from torch.utils.cpp_extension import get_cxx_compiler

    return shlex.split(get_cxx_compiler())


def setuptools_linker():
    """setuptools' compiler object, configured from sysconfig and the environment as for the extension's link."""
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    return compiler


def driver(command: list[str]) -> list[str]:
    """The words of a compiler command before its first option (``ccache g++ -O2`` -> ``ccache g++``)."""
    words = []
    for word in command:
        if word.startswith("-"):
            break
        words.append(word)
    return words


def compile_probe(workdir: Path) -> tuple[Path | None, str]:
    """(the probe's object file, compiled as torch's build compiles, "") or (None, why it could not be)."""
    source, obj = workdir / "probe.cpp", workdir / "probe.o"
    source.write_text(SOURCE)
    try:
        command = [*cxx_compiler(), "-O2", "-fPIC", "-c", str(source), "-o", str(obj)]
        built = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if built.returncode != 0:
        last = (built.stderr.strip().splitlines() or [f"exit {built.returncode}"])[-1]
        return None, f"{shlex.join(command)}: {last}"
    return obj, ""


def probe(linker, obj: Path, extra: list[str], lib: Path) -> tuple[str, str]:
    """("ok" | "crashed" | "wrong" | "not run", detail) for ``obj`` linked into ``lib`` by ``linker`` with
    ``extra`` after the objects, loaded after torch. "not run": it could not be linked or called (no torch in
    this Python, say)."""
    from distutils.errors import CCompilerError, DistutilsError

    try:
        linker.link_shared_object([str(obj)], str(lib), target_lang="c++", extra_postargs=extra)
        ran = subprocess.run([sys.executable, "-c", RUNNER, str(lib)], capture_output=True, text=True,
                             timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError, CCompilerError, DistutilsError) as exc:
        return "not run", str(exc)
    answers = [line[len(MARKER):].strip() for line in ran.stdout.splitlines() if line.startswith(MARKER)]
    if answers:
        return ("ok", "") if answers[-1] == EXPECTED else (
            "wrong", f"'v=' << 7 came out {answers[-1]} characters long, not {EXPECTED}")
    if ran.returncode < 0:
        return "crashed", f"signal {-ran.returncode}"
    tail = (ran.stderr.strip().splitlines() or [""])[-1]
    return "not run", f"the probe's runner failed (exit {ran.returncode}: {tail})"


def _warn(text: str) -> None:
    warnings.warn(f"ckgemm: the probe library, built and linked as the extension will be, {text}")


def libstdcxx_link() -> tuple[list[str], dict]:
    """(link flags the extension needs, what the build records as ``cxx`` and ``cxx_probe``).

    ``cxx_probe`` is ``ok``; ``ok with <flag> (without it: ...)`` when the build adds that flag; ``crashed: ...``
    or ``wrong: ...`` when nothing here cures it; ``not run: ...`` when the probe could not be built or called
    (the extension's own build then says why, or the toolchain was not judged)."""
    linker = setuptools_linker()
    record = {"cxx": compiler_version(driver(linker.compiler_cxx))}
    with tempfile.TemporaryDirectory(prefix="ckgemm-cxx-probe-") as tmp:
        stable = lambda text: text.replace(tmp, "<tmp>")  # noqa: E731  # the record must not change between runs
        obj, why = compile_probe(Path(tmp))
        if obj is None:
            return [], {**record, "cxx_probe": stable(f"not run: {why}")}
        outcome, detail = probe(linker, obj, [], Path(tmp) / "probe.so")
        if outcome in ("ok", "not run"):
            return [], {**record, "cxx_probe": stable(outcome + (f": {detail}" if detail else ""))}
        cured, cure_detail = probe(linker, obj, [SHARED_LIBSTDCXX], Path(tmp) / "probe_cured.so")
        cure_detail = stable(cure_detail)
    first = f"{outcome}: {detail}"
    what = f"{'crashed' if outcome == 'crashed' else 'formatted a number wrongly'} ({detail}) next to torch"
    if cured == "ok":
        _warn(f"{what}; the extension is linked with {SHARED_LIBSTDCXX} (the process's libstdc++), which cured it")
        return [SHARED_LIBSTDCXX], {**record, "cxx_probe": f"ok with {SHARED_LIBSTDCXX} (without it: {first})"}
    _warn(f"{what}, and {SHARED_LIBSTDCXX} did not cure it ({cured}: {cure_detail}). ckgemm's own messages do not "
          "stream numbers, but torch's header checks compiled into the extension do: build with a toolchain that "
          "links the shared libstdc++ (build_support/toolchain.py)")
    return [], {**record, "cxx_probe": f"{first}; {SHARED_LIBSTDCXX} did not cure it ({cured}: {cure_detail})"}
