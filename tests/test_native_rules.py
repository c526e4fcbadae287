"""The native validator and router, built with g++ from their own sources (tests/cpp/native_probe.cpp:
csrc/common/validate.h, route.h and the CUTLASS instance table and rules of csrc/cuda/rules.cpp), checked
on the CPU against ckgemm/validate.py (same rule, same group, on the whole bad-input catalogue and on a
seeded mutation fuzzer) and queried for the routes they choose: the tests ask the C++ rules rather than
restating them."""
from __future__ import annotations

import ctypes
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ckgemm
from ckgemm import bad_inputs, validate
from ckgemm.backends import routes
from ckgemm.errors import CkgemmError, Rule

ROOT = Path(__file__).resolve().parents[1]
META_TYPES = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2, torch.float8_e4m3fnuz: 3, torch.int8: 4,
              torch.float32: 5, torch.int32: 6, torch.int64: 7}
OUT_CODES = {torch.float16: 0, torch.bfloat16: 1, torch.float32: 2, torch.int32: 3}
DTYPE_CODES = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2, torch.int8: 4}
FAMILY_CPU = 0
PYTHON_ONLY = {Rule.NOT_A_LIST, Rule.NOT_A_TENSOR}  # caught by the op schema before the native validator


class Meta(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("sizes", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4),
                ("dtype", ctypes.c_int32), ("element_size", ctypes.c_int32), ("device_type", ctypes.c_int32),
                ("device_index", ctypes.c_int32), ("data", ctypes.c_uint64), ("requires_grad", ctypes.c_bool)]


class Desc(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("c", ctypes.c_void_p)] + [
        (f, ctypes.c_int64) for f in ("m", "n", "k", "lda", "ldb", "ldc")] + [("sa", ctypes.c_void_p),
                                                                              ("sb", ctypes.c_void_p)]


def _build_probe(directory: Path, flags: tuple[str, ...] = ()):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no g++ to build tests/cpp/native_probe.cpp")
    lib = directory / "native_probe.so"
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", f"-I{ROOT / 'csrc'}", *flags,
           str(ROOT / "tests/cpp/native_probe.cpp"), str(ROOT / "csrc/cuda/rules.cpp"), "-o", str(lib)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, f"{' '.join(cmd)}\n{build.stderr}"
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    so = _build_probe(tmp_path_factory.mktemp("probe"))
    for name in ("probe_instance_name", "probe_instance_rejects", "probe_kind_rejects"):
        getattr(so, name).restype = ctypes.c_char_p
    assert so.probe_sizeof_meta() == ctypes.sizeof(Meta) and so.probe_sizeof_desc() == ctypes.sizeof(Desc)
    return so


def meta(t: torch.Tensor) -> Meta:
    m = Meta()
    m.ndim = t.dim()
    for i in range(min(t.dim(), 4)):
        m.sizes[i], m.strides[i] = t.shape[i], t.stride(i)
    m.dtype = META_TYPES.get(t.dtype, 8)
    m.element_size = t.element_size()
    m.device_type = {"cpu": 0, "cuda": 1}.get(t.device.type, 2)
    m.device_index = t.device.index if t.device.index is not None else -1
    m.data = t.data_ptr() if t.numel() and t.device.type != "meta" else 0
    m.requires_grad = t.requires_grad
    return m


def _array(tensors):
    return (Meta * max(len(tensors), 1))(*[meta(t) for t in tensors])


def python_verdict(op, args, kwargs) -> tuple[Rule, int | None]:
    layout, sa, sb, out_dtype = (kwargs.get(k) for k in ("layout", "scale_a", "scale_b", "out_dtype"))
    try:
        if op == "grouped_gemm_packed":
            validate.validate_packed(op, *args, layout, kwargs.get("out"), None, sa, sb, out_dtype)
        else:
            problem = validate.validate_list(op, args[0], args[1], layout, sa, sb, out_dtype, op == "grouped_gemm_out")
            if op == "grouped_gemm_out":
                validate.validate_outputs(op, problem, args[2], args[0], args[1], sa, sb)
    except CkgemmError as exc:
        return exc.rule, exc.group
    return Rule.NONE, None


