"""The native router's 16-bit rules (csrc/cuda/rules.cpp through tests/native_probe.py): CUTLASS's 128x192 tile
where its pairs pad N less, ckgemm's own kernel for packed calls of more than 64 rows a group, and its 192x192
tile for small groups at short K."""
from __future__ import annotations

import pytest
import torch

from ckgemm.backends import routes
from native_probe import load_probe, route, route_packed


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return load_probe(tmp_path_factory.mktemp("probe"))


def test_16bit_takes_the_192_wide_tile_only_where_its_pairs_pad_n_less(probe):
    """16-bit RC: 128x192 where its pairs of N-blocks (1x2 clusters) pad N by more than 4% of N less than the
    256-wide pairs do (gpt-oss, N 5760: 384 columns against none); 128x256 for every N that 512 divides, where
    both pad alike (N 2880: 192 each, where 128x256 ran faster) and where 192 pads more; RR has no 192-wide
    tile; decode-sized groups keep the 64-row tile."""
    for dtype, out in ((torch.bfloat16, 1), (torch.float16, 0)):
        def name(m, n, layout="RC"):
            code, _, _, why = route(probe, dtype, out, layout, 0, m, n, 2880)
            assert why == "", (dtype, m, n, why)
            return probe.probe_instance_name(routes.instance(code)).decode()
        for n, want in ((5760, "coop_128x192x64_c1x2"),
                        (2880, "coop_128x256x64_c1x2"),  # pairs pad 192 either way
                        (4096, "coop_128x256x64_c1x2"), (7168, "coop_128x256x64_c1x2"), (1536, "coop_128x256x64_c1x2"),
                        (1000, "coop_128x256x64_c1x2"),  # 256 pairs pad 24, 192 pairs 152
                        (12800 + 192, "coop_128x256x64_c1x2"),  # pairs pad 320 against 64: 2% of N
                        (192, "coop_128x192x64_c1x2")):
            assert name(512, n) == want, (dtype, n)
        assert name(512, 5760, "RR") == "coop_128x256x64_c1x2", "no RR 128x192 instance"
        assert name(64, 5760).startswith("pingpong_64x128"), "groups of up to 64 rows keep the 64-row tile"
        assert name(65, 5760) == "coop_128x192x64_c1x2"
        code, _, _, why = route(probe, dtype, out, "RC", 0, 4096, 5760, 2880, groups=32)
        assert why == "" and probe.probe_instance_name(routes.instance(code)).decode() == "coop_128x192x64_c1x2"


def test_16bit_packed_calls_of_more_than_64_rows_a_group_take_ckgemm_own_kernel(probe):
    """ckgemm's own kernel (ws_fp8.cuh; units drawn in turn below 2048 rows a group, by stride from there) for
    packed 16-bit calls averaging more than 64 rows a group (fewer: the decode tiles), at the width CUTLASS's tile
    would have (outside its 192x192 tile's range of small groups at short K: the next test); CUTLASS's tiles for
    list calls (the own kernel takes only the packed form) and where its TMA cannot read the operands."""
    for dtype, out in ((torch.bfloat16, 1), (torch.float16, 0)):
        for rows_per_group, n, k, want in ((257, 4096, 2880, "ws_128x256x64_c1x2"),
                                           (512, 4096, 2880, "ws_128x256x64_c1x2"),
                                           (1024, 4096, 2880, "ws_128x256x64_c1x2"),
                                           (2047, 7168, 2880, "ws_128x256x64_c1x2"),
                                           (1024, 5760, 2880, "ws_128x192x64_c1x2"),
                                           (1024, 2880, 2880, "ws_128x256x64_c1x2"),
                                           (2048, 14336, 2880, "ws_128x256x64_c1x2"),
                                           (4096, 4096, 2880, "ws_128x256x64_c1x2"),
                                           (8192, 5760, 2880, "ws_128x192x64_c1x2"),
                                           (256, 3072, 4096, "ws_128x256x64_c1x2"),  # Qwen3-235B gate/up, 4k tokens
                                           (128, 3072, 4096, "ws_128x256x64_c1x2"),
                                           (255, 5760, 4096, "ws_128x192x64_c1x2"),
                                           (65, 1536, 2048, "ws_128x256x64_c1x2"),
                                           (79, 5760, 2880, "ws_128x192x64_c1x2")):
            got = route_packed(probe, dtype, out, 0, 32, 32 * rows_per_group, n, k)
            assert got == (want, 0, ""), (dtype, rows_per_group, n, k, got)
        assert route_packed(probe, dtype, out, 0, 32, 32 * 64, 1536, 2048) == ("pingpong_64x128x128_direct", 0, ""), \
            "64 rows a group: the 64-row decode tile"
        assert route_packed(probe, dtype, out, 0, 32, 32 * 512, 4096, 2888) == ("ws_128x256x64_c1x2", 0, ""), \
            "K 2888: 5776 bytes, whole 16-byte pieces"
        name, flags, why = route_packed(probe, dtype, out, 0, 32, 32 * 512, 4096, 2884)
        assert why == "" and flags & routes.FLAG_REPACK_A, "K 2884 (5768 bytes): TMA needs A copied to 16-byte rows"
        assert route(probe, dtype, out, "RC", 0, 512, 4096, 2880)[3] == "" and \
            probe.probe_instance_name(routes.instance(route(probe, dtype, out, "RC", 0, 512, 4096, 2880)[0])).decode() \
            == "coop_128x256x64_c1x2", "list calls: CUTLASS"
        assert route_packed(probe, dtype, out, 0, 32, 32 * 512, 4096, 2880, layout="RR")[0] == "coop_128x256x64_c1x2"


