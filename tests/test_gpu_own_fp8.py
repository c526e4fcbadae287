"""ckgemm's own fp8 kernel (csrc/cuda/ws_fp8.cuh) behind the op: packed unscaled fp8 calls (fp32 out) and
block-scaled ones (bf16 out) with device sizes whose groups average more than 64 rows route to it, where its
192-wide tile pads N by at most 5% (csrc/cuda/rules.cpp; block-scaled calls take its 256-wide tile first where
pairs of that pad N by at most 5%); decode-sized calls (at most 32 rows a group) making 128 or more 256-wide
tiles take its 256-wide tile, unscaled and block-scaled. Checked against the harness reference with
NaN-poisoned outputs, against CUTLASS's 128x192 tile bit for bit (unscaled), under graph replay with new
device sizes, and for its refusals (bad device sizes, more than 1024 groups, another promotion interval).
CUTLASS only."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import ckgemm
from gpu_support import DEVICE, MARKS, NATIVE, check_packed, packed_call, ran_paths, replay_with_new_sizes
from support import generator, poison

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own fp8 kernel is CUDA (sm_90a)")]

OWN = "cutlass:ws_128x192x128_c1x2"
WIDE = "cutlass:ws_128x256x128_c1x2"  # where pairs of 256-wide tiles pad N by at most 5%: block scales, and decode
FP8 = torch.float8_e4m3fn


def _call(sizes, n, k, tag, size_dtype=torch.int32, config=None):
    return packed_call(sizes, n, k, FP8, torch.float32, tag, size_dtype, config)


_paths = ran_paths


# empty groups, single rows, tile edges (127/128/129), a partial last k-block (K 2880), odd N (3851),
# int32 and int64 sizes
CASES = [([0, 1, 127, 128, 129, 300, 0, 1000], 384, 256), ([700, 0, 513, 66], 3851, 2880),
         ([128] * 3, 192, 128), ([5000], 576, 1024)]


@pytest.mark.parametrize("size_dtype", [torch.int32, torch.int64], ids=["sizes32", "sizes64"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_own_kernel_matches_the_reference_and_cutlass(case, size_dtype):
    """The reference's numbers, and CUTLASS's 128x192 tile's bits (the same promotion every 128-deep k-block
    into fp32 over the same wgmma sums)."""
    sizes, n, k = CASES[case]
    a, b, gs, out = _call(sizes, n, k, f"own-fp8-{case}", size_dtype)
    assert _paths() == {OWN}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, FP8, k, f"own fp8 {case}")
    if n % 4:  # CUTLASS's TMA store cannot write fp32 rows of odd N as they are: nothing to compare with
        return
    _, _, _, theirs = _call(sizes, n, k, f"own-fp8-{case}", size_dtype, config="coop_128x192x128_c1x2")
    assert _paths() == {"cutlass:coop_128x192x128_c1x2"}, ckgemm.last_dispatch()
    assert torch.equal(out, theirs), (out - theirs).abs().max()


def test_own_kernel_replays_a_graph_with_new_device_sizes():
    sizes = [300, 0, 212, 512]
    a, b, gs, out = _call(sizes, 384, 512, "own-fp8-graph")
    replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a, b, gs, out=out), gs, out,
                          lambda new: check_packed(out, a, b, new, FP8, 512, f"own fp8 replay {new}"), OWN)


def _block_call(sizes, n, k, tag, out=None):
    """A DeepGEMM-style block-scaled call (1x128 A, 128x128 B scales from the harness casts), bf16 out."""
    from ckgemm.testing import quant

    gen = generator(tag)
    a, sa = quant.per_token_cast_to_fp8(torch.randn(sum(sizes), k, generator=gen).to(DEVICE))
    b, sb = quant.per_block_cast_to_fp8((torch.randn(len(sizes), n, k, generator=gen) * 0.05).to(DEVICE))
    gs = torch.tensor(sizes, dtype=torch.int32, device=DEVICE)
    out = poison((sum(sizes), n), torch.bfloat16, DEVICE) if out is None else out
    ckgemm.grouped_gemm_packed(a, b, gs, out=out, scale_a=sa, scale_b=sb)
    return (a, sa), (b, sb), gs, out


def _check_block(out, a, b, sizes, k, name):
    from ckgemm.testing import check, grouped_gemm_reference_packed

    ref = grouped_gemm_reference_packed(a, b, sizes, precision="fp64")
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    check([out[s:s + m] for s, m in zip(starts, sizes)], [ref[s:s + m] for s, m in zip(starts, sizes)],
          in_dtype=FP8, k=k, scaled=True, name=name)


# a partial last 128-deep block (K 320, 2880), N not a multiple of 192 or 128 (3851: the last tile pair past
# N), tiles whose 192 columns straddle a 128-column scale block, empty groups, tile edges; the 256-wide tile
# (N 1536, 1024) with its own partial row tiles and a partial k-block, and with a partial last column tile and
# a pair's second tile past N (N 10300: 41 tiles of 256)
BLOCK_CASES = [([0, 1, 127, 128, 129, 300, 0, 1000], 384, 320, OWN), ([700, 0, 513, 66], 3851, 2880, OWN),
               ([256, 256], 1536, 7168, WIDE), ([0, 1, 300, 129, 1000, 0], 1024, 2880, WIDE),
               ([129, 0, 140], 10300, 384, WIDE)]


@pytest.mark.parametrize("case", range(len(BLOCK_CASES)))
def test_own_kernel_takes_block_scales(case):
    sizes, n, k, path = BLOCK_CASES[case]
    a, b, _, out = _block_call(sizes, n, k, f"own-block-{case}")
    assert _paths() == {path}, ckgemm.last_dispatch()
    assert ckgemm.last_dispatch().recipe == "block"
    _check_block(out, a, b, sizes, k, f"own block {case}")


@pytest.mark.parametrize("n,path", [(384, OWN), (1024, WIDE)], ids=["192", "256"])
def test_own_block_kernel_replays_a_graph_with_new_device_sizes(n, path):
    sizes = [300, 0, 212, 512]
    a, b, gs, out = _block_call(sizes, n, 640, f"own-block-graph-{n}")
    replay_with_new_sizes(lambda: ckgemm.grouped_gemm_packed(a[0], b[0], gs, out=out, scale_a=a[1], scale_b=b[1]),
                          gs, out, lambda new: _check_block(out, a, b, new, 640, f"own block replay {new}"), path)


def test_decode_sized_calls_take_the_own_256_wide_tile():
    """Packed calls averaging at most 32 rows a group that make 128 or more 256-wide tiles (8 groups x 16 here)
    run the own 256-wide tile (rules.cpp), unscaled and block-scaled: empty groups, single rows, 31 and 32 rows,
    a partial last k-block (K 704)."""
    sizes, n, k = [0, 1, 16, 31, 32, 5, 20, 9], 4096, 704
    a, b, _, out = _call(sizes, n, k, "own-fp8-decode")
    assert _paths() == {WIDE}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, FP8, k, "own fp8 decode")
    a, b, _, out = _block_call(sizes, n, k, "own-block-decode")
    assert _paths() == {WIDE}, ckgemm.last_dispatch()
    _check_block(out, a, b, sizes, k, "own block decode")


_FEED_RUN = """
    import sys, torch, ckgemm
    sys.path[:0] = [{tests!r}]
    from test_gpu_own_fp8 import BLOCK_CASES, _block_call
    outs = []
    for case, (sizes, n, k, path) in enumerate(BLOCK_CASES):
        _, _, _, out = _block_call(sizes, n, k, f"own-block-{{case}}")
        assert set(ckgemm.last_dispatch().paths) - {{"skip:empty"}} == {{path}}, ckgemm.last_dispatch()
        outs.append(out.cpu())
    torch.save(outs, {path!r})
