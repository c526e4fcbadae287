"""The decode tile on the GPU (CUTLASS): 8-bit groups of at most 32 rows run a SwapAB instance, which
computes D^T = B A^T so the weights fill the MMA's 128-row side (256 rows, two MMAs, once the call makes
128 such tiles: N 3320 over 10 groups here) and the group's rows its 32-wide side.
Checked against the harness reference (int8 bit-exact) with NaN-poisoned outputs; the shapes cover a
partial weight tile (N 200), a partial K tile (K 192), empty groups and, in the packed form (which routes
by the mean group size), groups of 33 and 70 rows that span several 32-row tiles and a last group of 31.
Operands and outputs are views with leading dimensions larger than K and N, inside poisoned buffers whose
margins must stay untouched, so a swapped leading dimension or a write past a group's rows or columns fails."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from gpu_support import DEVICE, MARKS, NATIVE, assert_only_view_written, check_list, check_packed
from support import assert_scaled_matches, generator, poison, rand_tensor, random_scales

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="SwapAB is a CUTLASS (sm_90) instance")]

EIGHT_BIT = [torch.float8_e4m3fn, torch.int8]
IDS = ["fp8", "int8"]
SIZES = [0, 1, 5, 70, 0, 33, 16, 2, 32, 31]  # mean 19: the packed call takes the SwapAB tile for all
# N of a call with few tiles (the 128-wide tile) and of one making 10 x 13 = 130 256-wide tiles (the last
# one partial): the selection rule's two SwapAB widths.
NARROW, WIDE = "32x128x128", "32x256x128"
WIDTHS = [pytest.param(200, NARROW, id="n200"), pytest.param(3320, WIDE, id="n3320")]


def _paths():
    paths = [p for p in ckgemm.last_dispatch().paths if p not in ("skip:empty", "zero-k")]
    assert paths, ckgemm.last_dispatch()
    return paths


def _inside(rows, cols, dtype, gen=None, pad_rows=3, pad_cols=32):
    """A [rows, cols] view of a larger buffer (leading dimension cols + pad_cols): random data for inputs
    (gen given), poison for outputs; returns (view, buffer)."""
    shape = (rows + pad_rows, cols + pad_cols)
    buf = rand_tensor(shape, dtype, gen, DEVICE) if gen is not None else poison(shape, dtype, DEVICE)
    return buf[:rows, :cols], buf


def _margins_untouched(buf, rows, cols):
    assert_only_view_written(buf, (slice(0, rows), slice(0, cols)))


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_list_form_routes_decode_groups_to_swapab(dtype):
    shapes = [(1, 200, 192), (16, 256, 128), (31, 128, 320), (32, 200, 192), (33, 256, 128), (0, 128, 64)]
    gen = generator(f"swapab-list-{dtype}")
    out_dtype = ckgemm.rule_for(dtype).output
    a = [_inside(m, k, dtype, gen, pad_cols=16)[0] for m, n, k in shapes]  # lda = K + 16
    b = [_inside(n, k, dtype, gen, pad_cols=48)[0] for m, n, k in shapes]  # ldb = K + 48
    views = [_inside(m, n, out_dtype, pad_cols=8) for m, n, _ in shapes]   # ldc = N + 8, 3 guard rows
    ckgemm.grouped_gemm_out(a, b, [v for v, _ in views])
    check_list([v for v, _ in views], a, b, "RC", dtype, "swapab list")
    for (m, n, _), (_, buf) in zip(shapes, views):
        _margins_untouched(buf, m, n)
    paths = ckgemm.last_dispatch().paths
    assert all("coop_swapab_32x128x128" in p and "+" not in p for p in paths[:4]), paths
    assert "pingpong_64x128x128" in paths[4], f"33 rows take the 64-row tile: {paths}"


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_list_form_with_a_wave_of_tiles_takes_the_wide_tile(dtype):
    """Nine groups with rows of N 3832 (15 256-wide tiles each, the last partial): the rule counts the call's
    groups with work, 9 x 15 = 135 >= 128, so those of at most 32 rows take the wide SwapAB tile (eight of
    them, one launch) and the one of 33 rows the 64-row tile."""
    ms = [1, 16, 31, 32, 0, 5, 9, 20, 2, 33]
    n, k = 3832, 192
    gen = generator(f"swapab-wide-list-{dtype}")
    out_dtype = ckgemm.rule_for(dtype).output
    a = [_inside(m, k, dtype, gen, pad_cols=16)[0] for m in ms]
    b = [_inside(n, k, dtype, gen, pad_cols=48)[0] for _ in ms]
    views = [_inside(m, n, out_dtype, pad_cols=8) for m in ms]
    ckgemm.grouped_gemm_out(a, b, [v for v, _ in views])
    check_list([v for v, _ in views], a, b, "RC", dtype, "swapab wide list")
    for m, (_, buf) in zip(ms, views):
        _margins_untouched(buf, m, n)
    paths = ckgemm.last_dispatch().paths
    assert all(f"coop_swapab_{WIDE}" in p and "+" not in p for p, m in zip(paths, ms) if 0 < m <= 32), paths
    assert "pingpong_64x128x128" in paths[-1], paths


@pytest.mark.parametrize("n,tile", WIDTHS)
@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_packed_form_with_groups_wider_than_the_tile(dtype, n, tile):
    k, rows = 192, sum(SIZES)
    gen = generator(f"swapab-packed-{dtype}")
    a = _inside(rows, k, dtype, gen, pad_cols=16)[0]
    b = rand_tensor((len(SIZES), n, k + 32), dtype, gen, DEVICE)[:, :, :k]  # ldb = K + 32
    out, buf = _inside(rows, n, ckgemm.rule_for(dtype).output, pad_cols=8)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(SIZES, device=DEVICE), out=out)
    check_packed(out, a, b, SIZES, dtype, k, "swapab packed")
    _margins_untouched(buf, rows, n)
    assert all(f"coop_swapab_{tile}" in p and "+" not in p for p in _paths()), ckgemm.last_dispatch()


@pytest.mark.parametrize("form", ["packed", "list"])
@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_rr_weights_are_transposed_then_run_swapab(dtype, form):
    """8-bit RR decode: B is transposed, then a SwapAB tile runs; except packed calls (int8 and unscaled fp8),
    which ckgemm's own 8-bit RR kernel reads as stored (tests/test_gpu_own_s8.py covers it)."""
    gen = generator(f"swapab-rr-{dtype}-{form}")
    sizes, n, k = [3, 0, 20, 9], 256, 256
    a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
    b = rand_tensor((len(sizes), k, n), dtype, gen, DEVICE)
    if form == "packed":
        out = poison((sum(sizes), n), ckgemm.rule_for(dtype).output, DEVICE)
        ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), layout="RR", out=out)
        check_packed(out, a, b, sizes, dtype, k, "swapab RR", layout="RR")
    else:
        a_list = list(a.split(sizes))
        check_list(ckgemm.grouped_gemm(a_list, list(b), layout="RR"), a_list, list(b), "RR", dtype, "swapab RR list")
    if form == "packed":
        assert all("ws_128x256x128" in p and "+" not in p for p in _paths()), ckgemm.last_dispatch()
    else:
        assert all("coop_swapab" in p and "+transpose" in p for p in _paths()), ckgemm.last_dispatch()


