"""The split tail of ckgemm's own 16-bit kernel (csrc/cuda/ws_tail.cuh): a call's last round (or rounds) of units
split along K into 2-4 slices, drawn in turn, the partials summed in slice order by the slice that ends last. Checked against the
harness reference on NaN-poisoned outputs with the tail in the middle of a call (units before it by stride and
drawn), the whole call a tail, and few SMs (set_num_sms: a tail of one or two rounds behind a long body); the
same bits on every repeat (the sum's order is fixed), within the reference's bounds of the unsplit call, under
graph replay with new device sizes, and CKGEMM_WS_TAIL's other values refused. CUTLASS only."""
from __future__ import annotations

import os

import pytest
import torch

import ckgemm
from gpu_support import MARKS, NATIVE, check_packed, packed_call, ran_paths, replay_with_new_sizes

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own kernel is CUDA (sm_90a)")]

TILES = {"256": "ws_128x256x64_c1x2", "192": "ws_128x192x64_c1x2"}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# 3100 rows a group on average (units by stride before the tail) and 700 (drawn), K 2048: 32 k-blocks, 8 a slice
# at 4 slices (ws_fp8_rules.h's kTailMinKBlocks); the groups' last M-blocks end on every warp-group boundary.
CASES = {"stride": ([3000, 65, 2200, 0, 1500, 9635], 2304, 2048), "drawn": ([700, 129, 0, 1300, 64, 1007], 2048, 2048)}


def _with(env: dict, fn):
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _call(case, dtype, tile, tail, sms=0):
    sizes, n, k = CASES[case]
    ckgemm.set_num_sms(sms)
    try:
        a, b, gs, out = _with({"CKGEMM_WS_TAIL": tail},
                              lambda: packed_call(sizes, n, k, DTYPES[dtype], DTYPES[dtype], f"tail-{case}-{dtype}", config=TILES[tile]))
    finally:
        ckgemm.set_num_sms(0)
    assert ran_paths() == {f"cutlass:{TILES[tile]}"}, ckgemm.last_dispatch()
    return a, b, out


@pytest.mark.parametrize("sms", [0, 16], ids=["all-sms", "16-sms"])
@pytest.mark.parametrize("tail", ["auto", "3", "4x2"])
@pytest.mark.parametrize("tile", TILES, ids=[f"n{t}" for t in TILES])
@pytest.mark.parametrize("case", CASES)
def test_split_tail_matches_the_reference_and_repeats_its_bits(case, tile, tail, sms):
    sizes, _, k = CASES[case]
    a, b, out = _call(case, "bf16", tile, tail, sms)
    check_packed(out, a, b, sizes, torch.bfloat16, k, f"tail {tail} {case} {tile} sms {sms}")
    _, _, again = _call(case, "bf16", tile, tail, sms)
    assert torch.equal(out, again), "the split tail's sum is in a fixed order: the same bits every call"


@pytest.mark.parametrize("dtype", DTYPES, ids=list(DTYPES))
def test_split_and_unsplit_calls_agree_within_rounding(dtype):
    """Only the fp32 sum's order differs: |split - whole| stays within one 16-bit unit in the last place plus
    fp32's error bound on the K products' sum, 4 K 2^-24 sum|a b| (a bound, not a tolerance tuned to pass)."""
    sizes, _, k = CASES["stride"]
    a, b, split = _call("stride", dtype, "256", "2")
    _, _, whole = _call("stride", dtype, "256", "off")
    check_packed(whole, a, b, sizes, DTYPES[dtype], k, f"tail off {dtype}")
    assert not split.isnan().any()
    magnitude = torch.cat([x.float().abs() @ y.float().abs().T for x, y in zip(a.split(sizes), b)])
    ulp = torch.finfo(DTYPES[dtype]).eps * torch.maximum(split.float().abs(), whole.float().abs())
    bound = ulp + 4 * k * 2.0 ** -24 * magnitude
    assert ((split.float() - whole.float()).abs() <= bound).all(), "split and whole differ by more than rounding"
    assert not torch.equal(split, whole), "no bit differs: the case no longer splits any unit"


def test_split_tail_replays_a_graph_with_new_device_sizes():
    """The body and tail are counted on the device from the sizes each replay reads (K 1024: 16 k-blocks)."""
    a, b, gs, out = packed_call([300, 0, 212, 512], 2048, 1024, torch.bfloat16, torch.bfloat16, "tail-graph")
    ckgemm.set_num_sms(16)  # 8 clusters: a body before the 16-unit tail on every set of sizes
    try:
        _with({"CKGEMM_CONFIG": TILES["256"], "CKGEMM_WS_TAIL": "2"}, lambda: replay_with_new_sizes(
            lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out), gs, out,
            lambda new: check_packed(out, a, b, new, torch.bfloat16, 1024, f"tail replay {new}"), f"cutlass:{TILES['256']}"))
    finally:
        ckgemm.set_num_sms(0)


@pytest.mark.parametrize("value", ["on", "1", "5", "22", "2x0"])
def test_an_unknown_tail_setting_is_refused(value):
    """Read at each call: a value other than auto, off, 2, 3, 4 or SxR makes the 16-bit call that the rule gives the
    own kernel raise, naming the setting, with nothing written."""
    a = torch.randn(600, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2, 512, 256, device="cuda", dtype=torch.bfloat16)
    out = torch.full((600, 512), float("nan"), dtype=torch.bfloat16, device="cuda")
    sizes = torch.tensor([300, 300], device="cuda")
    with pytest.raises(RuntimeError, match="CKGEMM_WS_TAIL must be auto"):
        _with({"CKGEMM_WS_TAIL": value}, lambda: ckgemm.grouped_gemm_packed(a, b, sizes, out=out))
    torch.cuda.synchronize()
    assert out.isnan().all(), "a refused call wrote into the output"
