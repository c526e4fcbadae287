"""ckgemm's own grouped kernel (csrc/cuda/ws_fp8.cuh) on bf16 and fp16 operands: packed RC calls, its 128x256,
128x192 and 192x192 tiles forced with CKGEMM_CONFIG, checked against the harness reference with NaN-poisoned
outputs (tile edges of its warp groups' 64-row blocks, empty groups, a partial last k-block, N past the last tile
pair, odd N through the scalar store), against CUTLASS's cooperative tile of the same width (192x192: its 128x192)
bit for bit (the same k16 wgmmas summed in the same order into fp32, rounded once), with its units drawn in turn
(CKGEMM_WS_UNITS=dynamic, the default below 2048 rows a group) and by stride (static) to the same bits, under graph
replay with new device sizes, and as the op's pick for packed calls of more than 64 rows a group and, its 192x192
tile, for small groups at short K (csrc/cuda/rules.cpp). CUTLASS only."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import ckgemm
from gpu_support import MARKS, NATIVE, check_packed, packed_call, ran_paths, replay_with_new_sizes
from support import generator, poison, rand_tensor

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own kernel is CUDA (sm_90a)")]

TILES = {"256": "ws_128x256x64_c1x2", "192": "ws_128x192x64_c1x2", "192x192": "ws_192x192x64_c1x2"}
WIDTH = {"256": 256, "192": 192, "192x192": 192}  # a tile's columns
CUTLASS_TWIN = {"256": "coop_128x256x64_c1x2", "192": "coop_128x192x64_c1x2", "192x192": "coop_128x192x64_c1x2"}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

# rows around a warp group's 64 and a tile's 128 (a half with none of its group's rows skips its wgmmas), empty
# groups, one 128-byte k-block (K 64), a partial last k-block (K 2888: 45.125 blocks), N past the last tile pair
# and odd (3851: scalar stores), one large group, rows around the 192-row tile's three m64 blocks
CASES = [([0, 1, 63, 64, 65, 127, 128, 129, 300, 0, 1000], 384, 256), ([700, 0, 513, 66], 3851, 2888),
         ([128] * 3, 192, 64), ([5000], 576, 1024), ([77, 2000, 191], 4096, 512),
         ([191, 192, 193, 255, 256, 257, 383, 0, 513], 640, 320)]  # m64 blocks whole and partial in one tile


def _call(sizes, n, k, dtype, tag, config, size_dtype=torch.int32):
    return packed_call(sizes, n, k, dtype, dtype, tag, size_dtype, config)


_paths = ran_paths


@pytest.mark.parametrize("tile", TILES, ids=[f"n{t}" for t in TILES])
@pytest.mark.parametrize("dtype", DTYPES, ids=list(DTYPES))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_own_16bit_kernel_matches_the_reference(case, dtype, tile):
    sizes, n, k = CASES[case]
    size_dtype = torch.int64 if case % 2 else torch.int32
    a, b, gs, out = _call(sizes, n, k, DTYPES[dtype], f"own16-{case}-{dtype}", TILES[tile], size_dtype)
    assert _paths() == {f"cutlass:{TILES[tile]}"}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, DTYPES[dtype], k, f"own {dtype} {tile} case {case}")


@pytest.mark.parametrize("tile", TILES, ids=[f"n{t}" for t in TILES])
@pytest.mark.parametrize("dtype", DTYPES, ids=list(DTYPES))
def test_own_16bit_kernel_gives_cutlass_bits(dtype, tile):
    """Both sum the same k16 wgmmas in K order into fp32 and round once: the same bits, rows of every group."""
    sizes, n, k = [0, 1, 65, 129, 300, 1000], 2 * WIDTH[tile] + 64, 2888
    _, _, _, ours = _call(sizes, n, k, DTYPES[dtype], f"own16-bits-{dtype}", TILES[tile])
    theirs_config = CUTLASS_TWIN[tile]
    _, _, _, theirs = _call(sizes, n, k, DTYPES[dtype], f"own16-bits-{dtype}", theirs_config)
    assert _paths() == {f"cutlass:{theirs_config}"}, ckgemm.last_dispatch()
    assert not ours.isnan().any()
    assert torch.equal(ours, theirs), (ours.float() - theirs.float()).abs().max()


@pytest.mark.parametrize("dtype", DTYPES, ids=list(DTYPES))
def test_own_16bit_kernel_replays_a_graph_with_new_device_sizes(dtype):
    sizes, config = [300, 0, 212, 512], TILES["256"]
    a, b, gs, out = _call(sizes, 512, 320, DTYPES[dtype], f"own16-graph-{dtype}", config)
    os.environ["CKGEMM_CONFIG"] = config
    try:
        replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out), gs, out,
                              lambda new: check_packed(out, a, b, new, DTYPES[dtype], 320, f"own {dtype} replay {new}"),
                              f"cutlass:{config}")
    finally:
        os.environ.pop("CKGEMM_CONFIG", None)


@pytest.mark.parametrize("sizes", [[90, 0, 130, 75, 1, 190, 193], [300, 0, 700, 515, 1, 530], [2048, 4100, 0]],
                         ids=["97-rows", "341-rows", "2049-rows"])
def test_packed_16bit_calls_of_more_than_64_rows_a_group_run_it_by_default(sizes):
    """97 and 341 rows a group on average (units drawn in turn) and 2049 (by stride: ws_fp8_rules.h's units_drawn);
    N 1024, which 192-wide pairs pad and 256-wide ones do not, keeps the 192x192 tile out."""
    for dtype in DTYPES.values():
        a, b, _, out = packed_call(sizes, 1024, 576, dtype, dtype, f"own16-default-{dtype}")
        assert _paths() == {f"cutlass:{TILES['256']}"}, ckgemm.last_dispatch()
        check_packed(out, a, b, sizes, dtype, 576, f"own {dtype} by default")


@pytest.mark.parametrize("sizes", [[90, 0, 130, 75, 1, 190, 193], [300, 0, 700, 515, 1, 530]],
                         ids=["97-rows", "341-rows"])
def test_small_groups_at_short_k_run_the_192_row_tile_by_default(sizes):
    """97 and 341 rows a group on average, K 576, N 1536 (pairs of 192-wide tiles pad N no more than 256-wide
    ones): rules.cpp's own_192_rows_fit."""
    for dtype in DTYPES.values():
        a, b, _, out = packed_call(sizes, 1536, 576, dtype, dtype, f"own16-192-default-{dtype}")
        assert _paths() == {f"cutlass:{TILES['192x192']}"}, ckgemm.last_dispatch()
        check_packed(out, a, b, sizes, dtype, 576, f"own {dtype} 192x192 by default")


_BAD_UNITS_RUN = """
    import torch, ckgemm
    a = torch.randn(600, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2, 512, 256, device="cuda", dtype=torch.bfloat16)
    out = torch.full((600, 512), float("nan"), dtype=torch.bfloat16, device="cuda")
    try:
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([300, 300], device="cuda"), out=out)
    except RuntimeError as exc:
        torch.cuda.synchronize()
        print("REFUSED", out.isnan().all().item(), str(exc).splitlines()[0])
"""


def test_an_unknown_units_setting_is_refused():
    """CKGEMM_WS_UNITS other than auto, dynamic or static: the call that the rule gives the own kernel raises,
    naming the setting, and writes nothing."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_BAD_UNITS_RUN)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CKGEMM_WS_UNITS": "drawn"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("REFUSED True") and "CKGEMM_WS_UNITS must be auto" in proc.stdout, proc.stdout


_UNITS_RUN = """
    import sys, torch
    sys.path[:0] = [{tests!r}]
    from test_gpu_own_16bit import CASES, DTYPES, TILES, _call, _paths
    outs = []
    for dtype in DTYPES:
        for tile in TILES:
            for case, (sizes, n, k) in enumerate(CASES):
                _, _, _, out = _call(sizes, n, k, DTYPES[dtype], f"own16-{{case}}-{{dtype}}", TILES[tile])
                assert _paths() == {{"cutlass:" + TILES[tile]}}
                outs.append(out.cpu())
    torch.save(outs, {path!r})
"""


def test_units_drawn_in_turn_and_by_stride_give_the_same_bits(tmp_path):
    """Each tile is computed alike whichever cluster takes it: the same bits on every case, both tiles, both
    dtypes (test_own_16bit_kernel_matches_the_reference checks the default against the reference)."""
    tests = os.path.dirname(os.path.abspath(__file__))
    for units in ("dynamic", "static"):
        code = textwrap.dedent(_UNITS_RUN.format(tests=tests, path=str(tmp_path / f"{units}.pt")))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "CKGEMM_WS_UNITS": units})
        assert proc.returncode == 0, proc.stderr[-3000:]
    drawn, strided = torch.load(tmp_path / "dynamic.pt"), torch.load(tmp_path / "static.pt")
    assert len(drawn) == len(strided) == 2 * len(TILES) * len(CASES)
    for i, (x, y) in enumerate(zip(drawn, strided)):
        assert not x.isnan().any() and torch.equal(x, y), (i, (x.float() - y.float()).abs().max())


@pytest.mark.parametrize("tile", TILES, ids=[f"n{t}" for t in TILES])
def test_own_16bit_kernel_reads_and_writes_strided_views(tile):
    """A, B and C as views of wider buffers (lda, ldb, B's group stride and ldc past K and N; TMA strides in
    bytes): the reference's numbers, and the buffers' padding left untouched."""
    sizes, n, k, pad = [0, 129, 300, 64], 448, 200, 8
    gen = generator(f"own16-strided-{tile}")
    wide_a = rand_tensor((sum(sizes), k + pad), torch.bfloat16, gen, "cuda")
    wide_b = rand_tensor((len(sizes), n, k + pad), torch.bfloat16, gen, "cuda")
    wide_c = poison((sum(sizes), n + pad), torch.bfloat16, "cuda")
    a, b, out = wide_a[:, :k], wide_b[:, :, :k], wide_c[:, :n]
    os.environ["CKGEMM_CONFIG"] = TILES[tile]
    try:
        ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device="cuda"), out=out)
    finally:
        os.environ.pop("CKGEMM_CONFIG", None)
    assert _paths() == {f"cutlass:{TILES[tile]}"}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, torch.bfloat16, k, f"own strided {tile}")
    assert wide_c[:, n:].isnan().all(), "wrote into C's padding"
