"""ckgemm.testing.shapes and .data: reproducible seeded cases with purposes and GxMxNxK ids, MoE splits,
edge branches, alignment-respecting sweeps, and random (never constant) inputs."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing import data, shapes

ALIGN = {"k_multiple": 8, "n_multiple": 16, "m_multiple": 1}


def test_same_seed_same_cases_other_seed_other_cases():
    def build(seed):
        return ([shapes.variable(8, 300, 512, 256, seed=seed), shapes.heterogeneous(6, seed, align=ALIGN)]
                + shapes.random_sweep(5, seed, align=ALIGN)
                + [shapes.moe_split(4096, 16, 1024, 512, seed=seed, dist=d) for d in shapes.MOE_DISTRIBUTIONS])
    assert build(7) == build(7)
    assert build(7) != build(8)


def test_ids_and_purposes():
    case = shapes.uniform(4, 256, 512, 1024)
    assert case.id == "4x256x512x1024" and case.purpose and case.packable
    assert case.flops == 4 * 2 * 256 * 512 * 1024
    var = shapes.Case(((1, 64, 32), (300, 64, 32)), "two groups")
    assert var.id == "2x[1..300]x64x32" and str(var) == "2x[1..300]x64x32 (two groups)"
    assert not shapes.Case(((1, 64, 32), (3, 65, 32)), "n differs").packable


def test_random_sweep_respects_ranges_and_alignment():
    cases = shapes.random_sweep(40, 3, align=ALIGN, groups_range=(1, 6))
    assert all(shapes.respects_alignment(c, ALIGN) for c in cases)
    dims = [s for c in cases for s in c.shapes]
    assert all(1 <= m <= 8192 and 256 <= n <= 16384 and 256 <= k <= 16384 for m, n, k in dims)
    ms = sorted(m for m, _, _ in dims)
    assert ms[0] < 64 and ms[-1] > 2048, "log-uniform sampling covers small and large M"
    assert all(c.purpose.startswith("random sweep") for c in cases)
    capped = shapes.random_sweep(10, 3, align=ALIGN, max_flops=1e10)
    assert all(c.flops <= 1e10 for c in capped)
    for make in (lambda a: shapes.variable(8, 100, 60, 70, 1, align=a), lambda a: shapes.heterogeneous(4, 1, align=a)):
        aligned = {"m_multiple": 4, "n_multiple": 16, "k_multiple": 128}
        assert shapes.respects_alignment(make(aligned), aligned)
    with pytest.raises(ValueError, match="unknown alignment keys"):
        shapes.random_sweep(1, 0, align={"k_mult": 8})
    with pytest.raises(ValueError, match="no multiple"):
        shapes.random_sweep(1, 0, align={"n_multiple": 1000}, n_range=(256, 900))


def test_moe_splits():
    tokens, experts = 5000, 16
    cases = {d: shapes.moe_split(tokens, experts, 256, 128, seed=1, dist=d, topk=2) for d in shapes.MOE_DISTRIBUTIONS}
    for dist, case in cases.items():
        assert case.groups == experts and sum(case.ms) == tokens * 2 and case.packable, dist
        assert dist in case.purpose
    assert max(cases["balanced"].ms) - min(cases["balanced"].ms) <= 1
    assert cases["empty"].ms.count(0) == 4
    assert max(cases["zipf"].ms) > 3 * (tokens * 2 // experts), "zipf puts most tokens on a few experts"
    assert len(set(cases["multinomial"].ms)) > 4
    with pytest.raises(ValueError, match="unknown MoE distribution"):
        shapes.moe_split(10, 2, 8, 8, seed=0, dist="pareto")


def test_edge_cases_cover_the_branches():
    cases = shapes.edge_cases(n=256, k=256, tile_m=128, granularity=128)
    all_shapes = [s for c in cases for s in c.shapes]
    ms = {m for m, _, _ in all_shapes}
    assert {1, 127, 128, 129} <= ms
    assert any(k == 128 for _, _, k in all_shapes), "K at the quantization granularity"
    assert any(n % 2 and k % 2 for _, n, k in all_shapes), "odd N and K"
    assert any(c.ms.count(0) and any(c.ms) for c in cases), "empty groups among full ones"
    assert any(not any(c.ms) for c in cases), "all groups empty"
    assert any(k == 0 for _, _, k in all_shapes) and any(n == 0 for _, n, _ in all_shapes)
    assert len({c.purpose for c in cases}) == len(cases)
    aligned = shapes.edge_cases(n=250, k=250, align=ALIGN)
    assert all(shapes.respects_alignment(c, ALIGN) for c in aligned)


def test_inputs_are_seeded_random_and_never_constant():
    case = shapes.Case(((5, 7, 9), (0, 7, 9), (3, 7, 9)), "inputs")
    for dtype in (torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.int8):
        a, b = data.group_inputs(case, dtype, "RR", seed=3)
        a2, _ = data.group_inputs(case, dtype, "RR", seed=3)
        assert [tuple(x.shape) for x in b] == [(9, 7)] * 3 and all(x.dtype == dtype for x in a + b)
        assert all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in zip(a, a2))
        values = torch.cat([x.float().flatten() for x in a + b])
        assert values.unique().numel() > 20, f"{dtype}: data must not be constant"
        if dtype.is_floating_point and dtype.itemsize == 1:
            assert float(values.abs().min()) >= torch.finfo(dtype).smallest_normal, "no fp8 subnormals"
    pa, pb, sizes = data.packed_inputs(case, torch.bfloat16, "RC", seed=3)
    assert pa.shape == (8, 9) and pb.shape == (3, 7, 9) and sizes.tolist() == [5, 0, 3]
    with pytest.raises(ValueError, match="shared"):
        data.packed_inputs(shapes.Case(((1, 2, 3), (1, 3, 3)), "x"), torch.float16, "RC", seed=0)


def test_poisoned_outputs():
    f = data.poisoned((2, 3), torch.bfloat16)
    i = data.poisoned((2, 3), torch.int32)
    assert bool(data.unwritten(f).all()) and bool(data.unwritten(i).all())
    f[0, 0] = 1.0
    i[1, 2] = 0
    assert int(data.unwritten(f).sum()) == 5 and int(data.unwritten(i).sum()) == 5


def test_generators_refuse_sizes_no_grouped_gemm_has():
    for call, message in ((lambda: shapes.uniform(2, -1, 64, 64), "three ints >= 0"),
                          (lambda: shapes.uniform(-2, 1, 64, 64), "groups must be an int >= 0"),
                          (lambda: shapes.uniform(2, 1.5, 64, 64), "three ints >= 0"),
                          (lambda: shapes.moe_split(-5, 4, 64, 64, 0), "tokens must be an int >= 0"),
                          (lambda: shapes.moe_split(16, 0, 64, 64, 0, dist="zipf"), "experts must be an int >= 1"),
                          (lambda: shapes.moe_split(16, 4, 64, 64, 0, topk=0), "topk must be an int >= 1")):
        with pytest.raises(ValueError, match=message):
            call()
    assert shapes.uniform(0, 4, 4, 4).shapes == ()
