"""torch.compile and torch.library over the packed form, on any backend (the CPU reference here): the op
is one opaque custom op with a fake (meta) kernel, so Dynamo traces it with fullgraph=True."""
from __future__ import annotations

import torch

import ckgemm
from support import generator, rand_tensor


def _inputs(dtype=torch.bfloat16):
    gen = generator(f"compile-{dtype}")
    a = rand_tensor((30, 64), dtype, gen)
    b = rand_tensor((3, 48, 64), dtype, gen)
    return a, b, torch.tensor([10, 0, 20])


def test_fullgraph_compile_matches_eager():
    a, b, sizes = _inputs()

    def moe(a, b, sizes):
        return torch.relu(ckgemm.grouped_gemm_packed(a, b, sizes))

    compiled = torch.compile(moe, fullgraph=True, dynamic=False)
    assert torch.equal(compiled(a, b, sizes), moe(a, b, sizes))


def test_fullgraph_compile_with_out_and_check_sizes():
    a, b, sizes = _inputs(torch.int8)
    out = torch.full((30, 48), -7, dtype=torch.int32)

    def into(a, b, sizes, out):
        ckgemm.grouped_gemm_packed(a, b, sizes, out=out, check_sizes=True)
        return out

    torch.compile(into, fullgraph=True, dynamic=False)(a, b, sizes, out)
    assert torch.equal(out, ckgemm.grouped_gemm_packed(a, b, sizes))


def test_opcheck_of_the_custom_ops():
    a, b, sizes = _inputs()
    torch.library.opcheck(torch.ops.ckgemm.grouped_gemm_packed.default, (a, b, sizes, "RC", None, None, None, None, None))
    out = torch.empty(30, 48, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.ckgemm.grouped_gemm_packed_out.default, (a, b, sizes, out, "RC", None, None, None, None,
                                                                                None))


def test_fullgraph_compile_takes_prepacked_weights():
    a, b, sizes = _inputs()
    weights = ckgemm.prepack(b)

    def moe(a, sizes):
        return ckgemm.grouped_gemm_packed(a, weights, sizes)

    assert torch.equal(torch.compile(moe, fullgraph=True, dynamic=False)(a, sizes), ckgemm.grouped_gemm_packed(a, b, sizes))

