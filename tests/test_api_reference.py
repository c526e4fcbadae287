"""The public API on the torch reference backend (CPU): every dtype x layout x form against an
independent float64/int64 computation, over the shape branches the semantics name."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from support import (
    assert_group_matches,
    b_shape,
    generator,
    make_group,
    poison,
    rand_tensor,
)

DTYPES = [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.int8]
DTYPE_IDS = ["fp16", "bf16", "fp8", "fp8fnuz", "int8"]
LAYOUTS = ["RC", "RR"]

# Purpose: M branches (empty, 1, tile-ish edges around 64/128, non-power-of-two), odd N/K, K=0.
EDGE_SHAPES = [
    (0, 64, 32),  # empty group (M=0)
    (1, 64, 32),  # single row
    (17, 127, 129),  # odd N and K
    (63, 129, 127),  # tile-1 M, odd N/K
    (65, 64, 48),  # tile+1 M
    (100, 33, 16),
    (128, 16, 0),  # K=0: exact zeros
    (9, 0, 16),  # N=0: nothing to compute
]


def _expected_rule(dtype):
    return ckgemm.rule_for(dtype)


@pytest.mark.smoke
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_list_form_edge_shapes(dtype, layout):
    """grouped_gemm over heterogeneous per-group M/N/K including empty and K=0 groups."""
    gen = generator(f"list-{dtype}-{layout}")
    groups = [make_group(m, n, k, dtype, layout, gen) for m, n, k in EDGE_SHAPES]
    outs = ckgemm.grouped_gemm([a for a, _ in groups], [b for _, b in groups], layout=layout, backend="torch")
    assert len(outs) == len(groups)
    for g, ((a, b), c) in enumerate(zip(groups, outs)):
        assert c.dtype == _expected_rule(dtype).output
        assert_group_matches(c, a, b, layout, f"group {g} {tuple(a.shape)}")
        if a.shape[1] == 0:
            assert torch.equal(c, torch.zeros_like(c)), "K=0 must give exact zeros"


@pytest.mark.smoke
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_out_form_writes_every_element_and_keeps_padding(dtype, layout):
    """grouped_gemm_out into NaN-poisoned outputs, some with a padded leading dimension."""
    gen = generator(f"out-{dtype}-{layout}")
    rule = _expected_rule(dtype)
    groups = [make_group(m, n, k, dtype, layout, gen) for m, n, k in EDGE_SHAPES]
    buffers, outs = [], []
    for g, (m, n, _) in enumerate(EDGE_SHAPES):
        pad = 7 if g % 2 else 0  # odd groups: view of a wider buffer
        buf = poison((m, n + pad), rule.output)
        buffers.append(buf)
        outs.append(buf[:, :n])
    returned = ckgemm.grouped_gemm_out([a for a, _ in groups], [b for _, b in groups], outs, layout=layout,
                                       backend="torch")
    assert all(r is c for r, c in zip(returned, outs)), "grouped_gemm_out must return the given outputs"
    for g, ((a, b), buf, (m, n, _)) in enumerate(zip(groups, buffers, EDGE_SHAPES)):
        assert_group_matches(buf[:, :n], a, b, layout, f"group {g}")
        padding = buf[:, n:]
        untouched = poison(padding.shape, rule.output)
        assert torch.equal(padding.view(torch.int8) if rule.output != torch.int32 else padding,
                           untouched.view(torch.int8) if rule.output != torch.int32 else untouched), \
            f"group {g}: padding columns were written"


@pytest.mark.smoke
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_packed_form(dtype, layout):
    """MoE form with empty experts, odd sizes, into a poisoned padded out and an allocated out."""
    gen = generator(f"packed-{dtype}-{layout}")
    sizes = [0, 1, 17, 63, 0, 65, 100, 128]
    n, k = 129, 127
    rule = _expected_rule(dtype)
    a = rand_tensor((sum(sizes), k), dtype, gen)
    b = rand_tensor((len(sizes), *b_shape(n, k, layout)), dtype, gen)
    buf = poison((sum(sizes), n + 3), rule.output)
    out = ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, dtype=torch.int32), layout=layout, out=buf[:, :n],
                                     backend="torch")
    assert out.data_ptr() == buf.data_ptr()
    allocated = ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, dtype=torch.int64), layout=layout)
    start = 0
    for g, m in enumerate(sizes):
        assert_group_matches(out[start:start + m], a[start:start + m], b[g], layout, f"expert {g}")
        assert_group_matches(allocated[start:start + m], a[start:start + m], b[g], layout, f"expert {g} (alloc)")
        start += m
    assert torch.equal(buf[:, n:].view(torch.int8), poison((sum(sizes), 3), rule.output).view(torch.int8))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_packed_k_zero_and_all_empty(layout):
    gen = generator(f"packed-k0-{layout}")
    a = rand_tensor((10, 0), torch.bfloat16, gen)
    b = rand_tensor((3, *b_shape(8, 0, layout)), torch.bfloat16, gen)
    out = poison((10, 8), torch.bfloat16)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor([4, 0, 6]), layout=layout, out=out)
    assert torch.equal(out, torch.zeros_like(out))
    empty = ckgemm.grouped_gemm_packed(rand_tensor((0, 16), torch.int8, gen),
                                       rand_tensor((4, *b_shape(8, 16, layout)), torch.int8, gen),
                                       torch.zeros(4, dtype=torch.int32), layout=layout)
    assert empty.shape == (0, 8) and empty.dtype == torch.int32


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_all_groups_empty(dtype):
    gen = generator(f"all-empty-{dtype}")
    groups = [make_group(0, 16, 32, dtype, "RC", gen) for _ in range(3)] + [make_group(5, 0, 32, dtype, "RC", gen)]
    outs = ckgemm.grouped_gemm([a for a, _ in groups], [b for _, b in groups])
    assert [tuple(c.shape) for c in outs] == [(0, 16)] * 3 + [(5, 0)]
    assert ckgemm.last_dispatch().paths == ("skip:empty",) * 4


def test_dispatch_paths_name_zero_k_as_the_native_record_does():
    """K = 0 with rows is 'zero-k' (the README's and the native decoder's name), empty is 'skip:empty'."""
    gen = generator("zero-k-path")
    groups = [make_group(3, 8, 0, torch.bfloat16, "RC", gen), make_group(0, 8, 16, torch.bfloat16, "RC", gen),
              make_group(2, 8, 16, torch.bfloat16, "RC", gen)]
    outs = ckgemm.grouped_gemm([a for a, _ in groups], [b for _, b in groups])
    assert torch.equal(outs[0], torch.zeros(3, 8, dtype=torch.bfloat16))
    assert ckgemm.last_dispatch().paths == ("zero-k", "skip:empty", "torch")


@pytest.mark.parametrize("groups", [1, 64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8], ids=["bf16", "int8"])
def test_group_counts_heterogeneous(groups, dtype):
    """G=1 and G=64 with every group's M, N and K drawn independently."""
    gen = generator(f"g{groups}-{dtype}")
    dims = torch.randint(1, 80, (groups, 3), generator=gen).tolist()
    pairs = [make_group(m, n, k, dtype, "RR", gen) for m, n, k in dims]
    outs = ckgemm.grouped_gemm([a for a, _ in pairs], [b for _, b in pairs], layout="RR")
    for g, ((a, b), c) in enumerate(zip(pairs, outs)):
        assert_group_matches(c, a, b, "RR", f"group {g} of {groups}")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_int8_exact_at_large_k(layout):
    """K=8192 with values near +-127: sums pass 2^24, where an fp32 accumulator rounds."""
    gen = generator(f"int8-k8192-{layout}")
    m, n, k = 8, 16, 8192
    a = torch.randint(-128, 128, (m, k), generator=gen, dtype=torch.int8)
    b = torch.randint(-128, 128, b_shape(n, k, layout), generator=gen, dtype=torch.int8)
    # Row 0 of A and column 0 of op(B) hold values in [120, 127]: their dot product is about
    # 8192 * 124^2 = 1.3e8 > 2^24, with partial sums that an fp32 accumulator must round.
    a[0] = torch.randint(120, 128, (k,), generator=gen, dtype=torch.int8)
    big_column = torch.randint(120, 128, (k,), generator=gen, dtype=torch.int8)
    if layout == "RC":
        b[0] = big_column
    else:
        b[:, 0] = big_column
    (c,) = ckgemm.grouped_gemm([a], [b], layout=layout)
    exact = a.to(torch.int64) @ (b.t() if layout == "RC" else b).to(torch.int64)
    assert exact.abs().max() > 2**24, "test data must exceed fp32's exact integer range"
    assert torch.equal(c, exact.to(torch.int32))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_repeated_calls_bitwise_identical(dtype):
    gen = generator(f"repeat-{dtype}")
    groups = [make_group(m, 96, 80, dtype, "RC", gen) for m in (1, 33, 70)]
    first = ckgemm.grouped_gemm([a for a, _ in groups], [b for _, b in groups])
    for _ in range(3):
        again = ckgemm.grouped_gemm([a for a, _ in groups], [b for _, b in groups])
        for x, y in zip(first, again):  # compared as bytes: +0 vs -0 or two NaN payloads would differ
            assert torch.equal(x.view(torch.uint8), y.view(torch.uint8))


