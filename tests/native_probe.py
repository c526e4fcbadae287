"""The native validator and router built with g++ from their own sources (tests/cpp/native_probe.cpp over
csrc/common/validate.h, route.h and the CUTLASS instance table and rules of csrc/cuda/rules.cpp), loaded with
ctypes: shared by tests/test_native_rules.py (the validator) and tests/test_native_routes*.py (the router, with the
queries below)."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from ckgemm.backends import routes

ROOT = Path(__file__).resolve().parents[1]
DTYPE_CODES = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2, torch.int8: 4}


class Meta(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("sizes", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4),
                ("dtype", ctypes.c_int32), ("element_size", ctypes.c_int32), ("device_type", ctypes.c_int32),
                ("device_index", ctypes.c_int32), ("data", ctypes.c_uint64), ("requires_grad", ctypes.c_bool),
                ("inference_locked", ctypes.c_bool)]


class Desc(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p)] + [
        (f, ctypes.c_int64) for f in ("m", "n", "k", "lda", "ldb", "ldc")] + [("sa", ctypes.c_void_p),
                                                                              ("sb", ctypes.c_void_p)]


def build_probe(directory: Path, flags: tuple[str, ...] = ()):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no g++ to build tests/cpp/native_probe.cpp")
    lib = directory / "native_probe.so"
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", f"-I{ROOT / 'csrc'}", *flags,
           str(ROOT / "tests/cpp/native_probe.cpp"), str(ROOT / "csrc/cuda/rules.cpp"), "-o", str(lib)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"{' '.join(cmd)}\n{build.stderr}"
    return ctypes.CDLL(str(lib))


def load_probe(directory: Path):
    """The probe of a full build, its text-returning entries typed and its structs' sizes checked."""
    so = build_probe(directory)
    for name in ("probe_instance_name", "probe_instance_rejects", "probe_kind_rejects"):
        getattr(so, name).restype = ctypes.c_char_p
    assert so.probe_sizeof_meta() == ctypes.sizeof(Meta) and so.probe_sizeof_desc() == ctypes.sizeof(Desc)
    return so


def addr(offset=0):
    return (1 << 32) + offset


def route(probe, dtype, out, layout, scaling, m, n, k, *, a_off=0, c_off=0, lda=None, ldc=None, scales=False,
          groups=1):
    ldb = k if layout == "RC" else n
    desc = Desc(addr(a_off), addr(1 << 28), addr((2 << 28) + c_off), m, n, k, lda or k, ldb, ldc or n,
                addr(3 << 28) if scales else None, addr(4 << 28) if scales else None)
    kp, np_, why = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_char_p()
    code = probe.probe_route(DTYPE_CODES[dtype], out, {"RC": 0, "RR": 1}[layout], scaling, ctypes.byref(desc),
                             ctypes.c_int64(groups), ctypes.byref(kp), ctypes.byref(np_), ctypes.byref(why))
    return code, kp.value, np_.value, (why.value or b"").decode()


def route_packed(probe, dtype, out, scaling, groups, rows, n, k, *, layout="RC", c_off=0, ldc=None):
    why = ctypes.c_char_p()
    code = probe.probe_route_packed(DTYPE_CODES[dtype], out, {"RC": 0, "RR": 1}[layout], scaling, groups,
                                    ctypes.c_int64(rows), ctypes.c_int64(n), ctypes.c_int64(k), ctypes.c_int64(c_off),
                                    ctypes.c_int64(ldc or n), ctypes.byref(why))
    name = probe.probe_instance_name(routes.instance(code)).decode() if (why.value or b"") == b"" else None
    return name, routes.flags(code), (why.value or b"").decode()
