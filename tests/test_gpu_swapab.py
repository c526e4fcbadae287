"""The decode tile on the GPU (CUTLASS): 8-bit groups of at most 32 rows run the SwapAB instance, which
computes D^T = B A^T so the weights fill the MMA's 128-row side and the group's rows its 32-wide side.
Checked against the harness reference (int8 bit-exact) with NaN-poisoned outputs; the shapes cover a
partial weight tile (N 200), a partial K tile (K 192), empty groups and, in the packed form (which routes
by the mean group size), groups of 33 and 70 rows that span several 32-row tiles."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from ckgemm.testing import check, grouped_gemm_reference_packed
from gpu_support import DEVICE, FP8_MAX_DIFF, MARKS, NATIVE, check_list, inputs
from support import assert_scaled_matches, generator, poison, rand_tensor, random_scales

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="SwapAB is a CUTLASS (sm_90) instance")]

EIGHT_BIT = [torch.float8_e4m3fn, torch.int8]
IDS = ["fp8", "int8"]
SIZES = [0, 1, 5, 70, 0, 33, 16, 2, 31, 32]  # mean 19: the packed call takes the SwapAB tile for all


def _paths():
    return [p for p in ckgemm.last_dispatch().paths if p not in ("skip:empty", "zero-k")]


def _check_packed(out, a, b, sizes, dtype, k, name):
    ref = grouped_gemm_reference_packed(a, b, sizes)
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    if ckgemm.rule_for(dtype).exact:
        check(out, ref.to(torch.int32), name=name)
    else:
        check([out[s:s + m] for s, m in zip(starts, sizes)], [ref[s:s + m] for s, m in zip(starts, sizes)],
              in_dtype=dtype, k=k, name=name, max_diff=FP8_MAX_DIFF)


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_list_form_routes_decode_groups_to_swapab(dtype):
    shapes = [(1, 200, 192), (16, 256, 128), (31, 128, 320), (32, 200, 192), (33, 256, 128), (0, 128, 64)]
    a, b = inputs(shapes, dtype, "RC", f"swapab-list-{dtype}")
    out = [poison((m, n), ckgemm.rule_for(dtype).output, DEVICE) for m, n, _ in shapes]
    ckgemm.grouped_gemm_out(a, b, out)
    check_list(out, a, b, "RC", dtype, "swapab list")
    paths = ckgemm.last_dispatch().paths
    assert all("coop_swapab_32x128x128" in p and "+" not in p for p in paths[:4]), paths
    assert "pingpong_64x128x128" in paths[4], f"33 rows take the 64-row tile: {paths}"


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_packed_form_with_groups_wider_than_the_tile(dtype):
    n, k = 200, 192
    gen = generator(f"swapab-packed-{dtype}")
    a = rand_tensor((sum(SIZES), k), dtype, gen, DEVICE)
    b = rand_tensor((len(SIZES), n, k), dtype, gen, DEVICE)
    out = poison((sum(SIZES), n), ckgemm.rule_for(dtype).output, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(SIZES, device=DEVICE), out=out)
    _check_packed(out, a, b, SIZES, dtype, k, "swapab packed")
    assert _paths() and all("coop_swapab" in p for p in _paths()), ckgemm.last_dispatch()


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_rr_weights_are_transposed_then_run_swapab(dtype):
    gen = generator(f"swapab-rr-{dtype}")
    sizes, n, k = [3, 0, 20, 9], 256, 256
    a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
    b = rand_tensor((len(sizes), k, n), dtype, gen, DEVICE)
    out = poison((sum(sizes), n), ckgemm.rule_for(dtype).output, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), layout="RR", out=out)
    ref = grouped_gemm_reference_packed(a, b, sizes, layout="RR")
    if ckgemm.rule_for(dtype).exact:
        check(out, ref.to(torch.int32), name="swapab RR")
    else:
        check(out, ref, in_dtype=dtype, k=k, name="swapab RR", max_diff=FP8_MAX_DIFF)
    assert all("coop_swapab" in p for p in _paths()), ckgemm.last_dispatch()


@pytest.mark.parametrize("recipe,dtype", [("row", torch.float8_e4m3fn), ("tensor", torch.float8_e4m3fn),
                                          ("block", torch.float8_e4m3fn), ("row", torch.int8), ("tensor", torch.int8)],
                         ids=["row-fp8", "tensor-fp8", "block-fp8", "row-int8", "tensor-int8"])
def test_scaled_packed_form_swaps_the_scales_too(dtype, recipe):
    """The kernel's rows are our columns: B's scales (per channel, or per 128 x 128 block) scale them, A's
    (per token, or per 1 x 128 block) its columns. Scales spread over binades, so a swapped pair fails."""
    n, k = 136, 328
    gen = generator(f"swapab-scaled-{recipe}-{dtype}")
    rows, groups = sum(SIZES), len(SIZES)
    a = rand_tensor((rows, k), dtype, gen, DEVICE)
    b = rand_tensor((groups, n, k), dtype, gen, DEVICE)
    sa, sb = (s.to(DEVICE) for s in random_scales(recipe, rows, n, k, gen, packed_groups=groups, dtype=dtype))
    out = poison((rows, n), torch.bfloat16, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(SIZES, device=DEVICE), out=out, scale_a=sa, scale_b=sb)
    assert all("swapab_32x128x128" in p for p in _paths()), ckgemm.last_dispatch()
    start = 0
    for g, m in enumerate(SIZES):
        gsa = sa if recipe == "tensor" else sa[start:start + m]  # block: [rows, ceil(K/128)] too
        assert_scaled_matches(out[start:start + m], a[start:start + m], b[g], gsa, sb[g], "RC", recipe,
                              f"{recipe} expert {g}")
        start += m


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=IDS)
def test_graph_replay_with_new_sizes(dtype):
    n, k = 256, 256
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
    _check_packed(out, a, b, new_sizes, dtype, k, "swapab graph replay")