@pytest.mark.parametrize("n,tile", [pytest.param(136, NARROW, id="n136"), pytest.param(3320, WIDE, id="n3320"),
                                    pytest.param(3136, WIDE, id="n3136")])  # last wide tile: one of two scale blocks
@pytest.mark.parametrize("recipe,dtype", [("row", torch.float8_e4m3fn), ("tensor", torch.float8_e4m3fn),
                                          ("block", torch.float8_e4m3fn), ("row", torch.int8), ("tensor", torch.int8)],
                         ids=["row-fp8", "tensor-fp8", "block-fp8", "row-int8", "tensor-int8"])
def test_scaled_packed_form_swaps_the_scales_too(dtype, recipe, n, tile):
    """The kernel's rows are our columns: B's scales (per channel, or per 128 x 128 block: two per wide
    tile) scale them, A's (per token, or per 1 x 128 block) its columns. Scales spread over binades, so a
    swapped pair fails."""
    k = 328
    gen = generator(f"swapab-scaled-{recipe}-{dtype}")
    rows, groups = sum(SIZES), len(SIZES)
    a = rand_tensor((rows, k), dtype, gen, DEVICE)
    b = rand_tensor((groups, n, k), dtype, gen, DEVICE)
    sa, sb = (s.to(DEVICE) for s in random_scales(recipe, rows, n, k, gen, packed_groups=groups, dtype=dtype))
    out = poison((rows, n), torch.bfloat16, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(SIZES, device=DEVICE), out=out, scale_a=sa, scale_b=sb)
    assert all(f"swapab_{tile}" in p for p in _paths()), ckgemm.last_dispatch()
    start = 0
    for g, m in enumerate(SIZES):
        gsa = sa if recipe == "tensor" else sa[start:start + m]  # block: [rows, ceil(K/128)] too
        assert_scaled_matches(out[start:start + m], a[start:start + m], b[g], gsa, sb[g], "RC", recipe,
                              f"{recipe} expert {g}")
        start += m


@pytest.mark.parametrize("n,tile", WIDTHS)
@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_graph_replay_with_new_sizes(dtype, n, tile):
    k = 256
    gen = generator(f"swapab-graph-{dtype}")
    rows = sum(SIZES)
    a = rand_tensor((rows, k), dtype, gen, DEVICE)
    b = rand_tensor((len(SIZES), n, k), dtype, gen, DEVICE)
    gs = torch.tensor(SIZES, dtype=torch.int32, device=DEVICE)
    out = poison((rows, n), ckgemm.rule_for(dtype).output, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, gs, out=out)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    new_sizes = [32, 0, 40, 1, 1, 70, 0, 25, 10, 11]
    assert sum(new_sizes) == rows
    gs.copy_(torch.tensor(new_sizes, dtype=torch.int32))
    out.copy_(poison((rows, n), out.dtype, DEVICE))
    graph.replay()
    check_packed(out, a, b, new_sizes, dtype, k, "swapab graph replay")
    assert all(f"coop_swapab_{tile}" in p for p in _paths()), "the captured call ran the SwapAB tile"
