"""The native router (csrc/common/route.h over the CUTLASS instance table and rules of csrc/cuda/rules.cpp),
built with g++ (tests/native_probe.py) and queried for the routes it chooses — list groups and packed calls,
ckgemm's own fp8 kernel among the instances: the tests ask the C++ rules rather than restating them."""
from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys

import pytest
import torch

from ckgemm.backends import routes
from native_probe import DTYPE_CODES, ROOT, Desc, addr, build_probe, load_probe, route, route_packed


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return load_probe(tmp_path_factory.mktemp("probe"))


def _kind(probe, instance):
    fields = (ctypes.c_int * 10)()
    probe.probe_instance_kind(instance, fields)
    return list(fields)


def test_routes_use_the_instance_table(probe):
    names = [probe.probe_instance_name(i).decode() for i in range(probe.probe_instance_count())]
    assert len(names) == len(set(zip(names, [tuple(_kind(probe, i)[:4]) for i in range(len(names))])))
    bf16, fp8, f32, bf16_out, f16_out = torch.bfloat16, torch.float8_e4m3fn, 2, 1, 0
    code, _, _, why = route(probe, bf16, bf16_out, "RC", 0, 4096, 4096, 4096)
    assert why == "" and routes.flags(code) == 0 and _kind(probe, routes.instance(code))[4] >= 128
    code, _, _, _ = route(probe, bf16, bf16_out, "RC", 0, 16, 4096, 4096)
    assert _kind(probe, routes.instance(code))[4] == 64, "decode-size 16-bit groups take the 64-row tile"
    for eight_bit, out, scaling in ((fp8, f32, 0), (fp8, bf16_out, 1), (torch.int8, 3, 0), (torch.int8, bf16_out, 1)):
        def tile_m(m, groups=1, n=4096):
            code, _, _, why = route(probe, eight_bit, out, "RC", scaling, m, n, 7168, scales=scaling > 0,
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
        code, _, _, _ = route(probe, fp8, out, "RC", scaling, 4096, n, 7168, scales=scaling > 0)
        want = "coop_128x192x128_c1x2" if n in (2048, 5760, 14336) else "coop_128x128x128_c1x2"
        assert probe.probe_instance_name(routes.instance(code)).decode() == want, (n, scaling)
    code, _, _, _ = route(probe, fp8, bf16_out, "RC", 2, 16, 4096, 7168, scales=True)
    assert probe.probe_instance_name(routes.instance(code)).decode() == "coop_blockwise_swapab_32x128x128"
    code, _, _, _ = route(probe, fp8, bf16_out, "RC", 2, 16, 4096, 7168, scales=True, groups=32)
    assert probe.probe_instance_name(routes.instance(code)).decode() == "coop_blockwise_swapab_32x256x128"
    code, _, _, _ = route(probe, bf16, bf16_out, "RC", 0, 256, 256, 256, a_off=2)
    assert routes.flags(code) == routes.FLAG_REPACK_A, "only the misaligned operand is copied"
    code, kp, _, _ = route(probe, torch.float16, 0, "RC", 0, 64, 64, 30)
    assert routes.flags(code) & (routes.FLAG_REPACK_A | routes.FLAG_REPACK_B) and kp == 32, "K padded to 16 elements"
    code, _, _, _ = route(probe, fp8, f32, "RR", 0, 512, 4096, 7168)
    assert routes.flags(code) & routes.FLAG_TRANSPOSE_B and _kind(probe, routes.instance(code))[2] == 0  # RC
    code, _, np_, _ = route(probe, fp8, f16_out, "RC", 1, 256, 256, 256, scales=True)
    assert routes.flags(code) & routes.FLAG_STAGE_C and _kind(probe, routes.instance(code))[1] == f32, \
        "fp16 out of a scaled call: computed in fp32 and converted once"
    code, _, np_, _ = route(probe, fp8, bf16_out, "RC", 2, 256, 20, 256, scales=True)
    assert routes.flags(code) & routes.FLAG_STAGE_C and routes.flags(code) & routes.FLAG_REPACK_B and np_ == 32
    code, _, _, _ = route(probe, fp8, f32, "RC", 0, 64, 20, 256, c_off=4, ldc=21)
    assert routes.flags(code) == 0 and _kind(probe, routes.instance(code))[9] == 1, \
        "unscaled: the direct-store instance writes a misaligned C as it is"
    assert probe.probe_kind_rejects(2, 2, 1, 0) == b"", "fp8 RR -> fp32: the own RR kernel's kind (packed calls)"
    assert probe.probe_kind_rejects(2, 1, 1, 1), "row-scaled fp8 RR: no RR instance (it transposes)"
    assert probe.probe_kind_rejects(2, 1, 0, 2) == b""  # fp8 block -> bf16 exists


@pytest.mark.parametrize("dtype,out", [(torch.int8, 3), (torch.float8_e4m3fn, 2)], ids=["int8", "fp8"])
def test_packed_8bit_rr_takes_ckgemm_own_rr_kernel_without_a_transpose(probe, dtype, out):
    """Packed unscaled 8-bit calls with B row-major (int8 to int32, e4m3 to fp32) take ckgemm's own RR kernel
    (ws_s8_rr_rs.cuh) as they are, decode and prefill alike; its rule (ws_s8_rr_rules.h) sends the rest through
    the transpose to the RC tiles: N or K off 16 bytes, more than 1024 groups; list groups always (packed calls
    only); row scales (no RR instance of that kind)."""
    bf16_out = 1
    own = "ws_128x256x128_c1x2"
    for rows in (512, 4096, 32768, 262144):
        assert route_packed(probe, dtype, out, 0, 32, rows, 4096, 7168, layout="RR") == (own, 0, ""), rows
    assert route_packed(probe, dtype, out, 0, 8, 4096, 4096, 2048, layout="RR", c_off=4, ldc=4097) == (own, 0, ""), \
        "C offset by one element and an odd ldc: the kernel stores 32-bit pieces where C allows"
    for n, k, groups in ((40, 2048, 8), (4096, 200, 8), (4096, 2048, 1025)):
        name, flags, why = route_packed(probe, dtype, out, 0, groups, 100 * groups, n, k, layout="RR")
        assert why == "" and name != own and flags & routes.FLAG_TRANSPOSE_B, (n, k, groups, name)
    name, flags, _ = route_packed(probe, dtype, bf16_out, 1, 8, 4096, 4096, 2048, layout="RR")
    assert name != own and flags & routes.FLAG_TRANSPOSE_B, "row scales: no own RR instance"
    code, _, _, _ = route(probe, dtype, out, "RR", 0, 512, 4096, 7168)
    assert routes.flags(code) & routes.FLAG_TRANSPOSE_B and _kind(probe, routes.instance(code))[2] == 0, \
        "a list group: transposed to the RC tiles"
    assert probe.probe_kind_rejects(DTYPE_CODES[dtype], out, 1, 0) == b"", "the own RR kernel's kind"


def test_packed_unscaled_fp8_takes_ckgemm_own_kernel_where_its_rule_allows(probe):
    """The packed route (route_packed, as the executor calls it) of unscaled fp8 groups of more than 64 rows
    takes ckgemm's own kernel (ws_fp8.cuh) first, and so do block-scaled ones to bf16; its rule
    (ws_fp8_rules.h) sends everything else on: list groups, more than 1024 groups, K or B's group stride off
    TMA's 16 bytes, block scales past 512 k-blocks, the row recipe (no own instance), decode-sized groups (the
    SwapAB and ping-pong tiles rank first, except where the own 256-wide tile takes decode, next test).
    Block-scaled calls take its 256-wide tile where pairs of it pad N by at most 5%, else its 192-wide one."""
    fp8, f32, bf16_out = torch.float8_e4m3fn, 2, 1
    own = "ws_128x192x128_c1x2"
    assert route_packed(probe, fp8, f32, 0, 32, 32768, 4096, 7168) == (own, 0, "")
    assert route_packed(probe, fp8, f32, 0, 8, 4096, 4097, 2880, c_off=4, ldc=4099) == (own, 0, ""), \
        "odd N and a C offset by one element: the own kernel writes any C"
    assert route_packed(probe, fp8, f32, 0, 1, 512, 256, 128)[0] == "coop_128x128x128_c1x2", \
        "N 256 pads a 192-wide tile by 50%: the 128-wide CUTLASS tile ranks first"
    assert route_packed(probe, fp8, f32, 0, 1024, 1024 * 100, 2048, 256)[0] == own
    name, flags, why = route_packed(probe, fp8, f32, 0, 1025, 1025 * 100, 2048, 256)
    assert why == "" and name == "coop_128x192x128_c1x2" and flags == 0, "past 1024 groups: CUTLASS"
    # the kernel rounds rows, N and K up to tiles in 32-bit ints: it takes sizes that stay below 2^31 after that
    int_max = 2**31 - 1
    assert route_packed(probe, fp8, f32, 0, 1, int_max - 128, 384, 256)[0] == own
    assert route_packed(probe, fp8, f32, 0, 1, int_max - 127, 384, 256)[0] not in (own, None)
    assert route_packed(probe, fp8, f32, 0, 1, 4096, int_max - 512 - 7, 256)[0] == own
    assert route_packed(probe, fp8, f32, 0, 1, 4096, int_max - 511 + 7, 256)[0] not in (own, None)
    assert route_packed(probe, fp8, f32, 0, 1, 4096, 384, int_max - 128 - 15)[0] == own
    assert route_packed(probe, fp8, f32, 0, 1, 4096, 384, int_max - 127 + 15)[0] not in (own, None)
    name, flags, _ = route_packed(probe, fp8, f32, 0, 4, 4096, 2048, 200)
    assert name == own and flags == routes.FLAG_REPACK_A | routes.FLAG_REPACK_B, \
        "K 200: the copies pad K to 208, which the own kernel takes"
    assert route_packed(probe, fp8, f32, 0, 4, 4096, 2048, 7168, layout="RR")[:2] == ("ws_128x256x128_c1x2", 0), \
        "packed unscaled fp8 RR: the own RR kernel, no transpose"
    assert route_packed(probe, fp8, f32, 0, 4, 64, 4096, 7168)[0].startswith("coop_swapab_"), "16 rows a group"
    assert route_packed(probe, fp8, bf16_out, 1, 32, 32768, 4096, 7168)[0] == "coop_128x192x128_c1x2"
    wide = "ws_128x256x128_c1x2"  # the own kernel's block-scaled 256-wide tile, first where pairs of it fit N
    assert route_packed(probe, fp8, bf16_out, 2, 32, 32768, 4096, 7168) == (wide, 0, ""), "block scales, bf16 out"
    assert route_packed(probe, fp8, bf16_out, 2, 128, 32768, 1536, 2048)[0] == wide
    assert route_packed(probe, fp8, bf16_out, 2, 3, 269, 10300, 384)[0] == wide, "41 tiles: 4.4% past N in pairs"
    for n in (3851, 5760, 384):  # pairs of 256-wide tiles pad N by 6.4%, 6.7%, 33%: the 192-wide tile
        assert route_packed(probe, fp8, bf16_out, 2, 8, 8192, n, 2048)[0] == own, n
        # groups of 48 rows with a C that CUTLASS's small tiles cannot write (offset by one element): the own
        # kernel writes any C; the padding rule holds there too
        assert route_packed(probe, fp8, bf16_out, 2, 8, 384, n, 2048, c_off=2, ldc=n + 1)[0] == own, n
    assert route_packed(probe, fp8, bf16_out, 2, 8, 384, 4096, 2048, c_off=2, ldc=4097)[0] == wide
    # a tile's B scales for every k-block sit in shared memory: at most 512 k-blocks (K <= 65536) with block scales
    assert route_packed(probe, fp8, bf16_out, 2, 4, 4096, 4096, 65536) == (wide, 0, "")
    assert route_packed(probe, fp8, bf16_out, 2, 4, 4096, 384, 65536) == (own, 0, "")
    name, _, why = route_packed(probe, fp8, bf16_out, 2, 4, 4096, 4096, 65536 + 16)
    assert why == "" and name.startswith("coop_blockwise_"), "513 k-blocks: CUTLASS's blockwise tile"
    assert route_packed(probe, fp8, f32, 0, 4, 4096, 4096, 65536 + 16)[0] == own, "no block scales: no K limit"
    assert route_packed(probe, fp8, f32, 2, 32, 32768, 4096, 7168)[0] == "pingpong_blockwise_64x128x128", \
        "block scales to fp32: CUTLASS's only instance of that kind"
    assert route_packed(probe, fp8, bf16_out, 2, 4, 64, 4096, 7168)[0].startswith("coop_blockwise_swapab_")
    assert route_packed(probe, fp8, bf16_out, 2, 1, 512, 256, 512)[0] == "coop_blockwise_128x128x128_c1x2", \
        "N 256 pads a 192-wide tile by 50% and a pair of 256-wide ones by 100%: CUTLASS's 128-wide blockwise tile"
    assert route_packed(probe, torch.int8, 3, 0, 32, 32768, 4096, 7168)[0] == "coop_128x256x128_c1x2"
    code, _, _, why = route(probe, fp8, f32, "RC", 0, 4096, 4096, 7168)
    assert why == "" and probe.probe_instance_name(routes.instance(code)).decode() == "coop_128x192x128_c1x2", \
        "a list group never reaches the packed-only kernel"
    own_id = [probe.probe_instance_name(i).decode() for i in range(probe.probe_instance_count())].index(own)
    desc = Desc(addr(), addr(1 << 28), addr(2 << 28), 4096, 4096, 7168, 7168, 7168, 4096, None, None)
    assert b"packed form" in probe.probe_instance_rejects(own_id, ctypes.byref(desc))
    _, _, _, why = route(probe, fp8, f32, "RC", 0, 2**31, 4096, 7168)
    assert why.startswith("coop_128x192x128_c1x2: ") and "2^31" in why, \
        "a packed-only instance's refusal is never the reason a list group is given"


def test_decode_sized_packed_8bit_takes_the_own_256_wide_tile_where_swapab_would_go_wide(probe):
    """Packed 8-bit calls of at most 32 rows a group (fp8 unscaled and block, int8) take ckgemm's own 256-wide tile
    where the SwapAB rule would take its 256-wide tile (128 tiles or more); fewer tiles, N padding pairs of 256 by
    over 5%, 33-64 rows a group, row scales and unscaled prefill (timed on decode only) do not."""
    fp8, f32, bf16_out, i32 = torch.float8_e4m3fn, 2, 1, 3
    own = "ws_128x256x128_c1x2"
    for dtype, scaling, out, swap in ((fp8, 0, f32, "coop_swapab"), (fp8, 2, bf16_out, "coop_blockwise_swapab"),
                                      (torch.int8, 0, i32, "coop_swapab")):
        pick = lambda *shape: route_packed(probe, dtype, out, scaling, *shape)  # noqa: E731
        assert pick(32, 512, 4096, 7168) == (own, 0, ""), (dtype, scaling)
        assert [pick(8, 128, 4096, 7168)[0], pick(128, 128 * 8, 2048, 7168)[0]] == [own, own], "128 tiles or more"
        assert pick(7, 112, 4096, 7168)[0] == f"{swap}_32x128x128", "112 tiles"
        assert pick(32, 512, 3832, 7168)[0] == f"{swap}_32x256x128", "N pads pairs by 6.9%"
        assert pick(32, 32 * 48, 4096, 7168)[0].startswith("pingpong"), "48 rows a group"
    prefill = [route_packed(probe, dt, o, 0, 8, 8192, 1024, 7168)[0] for dt, o in ((fp8, f32), (torch.int8, i32))]
    assert prefill == ["coop_128x128x128_c1x2", "coop_128x256x128_c1x2"], "unscaled prefill: CUTLASS's tiles"
    assert route_packed(probe, fp8, bf16_out, 2, 8, 8192, 1024, 7168)[0] == own, "block-scaled prefill: its rule"
    assert route_packed(probe, torch.int8, i32, 0, 1025, 1025 * 16, 4096, 7168) == ("coop_swapab_32x256x128", 0, "")
    row = [route_packed(probe, dt, bf16_out, 1, 32, 512, 4096, 7168)[0] for dt in (torch.int8, fp8)]
    assert row == ["coop_swapab_32x256x128"] * 2, "row scales: no own RC instance"


def test_a_promotion_interval_other_than_4_sends_unscaled_fp8_to_cutlass(probe):
    """CKGEMM_FP8_PROMOTION (read once per process) is CUTLASS's knob; the own kernel promotes every 4 wgmma
    k-blocks only, so with 8 or 16 set its rule refuses unscaled calls, which run CUTLASS at the asked
    precision (unscaled RR calls then through the transpose); block-scaled calls, promoted every block on either
    kernel, stay on it."""
    lib = probe._name
    code = f"""
import ctypes
so = ctypes.CDLL({lib!r})
so.probe_instance_name.restype = ctypes.c_char_p
why = ctypes.c_char_p()
c = so.probe_route_packed(2, 2, 0, 0, 32, ctypes.c_int64(32768), ctypes.c_int64(4096), ctypes.c_int64(7168),
                          ctypes.c_int64(0), ctypes.c_int64(4096), ctypes.byref(why))
print(so.probe_instance_name(so.probe_route_instance_of(c)).decode())
c = so.probe_route_packed(2, 1, 0, 2, 32, ctypes.c_int64(32768), ctypes.c_int64(4096), ctypes.c_int64(7168),
                          ctypes.c_int64(0), ctypes.c_int64(4096), ctypes.byref(why))
print("block", so.probe_instance_name(so.probe_route_instance_of(c)).decode())
c = so.probe_route_packed(2, 2, 1, 0, 32, ctypes.c_int64(32768), ctypes.c_int64(4096), ctypes.c_int64(7168),
                          ctypes.c_int64(0), ctypes.c_int64(4096), ctypes.byref(why))
print("rr", so.probe_instance_name(so.probe_route_instance_of(c)).decode(), so.probe_route_flags_of(c))
c = so.probe_route_packed(4, 3, 0, 0, 32, ctypes.c_int64(512), ctypes.c_int64(4096), ctypes.c_int64(7168),
                          ctypes.c_int64(0), ctypes.c_int64(4096), ctypes.byref(why))
print("int8", so.probe_instance_name(so.probe_route_instance_of(c)).decode())
"""
    own, wide = "ws_128x192x128_c1x2", "ws_128x256x128_c1x2"
    cutlass = "coop_128x192x128_c1x2"
    transposed, kept = f"rr {cutlass} {routes.FLAG_REPACK_B | routes.FLAG_TRANSPOSE_B}", f"rr {wide} 0"
    for setting, want, rr in (("8", cutlass, transposed), ("16", cutlass, transposed), ("4", own, kept), ("", own, kept)):
        env = {k: v for k, v in os.environ.items() if k != "CKGEMM_FP8_PROMOTION"}
        if setting:
            env["CKGEMM_FP8_PROMOTION"] = setting
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        # block promotes every block; unscaled RR: the own RR kernel, or transposed to CUTLASS's RC tile
        # int8 decode: the own 256-wide tile whatever the setting (fp8's knob)
        assert run.stdout.split() == [want, "block", wide, *rr.split(), "int8", wide], (setting, run.stdout)


def test_ckgemm_config_puts_the_named_instance_first_where_it_fits(probe, monkeypatch):
    """The router (route.h, every backend) applies CKGEMM_CONFIG; names that do not fit, or name no
    instance, leave the selection rule's choice."""
    def chosen(m, n, k, **kw):
        code, _, _, why = route(probe, torch.bfloat16, 1, "RC", 0, m, n, k, **kw)
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
        code, kp, np_, why = route(probe, dtype, out, layout, scaling, m, n, k, a_off=a_off, c_off=c_off,
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
        routed = Desc(addr(5 << 28) if copy_a else addr(a_off), addr(6 << 28) if copy_b else addr(1 << 28),
                      addr(7 << 28) if stage else addr((2 << 28) + c_off), m, np_, kp, kp if copy_a else k, ldb,
                      np_ if stage else n, addr(3 << 28) if scaling else None, addr(4 << 28) if scaling else None)
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
        so = build_probe(directory, tuple(f for f in cuda.cxx_flags(chosen) if f.startswith("-D")))
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


def test_every_route_flag_is_named_in_the_dispatch_record():
    """Each flag bit of a route code shows in the path text, so last_dispatch() hides nothing the runner did."""
    names = ["coop_128x256x64_c1x2"]
    kernel = routes.KIND_KERNEL

    def code(flags):
        return kernel | (0 << 4) | (flags << 16)

    assert routes.path("cutlass", code(0), names) == "cutlass:coop_128x256x64_c1x2"
    assert routes.path("cutlass", code(routes.FLAG_EXPAND_SCALES), names).endswith("+expand-scales")
    assert routes.path("cutlass", code(routes.FLAG_STAGE_C), names).endswith("+staged")
    assert routes.path("cutlass", code(routes.FLAG_REPACK_A), names).endswith("+repack")
    assert routes.path("cutlass", code(routes.FLAG_TRANSPOSE_B), names).endswith("+transpose")
    every = routes.path("cutlass", code(0x1F), names)
    assert all(tag in every for tag in ("+transpose", "+repack", "+staged", "+expand-scales")), every
    assert routes.path("cutlass", routes.KIND_ZERO_K, names) == "zero-k"
    assert routes.path("cutlass", routes.KIND_EMPTY, names) == "skip:empty"