def native_verdict(probe, op, args, kwargs) -> tuple[Rule, int | None]:
    layout = {None: 0, "RC": 0, "RR": 1}.get(kwargs.get("layout"), -1)
    out_dtype = kwargs.get("out_dtype")
    out_code = -1 if out_dtype is None else OUT_CODES.get(out_dtype, 99)
    grad, group, out, recipe = int(torch.is_grad_enabled()), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    sa, sb = kwargs.get("scale_a"), kwargs.get("scale_b")
    if op == "grouped_gemm_packed":
        a, b, sizes = args
        host = (ctypes.c_int64 * max(sizes.numel(), 1))(*[int(s) for s in sizes.tolist()]) if sizes.device.type == "cpu" else None
        ptr = lambda t: ctypes.byref(meta(t)) if t is not None else None  # noqa: E731
        rule = probe.probe_validate_packed(ctypes.byref(meta(a)), ctypes.byref(meta(b)), ctypes.byref(meta(sizes)),
                                           ptr(kwargs.get("out")), ptr(sa), ptr(sb), layout, out_code, grad, FAMILY_CPU,
                                           host, ctypes.byref(group), ctypes.byref(out), ctypes.byref(recipe))
    else:
        a, b = args[0], args[1]
        c = args[2] if op == "grouped_gemm_out" else []
        given = (sa is not None) | (sb is not None) << 1
        sa, sb = list(sa or []), list(sb or [])
        rule = probe.probe_validate_list(_array(a), len(a), _array(b), len(b), _array(c),
                                         len(c) if op == "grouped_gemm_out" else -1, _array(sa), len(sa), _array(sb),
                                         len(sb), given, layout, out_code, grad, FAMILY_CPU, ctypes.byref(group),
                                         ctypes.byref(out), ctypes.byref(recipe))
    return Rule(rule), (None if group.value < 0 else group.value)


def test_rule_ids_are_the_same_in_python_and_cpp():
    text = (ROOT / "csrc/common/rules.inc").read_text()
    cpp = {name: int(value) for name, value in re.findall(r"^CKGEMM_RULE\((\w+), (\d+)\)", text, re.M)}
    assert cpp == {r.name: r.value for r in Rule}


def test_route_code_layout_matches_routes_py(probe):
    code = routes.KIND_KERNEL | (37 << 4) | ((routes.FLAG_REPACK_A | routes.FLAG_STAGE_C) << 16)
    assert probe.probe_route_kind_of(code) == routes.kind(code) == routes.KIND_KERNEL
    assert probe.probe_route_instance_of(code) == routes.instance(code) == 37
    assert probe.probe_route_flags_of(code) == routes.flags(code) == routes.FLAG_REPACK_A | routes.FLAG_STAGE_C


CATALOGUE = bad_inputs.catalogue("cpu", seed=11)


@pytest.mark.parametrize("case", CATALOGUE, ids=[c.name for c in CATALOGUE])
def test_catalogue_verdicts_agree(probe, case):
    """Same first rule and group from validate.py and validate.h for every bad input."""
    expected = python_verdict(case.op, case.args, case.kwargs)
    assert expected[0] == case.rule, f"the catalogue's rule for {case.name!r} is stale"
    if case.rule in PYTHON_ONLY:
        return  # the op's schema refuses these before C++ sees them; validate.py explains them
    assert native_verdict(probe, case.op, case.args, case.kwargs) == expected


def test_host_sizes_that_wrap_int64_still_fail_the_sum(probe):
    """Four sizes of 2^62 sum to 2^64, which wraps to 0 in int64: a has 0 rows, so a wrapping sum would pass."""
    a, b = torch.zeros(0, 16, dtype=torch.float16), torch.zeros(4, 8, 16, dtype=torch.float16)
    sizes = torch.full((4,), 2**62, dtype=torch.int64)
    expected = python_verdict("grouped_gemm_packed", (a, b, sizes), {})
    assert expected == (Rule.SIZES_SUM, None)
    assert native_verdict(probe, "grouped_gemm_packed", (a, b, sizes), {}) == expected


