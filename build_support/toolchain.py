"""Does the host C++ compiler link an extension against the process's libstdc++? Probed before the long build.

An extension must share the libstdc++ that torch's process already runs. One that carries its own copy
(libstdc++.a linked in) does not share the process's locale state, and the first number it formats through a
stream goes wrong: on a lent H100 host it crashed (SIGSEGV); on a Debian machine, linked with
``-static-libstdc++``, the number came out empty. torch's multi-part
``TORCH_CHECK`` messages format numbers that way, so such a build crashes on the error paths of torch's
header code compiled into it; ckgemm's own messages do not stream (csrc/common/message.h).

Seen on that host (docs/PERF_2026-12-05d.md): ``CXX=/opt/gcc/bin/g++``, a wrapper script around g++ 13.3,
linked libstdc++ into every shared library (its output named no ``libstdc++.so.6`` and defined ``std::locale``
itself; the wrapper's ``-B`` directories are the likely reason, not checked); ``/usr/bin/g++``, the same
release, did not.

The probe builds a four-line library with the build's compiler and Python's shared-library link flags,
loads it in a fresh process after torch, and formats an integer. When that goes wrong it tries again with
the runtime's ``libstdc++.so.6`` named ahead of the compiler's own choice; the build links with that flag
when it cures the probe. Either way the outcome goes into the build record (``cxx_probe``), which the
selftest's ``build_record`` check reads (docs/SELFTEST.md).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path

SOURCE = r"""
#include <sstream>
#include <string>
extern "C" int ckgemm_probe(long value) {
  std::ostringstream s;
  s << "v=" << value;
  return static_cast<int>(s.str().size());
}
"""
# Prints what the library returned; "v=7" is 3 characters.
RUNNER = "import ctypes, sys, torch\nprint(ctypes.CDLL(sys.argv[1]).ckgemm_probe(7))"
EXPECTED = "3"
SHARED_LIBSTDCXX = "-l:libstdc++.so.6"
TIMEOUT_S = 300


def cxx_compiler() -> str:
    """The compiler torch's extension build compiles and links the C++ sources with."""
    try:
        from torch.utils.cpp_extension import get_cxx_compiler
    except ImportError:
        return os.environ.get("CXX", "c++")
    return get_cxx_compiler()


def link_flags() -> list[str]:
    """Python's shared-library link flags (what setuptools links an extension with), without its compiler."""
    flags = shlex.split(sysconfig.get_config_var("LDSHARED") or "cc -shared")[1:]
    return flags if "-shared" in flags else ["-shared", *flags]


def probe(cxx: str, extra: list[str], workdir: Path) -> tuple[str, str]:
    """("ok" | "crashed" | "wrong" | "not run", detail) for the probe library linked with ``extra``. "not run":
    the compiler could not build it, or the runner failed before it could call it (no torch, say)."""
    source = workdir / "probe.cpp"
    source.write_text(SOURCE)
    lib = workdir / f"probe{len(list(workdir.glob('*.so')))}.so"
    command = [*shlex.split(cxx), "-O2", "-fPIC", str(source), "-o", str(lib), *link_flags(), *extra]
    try:
        built = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return "not run", f"{cxx}: {exc}"
    if built.returncode != 0:
        last = (built.stderr.strip().splitlines() or [f"exit {built.returncode}"])[-1]
        return "not run", f"{shlex.join(command)}: {last}"
    try:
        ran = subprocess.run([sys.executable, "-c", RUNNER, str(lib)], capture_output=True, text=True,
                             timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "not run", f"the probe's runner gave no answer in {TIMEOUT_S} s"
    if ran.returncode < 0:
        return "crashed", f"signal {-ran.returncode}"
    if ran.returncode != 0:
        tail = (ran.stderr.strip().splitlines() or [""])[-1]
        return "not run", f"the probe's runner failed (exit {ran.returncode}: {tail})"
    if ran.stdout.strip() != EXPECTED:
        return "wrong", f"'v=' << 7 came out {ran.stdout.strip() or 'no'} characters long, not {EXPECTED}"
    return "ok", ""


def libstdcxx_link(cxx: str | None = None) -> tuple[list[str], dict]:
    """(link flags the extension needs, what the build records as ``cxx`` and ``cxx_probe``).

    ``cxx_probe`` is ``ok``, ``ok with <flag> (...)`` when the build adds that flag, ``crashed: ...`` or
    ``wrong: ...`` when nothing here cures it, or ``not run: ...`` when the compiler cannot build the probe
    (the extension's own build then says why) or the probe cannot be called."""
    cxx = cxx or cxx_compiler()
    from . import compiler_version

    record = {"cxx": compiler_version(shlex.split(cxx)[0]) if cxx.strip() else "unknown"}
    with tempfile.TemporaryDirectory(prefix="ckgemm-cxx-probe-") as tmp:
        outcome, detail = probe(cxx, [], Path(tmp))
        if outcome == "ok":
            return [], {**record, "cxx_probe": "ok"}
        if outcome == "not run":
            return [], {**record, "cxx_probe": f"not run: {detail}"}
        cured, cure_detail = probe(cxx, [SHARED_LIBSTDCXX], Path(tmp))
    first = f"{outcome}: {detail}, linked as {cxx} links a shared library"
    if cured == "ok":
        warnings.warn(f"ckgemm: a library built by {cxx} formatted a number wrongly next to torch ({first}); "
                      f"the extension is linked with {SHARED_LIBSTDCXX} (the process's libstdc++), which cured it")
        return [SHARED_LIBSTDCXX], {**record, "cxx_probe": f"ok with {SHARED_LIBSTDCXX} ({first})"}
    warnings.warn(f"ckgemm: a library built by {cxx} formatted a number wrongly next to torch ({first}); "
                  f"{SHARED_LIBSTDCXX} did not cure it ({cured}: {cure_detail}). The extension's own messages do "
                  "not stream numbers, but torch's header checks compiled into it do: build with a compiler that "
                  "links the shared libstdc++ (CXX=/usr/bin/g++ on that host), see build_support/toolchain.py")
    return [], {**record, "cxx_probe": f"{first}; {SHARED_LIBSTDCXX} did not cure it ({cured}: {cure_detail})"}