def test_the_own_192_row_16bit_tile_takes_small_groups_at_short_k(probe, monkeypatch):
    """ckgemm's own 192x192 16-bit tile (ws_fp8.cuh, three consumer warp groups) is the pick for packed calls of
    80 to 512 rows a group on average with K at most 2880, where pairs of 192-wide tiles pad N no more than pairs
    of 256-wide ones (rules.cpp's own_192_rows_fit); elsewhere CKGEMM_CONFIG still puts it first, with its own bound
    on rows (a 192-row tile rounded up stays a 32-bit int)."""
    tile, int_max = "ws_192x192x64_c1x2", 2**31 - 1
    for dtype, out in ((torch.bfloat16, 1), (torch.float16, 0)):
        for groups, rows_per_group, n, k in ((128, 256, 1536, 2048), (32, 512, 5760, 2880), (32, 512, 2880, 2880),
                                             (32, 300, 2880, 64), (128, 80, 1536, 2048), (128, 96, 1536, 2048),
                                             (128, 128, 1536, 2048), (32, 255, 5760, 2880)):
            assert route_packed(probe, dtype, out, 0, groups, groups * rows_per_group, n, k) == (tile, 0, ""), \
                (groups, rows_per_group, n, k)
        for groups, rows_per_group, n, k in ((32, 512, 4096, 7168), (32, 512, 5760, 2888), (32, 1024, 7168, 2048),
                                             (32, 513, 5760, 2880), (32, 79, 5760, 2880), (32, 512, 4096, 2048),
                                             (8, 2048, 14336, 4096), (32, 64, 4096, 2048)):
            got = route_packed(probe, dtype, out, 0, groups, groups * rows_per_group, n, k)[0]
            assert got not in (tile, None), (groups, rows_per_group, n, k, got)
        code, _, _, why = route(probe, dtype, out, "RC", 0, 512, 5760, 2880)
        assert why == "" and probe.probe_instance_name(routes.instance(code)).decode().startswith("coop_"), \
            "list calls: CUTLASS"
        monkeypatch.setenv("CKGEMM_CONFIG", tile)
        assert route_packed(probe, dtype, out, 0, 8, 8 * 2048, 14336, 4096) == (tile, 0, "")
        assert route_packed(probe, dtype, out, 0, 1, int_max - 192, 384, 256)[0] == tile
        assert route_packed(probe, dtype, out, 0, 1, int_max - 191, 384, 256)[0] not in (tile, None)
        monkeypatch.delenv("CKGEMM_CONFIG")