def test_aliases_and_dispatch_record():
    gen = generator("aliases")
    a, b = make_group(5, 6, 7, torch.float16, "RC", gen)
    (c1,) = ckgemm.ck_grouped_gemm([a], [b])
    out = [torch.empty(5, 6, dtype=torch.float16)]
    ckgemm.ck_grouped_gemm_out([a], [b], out)
    assert torch.equal(c1, out[0])
    record = ckgemm.last_dispatch()
    assert record.op == "grouped_gemm_out" and record.backend == "torch" and record.paths == ("torch",)
    assert "torch x1" in str(record)
    assert record.config_summary == record.summary == "torch x1"  # no native kernel: no stages to add


def test_config_summary_adds_each_native_kernels_stages():
    """The logged config: schedule, tile and cluster (the name) and the mainloop stages the extension reports
    per group (instances of one name differ by dtype and recipe, so stages travel with the route, by id)."""
    from ckgemm.backends import routes
    from ckgemm.ops import Dispatch

    kernel = lambda instance, flags=0: routes.KIND_KERNEL | instance << 4 | flags << 16  # noqa: E731
    report = (2, 1, 0, 0, 1, [kernel(0), routes.KIND_EMPTY, kernel(0, routes.FLAG_REPACK_A), kernel(2),
                               routes.KIND_ZERO_K, kernel(1), kernel(0)])
    fields = routes.decode_report("cutlass", report, ["coop_128x256x64_c1x2", "pingpong_64x128x128", "big"], (4, 9, 0))
    assert fields[6] == (4, 0, 4, 0, 0, 9, 4)
    d = Dispatch(*fields[:1], "cutlass", fields[2], fields[1], fields[5], fields[3], fields[4], fields[6])
    assert d.summary == ("cutlass:coop_128x256x64_c1x2 x2, skip:empty x1, cutlass:coop_128x256x64_c1x2+repack x1, "
                         "cutlass:big x1, zero-k x1, cutlass:pingpong_64x128x128 x1")
    assert d.config_summary == ("cutlass:coop_128x256x64_c1x2 (4 stages) x2, skip:empty x1, "
                                "cutlass:coop_128x256x64_c1x2+repack (4 stages) x1, cutlass:big x1, zero-k x1, "
                                "cutlass:pingpong_64x128x128 (9 stages) x1")
    assert routes.decode_report("cutlass", report, ["a", "b", "c"])[6] == (0,) * 7  # an extension without stages


