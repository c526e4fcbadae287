"""ckgemm's own int8 RR kernel (csrc/cuda/ws_s8_rr_rs.cuh) behind the op: packed unscaled int8 calls with B
row-major [G, K, N] route to it (no transpose of B first) where N, K and the strides are multiples of 16
(csrc/cuda/ws_s8_rr_rules.h); list calls and the calls it refuses keep the per-call transpose. Both of its tiles
(128 x 256 where groups average at most 64 rows, 256 x 128 above: rs_block_m) are checked exactly against the
reference from poisoned outputs, against the RC kernel bit for bit, under graph replay with new device sizes,
with a capped SM count, and for its refusals. CUTLASS only."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from gpu_support import DEVICE, MARKS, NATIVE, check_packed, replay_with_new_sizes
from support import generator, poison, rand_tensor

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own int8 RR kernel is CUDA (sm_90a)")]

OWN = "cutlass:ws_128x256x128_c1x2"
I8 = torch.int8


def _inputs(sizes, n, k, tag):
    gen = generator(tag)
    a = rand_tensor((sum(sizes), k), I8, gen, DEVICE)
    b = rand_tensor((len(sizes), k, n), I8, gen, DEVICE)
    return a, b


def _paths():
    return set(ckgemm.last_dispatch().paths) - {"skip:empty"}


# empty groups first, between and last; single rows; both tiles' row edges (127/128/129, 255/256/257); a partial
# last k-block (K 2880, 208); N past a tile (272, 3856: a pair's second tile partly or wholly past N, a warp group
# with no columns); one big group beside empty ones. Average rows a group: the first five take the 256-row tile,
# the last three the 128-row tile.
CASES = [([0, 1, 127, 128, 129, 300, 0, 1000, 0], 512, 256), ([700, 0, 513, 66], 3856, 2880),
         ([1, 127, 256], 272, 208), ([5000] + [0] * 6, 768, 1024), ([255, 256, 257, 0], 272, 208),
         ([3, 17, 1, 9], 4096, 7168), ([0, 1, 127, 128, 129] + [0] * 7, 3856, 2880), ([64] * 8, 272, 208)]


@pytest.mark.parametrize("size_dtype", [torch.int32, torch.int64], ids=["sizes32", "sizes64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_own_rr_kernel_is_exact_and_equals_rc(case, size_dtype):
    sizes, n, k = CASES[case]
    a, b = _inputs(sizes, n, k, f"own-s8-{case}")
    gs = torch.tensor(sizes, dtype=size_dtype, device=DEVICE)
    out = poison((sum(sizes), n), torch.int32, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, gs, out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, I8, k, f"own s8 rr {case}", layout="RR")
    rc = ckgemm.grouped_gemm_packed(a, b.transpose(1, 2).contiguous(), gs)
    assert not any(p.startswith(OWN) for p in _paths()), ckgemm.last_dispatch()
    assert torch.equal(out, rc)


def test_a_strided_output_keeps_its_guard_columns():
    sizes, n, k = [300, 0, 129], 512, 384
    a, b = _inputs(sizes, n, k, "own-s8-ldc")
    buf = poison((sum(sizes) + 2, n + 32), torch.int32, DEVICE)
    out = buf[1:-1, 16:n + 16]
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, I8, k, "own s8 rr ldc", layout="RR")
    guard = buf.clone()
    guard[1:-1, 16:n + 16] = poison((), torch.int32, DEVICE)
    assert torch.equal(guard, poison(buf.shape, torch.int32, DEVICE)), "a store outside the output"


def test_own_rr_kernel_replays_a_graph_with_new_device_sizes():
    sizes, n, k = [300, 0, 212, 512], 512, 640
    a, b = _inputs(sizes, n, k, "own-s8-graph")
    gs = torch.tensor(sizes, device=DEVICE)
    out = poison((sum(sizes), n), torch.int32, DEVICE)
    replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out, layout="RR"), gs, out,
                          lambda new: check_packed(out, a, b, new, I8, k, f"own s8 replay {new}", layout="RR"), OWN)


@pytest.mark.parametrize("sizes", [[300, 0, 513, 129], [30, 0, 51, 12]], ids=["tile256", "tile128"])
@pytest.mark.parametrize("sms", [1, 2, 7])
def test_a_capped_sm_count_gives_the_same_bits(sms, sizes):
    n, k = 768, 512
    a, b = _inputs(sizes, n, k, f"own-s8-sms-{sms}")
    gs = torch.tensor(sizes, device=DEVICE)
    want = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
    try:
        ckgemm.set_num_sms(sms)
        got = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
    finally:
        ckgemm.set_num_sms(0)
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    assert torch.equal(want, got)


@pytest.mark.parametrize("n,k,why", [(40, 64, "N not a multiple of 16"), (512, 72, "K not a multiple of 16")])
def test_calls_it_refuses_are_transposed_first(n, k, why):
    sizes = [7, 0, 130]
    a, b = _inputs(sizes, n, k, f"own-s8-refused-{n}-{k}")
    out = poison((sum(sizes), n), torch.int32, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert all("+transpose" in p for p in _paths()), (why, ckgemm.last_dispatch())
    check_packed(out, a, b, sizes, I8, k, why, layout="RR")


def test_prefill_sized_calls_take_it_too():
    sizes, n, k = [1600, 0, 2100, 900], 512, 256  # prefill's rows a group
    a, b = _inputs(sizes, n, k, "own-s8-prefill")
    out = poison((sum(sizes), n), torch.int32, DEVICE)
    ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=DEVICE), out=out, layout="RR")
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, I8, k, "own s8 prefill-sized", layout="RR")


def test_the_list_form_keeps_the_transpose():
    sizes, n, k = [300, 0, 129], 512, 384
    a, b = _inputs(sizes, n, k, "own-s8-list")
    ys = ckgemm.grouped_gemm(list(a.split(sizes)), list(b), layout="RR")
    assert all("+transpose" in p for p in _paths()), ckgemm.last_dispatch()
    check_packed(torch.cat(ys), a, b, sizes, I8, k, "own s8 list", layout="RR")
