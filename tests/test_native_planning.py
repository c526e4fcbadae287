"""The Python half of the native backends on a CPU: ckgemm/backends/native_run.py and plan.py drive
stand-in `torch.ops.ckgemm.run_list / run_packed_out` kernels that enforce each backend's rules (as
csrc/cuda/instance.cuh and csrc/hip/routing.h do) and refuse anything else. Every call must reach
them only with groups they take, and the results must still be right: misaligned inputs repacked,
8-bit RR turned into RC, outputs the backend cannot write staged, empty and K=0 groups left to the
runner."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from ckgemm import validate
from ckgemm.backends import native, native_run, plan
from support import assert_group_matches, generator, poison, rand_tensor

LAYOUT = {0: "RC", 1: "RR"}
STATE = {"kind": "cutlass", "launches": []}


def _aligned(t, ld, nbytes=16):
    return t.data_ptr() % nbytes == 0 and (ld * t.element_size()) % nbytes == 0


def _kernel_takes(a, b, c, layout, config):
    """The stand-in kernel's rules: 16-byte TMA/vector alignment of A, B and the contiguous extents;
    C as the Large (or CK's any) config needs it; no 8-bit RR on CUTLASS."""
    rules = plan.RULES[STATE["kind"]]
    m, k = a.shape
    if a.element_size() == 1 and layout == "RR" and not rules.native_8bit_rr:
        return "8-bit RR"
    if not (_aligned(a, plan.leading_dim(a)) and _aligned(b, plan.leading_dim(b)) and (k * a.element_size()) % 16 == 0):
        return "A/B alignment"
    n = c.shape[1]
    if layout == "RR" and (n * a.element_size()) % 16:
        return "RR N alignment"
    writes_any = config == plan.SMALL and rules.direct_store_small
    if not writes_any and not (_aligned(c, plan.leading_dim(c)) and (n * c.element_size()) % 16 == 0):
        return "C alignment"
    return None


def _run_list(a_list, b_list, c_list, layout, config):
    layout = LAYOUT[layout]
    for a, b, c in zip(a_list, b_list, c_list):
        m, n, k = a.shape[0], c.shape[1], a.shape[1]
        if m == 0 or n == 0:
            continue
        if k == 0:
            c.zero_()
            continue
        why = _kernel_takes(a, b, c, layout, config)
        assert why is None, f"the planner sent a group the kernel refuses: {why}"
        STATE["launches"].append((layout, config))
        c.copy_(ckgemm.backends.reference.matmul(a, b, layout, ckgemm.rule_for(a.dtype)))


def _run_packed_out(a, b, group_sizes, out, layout, config):
    sizes = group_sizes.tolist()
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    _run_list([a[s:s + m] for s, m in zip(starts, sizes)], list(b.unbind(0)),
              [out[s:s + m] for s, m in zip(starts, sizes)], layout, config)


@pytest.fixture(scope="module", autouse=True)
def stand_in_extension():
    if native._C is not None:
        pytest.skip("the real extension is loaded; tests/test_gpu_native.py covers it")
    lib = torch.library.Library("ckgemm", "FRAGMENT")
    lib.define("run_list(Tensor[] a, Tensor[] b, Tensor(a!)[] c, int layout, int config) -> ()")
    lib.define("run_packed_out(Tensor a, Tensor b, Tensor group_sizes, Tensor(a!) out, int layout, int config) -> ()")
    lib.impl("run_list", _run_list, "CPU")
    lib.impl("run_packed_out", _run_packed_out, "CPU")

    class FakeC:
        @staticmethod
        def backend_kind():
            return STATE["kind"]

    native._C = FakeC()
    yield
    native._C = None
    lib._destroy()


@pytest.fixture(params=["cutlass", "ck"])
def kind(request):
    STATE["kind"] = request.param
    STATE["launches"] = []
    return request.param


DTYPES = [torch.bfloat16, torch.float8_e4m3fn, torch.int8]


@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp8", "int8"])
def test_list_form_routes_every_group_the_kernel_can_take(kind, dtype, layout):
    gen = generator(f"planning-{kind}-{dtype}-{layout}")
    big_a = rand_tensor((80, 320), dtype, gen)  # rows of 320 elements: 16-byte aligned for every dtype
    big_b = rand_tensor((320, 320), dtype, gen)
    b_of = (lambda n, k, r0=0, c0=0: big_b[r0:r0 + n, c0:c0 + k]) if layout == "RC" else \
        (lambda n, k, r0=0, c0=0: big_b[r0:r0 + k, c0:c0 + n])
    # aligned; odd N and K; only A misaligned; only B misaligned; M=0; K=0; N=130 (not a 16-byte row)
    a = [big_a[:17, :128], big_a[1:34, :127], big_a[:9, 3:67], big_a[:9, :64], big_a[:0, :64], big_a[:12, :0],
         big_a[:40, :64]]
    b = [b_of(256, 128), b_of(129, 127), b_of(64, 64), b_of(64, 64, 1, 1), b_of(64, 64), b_of(48, 0), b_of(130, 64)]
    rule = ckgemm.rule_for(dtype)
    bufs = [poison((x.shape[0], (y.shape[0] if layout == "RC" else y.shape[1]) + 3), rule.output) for x, y in zip(a, b)]
    c = [buf[:, :buf.shape[1] - 3] for buf in bufs]
    problem = validate.validate_list("grouped_gemm_out", a, b, layout)
    validate.validate_outputs("grouped_gemm_out", problem, c, a, b)
    paths = native_run.run_list(problem, a, b, c)
    for g, (x, y, out) in enumerate(zip(a, b, c)):
        assert_group_matches(out, x, y, layout, f"{kind} group {g}")
    assert paths[4] == "skip:empty" and paths[5] == "zero-k"
    assert all(p.startswith(kind) for i, p in enumerate(paths) if i not in (4, 5)), paths
    assert all(paths[i][-7:] in ("+repack", "+staged") for i in (1, 2, 3)), f"misaligned groups: {paths}"
    if kind == "ck":
        assert paths[6].endswith("+staged"), "N=130 bf16 is not a 16-byte row: CK writes a temporary"
    assert STATE["launches"], "no kernel launch reached the stand-in"


@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("n", [128, 129])
def test_packed_form_repacks_and_stages_as_a_whole(kind, layout, n):
    dtype = torch.int8
    gen = generator(f"planning-packed-{kind}-{layout}-{n}")
    sizes = [5, 0, 33, 17]
    k = 96
    a = rand_tensor((sum(sizes), k), dtype, gen)
    b = rand_tensor((4, n, k) if layout == "RC" else (4, k, n), dtype, gen)
    out = poison((sum(sizes), n), torch.int32)
    gs = torch.tensor(sizes)
    problem = validate.validate_packed("grouped_gemm_packed", a, b, gs, layout, out, None)
    paths = native_run.run_packed(problem, a, b, gs, out)
    starts = [sum(sizes[:g]) for g in range(4)]
    for g, (s, m) in enumerate(zip(starts, sizes)):
        assert_group_matches(out[s:s + m], a[s:s + m], b[g], layout, f"expert {g}")
    assert paths[1] == "skip:empty"
    if kind == "cutlass" and layout == "RR":
        assert paths[0].endswith("+repack"), paths


def test_config_choice_and_output_rules():
    rules = plan.RULES["cutlass"]
    assert plan.choose_config([16] * 32, True) == plan.SMALL
    assert plan.choose_config([0, 0, 4096], True) == plan.LARGE
    assert plan.choose_config([4096], False) == plan.SMALL, "an output only direct stores can write"
    padded = torch.empty(8, 130, dtype=torch.bfloat16)[:, :129]
    assert not plan.output_takes_large(rules, padded)
    assert plan.staged_output_columns(rules, padded) == 0, "CUTLASS writes it with the Small config"
    assert plan.staged_output_columns(plan.RULES["ck"], padded) == 136


def test_forced_config_overrides_the_heuristic_but_not_the_output_rule(monkeypatch):
    monkeypatch.setattr(plan, "FORCED_CONFIG", plan.SMALL)
    assert plan.choose_config([4096] * 3, True) == plan.SMALL
    monkeypatch.setattr(plan, "FORCED_CONFIG", plan.LARGE)
    assert plan.choose_config([16] * 32, True) == plan.LARGE
    assert plan.choose_config([16] * 32, False) == plan.SMALL, "Large cannot write this output"


def test_repack_is_exact():
    gen = generator("repack-exact")
    a = rand_tensor((7, 37), torch.int8, gen)
    b = rand_tensor((37, 21), torch.int8, gen)  # RR
    ra, rb = plan.repack(a, b, "RR", n_multiple=8)
    assert ra.shape == (7, 48) and rb.shape == (24, 48) and ra.is_contiguous() and rb.is_contiguous()
    full = ra.long() @ rb.long().t()
    assert torch.equal(full[:, :21], a.long() @ b.long()) and not full[:, 21:].any()


def test_overlapping_inputs_are_repacked_and_empty_groups_never_reach_the_kernel(kind):
    """Broadcast (expanded) A rows and shared (expanded) experts are valid inputs; the kernels cannot read
    overlapping rows, so they are copied first. Empty groups with odd strides are not handed over at all."""
    gen = generator(f"planning-overlap-{kind}")
    row = rand_tensor((1, 64), torch.bfloat16, gen)
    a = [row.expand(24, 64), rand_tensor((8, 64), torch.bfloat16, gen)[:0, ::2]]
    b = [rand_tensor((32, 64), torch.bfloat16, gen), rand_tensor((16, 32), torch.bfloat16, gen)]
    problem = validate.validate_list("grouped_gemm", a, b, "RC")
    c = [torch.empty(24, 32, dtype=torch.bfloat16), torch.empty(0, 16, dtype=torch.bfloat16)]
    paths = native_run.run_list(problem, a, b, c)
    assert paths == (f"{kind}:small+repack" if kind == "cutlass" else paths[0], "skip:empty")
    assert paths[0].endswith(("+repack", "+staged"))
    assert_group_matches(c[0], a[0], b[0], "RC", "expanded A")
    expert = rand_tensor((1, 32, 64), torch.bfloat16, gen)
    shared = expert.expand(3, 32, 64)  # one expert shared by three groups: group stride 0
    tokens = rand_tensor((30, 64), torch.bfloat16, gen)
    sizes = torch.tensor([10, 0, 20])
    out = poison((30, 32), torch.bfloat16)
    packed = validate.validate_packed("grouped_gemm_packed", tokens, shared, sizes, "RC", out, None)
    assert native_run.run_packed(packed, tokens, shared, sizes, out)[0].endswith("+repack")
    assert_group_matches(out, tokens, expert[0], "RC", "shared expert")


def test_k0_group_with_an_unaligned_output_does_not_change_the_config(kind):
    gen = generator(f"planning-k0-config-{kind}")
    a = [rand_tensor((512, 64), torch.bfloat16, gen), rand_tensor((300, 0), torch.bfloat16, gen)]
    b = [rand_tensor((128, 64), torch.bfloat16, gen), rand_tensor((24, 0), torch.bfloat16, gen)]
    c = [torch.empty(512, 128, dtype=torch.bfloat16), torch.empty(300, 25, dtype=torch.bfloat16)[:, 1:]]
    problem = validate.validate_list("grouped_gemm_out", a, b, "RC")
    paths = native_run.run_list(problem, a, b, c)
    assert paths == (f"{kind}:large", "zero-k"), "only groups with work decide the config"
    assert torch.equal(c[1], torch.zeros_like(c[1]))


def test_sizes_the_kernels_cannot_hold_are_refused_not_repacked():
    assert plan.too_large(2**31, 8, 8) is not None and plan.too_large(2**31 - 1, 8, 8) is None



@pytest.fixture
def cached_native(kind, monkeypatch):
    """The stand-in backend picked for CPU tensors, a fresh plan memo, and a log of full validations."""
    from ckgemm import _plan_cache, backends

    monkeypatch.setitem(backends._SELECTED, (None, torch.device("cpu")), native.backend(kind))
    monkeypatch.setattr(_plan_cache, "ENABLED", True)
    _plan_cache.clear()
    calls = []
    real = validate.validate_packed
    monkeypatch.setattr(validate, "validate_packed", lambda *args: calls.append(args[0]) or real(*args))
    yield calls
    _plan_cache.clear()


def _check_packed(out, a, b, sizes, what):
    start = 0
    for g, m in enumerate(sizes):
        assert_group_matches(out[start:start + m], a[start:start + m], b[g], "RC", f"{what}: expert {g}")
        start += m


def test_repeated_packed_calls_skip_validation_not_correctness(cached_native):
    gen = generator("plan-cache")
    a = rand_tensor((40, 64), torch.bfloat16, gen)
    b = rand_tensor((3, 32, 64), torch.bfloat16, gen)
    sizes = torch.tensor([10, 0, 30])
    out = poison((40, 32), torch.bfloat16)
    ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    first = ckgemm.last_dispatch()
    out.fill_(float("nan"))
    ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    assert len(cached_native) == 1, "the second identical call was validated again"
    assert ckgemm.last_dispatch() == first
    _check_packed(out, a, b, [10, 0, 30], "memoized launch")
    fresh = ckgemm.grouped_gemm_packed(a, b, sizes)  # out=None: its own memo entry, then a hit
    again = ckgemm.grouped_gemm_packed(a, b, sizes)
    assert len(cached_native) == 2 and fresh.data_ptr() != again.data_ptr()
    _check_packed(again, a, b, [10, 0, 30], "memoized launch, fresh output")
    sizes[0], sizes[2] = 30, 10  # host sizes changed in place: same tensor, new values, new plan
    ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    assert len(cached_native) == 3
    _check_packed(out, a, b, [30, 0, 10], "host sizes changed in place")


def test_memo_never_lets_a_bad_call_through(cached_native):
    gen = generator("plan-cache-bad")
    buf = rand_tensor((40, 96), torch.bfloat16, gen)
    a = buf[:, :64]  # rows of 96: aligned, as the kernel takes them
    b = rand_tensor((2, 32, 64), torch.bfloat16, gen)
    sizes = torch.tensor([15, 25])
    out = poison((40, 32), torch.bfloat16)
    ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    assert len(cached_native) == 1
    with pytest.raises(ckgemm.InvalidArgumentError, match="overlaps"):
        ckgemm.grouped_gemm_packed(a, b, sizes, out=buf[:, 32:64])  # same shapes, output inside a
    b.requires_grad_(True)
    with pytest.raises(ckgemm.InvalidArgumentError, match="requires grad"):
        ckgemm.grouped_gemm_packed(a, b, sizes, out=out)
    b.requires_grad_(False)
    with pytest.raises(ckgemm.InvalidArgumentError, match="sum to"):
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([15, 24]), out=out)
    misaligned = buf[:, 1:65]  # repacked every call: never memoized
    for _ in range(2):
        ckgemm.grouped_gemm_packed(misaligned, b, sizes, out=out)
        _check_packed(out, misaligned, b, [15, 25], "repacked")
    assert cached_native.count("grouped_gemm_packed") == 1 + 3 + 2
    assert ckgemm.last_dispatch().paths[0].endswith("+repack")


def test_memo_can_be_turned_off(cached_native, monkeypatch):
    from ckgemm import _plan_cache

    monkeypatch.setattr(_plan_cache, "ENABLED", False)
    gen = generator("plan-cache-off")
    a = rand_tensor((8, 64), torch.bfloat16, gen)
    b = rand_tensor((1, 32, 64), torch.bfloat16, gen)
    for _ in range(3):
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([8]))
    assert len(cached_native) == 3