"""


def test_both_block_scale_feeds_give_the_same_bits(tmp_path):
    """CKGEMM_WS_SCALES=0 (a producer warp copies each stage's scales) and 2 (DeepGEMM's feed, the default: A's
    scales through an MN-major copy in the op's workspace): the same promotions over the same wgmma sums, so the
    same bits on every block case, both tiles (test_own_kernel_takes_block_scales checks the process's feed
    against the reference; test_an_unknown_scale_feed_is_refused shows the variable reaches the launch)."""
    tests = os.path.dirname(os.path.abspath(__file__))
    for feed in ("0", "2"):
        proc = _run(_FEED_RUN.format(tests=tests, path=str(tmp_path / f"{feed}.pt")), {"CKGEMM_WS_SCALES": feed})
        assert proc.returncode == 0, proc.stderr[-3000:]
    warp, tma = torch.load(tmp_path / "0.pt"), torch.load(tmp_path / "2.pt")
    for case, (x, y) in enumerate(zip(warp, tma)):
        assert not x.isnan().any() and torch.equal(x, y), (case, (x.float() - y.float()).abs().max())


def test_an_unknown_scale_feed_is_refused():
    proc = _run("""
        import torch, ckgemm
        from ckgemm.testing import quant
        a, sa = quant.per_token_cast_to_fp8(torch.randn(512, 256, device="cuda"))
        b, sb = quant.per_block_cast_to_fp8(torch.randn(2, 384, 256, device="cuda"))
        out = torch.full((512, 384), float("nan"), dtype=torch.bfloat16, device="cuda")
        try:
            ckgemm.grouped_gemm_packed(a, b, torch.tensor([256, 256], device="cuda"), out=out, scale_a=sa, scale_b=sb)
        except RuntimeError as exc:
            torch.cuda.synchronize()
            print("REFUSED", out.isnan().all().item(), str(exc).splitlines()[0])
    """, {"CKGEMM_WS_SCALES": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("REFUSED True") and "CKGEMM_WS_SCALES must be 0" in proc.stdout, proc.stdout


def test_more_groups_than_the_own_kernel_takes_run_on_cutlass():
    sizes = [65] * 1025
    a, b, gs, out = _call(sizes, 192, 128, "own-fp8-1025")
    assert _paths() == {"cutlass:coop_128x192x128_c1x2"}, ckgemm.last_dispatch()
    check_packed(out, a, b, sizes, FP8, 128, "1025 groups")


def _run(code, env=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_bad_device_sizes_on_the_own_kernel_fail_loudly():
    """The kernel cannot print (C7510), so the shared size check runs first and names group_sizes."""
    proc = _run("""
        import torch, ckgemm
        a = torch.randn(300, 128, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(2, 192, 128, device="cuda").to(torch.float8_e4m3fn)
        sizes = torch.tensor([100, 200], device="cuda")
        ckgemm.grouped_gemm_packed(a, b, sizes)
        torch.cuda.synchronize()
        assert set(ckgemm.last_dispatch().paths) == {"cutlass:ws_128x192x128_c1x2"}, ckgemm.last_dispatch()
        sizes[1] = 199
        ckgemm.grouped_gemm_packed(a, b, sizes)
        torch.cuda.synchronize()
        print("NO ERROR")
    """)
    assert proc.returncode != 0 and "NO ERROR" not in proc.stdout, proc.stdout + proc.stderr
    assert "group_sizes" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]


def test_another_promotion_interval_runs_cutlass():
    proc = _run("""
        import torch, ckgemm
        a = torch.randn(4096, 256, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(4, 384, 256, device="cuda").to(torch.float8_e4m3fn)
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([1024] * 4, device="cuda"))
        print(ckgemm.last_dispatch().paths[0])
    """, {"CKGEMM_FP8_PROMOTION": "8"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "cutlass:coop_128x192x128_c1x2", proc.stdout
    proc = _run("""
        import torch, ckgemm
        a = torch.randn(4096, 256, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(4, 256, 384, device="cuda").to(torch.float8_e4m3fn)
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([1024] * 4, device="cuda"), layout="RR")
        print(ckgemm.last_dispatch().paths[0])
    """, {"CKGEMM_FP8_PROMOTION": "8"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "cutlass:coop_128x192x128_c1x2+transpose", "RR: the own RR kernel refuses it too"
    proc = _run("""
        import torch, ckgemm
        from ckgemm.testing import quant
        a, sa = quant.per_token_cast_to_fp8(torch.randn(4096, 256, device="cuda"))
        b, sb = quant.per_block_cast_to_fp8(torch.randn(4, 384, 256, device="cuda"))
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([1024] * 4, device="cuda"), scale_a=sa, scale_b=sb)
        print(ckgemm.last_dispatch().paths[0])
    """, {"CKGEMM_FP8_PROMOTION": "8"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == OWN, "block scales promote every block on either kernel: the knob leaves them"
