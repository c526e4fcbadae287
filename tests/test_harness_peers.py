"""ckgemm.testing.peers: each peer computes the same product as the reference where it exists, and says
why where it does not (never a silent drop)."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing import grouped_gemm_reference
from ckgemm.testing.peers import grouped_peer, loop_peer, peers
from support import generator, rand_tensor


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8, torch.float8_e4m3fn],
                         ids=["fp16", "bf16", "int8", "fp8"])
def test_loop_peer_matches_the_reference_or_says_why(dtype):
    gen = generator(f"peers-{dtype}")
    sizes = [3, 0, 20]
    a = [rand_tensor((m, 32), dtype, gen) for m in sizes]
    b = [rand_tensor((16, 32), dtype, gen) for _ in sizes]  # RC: [N, K]
    peer = loop_peer(a, [x.t() for x in b])
    if peer.fn is None:
        assert peer.reason, "an unavailable peer must say why"
        return
    outs = peer.fn()
    refs = [r for r, m in zip(grouped_gemm_reference(a, b), sizes) if m]
    assert len(outs) == len(refs), "groups with no work are skipped, the rest computed"
    for out, ref in zip(outs, refs):
        out = out[: ref.shape[0]]  # _int_mm pads groups of M <= 16
        tol = 0 if dtype == torch.int8 else 2e-2 * float(ref.abs().max())
        assert float((out.double() - ref.double()).abs().max()) <= tol


def test_grouped_peer_packed_and_peers_list():
    gen = generator("peers-grouped")
    sizes = [5, 0, 11]
    a = rand_tensor((16, 32), torch.bfloat16, gen)
    b = rand_tensor((3, 24, 32), torch.bfloat16, gen)
    peer = grouped_peer(a, b.transpose(-2, -1), sizes)
    if peer.fn is not None:
        out = peer.fn()
        ref = torch.cat([a[0:5].float() @ b[0].float().t(), a[5:16].float() @ b[2].float().t()])
        assert float((out.float() - ref).abs().max()) <= 2e-2 * float(ref.abs().max())
    else:
        assert peer.reason
    both = peers(list(a.split(sizes)), list(b.transpose(-2, -1).unbind(0)), (a, b.transpose(-2, -1), sizes))
    assert [p.name for p in both][0] == "matmul loop" and len(both) == 2
    assert grouped_peer(a.to(torch.int8), b.to(torch.int8).transpose(-2, -1), sizes).reason.startswith("no torch")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8], ids=["bf16", "int8"])
def test_a_peer_is_checked_against_the_reference_before_it_is_timed(dtype):
    """checked(): a right peer stays, a wrong one (one element off, or a group's output for another) becomes n/a
    with the mismatch as its reason, and a peer that computes something else on purpose is left alone."""
    import dataclasses

    from ckgemm.testing.peers import Peer, checked

    gen = generator(f"peers-checked-{dtype}")
    sizes, n, k = [3, 0, 20], 16, 32
    a = [rand_tensor((m, k), dtype, gen) for m in sizes]
    b = [rand_tensor((n, k), dtype, gen) for _ in sizes]
    refs = grouped_gemm_reference(a, b)
    args = (refs, sizes, [n] * 3, dtype, [k] * 3)
    right = loop_peer(a, [x.t() for x in b])
    assert checked(right, *args) is right

    def off_by_one():
        outs = [o.clone() for o in right.fn()]
        outs[1].view(-1)[5] += 1 if dtype == torch.int8 else float(outs[1].abs().max())
        return outs
    for wrong in (Peer("off by one", off_by_one), Peer("groups swapped", lambda: right.fn()[::-1])):
        got = checked(wrong, *args)
        assert got.fn is None and ("wrong result" in got.reason or "differs from ref shape" in got.reason), got
    assert "group 2" in checked(Peer("off by one", off_by_one), *args).reason  # the group of the call, not of the loop
    other = dataclasses.replace(Peer("integer product", off_by_one), comparable=False)
    assert checked(other, *args) is other
