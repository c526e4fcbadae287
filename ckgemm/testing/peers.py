"""Peers to time beside a grouped GEMM: what its users would otherwise call, where it exists here.

Each peer is probed once with a real call on the run's operands; one that raises is returned with
``fn=None`` and the reason (reported as "n/a", never silently dropped). Operand re-layouts a peer needs
happen here, once, outside any timed call.

- ``loop``: a Python loop over groups of ``torch.matmul`` (fp16/bf16), ``torch._scaled_mm`` with unit
  scales and fp32 output (fp8), or ``torch._int_mm`` (int8; B column-major, its fast cuBLASLt layout;
  groups of M <= 16, below its minimum, are padded to 17 rows, extra work counted against it);
- ``grouped`` (groups sharing N and K): ``torch._grouped_mm`` (fused on CUDA sm90/sm100 for bf16; a
  host-synchronising loop for fp16) or ``torch._scaled_grouped_mm`` with unit row-wise scales (fp8
  e4m3fn -> bf16 output: an approximate peer for an fp8 -> fp32 op).

Scaled fp8 (``scaled_loop_peer``, ``grouped_peer(..., scales=)``): the same ops with the run's own scales
(tensor recipe: one scale per operand; row recipe: per token x per channel), bf16 output: the exact peers
of ckgemm's tensor and row recipes. Block scales have no torch peer here.

aiter (``aiter_loop_peer``, ROCm, on request only: aiter JIT-compiles an op's module on its first call,
which the probe makes, outside any timed window): a loop over groups of ``aiter.tuned_gemm.tgemm.mm``
(fp16/bf16), ``aiter.gemm_a8w8_CK`` (row scales) or ``aiter.gemm_a8w8_blockscale`` (block scales), B as
[N, K] (aiter's ``WQ``), bf16 output for the scaled ones.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import torch

FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)


@dataclass
class Peer:
    name: str
    fn: object | None  # zero-argument callable, or None when not available here
    reason: str = ""  # why not available
    capturable: bool = True  # False: it synchronises with the host, so no CUDA-graph timing
    comparable: bool = True  # False: it computes something else on purpose (scaled int8's unscaled _int_mm loop)


def _brief(reason: str, width: int = 160) -> str:
    """A peer's refusal for a table cell: at most ``width`` characters, cut between words."""
    return textwrap.shorten(reason, width, placeholder=" ...")


def _probe(name: str, fn, capturable: bool = True) -> Peer:
    try:
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - any refusal means the peer does not exist for this case
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Peer(name, None, _brief(first), capturable)
    return Peer(name, fn, "", capturable)


def loop_peer(a_list, bk_list) -> Peer:
    """A loop over groups of (A [M, K], op(B) as a [K, N] view); groups with no work are skipped."""
    pairs = [(a, bk) for a, bk in zip(a_list, bk_list) if a.shape[0] and bk.shape[1]]
    dtype = a_list[0].dtype
    if dtype == torch.int8:
        if not hasattr(torch, "_int_mm"):
            return Peer("_int_mm loop", None, "torch._int_mm missing")
        mats = []
        for a, bk in pairs:
            if a.shape[0] <= 16:
                a = torch.cat([a, a.new_zeros((17 - a.shape[0], a.shape[1]))])
            mats.append((a, _k_major(bk)))
        return _probe("_int_mm loop", lambda: [torch._int_mm(a, bk) for a, bk in mats])
    if dtype in FP8:
        if not hasattr(torch, "_scaled_mm"):
            return Peer("_scaled_mm loop", None, "torch._scaled_mm missing")
        one = torch.ones((), device=a_list[0].device)
        mats = [(a, _k_major(bk)) for a, bk in pairs]
        return _probe("_scaled_mm loop", lambda: [
            torch._scaled_mm(a, bk, scale_a=one, scale_b=one, out_dtype=torch.float32) for a, bk in mats])
    return _probe("matmul loop", lambda: [torch.matmul(a, bk) for a, bk in pairs])


def _k_major(bk: torch.Tensor) -> torch.Tensor:
    """op(B) as a [K, N] view of K-major (column-major) storage, the layout cuBLASLt's 8-bit kernels read."""
    return bk if bk.stride(-2) == 1 else bk.transpose(-2, -1).contiguous().transpose(-2, -1)


def scaled_loop_peer(a_list, bk_list, sa_list, sb_list, recipe: str, out_dtype=torch.bfloat16) -> Peer:
    """fp8 with the run's scales: a loop of ``torch._scaled_mm`` (tensor: [] x []; row: [M, 1] x [1, N])."""
    name = "_scaled_mm loop"
    if recipe not in ("tensor", "row"):
        return Peer(name, None, f"no torch op takes {recipe} scales")
    if not hasattr(torch, "_scaled_mm"):
        return Peer(name, None, "torch._scaled_mm missing")
    mats = []
    for a, bk, sa, sb in zip(a_list, bk_list, sa_list, sb_list):
        if a.shape[0] and bk.shape[1]:
            shaped = (sa.reshape(-1, 1), sb.reshape(1, -1)) if recipe == "row" else (sa, sb)
            mats.append((a, _k_major(bk), *shaped))
    return _probe(name, lambda: [torch._scaled_mm(a, bk, scale_a=sa, scale_b=sb, out_dtype=out_dtype)
                                 for a, bk, sa, sb in mats])


