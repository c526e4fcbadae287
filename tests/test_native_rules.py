"""The native validator, built with g++ from its own sources (tests/native_probe.py), checked on the CPU
against ckgemm/validate.py: same rule, same group, on the whole bad-input catalogue and on a seeded mutation
fuzzer; and the rule ids and route-code layout it shares with Python. The router's choices are
tests/test_native_routes.py."""
from __future__ import annotations

import ctypes
import random
import re

import pytest
import torch

import ckgemm
from ckgemm import bad_inputs, validate
from ckgemm.backends import routes
from ckgemm.errors import CkgemmError, Rule
from native_probe import ROOT, Meta, load_probe

META_TYPES = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2, torch.float8_e4m3fnuz: 3, torch.int8: 4,
              torch.float32: 5, torch.int32: 6, torch.int64: 7}
OUT_CODES = {torch.float16: 0, torch.bfloat16: 1, torch.float32: 2, torch.int32: 3}
FAMILY_CPU = 0
PYTHON_ONLY = {Rule.NOT_A_LIST, Rule.NOT_A_TENSOR}  # caught by the op schema before the native validator


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return load_probe(tmp_path_factory.mktemp("probe"))


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
    m.inference_locked = t.is_inference() and not torch.is_inference_mode_enabled()
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


def test_overlap_with_weights_sliced_from_fused_ones_agrees(probe):
    """B sliced from fused [G, 2N, K] weights (its batch stride is not its rows'): an out that lies in memory
    between B's groups is accepted by both validators, one over a group's rows refused by both; the list
    form's OVERLAP names the output's group in both."""
    fused = torch.zeros(2, 10, 16, dtype=torch.float16)
    b = fused[:, :4, :8]  # groups at rows 0-3 and 10-13 of the buffer, columns 0-7
    a, sizes = torch.zeros(10, 8, dtype=torch.float16), torch.tensor([5, 5], dtype=torch.int32)
    for out, verdict in ((fused.view(20, 16)[:10, 8:12], (Rule.NONE, None)),  # columns 8-11: beside B
                         (fused.view(20, 16)[4:14, :4], (Rule.OVERLAP, None))):  # rows 10-13: group 1 of B
        args = (a, b, sizes)
        assert python_verdict("grouped_gemm_packed", args, {"out": out}) == verdict
        assert native_verdict(probe, "grouped_gemm_packed", args, {"out": out}) == verdict
    rows = torch.zeros(3, 4, dtype=torch.float16)
    args = ([a[:2]] * 3, [b[0]] * 3, [torch.zeros(2, 4, dtype=torch.float16), rows[:2], rows[1:]])
    assert python_verdict("grouped_gemm_out", args, {}) == (Rule.OVERLAP, 2)
    assert native_verdict(probe, "grouped_gemm_out", args, {}) == (Rule.OVERLAP, 2)


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
