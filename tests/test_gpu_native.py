"""The native backend on a GPU (CUTLASS on sm_90, CK-tile on gfx942/gfx950), checked against the
harness reference with per-group tolerances from the dtype table (int8 bit-exact). Skipped cleanly
where no native backend can run."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import ckgemm
from ckgemm.testing import check, grouped_gemm_reference_packed
from gpu_support import DEVICE, DTYPES, IDS, M_SHAPES, MARKS, NATIVE, check_list, check_packed, inputs, instance_of
from support import generator, poison, rand_tensor

pytestmark = MARKS


def _kernel_paths():
    return [p for p in ckgemm.last_dispatch().paths if p not in ("skip:empty", "zero-k")]


@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_list_and_out_forms(dtype, layout):
    """Every dtype x layout: M edges, a K=0 group, heterogeneous N/K, NaN-poisoned outputs."""
    shapes = [(m, 256, 128) for m in M_SHAPES] + [(40, 128, 0), (33, 384, 192), (130, 128, 64)]
    a, b = inputs(shapes, dtype, layout, f"gpu-list-{dtype}-{layout}")
    outs = ckgemm.grouped_gemm(a, b, layout=layout)
    check_list(outs, a, b, layout, dtype, "grouped_gemm")
    assert all(p.startswith(NATIVE) for p in _kernel_paths()), ckgemm.last_dispatch()
    rule = ckgemm.rule_for(dtype)
    poisoned = [poison((m, n), rule.output, DEVICE) for m, n, _ in shapes]
    ckgemm.grouped_gemm_out(a, b, poisoned, layout=layout)
    check_list(poisoned, a, b, layout, dtype, "grouped_gemm_out")
    assert torch.equal(poisoned[6], torch.zeros_like(poisoned[6])), "K=0 must give exact zeros"


@pytest.mark.parametrize("layout", ["RC", "RR"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("size_dtype", [torch.int32, torch.int64], ids=["sizes32", "sizes64"])
def test_packed_form(dtype, layout, size_dtype):
    sizes = [0, 1, 17, 63, 0, 65, 100, 300]
    n, k = 256, 192
    gen = generator(f"gpu-packed-{dtype}-{layout}")
    a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
    b = rand_tensor((len(sizes), n, k) if layout == "RC" else (len(sizes), k, n), dtype, gen, DEVICE)
    rule = ckgemm.rule_for(dtype)
    out = poison((sum(sizes), n), rule.output, DEVICE)
    gs = torch.tensor(sizes, dtype=size_dtype, device=DEVICE)
    ckgemm.grouped_gemm_packed(a, b, gs, layout=layout, out=out)
    check_packed(out, a, b, sizes, dtype, k, "packed", layout=layout)


@pytest.mark.parametrize("groups", [1, 128])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8], ids=["bf16", "int8"])
def test_group_counts(dtype, groups):
    gen = generator(f"gpu-g{groups}-{dtype}")
    ms = torch.randint(0, 90, (groups,), generator=gen).tolist()
    shapes = [(m, 128, 64) for m in ms]
    a, b = inputs(shapes, dtype, "RC", f"gpu-g{groups}-{dtype}-data")
    check_list(ckgemm.grouped_gemm(a, b), a, b, "RC", dtype, f"G={groups} list")
    packed_a = torch.cat(a)
    out = ckgemm.grouped_gemm_packed(packed_a, torch.stack(b), torch.tensor(ms, device=DEVICE))
    check_list(list(out.split(ms)), a, b, "RC", dtype, f"G={groups} packed")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_misaligned_groups_are_repacked_not_wrong(dtype):
    """Odd K, odd N, row-offset base pointers and padded leading dimensions: the kernel cannot read
    them with TMA, so they are repacked; results stay right and the dispatch record says so."""
    gen = generator(f"gpu-misaligned-{dtype}")
    big_a = rand_tensor((70, 200), dtype, gen, DEVICE)
    big_b = rand_tensor((300, 200), dtype, gen, DEVICE)
    a = [big_a[1:18, :127], big_a[:33, 3:131], rand_tensor((9, 64), dtype, gen, DEVICE)]
    b = [big_b[:129, :127], big_b[5:133, :128], big_b[1:130, 1:65]]
    outs = ckgemm.grouped_gemm(a, b)
    check_list(outs, a, b, "RC", dtype, "misaligned")
    paths = ckgemm.last_dispatch().paths
    assert all(p.endswith("+repack") for p in paths), paths


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_unaligned_output_and_config_choice(dtype):
    """A padded output whose leading dimension the TMA store cannot write runs an instance that writes any
    output (CUTLASS's direct store) or is staged (CK); large aligned groups run a compute-bound tile.
    Paths name the instance: schedule, tile, cluster."""
    rule = ckgemm.rule_for(dtype)
    a, b = inputs([(300, 256, 128), (260, 256, 128)], dtype, "RC", f"gpu-config-{dtype}")
    outs = ckgemm.grouped_gemm(a, b)
    check_list(outs, a, b, "RC", dtype, "large")
    paths = ckgemm.last_dispatch().paths
    assert all(instance_of(p)["tile"][0] >= 128 and "+" not in p for p in paths), paths
    wide = poison((300, 257), rule.output, DEVICE)
    wide2 = poison((260, 259), rule.output, DEVICE)
    given = [wide[:, :256], wide2[:, 1:257]]
    ckgemm.grouped_gemm_out(a, b, given)
    check_list(given, a, b, "RC", dtype, "direct-store")
    paths = ckgemm.last_dispatch().paths
    assert all(instance_of(p)["any_output"] or p.endswith("+staged") for p in paths), paths
    untouched = poison((300, 1), rule.output, DEVICE)
    assert torch.equal(wide[:, 256:].contiguous().view(torch.uint8), untouched.view(torch.uint8)), "padding written"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_repeated_calls_bitwise_equal(dtype):
    a, b = inputs([(m, 512, 256) for m in (1, 77, 300)], dtype, "RC", f"gpu-repeat-{dtype}")
    first = [c.clone() for c in ckgemm.grouped_gemm(a, b)]
    packed = ckgemm.grouped_gemm_packed(torch.cat(a), torch.stack(b), torch.tensor([1, 77, 300], device=DEVICE))
    for _ in range(3):
        for x, y in zip(first, ckgemm.grouped_gemm(a, b)):
            assert torch.equal(x.view(torch.uint8), y.view(torch.uint8))
        again = ckgemm.grouped_gemm_packed(torch.cat(a), torch.stack(b), torch.tensor([1, 77, 300], device=DEVICE))
        assert torch.equal(packed.view(torch.uint8), again.view(torch.uint8))


def test_int8_exact_at_large_k():
    gen = generator("gpu-int8-k8192")
    a = torch.randint(120, 128, (64, 8192), generator=gen, dtype=torch.int8).to(DEVICE)
    b = torch.randint(120, 128, (128, 8192), generator=gen, dtype=torch.int8).to(DEVICE)
    (c,) = ckgemm.grouped_gemm([a], [b])
    exact = a.cpu().to(torch.int64) @ b.cpu().to(torch.int64).t()
    assert exact.max() > 2**24
    assert torch.equal(c.cpu(), exact.to(torch.int32))


@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_graph_capture_and_replay_with_new_sizes(layout):
    """The packed form builds its arguments on the device: capture once, replay with other sizes
    that sum to the same total, and every replay matches the reference."""
    dtype = torch.bfloat16
    gen = generator(f"gpu-graph-{layout}")
    total, groups, n, k = 512, 8, 256, 128
    a = rand_tensor((total, k), dtype, gen, DEVICE)
    b = rand_tensor((groups, n, k) if layout == "RC" else (groups, k, n), dtype, gen, DEVICE)
    sizes = torch.full((groups,), total // groups, dtype=torch.int32, device=DEVICE)
    out = torch.empty((total, n), dtype=dtype, device=DEVICE)
    ckgemm.grouped_gemm_packed(a, b, sizes, layout=layout, out=out)  # warm up outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ckgemm.grouped_gemm_packed(a, b, sizes, layout=layout, out=out)
    for trial in range(3):
        split = torch.multinomial(torch.ones(groups), total, replacement=True, generator=gen).bincount(minlength=groups)
        split[trial] += split[-1]  # leave an empty expert at the end
        split[-1] = 0
        sizes.copy_(split.to(torch.int32))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = grouped_gemm_reference_packed(a, b, split.tolist(), layout=layout)
        check(out, ref, in_dtype=dtype, k=k, name=f"replay {trial}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8], ids=["bf16", "int8"])
def test_list_form_graph_capture_and_replay(dtype):
    """The list forms pass their descriptors as kernel parameters: capture once (misaligned groups and a
    K = 0 group included, so copies and zero fills are captured too), refill the inputs in place, replay."""
    shapes = [(8, 128, 64), (0, 64, 64), (33, 256, 128), (5, 128, 0), (20, 136, 72)]
    a, b = inputs(shapes, dtype, "RC", f"gpu-capture-list-{dtype}")
    a[4] = torch.empty(20, 80, dtype=dtype, device=DEVICE)[:, 3:75]  # misaligned: repacked inside the graph
    outs = [poison((m, n), ckgemm.rule_for(dtype).output, DEVICE) for m, n, _ in shapes]
    gen = generator(f"gpu-capture-refill-{dtype}")
    for x in a + b:
        x.copy_(rand_tensor(tuple(x.shape), dtype, gen, DEVICE))
    ckgemm.grouped_gemm_out(a, b, outs)  # warm up outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ckgemm.grouped_gemm_out(a, b, outs)
    for trial in range(2):
        for x in a + b:
            x.copy_(rand_tensor(tuple(x.shape), dtype, gen, DEVICE))
        for c in outs:
            c.copy_(poison(tuple(c.shape), c.dtype, DEVICE))
        graph.replay()
        torch.cuda.synchronize()
        check_list(outs, a, b, "RC", dtype, f"list replay {trial}")


def test_opcheck_native_ops():
    gen = generator("gpu-opcheck")
    a = rand_tensor((40, 64), torch.bfloat16, gen, DEVICE)
    b = rand_tensor((3, 128, 64), torch.bfloat16, gen, DEVICE)
    gs = torch.tensor([10, 0, 30], dtype=torch.int32, device=DEVICE)
    out = torch.empty((40, 128), dtype=torch.bfloat16, device=DEVICE)
    ops = torch.ops.ckgemm
    torch.library.opcheck(ops.gemm_packed.default, (a, b, gs, None, None, 0, None))
    torch.library.opcheck(ops.gemm_packed_out.default, (a, b, gs, out, None, None, 0, None))
    torch.library.opcheck(ops.gemm_list.default, ([a[:10], a[10:]], [b[0], b[1]], [], [], 0, 0, None))
    torch.library.opcheck(ops.gemm_list_out.default, ([a[:10], a[10:]], [b[0], b[1]], [out[:10], out[10:]], [], [],
                                                      0, 0, None))
    torch.library.opcheck(ops.transpose_b.default, (b,))


def test_torch_compile_fullgraph_packed():
    gen = generator("gpu-compile")
    a = rand_tensor((96, 128), torch.bfloat16, gen, DEVICE)
    b = rand_tensor((4, 256, 128), torch.bfloat16, gen, DEVICE)
    gs = torch.tensor([10, 50, 0, 36], device=DEVICE)

    def moe(a, b, gs):
        return torch.relu(ckgemm.grouped_gemm_packed(a, b, gs))

    compiled = torch.compile(moe, fullgraph=True)
    assert torch.equal(compiled(a, b, gs), moe(a, b, gs))


def test_bad_device_sizes_fail_loudly():
    """Sizes on the device are checked on the device: a bad one traps the argument builder with a
    message (the process's CUDA context is lost), never a silently wrong result. Runs in a subprocess."""
    code = textwrap.dedent("""
        import torch, ckgemm
        a = torch.randn(10, 64, device="cuda").to(torch.bfloat16)
        b = torch.randn(2, 128, 64, device="cuda").to(torch.bfloat16)
        sizes = torch.tensor([4, 6], device="cuda")
        ckgemm.grouped_gemm_packed(a, b, sizes)  # valid
        torch.cuda.synchronize()
        sizes[1] = 5  # the same call again with a bad total: stopped on the device
        ckgemm.grouped_gemm_packed(a, b, sizes)
        torch.cuda.synchronize()
        print("NO ERROR")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "NO ERROR" not in proc.stdout, proc.stdout + proc.stderr
    assert "group_sizes" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]
    with pytest.raises(ckgemm.InvalidArgumentError, match="sum to 9 but a has 10 rows"):
        a = torch.zeros(10, 64, device=DEVICE, dtype=torch.bfloat16)
        b = torch.zeros(2, 128, 64, device=DEVICE, dtype=torch.bfloat16)
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([4, 5], device=DEVICE), check_sizes=True)


def test_wrong_fp8_flavour_is_rejected_on_this_device():
    other = torch.float8_e4m3fnuz if ckgemm.fp8_dtype_for(DEVICE) == torch.float8_e4m3fn else torch.float8_e4m3fn
    a = torch.zeros(4, 32, device=DEVICE).to(other)
    with pytest.raises(ckgemm.InvalidTypeError, match="not the fp8 flavour"):
        ckgemm.grouped_gemm([a], [a])


def test_packed_many_groups_with_empty_experts():
    """More groups than the argument builder's 1024 threads: the prefix sum carries across chunks."""
    gen = generator("gpu-packed-2500")
    sizes = torch.randint(0, 4, (2500,), generator=gen)
    sizes[torch.randperm(2500, generator=gen)[:800]] = 0
    a = rand_tensor((int(sizes.sum()), 64), torch.bfloat16, gen, DEVICE)
    b = rand_tensor((2500, 32, 64), torch.bfloat16, gen, DEVICE)
    out = poison((a.shape[0], 32), torch.bfloat16, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, sizes.to(DEVICE), out=out)
    ref = grouped_gemm_reference_packed(a, b, sizes.tolist())
    check(out, ref, in_dtype=torch.bfloat16, k=64, name="2500 experts")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_packed_k0_n0_and_no_rows(dtype):
    gen = generator(f"gpu-packed-degenerate-{dtype}")
    rule = ckgemm.rule_for(dtype)
    sizes = torch.tensor([3, 0, 5], device=DEVICE)
    out = poison((8, 48), rule.output, DEVICE)
    ckgemm.grouped_gemm_packed(rand_tensor((8, 0), dtype, gen, DEVICE), rand_tensor((3, 48, 0), dtype, gen, DEVICE),
                               sizes, out=out)
    assert torch.equal(out, torch.zeros_like(out)), "K = 0: exact zeros"
    empty = ckgemm.grouped_gemm_packed(rand_tensor((8, 64), dtype, gen, DEVICE),
                                       rand_tensor((3, 0, 64), dtype, gen, DEVICE), sizes)
    assert empty.shape == (8, 0)
    none = ckgemm.grouped_gemm_packed(rand_tensor((0, 64), dtype, gen, DEVICE),
                                      rand_tensor((3, 48, 64), dtype, gen, DEVICE), torch.zeros(3, dtype=torch.int32, device=DEVICE))
    assert none.shape == (0, 48)
    torch.cuda.synchronize()


def test_large_config_keeps_padding_and_column_blocks():
    """Outputs that are 16-byte aligned views of wider buffers take a TMA-store tile; it must write exactly
    the [M, N] views: padding and neighbouring column blocks stay untouched."""
    a, b = inputs([(300, 128, 64), (260, 128, 64)], torch.bfloat16, "RC", "gpu-large-padding")
    buf = poison((300, 128 * 2 + 8), torch.bfloat16, DEVICE)
    given = [buf[:, :128], buf[:260, 128:256]]
    ckgemm.grouped_gemm_out(a, b, given)
    paths = ckgemm.last_dispatch().paths
    assert all(not instance_of(p)["any_output"] and "+" not in p for p in paths), paths
    check_list(given, a, b, "RC", torch.bfloat16, "column blocks")
    assert torch.isnan(buf[:, 256:]).all() and torch.isnan(buf[260:, 128:256]).all(), "wrote outside the views"


def test_repeated_packed_calls_follow_new_device_sizes():
    """Sizes changed in place on the device (same total) between identical calls must be used."""
    a, b = inputs([(64, 128, 64), (64, 128, 64)], torch.bfloat16, "RC", "gpu-memo")
    tokens, experts = torch.cat(a), torch.stack(b)
    sizes = torch.tensor([64, 64], device=DEVICE, dtype=torch.int32)
    for split in ([64, 64], [100, 28], [0, 128], [128, 0]):
        sizes.copy_(torch.tensor(split))
        out = ckgemm.grouped_gemm_packed(tokens, experts, sizes)
        starts = [0, split[0]]
        check_list([out[s:s + m] for s, m in zip(starts, split)],
                    [tokens[s:s + m] for s, m in zip(starts, split)], b, "RC", torch.bfloat16, f"split {split}")