class _StubNative:
    """A native backend that records its calls (the CPU has none)."""
    native, NAME = True, "stub"

    def __init__(self):
        self.calls = []

    def grouped_gemm_packed(self, a, b, sizes, scale_a, scale_b, layout, out_dtype):
        self.calls.append(type(a))
        return torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)

    def last_dispatch_fields(self):
        return "grouped_gemm_packed", "bf16", "RC", "none", "float32", ("stub:k",), (0,)


def test_a_native_backend_runs_tensor_subclasses_once_with_or_without_check_sizes(monkeypatch):
    """check_sizes=True validates on the host, then the native op runs once (it re-entered the public
    function before, which recursed without end for an nn.Parameter)."""
    import ckgemm.backends as backends

    stub = _StubNative()
    monkeypatch.setattr(backends, "select", lambda backend, device, op=None: stub)
    gen = generator("stub-native")
    a, b = rand_tensor((30, 64), torch.bfloat16, gen), rand_tensor((3, 48, 64), torch.bfloat16, gen)
    sizes = torch.tensor([10, 0, 20])
    param = torch.nn.Parameter(a, requires_grad=False)
    for check_sizes in (True, None):
        assert ckgemm.grouped_gemm_packed(param, b, sizes, check_sizes=check_sizes).shape == (30, 48)
    assert stub.calls == [torch.nn.Parameter, torch.nn.Parameter]
    assert str(ckgemm.last_dispatch()).startswith("grouped_gemm_packed[stub")


def test_the_torch_backends_dispatch_record_has_one_stage_entry_per_group():
    """``Dispatch.stages`` pairs with ``paths`` on every backend (0: no native kernel, as CK reports)."""
    gen = generator("stages-per-group")
    a = [rand_tensor((m, 32), torch.float16, gen) for m in (4, 0, 7)]
    b = [rand_tensor((16, 32), torch.float16, gen) for _ in range(3)]
    ckgemm.grouped_gemm(a, b, backend="torch")
    d = ckgemm.last_dispatch()
    assert d.paths == ("torch", "skip:empty", "torch") and d.stages == (0, 0, 0)
    assert d.config_summary == "torch x2, skip:empty x1"