def _mutations(rng: random.Random):
    """Valid calls and their mutations (one rule at a time, sometimes two), all on CPU tensors."""
    gen = torch.Generator().manual_seed(rng.randrange(1 << 30))
    dtype = rng.choice([torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int8])
    layout = rng.choice(["RC", "RR"])
    groups = rng.randint(1, 4)
    shapes = [(rng.choice([0, 1, 5, 16]), rng.choice([8, 16, 24]), rng.choice([0, 16, 32, 200])) for _ in range(groups)]
    recipe = rng.choice(["none", "tensor", "row", "block"]) if dtype.itemsize == 1 else "none"
    if dtype == torch.int8 and recipe == "block":
        recipe = "row"

    def t(shape, dt=dtype):
        return (torch.randn(shape, generator=gen) * 4).to(dt)

    a = [t((m, k)) for m, n, k in shapes]
    b = [t((n, k) if layout == "RC" else (k, n)) for m, n, k in shapes]
    kw = {"layout": layout}
    if recipe != "none":
        one = lambda *s: torch.ones(s)  # noqa: E731
        nb = lambda x: -(-x // 128)  # noqa: E731
        kw["scale_a"] = [{"tensor": one(), "row": one(m), "block": one(m, nb(k))}[recipe] for m, n, k in shapes]
        kw["scale_b"] = [{"tensor": one(), "row": one(n), "block": one(nb(n), nb(k))}[recipe] for m, n, k in shapes]
    out_dtype = torch.bfloat16 if recipe != "none" else ckgemm.rule_for(dtype).output
    c = [torch.full((m, n), float("nan")).to(out_dtype) for m, n, _ in shapes]
    op = rng.choice(["grouped_gemm", "grouped_gemm_out"])
    args = [a, b] + ([c] if op == "grouped_gemm_out" else [])
    g = rng.randrange(groups)
    kind = rng.choice(["none", "k", "dtype", "stride", "meta", "grad", "scale_shape", "scale_dtype", "scale_stride",
                       "out_shape", "out_dtype", "alias", "layout", "out_dtype_arg", "recipe_mix", "drop_scale"])
    if kind == "k":
        a[g] = t((shapes[g][0], shapes[g][2] + 16))
    elif kind == "dtype":
        b[g] = b[g].to(torch.float16 if dtype != torch.float16 else torch.bfloat16)
    elif kind == "stride" and a[g].numel():
        a[g] = torch.empty(a[g].shape[::-1], dtype=dtype).t()
    elif kind == "meta":
        b[g] = torch.empty(b[g].shape, dtype=dtype, device="meta")
    elif kind == "grad" and dtype.is_floating_point and dtype.itemsize == 2:
        a[g] = a[g].float().requires_grad_().to(dtype)
    elif kind.startswith("scale") and "scale_a" in kw:
        target = kw[rng.choice(["scale_a", "scale_b"])]
        if kind == "scale_shape":
            target[g] = torch.ones(*target[g].shape, 2)
        elif kind == "scale_dtype":
            target[g] = target[g].half()
        elif target[g].dim() == 2 and target[g].shape[0] > 1 and target[g].shape[1] > 1:
            target[g] = torch.ones(target[g].shape[1], target[g].shape[0]).t()
    elif kind == "recipe_mix" and "scale_a" in kw:
        kw["scale_b"][g] = torch.ones(())
    elif kind == "drop_scale" and "scale_a" in kw:
        kw[rng.choice(["scale_a", "scale_b"])] = None
    elif kind == "out_shape" and op == "grouped_gemm_out":
        c[g] = c[g][:, :-1] if c[g].shape[1] else c[g]
    elif kind == "out_dtype" and op == "grouped_gemm_out":
        c[g] = c[g].to(torch.float64)
    elif kind == "alias" and op == "grouped_gemm_out" and g + 1 < groups:
        c[g + 1] = c[g]
    elif kind == "layout":
        kw["layout"] = "CR"
    elif kind == "out_dtype_arg":
        kw["out_dtype"] = rng.choice([torch.float32, torch.int32, torch.float16, torch.float64])
    return op, tuple(args), kw


def test_fuzzed_calls_agree(probe):
    """A seeded mutation fuzzer: random valid calls with one rule broken (or none); both validators must
    give the same verdict (accept, or the same first rule and group)."""
    rng = random.Random(20261201)
    outcomes = {}
    for i in range(400):
        op, args, kwargs = _mutations(rng)
        expected = python_verdict(op, args, kwargs)
        got = native_verdict(probe, op, args, kwargs)
        assert got == expected, f"case {i}: {op} {kwargs.get('layout')}: python {expected}, native {got}"
        outcomes[expected[0]] = outcomes.get(expected[0], 0) + 1
    assert outcomes.get(Rule.NONE, 0) > 40 and len(outcomes) >= 12, f"the fuzzer explores too little: {outcomes}"


# ---- routes chosen by the real CUTLASS rules ----

def _addr(offset=0):
    return (1 << 32) + offset


def _route(probe, dtype, out, layout, scaling, m, n, k, *, a_off=0, c_off=0, lda=None, ldc=None, scales=False,
           groups=1):
    ldb = k if layout == "RC" else n
    desc = Desc(_addr(a_off), _addr(1 << 28), _addr((2 << 28) + c_off), m, n, k, lda or k, ldb, ldc or n,
                _addr(3 << 28) if scales else None, _addr(4 << 28) if scales else None)
    kp, np_, why = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_char_p()
    code = probe.probe_route(DTYPE_CODES[dtype], out, {"RC": 0, "RR": 1}[layout], scaling, ctypes.byref(desc),
                             ctypes.c_int64(groups), ctypes.byref(kp), ctypes.byref(np_), ctypes.byref(why))
    return code, kp.value, np_.value, (why.value or b"").decode()


def _kind(probe, instance):
    fields = (ctypes.c_int * 10)()
    probe.probe_instance_kind(instance, fields)
    return list(fields)


def test_routes_use_the_instance_table(probe):
    names = [probe.probe_instance_name(i).decode() for i in range(probe.probe_instance_count())]
    assert len(names) == len(set(zip(names, [tuple(_kind(probe, i)[:4]) for i in range(len(names))])))
    bf16, fp8, f32, bf16_out, f16_out = torch.bfloat16, torch.float8_e4m3fn, 2, 1, 0
    code, _, _, why = _route(probe, bf16, bf16_out, "RC", 0, 4096, 4096, 4096)
    assert why == "" and routes.flags(code) == 0 and _kind(probe, routes.instance(code))[4] >= 128
    code, _, _, _ = _route(probe, bf16, bf16_out, "RC", 0, 16, 4096, 4096)
    assert _kind(probe, routes.instance(code))[4] == 64, "decode-size 16-bit groups take the 64-row tile"
    for eight_bit, out, scaling in ((fp8, f32, 0), (fp8, bf16_out, 1), (torch.int8, 3, 0), (torch.int8, bf16_out, 1)):
        def tile_m(m, groups=1, n=4096):
            code, _, _, why = _route(probe, eight_bit, out, "RC", scaling, m, n, 7168, scales=scaling > 0,
                                     groups=groups)
            assert why == "", (eight_bit, out, m, why)
            return probe.probe_instance_name(routes.instance(code)).decode(), _kind(probe, routes.instance(code))[4]
        got = [tile_m(m) for m in (1, 16, 32, 33, 64, 65, 4096)]
        assert [tm for _, tm in got] == [32, 32, 32, 64, 64, 128, 128], (eight_bit, out, got)
        assert [name for name, _ in got[:3]] == ["coop_swapab_32x128x128"] * 3, (eight_bit, out, got)
        large = "coop_128x192x128_c1x2" if eight_bit == fp8 else "coop_128x256x128_c1x2"  # fp8: 128x192 first
        assert [name for name, _ in got[-2:]] == [large] * 2, (eight_bit, out, got)
        # The 256-wide SwapAB tile once the call makes 128 of its tiles (about a wave of 132 SMs).
        for groups, n, wide in ((1, 4096, False), (7, 4096, False), (8, 4096, True), (32, 4096, True),
                                (32, 1536, True), (21, 1536, False), (1, 32768, True),
                                (8, 3840, False), (8, 3856, True)):  # ceil(N / 256): 15 or 16 tiles a group
            name, tm = tile_m(16, groups, n)
            assert tm == 32 and name == f"coop_swapab_32x{256 if wide else 128}x128", (eight_bit, out, groups, n, name)
        assert tile_m(48, 32)[1] == 64, "33-64 rows keep the 64-row ping-pong tile, whatever the group count"
    for n, scaling, out in ((256, 0, f32), (1024, 1, bf16_out), (2048, 0, f32), (5760, 1, bf16_out), (14336, 0, f32)):
        # fp8 takes 128x192 unless its last tile pads N by more than 5% (256 -> 384, 1024 -> 1152)
        code, _, _, _ = _route(probe, fp8, out, "RC", scaling, 4096, n, 7168, scales=scaling > 0)
        want = "coop_128x192x128_c1x2" if n in (2048, 5760, 14336) else "coop_128x128x128_c1x2"
        assert probe.probe_instance_name(routes.instance(code)).decode() == want, (n, scaling)
    code, _, _, _ = _route(probe, fp8, bf16_out, "RC", 2, 16, 4096, 7168, scales=True)
    assert probe.probe_instance_name(routes.instance(code)).decode() == "coop_blockwise_swapab_32x128x128"
    code, _, _, _ = _route(probe, fp8, bf16_out, "RC", 2, 16, 4096, 7168, scales=True, groups=32)
    assert probe.probe_instance_name(routes.instance(code)).decode() == "coop_blockwise_swapab_32x256x128"
    code, _, _, _ = _route(probe, bf16, bf16_out, "RC", 0, 256, 256, 256, a_off=2)
    assert routes.flags(code) == routes.FLAG_REPACK_A, "only the misaligned operand is copied"
    code, kp, _, _ = _route(probe, torch.float16, 0, "RC", 0, 64, 64, 30)
    assert routes.flags(code) & (routes.FLAG_REPACK_A | routes.FLAG_REPACK_B) and kp == 32, "K padded to 16 elements"
    code, _, _, _ = _route(probe, fp8, f32, "RR", 0, 512, 4096, 7168)
    assert routes.flags(code) & routes.FLAG_TRANSPOSE_B and _kind(probe, routes.instance(code))[2] == 0  # RC
    code, _, np_, _ = _route(probe, fp8, f16_out, "RC", 1, 256, 256, 256, scales=True)
    assert routes.flags(code) & routes.FLAG_STAGE_C and _kind(probe, routes.instance(code))[1] == f32, \
        "fp16 out of a scaled call: computed in fp32 and converted once"
    code, _, np_, _ = _route(probe, fp8, bf16_out, "RC", 2, 256, 20, 256, scales=True)
    assert routes.flags(code) & routes.FLAG_STAGE_C and routes.flags(code) & routes.FLAG_REPACK_B and np_ == 32
    code, _, _, _ = _route(probe, fp8, f32, "RC", 0, 64, 20, 256, c_off=4, ldc=21)
    assert routes.flags(code) == 0 and _kind(probe, routes.instance(code))[9] == 1, \
        "unscaled: the direct-store instance writes a misaligned C as it is"
    assert probe.probe_kind_rejects(2, 2, 1, 0)  # fp8 RR: no CUTLASS instance (it transposes)
    assert probe.probe_kind_rejects(2, 1, 0, 2) == b""  # fp8 block -> bf16 exists


def _route_packed(probe, dtype, out, scaling, groups, rows, n, k, *, layout="RC", c_off=0, ldc=None):
    why = ctypes.c_char_p()
    code = probe.probe_route_packed(DTYPE_CODES[dtype], out, {"RC": 0, "RR": 1}[layout], scaling, groups,
                                    ctypes.c_int64(rows), ctypes.c_int64(n), ctypes.c_int64(k), ctypes.c_int64(c_off),
                                    ctypes.c_int64(ldc or n), ctypes.byref(why))
    name = probe.probe_instance_name(routes.instance(code)).decode() if (why.value or b"") == b"" else None
    return name, routes.flags(code), (why.value or b"").decode()


def test_packed_unscaled_fp8_takes_ckgemm_own_kernel_where_its_rule_allows(probe):
    """The packed route (route_packed, as the executor calls it) of unscaled fp8 groups of more than 64 rows
    takes ckgemm's own kernel (ws_fp8.cuh) first; its rule (ws_fp8_rules.h) sends everything else on: list
    groups, more than 1024 groups, K or B's group stride off TMA's 16 bytes, scaled recipes (no own instance),
    decode-sized groups (the SwapAB and ping-pong tiles rank first)."""
    fp8, f32, bf16_out = torch.float8_e4m3fn, 2, 1
    own = "ws_128x192x128_c1x2"
    assert _route_packed(probe, fp8, f32, 0, 32, 32768, 4096, 7168) == (own, 0, "")
    assert _route_packed(probe, fp8, f32, 0, 8, 4096, 4097, 2880, c_off=4, ldc=4099) == (own, 0, ""), \
        "odd N and a C offset by one element: the own kernel writes any C"
    assert _route_packed(probe, fp8, f32, 0, 1, 512, 256, 128)[0] == "coop_128x128x128_c1x2", \
        "N 256 pads a 192-wide tile by 50%: the 128-wide CUTLASS tile ranks first"
    assert _route_packed(probe, fp8, f32, 0, 1024, 1024 * 100, 2048, 256)[0] == own
    name, flags, why = _route_packed(probe, fp8, f32, 0, 1025, 1025 * 100, 2048, 256)
    assert why == "" and name == "coop_128x192x128_c1x2" and flags == 0, "past 1024 groups: CUTLASS"
    # the kernel rounds rows, N and K up to tiles in 32-bit ints: it takes sizes that stay below 2^31 after that
    int_max = 2**31 - 1
    assert _route_packed(probe, fp8, f32, 0, 1, int_max - 128, 384, 256)[0] == own
    assert _route_packed(probe, fp8, f32, 0, 1, int_max - 127, 384, 256)[0] not in (own, None)
    assert _route_packed(probe, fp8, f32, 0, 1, 4096, int_max - 512 - 7, 256)[0] == own
    assert _route_packed(probe, fp8, f32, 0, 1, 4096, int_max - 511 + 7, 256)[0] not in (own, None)
    assert _route_packed(probe, fp8, f32, 0, 1, 4096, 384, int_max - 128 - 15)[0] == own
    assert _route_packed(probe, fp8, f32, 0, 1, 4096, 384, int_max - 127 + 15)[0] not in (own, None)
    name, flags, _ = _route_packed(probe, fp8, f32, 0, 4, 4096, 2048, 200)
    assert name == own and flags == routes.FLAG_REPACK_A | routes.FLAG_REPACK_B, \
        "K 200: the copies pad K to 208, which the own kernel takes"
    assert _route_packed(probe, fp8, f32, 0, 4, 4096, 2048, 7168, layout="RR")[:2] == (
        own, routes.FLAG_REPACK_B | routes.FLAG_TRANSPOSE_B)
    assert _route_packed(probe, fp8, f32, 0, 32, 512, 4096, 7168)[0].startswith("coop_swapab_"), "16 rows a group"
    assert _route_packed(probe, fp8, bf16_out, 1, 32, 32768, 4096, 7168)[0] == "coop_128x192x128_c1x2"
    assert _route_packed(probe, torch.int8, 3, 0, 32, 32768, 4096, 7168)[0] == "coop_128x256x128_c1x2"
    code, _, _, why = _route(probe, fp8, f32, "RC", 0, 4096, 4096, 7168)
    assert why == "" and probe.probe_instance_name(routes.instance(code)).decode() == "coop_128x192x128_c1x2", \
        "a list group never reaches the packed-only kernel"
    own_id = [probe.probe_instance_name(i).decode() for i in range(probe.probe_instance_count())].index(own)
    desc = Desc(_addr(), _addr(1 << 28), _addr(2 << 28), 4096, 4096, 7168, 7168, 7168, 4096, None, None)
    assert b"packed form" in probe.probe_instance_rejects(own_id, ctypes.byref(desc))
    _, _, _, why = _route(probe, fp8, f32, "RC", 0, 2**31, 4096, 7168)
    assert why.startswith("coop_128x192x128_c1x2: ") and "2^31" in why, \
        "a packed-only instance's refusal is never the reason a list group is given"


def test_a_promotion_interval_other_than_4_sends_unscaled_fp8_to_cutlass(probe):
    """CKGEMM_FP8_PROMOTION (read once per process) is CUTLASS's knob; the own kernel promotes every 4 wgmma
    k-blocks only, so with 8 or 16 set its rule refuses and the call runs CUTLASS at the asked precision."""
    lib = probe._name
    code = f"""
import ctypes
so = ctypes.CDLL({lib!r})
so.probe_instance_name.restype = ctypes.c_char_p
why = ctypes.c_char_p()
c = so.probe_route_packed(2, 2, 0, 0, 32, ctypes.c_int64(32768), ctypes.c_int64(4096), ctypes.c_int64(7168),
                          ctypes.c_int64(0), ctypes.c_int64(4096), ctypes.byref(why))
print(so.probe_instance_name(so.probe_route_instance_of(c)).decode())
"""
    for setting, want in (("8", "coop_128x192x128_c1x2"), ("16", "coop_128x192x128_c1x2"), ("4", "ws_128x192x128_c1x2"),
                          ("", "ws_128x192x128_c1x2")):
        env = {k: v for k, v in os.environ.items() if k != "CKGEMM_FP8_PROMOTION"}
        if setting:
            env["CKGEMM_FP8_PROMOTION"] = setting
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == want, (setting, run.stdout)


def test_ckgemm_config_puts_the_named_instance_first_where_it_fits(probe, monkeypatch):
    """The router (route.h, every backend) applies CKGEMM_CONFIG; names that do not fit, or name no
    instance, leave the selection rule's choice."""
    def chosen(m, n, k, **kw):
        code, _, _, why = _route(probe, torch.bfloat16, 1, "RC", 0, m, n, k, **kw)
        assert why == "", why
        return probe.probe_instance_name(routes.instance(code)).decode()

    default_big, default_small = chosen(4096, 4096, 4096), chosen(16, 4096, 4096)
    assert default_big != "coop_256x128x64_c1x2" and default_small.startswith("pingpong")
    monkeypatch.setenv("CKGEMM_CONFIG", "coop_256x128x64_c1x2")
    assert chosen(4096, 4096, 4096) == chosen(16, 4096, 4096) == "coop_256x128x64_c1x2"
    assert chosen(300, 200, 256, c_off=2).startswith("pingpong"), "a TMA-store tile cannot write a misaligned C"
    monkeypatch.setenv("CKGEMM_CONFIG", "no_such_instance")
    assert (chosen(4096, 4096, 4096), chosen(16, 4096, 4096)) == (default_big, default_small)


def test_every_route_lands_on_an_instance_that_accepts_it(probe):
    """Whatever the router returns for random groups is a group its instance's own rule accepts."""
    rng = random.Random(7)
    for _ in range(300):
        dtype = rng.choice([torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int8])
        scaling = rng.choice([0, 1, 2]) if dtype.itemsize == 1 else 0
        if dtype == torch.int8 and scaling == 2:
            scaling = 1
        out = {torch.float16: 0, torch.bfloat16: 1}.get(dtype, 3 if dtype == torch.int8 else 2)
        if scaling:
            out = rng.choice([0, 1, 2])
        m, n, k = rng.choice([1, 17, 64, 300]), rng.choice([8, 20, 128, 1000]), rng.choice([16, 30, 128, 4099])
        layout, a_off, c_off = rng.choice(["RC", "RR"]), rng.choice([0, 0, 2]), rng.choice([0, 0, 2])
        code, kp, np_, why = _route(probe, dtype, out, layout, scaling, m, n, k, a_off=a_off, c_off=c_off,
                                    scales=bool(scaling))
        assert why == "" and routes.kind(code) == routes.KIND_KERNEL, why
        assert kp >= k and kp % 16 == 0 or kp == k
        assert np_ >= n
        # the group as the executor hands it to the instance: copies are fresh aligned buffers (B copied is
        # RC [N, K]), K padded only when A and B are copied, C staged at the padded N
        flags = routes.flags(code)
        copy_a, copy_b, stage = (bool(flags & f) for f in (routes.FLAG_REPACK_A, routes.FLAG_REPACK_B,
                                                          routes.FLAG_STAGE_C))
        assert kp == k or (copy_a and copy_b) and (np_ == n or stage)
        ldb = kp if copy_b else (k if layout == "RC" else n)
        routed = Desc(_addr(5 << 28) if copy_a else _addr(a_off), _addr(6 << 28) if copy_b else _addr(1 << 28),
                      _addr(7 << 28) if stage else _addr((2 << 28) + c_off), m, np_, kp, kp if copy_a else k, ldb,
                      np_ if stage else n, _addr(3 << 28) if scaling else None, _addr(4 << 28) if scaling else None)
        assert probe.probe_instance_rejects(routes.instance(code), ctypes.byref(routed)) == b"", (dtype, layout, m, n, k)


_DTYPE_CODE = {"F16": 0, "BF16": 1, "FP8_E4M3": 2, "I8": 4}  # the enums of csrc/ckgemm.h
_OUT_CODE = {"F16": 0, "BF16": 1, "F32": 2, "I32": 3}
_SCALING_CODE = {"None": 0, "Row": 1, "Block": 2}


def test_a_dtype_filtered_build_numbers_its_instances_as_the_runner_does(tmp_path, monkeypatch):
    """CKGEMM_DTYPES=bf16: rules.cpp, compiled with the flags the build gives C++ sources, must list exactly
    the instances the CUDA runner's table holds (instances.inc under the same CKGEMM_WITH_* macros), in the
    same order: a route code carries an instance id, and the runner indexes its table with it. (Before the
    build passed the macros to C++ sources, the rules kept all instances and a filtered build launched the
    wrong kernel.)"""
    monkeypatch.syspath_prepend(str(ROOT))
    from build_support import cuda

    for chosen in ({"bf16"}, {"fp8", "int8"}):
        directory = tmp_path / "_".join(sorted(chosen))  # one path per build: dlopen caches by path
        directory.mkdir()
        so = _build_probe(directory, tuple(f for f in cuda.cxx_flags(chosen) if f.startswith("-D")))
        rows = [r for r in cuda.instance_table() if cuda._ABI_TO_FILTER[r["dtype"]] in chosen]
        assert len(rows) == len(cuda.instance_sources(chosen)) > 0
        assert so.probe_instance_count() == len(rows), (chosen, so.probe_instance_count(), len(rows))
        so.probe_instance_name.restype = ctypes.c_char_p
        for i, row in enumerate(rows):
            fields = (ctypes.c_int * 10)()
            so.probe_instance_kind(i, fields)
            # the display name (schedule, tile, cluster) drops the dtype, output and layout: the kind fields have them
            kind = (_DTYPE_CODE[row["dtype"]], _OUT_CODE[row["out"]], row["layout"] == "RR", _SCALING_CODE[row["scaling"]])
            assert tuple(fields[:4]) == kind and "x".join(str(v) for v in fields[4:7]) == row["tile"], (chosen, i, row)
            assert row["tile"] in so.probe_instance_name(i).decode(), (chosen, i, row)