def grouped_peer(a: torch.Tensor, b_kn: torch.Tensor, sizes, scales=None) -> Peer:
    """Packed operands: ``a`` [sum M, K], ``b_kn`` [G, K, N] (a view is fine), ``sizes`` per group;
    ``scales``: the (scale_a [sum M], scale_b [G, N]) of a row-scaled fp8 run (default: unit scales)."""
    dtype = a.dtype
    offs = torch.tensor(list(sizes), dtype=torch.int32, device=a.device).cumsum(0, dtype=torch.int32)
    if dtype in FP8:
        if not hasattr(torch, "_scaled_grouped_mm"):
            return Peer("_scaled_grouped_mm", None, "missing in this torch")
        b_col = _k_major(b_kn)  # column-major [G, K, N], as it requires
        scale_a, scale_b = scales if scales is not None else (
            torch.ones(a.shape[0], device=a.device, dtype=torch.float32),
            torch.ones(b_col.shape[0], b_col.shape[2], device=a.device, dtype=torch.float32))
        return _probe("_scaled_grouped_mm", lambda: torch._scaled_grouped_mm(
            a, b_col, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16))
    if dtype not in (torch.bfloat16, torch.float16):
        return Peer("grouped", None, f"no torch grouped op for {str(dtype).replace('torch.', '')}")
    if not hasattr(torch, "_grouped_mm"):
        return Peer("_grouped_mm", None, "missing in this torch")
    return _probe("_grouped_mm", lambda: torch._grouped_mm(a, b_kn, offs=offs), capturable=dtype == torch.bfloat16)


def _aiter_call(aiter, recipe: str, dtype: torch.dtype):
    """aiter's GEMM for (recipe, dtype) as fn(a, b_nk, sa, sb), or a string saying why there is none."""
    if recipe == "none" and dtype in (torch.float16, torch.bfloat16):
        from aiter.tuned_gemm import tgemm

        return lambda a, b, sa, sb: tgemm.mm(a, b, None, otype=dtype)
    if recipe == "row":
        return lambda a, b, sa, sb: aiter.gemm_a8w8_CK(a, b, sa.reshape(-1, 1), sb.reshape(1, -1), None,
                                                       torch.bfloat16)
    if recipe == "block" and dtype in FP8:
        return lambda a, b, sa, sb: aiter.gemm_a8w8_blockscale(a, b, sa, sb, torch.bfloat16)
    return f"no aiter GEMM here for {str(dtype).replace('torch.', '')} with {recipe} scales"


def aiter_loop_peer(a_list, bk_list, recipe: str = "none", sa_list=None, sb_list=None) -> Peer:
    """A loop over groups of aiter's GEMM for this dtype and recipe (see the module doc)."""
    name = "aiter loop"
    try:
        import aiter
    except Exception as exc:  # noqa: BLE001 - not installed, or installed for another ROCm/torch
        return Peer(name, None, _brief(f"aiter is not importable: {type(exc).__name__}: {exc}"))
    call = _aiter_call(aiter, recipe, a_list[0].dtype)
    if isinstance(call, str):
        return Peer(name, None, call)
    sa_list = sa_list or [None] * len(a_list)
    sb_list = sb_list or [None] * len(a_list)
    mats = [(a, bk.t().contiguous(), sa, sb) for a, bk, sa, sb in zip(a_list, bk_list, sa_list, sb_list)
            if a.shape[0] and bk.shape[1]]
    return _probe(name, lambda: [call(*m) for m in mats])


def peer_groups(result, ms, ns) -> list[torch.Tensor]:
    """A peer's result as the outputs of the groups with work (M_i > 0 and N_i > 0), in group order: a loop's
    list (one output per such group; ``_int_mm``'s rows padded to 17 cut back to M_i) or a grouped op's packed
    [sum M, N] tensor."""
    working = [(m, n) for m, n in zip(ms, ns) if m and n]
    if isinstance(result, torch.Tensor):
        parts = torch.split(result, list(ms))
        return [part for part, m, n in zip(parts, ms, ns) if m and n]
    if len(result) != len(working):
        raise ValueError(f"a peer returned {len(result)} outputs for {len(working)} groups with work")
    return [out[:m] for out, (m, _) in zip(result, working)]


def checked(peer: Peer, refs, ms, ns, in_dtype: torch.dtype, ks, scaled: bool = False) -> Peer:
    """``peer`` when one call's output passes ``check`` against the run's per-group references ``refs`` (all
    groups; those without work are skipped), else the peer as not available, with the mismatch as its reason:
    a fast wrong peer is no peer to time. A peer that is already n/a is returned as it is."""
    if peer.fn is None or not peer.comparable:
        return peer
    from .check import check  # (the harness's comparison; imported here to keep this module's import light)

    work = [(g, r, k) for g, (r, m, n, k) in enumerate(zip(refs, ms, ns, ks)) if m and n]
    try:
        outs = peer_groups(peer.fn(), ms, ns)
        report = check(outs, [r for _, r, _ in work], in_dtype=in_dtype, k=[k for _, _, k in work], scaled=scaled,
                       name=peer.name, raise_on_failure=False)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be compared is no result to time either
        return Peer(peer.name, None, _brief(f"its result could not be checked: {type(exc).__name__}: {exc}"),
                    peer.capturable)
    if report.passed:
        return peer
    worst = max(report.groups, key=lambda g: (not g.passed, g.stats.mismatches))
    return Peer(peer.name, None, _brief(f"wrong result: {worst.stats.mismatches} mismatches in group "
                                        f"{work[worst.group][0]} (max abs err {worst.stats.max_abs_err:.3g})"),
                peer.capturable)


def peers(a_list, bk_list, packed=None) -> list[Peer]:
    """The loop peer, and the grouped peer when ``packed`` = (a, b_kn, sizes) is given."""
    found = [loop_peer(a_list, bk_list)]
    if packed is not None:
        found.append(grouped_peer(*packed))
    return found
