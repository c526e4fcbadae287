"""README's "Coming from torch._grouped_mm, DeepGEMM or aiter" table, call by call on the CPU: each spelling
gives what the call it replaces computes (torch._grouped_mm itself where it runs on the CPU; DeepGEMM's padded
contiguous layout and aiter's per-expert calls rebuilt in float64 from the same quantized operands)."""
from __future__ import annotations

import torch

import ckgemm
from ckgemm.testing import calc_diff, quant
from support import generator

G, N, K = 3, 48, 256


def _dequant_rows(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """1x128-block scales of rows, applied in float64."""
    return codes.double() * scales.double().repeat_interleave(128, dim=-1)[..., :codes.shape[-1]]


def _dequant_blocks(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """128x128-block scales of a [N, K] weight, applied in float64."""
    s = scales.double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    return codes.double() * s[:codes.shape[0], :codes.shape[1]]


def test_torch_grouped_mm_offsets_become_sizes():
    gen = generator("porting-grouped-mm")
    x = torch.randn(24, K, generator=gen).to(torch.bfloat16)  # 3 rows past offs[-1], which torch leaves unwritten
    w = torch.randn(G, N, K, generator=gen).to(torch.bfloat16)
    offs = torch.tensor([5, 5, 21], dtype=torch.int32)  # an empty expert in the middle
    theirs = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)[:21]
    ours = ckgemm.grouped_gemm_packed(x[:offs[-1]], w, torch.diff(offs, prepend=offs.new_zeros(1)))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    torch.testing.assert_close(ours, theirs)
    assert calc_diff(ours, theirs) < 1e-6


def test_torch_scaled_grouped_mm_scales_are_the_row_recipe():
    """torch._scaled_grouped_mm runs on GPUs only: its row-wise contract (sa [sum M], sb [G, N], bf16 out) in
    float64 from the same codes."""
    gen = generator("porting-scaled-grouped-mm")
    sizes = torch.tensor([7, 0, 13])
    x = (torch.randn(20, K, generator=gen) * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(G, N, K, generator=gen) * 4).to(torch.float8_e4m3fn)
    sa, sb = torch.rand(20, generator=gen) + 0.5, torch.rand(G, N, generator=gen) + 0.5
    out = ckgemm.grouped_gemm_packed(x, w, sizes, scale_a=sa, scale_b=sb)
    rows = torch.repeat_interleave(torch.arange(G), sizes)
    want = torch.stack([(x[i].double() @ w[g].double().t()) for i, g in enumerate(rows.tolist())])
    want = want * sa.double()[:, None] * sb.double()[rows]
    assert out.dtype == torch.bfloat16 and out.shape == (20, N)
    torch.testing.assert_close(out.double(), want, rtol=2 ** -7, atol=1e-3)


def test_deep_gemm_contiguous_layout_drops_its_padding_rows():
    gen = generator("porting-deep-gemm")
    counts = [70, 0, 130]
    rows = [-(-c // 128) * 128 for c in counts]  # each expert padded to 128 rows
    m_indices = torch.cat([torch.tensor([g] * c + [-1] * (r - c), dtype=torch.int32)
                           for g, (c, r) in enumerate(zip(counts, rows))])
    x, sx = quant.per_token_cast_to_fp8(torch.randn(sum(rows), K, generator=gen) * 3)  # padding rows hold values too
    w, sw = quant.per_block_cast_to_fp8(torch.randn(G, N, K, generator=gen))
    keep = m_indices >= 0
    out = ckgemm.grouped_gemm_packed(x[keep], w, torch.bincount(m_indices[keep], minlength=G), scale_a=sx[keep],
                                     scale_b=sw)
    want = torch.zeros(sum(rows), N, dtype=torch.float64)  # what DeepGEMM writes on the real rows
    for g in range(G):
        mine = m_indices == g
        want[mine] = _dequant_rows(x[mine], sx[mine]) @ _dequant_blocks(w[g], sw[g]).t()
    assert out.dtype == torch.bfloat16 and out.shape == (sum(counts), N)
    padded = torch.zeros(sum(rows), N, dtype=torch.bfloat16)
    padded[keep] = out  # DeepGEMM's layout back, where it is wanted
    torch.testing.assert_close(padded.double(), want, rtol=2 ** -7, atol=1e-3)
    assert calc_diff(out, want[keep]) < 1e-5


def test_aiter_per_expert_blockscale_calls_become_one_list_call():
    gen = generator("porting-aiter")
    xs = [quant.per_token_cast_to_fp8(torch.randn(m, K, generator=gen)) for m in (1, 64, 200)]
    ws = [quant.per_block_cast_to_fp8(torch.randn(N, K, generator=gen)) for _ in xs]
    outs = ckgemm.grouped_gemm([x for x, _ in xs], [w for w, _ in ws], scale_a=[s for _, s in xs],
                               scale_b=[s for _, s in ws])
    assert len(outs) == len(xs) and all(o.dtype == torch.bfloat16 for o in outs)
    for (x, sx), (w, sw), out in zip(xs, ws, outs):
        want = _dequant_rows(x, sx) @ _dequant_blocks(w, sw).t()
        torch.testing.assert_close(out.double(), want, rtol=2 ** -7, atol=1e-3)
