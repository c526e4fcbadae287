"""ckgemm's own kernel on int8 RC (csrc/cuda/ws_fp8.cuh with int8 operands: k32 wgmmas straight into an int32
accumulator, stored as its bits), its 256-wide tile `s8_rc_ws_128x256x128_c1x2`: packed int8 calls (to int32)
of at most 32 rows a group that make 128 or more 256-wide tiles, at most 1024 groups, with N padding pairs of
256-wide tiles by at most 5%, route to it (csrc/cuda/rules.cpp, as fp8's own decode tile); other shapes reach it
through CKGEMM_CONFIG. Compared exactly with the reference from
NaN-poisoned outputs, with CUTLASS's tiles, under graph replay with new device sizes, with a strided output and
a capped SM count, and on results whose int32 bits are fp32 NaN patterns (the epilogue stores them untouched).
CUTLASS only."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from gpu_support import (DEVICE, MARKS, NATIVE, assert_only_view_written, check_packed, packed_call, ran_paths,
                         replay_with_new_sizes)
from support import poison

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own kernel is CUDA (sm_90a)")]

OWN = "cutlass:ws_128x256x128_c1x2"
CONFIG = "ws_128x256x128_c1x2"
I8 = torch.int8


def _call(sizes, n, k, tag, size_dtype=torch.int32, config=None):
    return packed_call(sizes, n, k, I8, torch.int32, tag, size_dtype, config)


def test_decode_sized_int8_takes_the_own_256_wide_tile():
    """8 groups x 16 N-blocks = 128 tiles: empty groups, single rows, 31 and 32 rows, a partial last k-block."""
    sizes, n, k = [0, 1, 16, 31, 32, 5, 20, 9], 4096, 704
    for size_dtype in (torch.int32, torch.int64):
        a, b, _, out = _call(sizes, n, k, "own-s8rc-decode", size_dtype)
        assert ran_paths() == {OWN}, ckgemm.last_dispatch()
        check_packed(out, a, b, sizes, I8, k, f"own s8 rc decode {size_dtype}")


# tile edges (127/128/129), empty groups, odd N (3851: scalar stores), a partial last k-block (K 2880, 208), one
# big group, N of one tile and a pair's second tile wholly or partly past N (192, 576)
CASES = [([0, 1, 127, 128, 129, 300, 0, 1000], 384, 256), ([700, 0, 513, 66], 3851, 2880),
         ([128] * 3, 192, 208), ([5000], 576, 1024), ([3, 17, 1, 9] * 8, 4096, 7168)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_own_tile_forced_matches_the_reference_and_cutlass(case):
    sizes, n, k = CASES[case]
    a, b, _, out = _call(sizes, n, k, f"own-s8rc-{case}", config=CONFIG)
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, I8, k, f"own s8 rc {case}")
    if n % 4:  # CUTLASS's TMA store cannot write int32 rows of odd N as they are: nothing to compare with
        return
    _, _, _, theirs = _call(sizes, n, k, f"own-s8rc-{case}", config="coop_swapab_32x256x128")
    assert ran_paths() == {"cutlass:coop_swapab_32x256x128"}, ckgemm.last_dispatch()
    assert torch.equal(out, theirs), (out - theirs).abs().max()


@pytest.mark.parametrize("forced", [False, True], ids=["decode", "whole-tiles"])
def test_int32_results_with_fp32_nan_bits_are_stored_as_they_are(forced, monkeypatch):
    """-127 x 127 x 384 = -6193536 is 0xFFA17E80, an fp32 signalling NaN's bits (and 6193536 an fp32 denormal's):
    the epilogue stores the int32 accumulator through its fp32 path, which must move the bits and never compute
    on them (an FMUL of a NaN gives the canonical NaN). Rows of A all 127, B's rows -127 and 127 in turn: every
    output is one of the two. Decode-sized groups take the bounded stores; forced, whole 128-row tiles take the
    16-byte ones."""
    sizes = [128, 0, 256, 1] * 4 if forced else [8, 0, 24, 1] * 32
    n, k = 512, 384
    if forced:
        monkeypatch.setenv("CKGEMM_CONFIG", CONFIG)
    a = torch.full((sum(sizes), k), 127, dtype=I8, device=DEVICE)
    b = torch.full((len(sizes), n, k), 127, dtype=I8, device=DEVICE)
    b[:, ::2] = -127
    out = poison((sum(sizes), n), torch.int32, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out)
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    want = torch.full_like(out, 127 * 127 * k)
    want[:, ::2] = -127 * 127 * k
    assert torch.equal(out, want), (out != want).sum()


@pytest.mark.parametrize("sizes,n,ldc_pad,off,forced", [([16, 0, 9, 32] * 32, 1000, 32, 16, False),
                                                         ([300, 0, 129, 256], 520, 2, 0, True)],
                         ids=["decode-n1000", "tiles-ldc2mod4"])
def test_a_strided_output_keeps_its_guard_columns(sizes, n, ldc_pad, off, forced, monkeypatch):
    """A pair's second tile partly past N (N 1000, pairs padded by 2.4%: routed; N 520: forced). Decode-sized
    groups (bounded stores), and forced whole tiles into an ldc of 2 mod 4 elements on an 8-byte aligned base
    (8-byte pair stores: no 16-byte rows)."""
    k = 384
    if forced:
        monkeypatch.setenv("CKGEMM_CONFIG", CONFIG)
    a, b, _, ref = _call(sizes, n, k, "own-s8rc-ldc")
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    buf = poison((sum(sizes) + 2, n + ldc_pad), torch.int32, DEVICE)
    out = buf[1:-1, off:n + off]
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out)
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    assert torch.equal(out, ref)
    check_packed(out, a, b, sizes, I8, k, "own s8 rc ldc")
    assert_only_view_written(buf, (slice(1, -1), slice(off, n + off)))


def test_the_own_tile_replays_a_graph_with_new_device_sizes(monkeypatch):
    """Four groups (the replays' sizes, up to 1024 rows a group) on the forced own tile."""
    sizes, n, k = [300, 0, 212, 512], 512, 640  # the replays' sizes sum to 1024 rows too
    monkeypatch.setenv("CKGEMM_CONFIG", CONFIG)
    a, b, gs, out = _call(sizes, n, k, "own-s8rc-graph")
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out), gs, out,
                          lambda new: check_packed(out, a, b, new, I8, k, f"own s8 rc replay {new}"), OWN)


@pytest.mark.parametrize("sms", [1, 2, 7])
def test_a_capped_sm_count_gives_the_same_bits(sms):
    sizes, n, k = [16, 0, 9, 32] * 32, 512, 512
    a, b, gs, want = _call(sizes, n, k, f"own-s8rc-sms-{sms}")
    try:
        ckgemm.set_num_sms(sms)
        got = ckgemm.grouped_gemm_packed(a, b, gs)
    finally:
        ckgemm.set_num_sms(0)
    assert ran_paths() == {OWN}, ckgemm.last_dispatch()
    assert torch.equal(want, got)
