"""ckgemm's own 8-bit RR kernel (csrc/cuda/ws_s8_rr_rs.cuh) behind the op: packed unscaled int8 (to int32) and
e4m3 (to fp32) calls with B row-major [G, K, N] route to it (no transpose of B first) where N, K and the strides
are multiples of 16 (csrc/cuda/ws_s8_rr_rules.h); list calls and the calls it refuses keep the per-call
transpose. int8's two tiles (128 x 256 where groups average at most 64 rows, 256 x 128 above: rs_block_m) and
e4m3's one (128 x 256) are checked against the reference from poisoned outputs (int8 exactly, e4m3 against the
fp64 product of the same fp8 inputs), against the RC path bit for bit, under graph replay with new device sizes,
with a capped SM count, and for its refusals. Every test runs for both dtypes. CUTLASS only."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from gpu_support import DEVICE, MARKS, NATIVE, assert_only_view_written, check_packed, replay_with_new_sizes
from support import generator, poison, rand_tensor

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own 8-bit RR kernel is CUDA (sm_90a)")]

OWN = "cutlass:ws_128x256x128_c1x2"
OUT = {torch.int8: torch.int32, torch.float8_e4m3fn: torch.float32}
dtypes = pytest.mark.parametrize("dt", list(OUT), ids=["int8", "fp8"])


def _inputs(sizes, n, k, tag, dt):
    gen = generator(f"{tag}-{dt}")
    a = rand_tensor((sum(sizes), k), dt, gen, DEVICE)
    b = rand_tensor((len(sizes), k, n), dt, gen, DEVICE)
    return a, b


def _paths():
    return set(ckgemm.last_dispatch().paths) - {"skip:empty"}


# empty groups first, between and last; single rows; both tiles' row edges (127/128/129, 255/256/257); a partial
# last k-block (K 2880, 208); N past a tile (272, 3856: a pair's second tile partly or wholly past N, a warp group
# with no columns); one big group beside empty ones. Average rows a group: the first five take the 256-row tile,
# the last three the 128-row tile (int8; fp8 has the 128-row tile only).
CASES = [([0, 1, 127, 128, 129, 300, 0, 1000, 0], 512, 256), ([700, 0, 513, 66], 3856, 2880),
         ([1, 127, 256], 272, 208), ([5000] + [0] * 6, 768, 1024), ([255, 256, 257, 0], 272, 208),
         ([3, 17, 1, 9], 4096, 7168), ([0, 1, 127, 128, 129] + [0] * 7, 3856, 2880), ([64] * 8, 272, 208)]


@dtypes
@pytest.mark.parametrize("size_dtype", [torch.int32, torch.int64], ids=["sizes32", "sizes64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_own_rr_kernel_matches_the_reference(case, size_dtype, dt):
    sizes, n, k = CASES[case]
    a, b = _inputs(sizes, n, k, f"own-s8-{case}", dt)
    gs = torch.tensor(sizes, dtype=size_dtype, device=DEVICE)
    out = poison((sum(sizes), n), OUT[dt], DEVICE)
    ckgemm.grouped_gemm_packed(a, b, gs, out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, dt, k, f"own {dt} rr {case}", layout="RR")


@dtypes
@pytest.mark.parametrize("case", range(len(CASES)))
def test_own_rr_kernel_equals_the_rc_path_bit_for_bit(case, dt):
    """The same sums as the RC path's kernels: int8 exactly; e4m3 sums each 128 of K in the tensor core (four k32
    wgmmas, the first overwriting the scratch) and adds it into fp32, as every RC tile does at promotion
    interval 4, so the bits agree too (they did on DeepSeek-V3 decode and prefill on an H100,
    docs/PERF_2026-12-06g.md)."""
    sizes, n, k = CASES[case]
    a, b = _inputs(sizes, n, k, f"own-s8-{case}", dt)
    gs = torch.tensor(sizes, device=DEVICE)
    out = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    rc = ckgemm.grouped_gemm_packed(a, b.transpose(1, 2).contiguous(), gs)
    assert not any("+" in p for p in _paths()), ckgemm.last_dispatch()  # B as given: no transpose, no copy
    assert torch.equal(out.view(torch.int32), rc.view(torch.int32)), ckgemm.last_dispatch()


@dtypes
def test_a_strided_output_keeps_its_guard_columns(dt):
    sizes, n, k = [300, 0, 129], 512, 384
    a, b = _inputs(sizes, n, k, "own-s8-ldc", dt)
    buf = poison((sum(sizes) + 2, n + 32), OUT[dt], DEVICE)
    out = buf[1:-1, 16:n + 16]
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, dt, k, "own rr ldc", layout="RR")
    assert_only_view_written(buf, (slice(1, -1), slice(16, n + 16)))


@dtypes
def test_own_rr_kernel_replays_a_graph_with_new_device_sizes(dt):
    sizes, n, k = [300, 0, 212, 512], 512, 640
    a, b = _inputs(sizes, n, k, "own-s8-graph", dt)
    gs = torch.tensor(sizes, device=DEVICE)
    out = poison((sum(sizes), n), OUT[dt], DEVICE)
    replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, layout="RR"), gs, out,
                          lambda new: check_packed(out, a, b, new, dt, k, f"own rr replay {new}", layout="RR"), OWN)


@pytest.mark.parametrize("sizes", [[300, 0, 513, 129], [30, 0, 51, 12]], ids=["tile256", "tile128"])
@pytest.mark.parametrize("sms", [1, 2, 7])
@dtypes
def test_a_capped_sm_count_gives_the_same_bits(sms, sizes, dt):
    n, k = 768, 512
    a, b = _inputs(sizes, n, k, f"own-s8-sms-{sms}", dt)
    gs = torch.tensor(sizes, device=DEVICE)
    want = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
    try:
        ckgemm.set_num_sms(sms)
        got = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
    finally:
        ckgemm.set_num_sms(0)
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    assert torch.equal(want.view(torch.int32), got.view(torch.int32))


@pytest.mark.parametrize("n,k,why", [(40, 64, "N not a multiple of 16"), (512, 72, "K not a multiple of 16")])
@dtypes
def test_calls_it_refuses_are_transposed_first(n, k, why, dt):
    sizes = [7, 0, 130]
    a, b = _inputs(sizes, n, k, f"own-s8-refused-{n}-{k}", dt)
    out = poison((sum(sizes), n), OUT[dt], DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert all("+transpose" in p for p in _paths()), (why, ckgemm.last_dispatch())
    check_packed(out, a, b, sizes, dt, k, why, layout="RR")


@dtypes
def test_prefill_sized_calls_take_it_too(dt):
    sizes, n, k = [1600, 0, 2100, 900], 512, 256  # prefill's rows a group
    a, b = _inputs(sizes, n, k, "own-s8-prefill", dt)
    out = poison((sum(sizes), n), OUT[dt], DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, dt, k, "own rr prefill-sized", layout="RR")


@dtypes
def test_the_list_form_keeps_the_transpose(dt):
    sizes, n, k = [300, 0, 129], 512, 384
    a, b = _inputs(sizes, n, k, "own-s8-list", dt)
    ys = ckgemm.grouped_gemm(list(a.split(sizes)), list(b), layout="RR")
    assert all("+transpose" in p for p in _paths()), ckgemm.last_dispatch()
    check_packed(torch.cat(ys), a, b, sizes, dt, k, "own rr list", layout="RR")
