"""torch.compile and torch.library over every form, on any backend (the CPU reference here): each form is
one opaque custom op with a fake (meta) kernel, so Dynamo traces it with fullgraph=True."""
from __future__ import annotations

import pytest
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



def test_fullgraph_compile_of_the_list_forms():
    a, b, sizes = _inputs()
    a_list, b_list = list(a.split([10, 0, 20])), list(b.unbind(0))

    def moe(a_list, b_list):
        return [torch.relu(c) for c in ckgemm.grouped_gemm(a_list, b_list)]

    got = torch.compile(moe, fullgraph=True, dynamic=False)(a_list, b_list)
    assert all(torch.equal(x, y) for x, y in zip(got, moe(a_list, b_list)))

    c_list = [torch.full((m, 48), float("nan"), dtype=torch.bfloat16) for m in (10, 0, 20)]

    def into(a_list, b_list, c_list):
        ckgemm.grouped_gemm_out(a_list, b_list, c_list)
        return c_list[0] * 2

    doubled = torch.compile(into, fullgraph=True, dynamic=False)(a_list, b_list, c_list)
    assert all(torch.equal(x, y) for x, y in zip(c_list, ckgemm.grouped_gemm(a_list, b_list)))
    assert torch.equal(doubled, c_list[0] * 2)


def test_fullgraph_compile_of_a_scaled_list_call():
    gen = generator("compile-scaled-list")
    f8 = torch.float8_e4m3fn
    a_list = [rand_tensor((m, 64), f8, gen) for m in (3, 5)]
    b_list = [rand_tensor((32, 64), f8, gen) for _ in range(2)]
    sa = [torch.rand(m, generator=gen) + 0.5 for m in (3, 5)]
    sb = [torch.rand(32, generator=gen) + 0.5 for _ in range(2)]

    def call(a_list, b_list, sa, sb):
        return ckgemm.grouped_gemm(a_list, b_list, scale_a=sa, scale_b=sb, out_dtype=torch.float32)

    got = torch.compile(call, fullgraph=True, dynamic=False)(a_list, b_list, sa, sb)
    want = call(a_list, b_list, sa, sb)
    assert [x.dtype for x in got] == [torch.float32] * 2 and all(torch.equal(x, y) for x, y in zip(got, want))


def test_opcheck_of_the_list_ops():
    a, b, _ = _inputs()
    a_list, b_list = list(a.split([10, 0, 20])), list(b.unbind(0))
    torch.library.opcheck(torch.ops.ckgemm.grouped_gemm.default, (a_list, b_list, "RC", None, [], [], 0, None))
    c_list = [torch.empty(m, 48, dtype=torch.bfloat16) for m in (10, 0, 20)]
    torch.library.opcheck(torch.ops.ckgemm.grouped_gemm_out.default, (a_list, b_list, c_list, "RC", None, [], [],
                                                                        0, None))


def test_a_compiled_list_call_refuses_what_the_eager_call_refuses():
    """A stacked tensor where a list belongs is never split and computed, and an empty list is no silent no-op:
    both stop the compile with an error (eagerly they raise InvalidTypeError / InvalidArgumentError)."""
    a, b, _ = _inputs()
    stacked_a, stacked_b = a[:24].reshape(3, 8, 64), b
    with pytest.raises(Exception):
        torch.compile(lambda x, y: ckgemm.grouped_gemm(x, y), fullgraph=True, dynamic=False)(stacked_a, stacked_b)
    with pytest.raises(Exception):  # the call cannot become the op's node: tracing stops with an error
        torch.compile(lambda: ckgemm.grouped_gemm([], []), fullgraph=True, dynamic=False)()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_call_refuses_inputs_that_require_grad(backend):
    """Inside the custom op grad mode is off, so the op's own validation cannot see requires_grad: the compiled
    call refuses it before the op, with eager's message (under fullgraph inside Dynamo's error)."""
    a, b, sizes = _inputs()
    a_list = [a[:10].detach().requires_grad_(), a[10:]]
    b_list = [b[0], b[1]]
    message = r"group 0: a\[0\] .*requires grad, but ckgemm ops are not differentiable"
    with pytest.raises(ckgemm.InvalidArgumentError, match=message):
        torch.compile(lambda x, y: ckgemm.grouped_gemm(x, y), backend=backend)(a_list, b_list)
    with pytest.raises(Exception, match=message):
        torch.compile(lambda x, y: ckgemm.grouped_gemm(x, y), fullgraph=True, backend=backend)(a_list, b_list)
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"grouped_gemm_packed: a .*requires grad"):
        torch.compile(lambda x, y, s: ckgemm.grouped_gemm_packed(x, y, s), backend=backend)(
            a.detach().requires_grad_(), b, sizes)
    with torch.no_grad():  # as eagerly: under no_grad the same inputs are fine
        got = torch.compile(lambda x, y: ckgemm.grouped_gemm(x, y), backend=backend)(a_list, b_list)
    assert torch.equal(got[0], ckgemm.grouped_gemm([a[:10]], [b[0]])[0])


def test_a_compiled_out_call_without_outputs_is_refused():
    a, b, _ = _inputs()
    with pytest.raises(ckgemm.InvalidTypeError, match="c_list must be a list or tuple"):
        torch.compile(lambda x, y: ckgemm.grouped_gemm_out(x, y, None))([a[:10]], [b[0]])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_compiled_call_refuses_outputs_aliasing_inputs_and_mixed_devices(backend):
    """The functionalized graph hands an _out op a copy of its output, so the op alone would compute an output
    that aliases an input and copy it back over the input; a meta tensor among CPU ones reaches only the fake
    kernel. Both are refused while tracing with the eager validator's message, and nothing is written."""
    torch._dynamo.reset()
    a, b, sizes = _inputs()
    a_before = a.clone()
    packed = torch.compile(lambda x, y, s, o: ckgemm.grouped_gemm_packed(x, y, s, out=o), backend=backend)
    with pytest.raises(Exception, match="grouped_gemm_packed: out overlaps a in memory"):
        packed(a, b, sizes, a[:, :48])
    w = a[:10].clone()
    w_before = w.clone()
    listed = torch.compile(lambda x, y, c: ckgemm.grouped_gemm_out(x, y, c), backend=backend)
    with pytest.raises(Exception, match=r"grouped_gemm_out: group 0: output c\[0\] overlaps a\[0\] in memory"):
        listed([w], [b[0]], [w[:, :48]])
    assert torch.equal(a, a_before) and torch.equal(w, w_before)
    meta_b = [b[0], torch.empty_like(b[1], device="meta")]
    with pytest.raises(Exception, match=r"b\[1\] .*is on meta, but a\[1\] is on cpu"):
        torch.compile(lambda x, y: ckgemm.grouped_gemm(x, y), backend=backend)([a[:10], a[10:]], meta_b)
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"is on meta"):  # the op called directly
        torch.ops.ckgemm.grouped_gemm([a[:10], a[10:]], meta_b, "RC", None, [], [], 0, None)
    out = torch.empty(a.shape[0], 48, dtype=a.dtype)  # a valid call still compiles and computes
    packed(a, b, sizes, out)
    assert torch.equal(out, ckgemm.grouped_gemm_packed(a, b, sizes))


def test_inductor_refuses_an_inference_output_as_eagerly_and_writes_nothing():
    """Inductor hands the op the output itself: the eager INFERENCE_OUTPUT refusal, nothing written (aot_eager
    hands it a copy and torch refuses the copy back: README, torch.compile exceptions)."""
    a, b, sizes = _inputs()
    normal = torch.full((10, 48), float("nan"), dtype=a.dtype)
    with torch.inference_mode():
        frozen = torch.full((10, 48), float("nan"), dtype=a.dtype)
        packed_out = torch.full((30, 48), float("nan"), dtype=a.dtype)
    torch._dynamo.reset()
    listed = torch.compile(lambda x, y, c: ckgemm.grouped_gemm_out(x, y, c), backend="inductor")
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"group 1: c\[1\] .*inference tensor"):
        listed([a[:10], a[10:20]], [b[0], b[1]], [normal, frozen])
    packed = torch.compile(lambda x, y, s, o: ckgemm.grouped_gemm_packed(x, y, s, out=o), backend="inductor")
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"out .*inference tensor"):
        packed(a, b, sizes, packed_out)
    assert normal.isnan().all() and frozen.isnan().all() and packed_out.isnan().all()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_compiled_call_with_a_tensor_of_a_rank_no_form_takes_raises_the_eager_error(backend):
    """The fake kernels' overlap model meets the tensors before validation has checked their ranks."""
    a, b, sizes = _inputs()
    torch._dynamo.reset()
    packed = torch.compile(lambda x, y, s, o: ckgemm.grouped_gemm_packed(x, y, s, out=o), backend=backend)
    with pytest.raises(Exception, match=r"out .*must be 2-D, got 4-D"):
        packed(a, b, sizes, torch.empty(1, 1, 30, 48, dtype=a.dtype))
    listed = torch.compile(lambda x, y, c: ckgemm.grouped_gemm_out(x, y, c), backend=backend)
    with pytest.raises(Exception, match=r"c\[0\] .*must be 2-D, got 4-D"):
        listed([a[:10]], [b[0]], [torch.empty(1, 1, 10, 48, dtype=a.dtype)])


@pytest.mark.parametrize("fullgraph", [False, True])
def test_compiled_inputs_of_the_wrong_rank_raise_the_eager_error_when_the_code_runs(fullgraph):
    """The allocating ops' fake kernels give such calls an output of no columns, so the trace completes and the
    op refuses them as eagerly (an InvalidArgumentError, a ValueError), not an IndexError while tracing."""
    a, b, sizes = _inputs()
    calls = {"packed b 2-D": lambda: ckgemm.grouped_gemm_packed(a, b[0], sizes, layout="RR"),
             "packed a 1-D": lambda: ckgemm.grouped_gemm_packed(a[0], b, sizes),
             "list b 1-D": lambda: ckgemm.grouped_gemm([a[:10]], [b[0, 0]], layout="RR"),
             "list a 0-D": lambda: ckgemm.grouped_gemm([a[0, 0]], [b[0]])}
    for name, call in calls.items():
        with pytest.raises(ckgemm.InvalidArgumentError) as eager:
            call()
        torch._dynamo.reset()
        with pytest.raises(ckgemm.InvalidArgumentError) as compiled:
            torch.compile(call, backend="aot_eager", fullgraph=fullgraph)()
        assert str(compiled.value) == str(eager.value), name


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_the_compiled_alias_check_takes_views_of_different_row_strides(backend):
    """Outputs sharing a buffer with different row strides (a 1-row block beside a column block) are valid and
    compile; an output laid over b's rows with another stride is refused with the validator's message."""
    torch._dynamo.reset()
    a, b, sizes = _inputs()
    buf = torch.zeros(10, 96, dtype=a.dtype)
    listed = torch.compile(lambda x, y, c: ckgemm.grouped_gemm_out(x, y, [c[5:6, :48], c[:, 48:]]), backend=backend,
                           fullgraph=True)  # the views made inside the graph, as a model makes them
    listed([a[:1], a[10:20]], [b[0], b[2]], buf)
    want = ckgemm.grouped_gemm([a[:1], a[10:20]], [b[0], b[2]])
    assert torch.equal(buf[5:6, :48], want[0]) and torch.equal(buf[:, 48:], want[1])
    b_before = b.clone()
    packed = torch.compile(lambda x, y, s: ckgemm.grouped_gemm_packed(x, y, s, out=y.view(-1)[:30 * 48].view(30, 48)),
                           backend=backend)  # rows of 48 laid over b's rows of 64
    with pytest.raises(Exception, match="grouped_gemm_packed: out overlaps b in memory"):
        packed(a, b, sizes)
    assert torch.equal(b, b_before)


_BF = torch.bfloat16
_A, _W, _S = torch.ones(6, 32, dtype=_BF), torch.ones(2, 16, 32, dtype=_BF), torch.tensor([2, 4])
_WRONG_TYPES = {  # arguments of a Python type the ops' schemas do not take
    "group_sizes as a list": lambda: ckgemm.grouped_gemm_packed(_A, _W, [2, 4]),
    "layout an int": lambda: ckgemm.grouped_gemm_packed(_A, _W, _S, layout=1),
    "backend an int": lambda: ckgemm.grouped_gemm_packed(_A, _W, _S, backend=1),
    "out_dtype a str": lambda: ckgemm.grouped_gemm_packed(_A, _W, _S, out_dtype="bf16"),
    "check_sizes a str": lambda: ckgemm.grouped_gemm_packed(_A, _W, _S, check_sizes="x"),
    "scale_a a float": lambda: ckgemm.grouped_gemm_packed(_A, _W, _S, scale_a=1.0, scale_b=1.0),
    "b_list stacked": lambda: ckgemm.grouped_gemm([_A[:2], _A[2:]], _W),
    "b_list holding None": lambda: ckgemm.grouped_gemm([_A[:2]], [None]),
    "list backend an int": lambda: ckgemm.grouped_gemm([_A[:2]], [_W[0]], backend=1),
    "c_list a tensor": lambda: ckgemm.grouped_gemm_out([_A[:2]], [_W[0]], torch.empty(2, 16, dtype=_BF)),
}


@pytest.mark.parametrize("name", sorted(_WRONG_TYPES))
def test_a_compiled_call_with_wrong_argument_types_raises_the_eager_error(name):
    """The schemas refuse these with Dynamo's TorchRuntimeError; the wrapper raises the eager error first."""
    call = _WRONG_TYPES[name]
    with pytest.raises(ckgemm.CkgemmError) as eager:
        call()
    torch._dynamo.reset()
    with pytest.raises(type(eager.value)) as compiled:
        torch.compile(call, backend="eager")()
    assert str(compiled.value) == str(eager.value)


def test_make_fx_traces_the_op_with_the_sizes_as_an_input():
    """Outside torch.compile, make_fx used to trace the reference path: the group sizes read on the host were
    baked into the graph, which then computed the example's split for any sizes."""
    from torch.fx.experimental.proxy_tensor import make_fx
    a, b, sizes = _inputs()
    other = torch.tensor([25, 5, 0])
    for pre_dispatch in (False, True):
        graph = make_fx(lambda x, s: ckgemm.grouped_gemm_packed(x, b, s), pre_dispatch=pre_dispatch)(a, sizes)
        assert torch.equal(graph(a, other), ckgemm.grouped_gemm_packed(a, b, other)), pre_dispatch
        assert "ckgemm.grouped_gemm_packed" in graph.code, pre_dispatch
    lists = make_fx(lambda x: ckgemm.grouped_gemm([x[:10], x[10:]], [b[0], b[2]]))(a)  # no sizes to bake in
    assert all(torch.equal(p, q) for p, q in zip(lists(a), ckgemm.grouped_gemm([a[:10], a[10:]], [b[0], b[2]])))


def test_meta_and_fake_tensors_get_shapes_without_reading_sizes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    meta = ckgemm.grouped_gemm_packed(torch.empty(30, 64, dtype=_BF, device="meta"),
                                      torch.empty(3, 48, 64, dtype=_BF, device="meta"),
                                      torch.tensor([10, 0, 20], device="meta"))
    assert meta.shape == (30, 48) and meta.device.type == "meta" and meta.dtype == _BF
    with FakeTensorMode():
        a, b = torch.empty(30, 64, dtype=_BF), torch.empty(3, 48, 64, dtype=_BF)
        assert ckgemm.grouped_gemm_packed(a, b, torch.tensor([10, 0, 20])).shape == (30, 48)
        assert [c.shape for c in ckgemm.grouped_gemm([a[:10], a[10:]], [b[0], b[1]])] == [(10, 48), (20, 48)]
    real_sizes = torch.tensor([10, 0, 20])  # made outside the mode: read as before
    with FakeTensorMode():
        a, b = torch.empty(30, 64, dtype=_BF), torch.empty(3, 48, 64, dtype=_BF)
        assert ckgemm.grouped_gemm_packed(a, b, real_sizes).shape == (30, 48)


def test_meta_and_fake_calls_are_validated_as_eager_ones():
    from torch._subclasses.fake_tensor import FakeTensorMode
    meta = (lambda *s, dtype=_BF: torch.empty(*s, dtype=dtype, device="meta"))
    sizes = torch.tensor([10, 0, 20], device="meta")
    with pytest.raises(ckgemm.InvalidArgumentError, match="K mismatch"):
        ckgemm.grouped_gemm_packed(meta(30, 64), meta(3, 48, 32), sizes)
    with pytest.raises(ckgemm.InvalidTypeError, match="float32"):
        ckgemm.grouped_gemm_packed(meta(30, 64, dtype=torch.float32), meta(3, 48, 64, dtype=torch.float32), sizes)
    with pytest.raises(ckgemm.InvalidArgumentError, match="out"):
        ckgemm.grouped_gemm_packed(meta(30, 64), meta(3, 48, 64), sizes, out=meta(30, 47))
    with FakeTensorMode():
        a, b = torch.empty(30, 64, dtype=_BF), torch.empty(3, 48, 64, dtype=_BF)
        with pytest.raises(ckgemm.InvalidArgumentError, match="length G=3"):
            ckgemm.grouped_gemm_packed(a, b, torch.tensor([10, 20]))


def test_a_plain_fake_tensor_mode_refuses_outputs_aliasing_inputs():
    """The fake kernels' overlap check read data_ptr(), which a FakeTensor answers with 0 ("no memory") and a
    deprecation warning, so outside Dynamo an aliasing output went through."""
    import warnings
    from torch._subclasses.fake_tensor import FakeTensorMode
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with FakeTensorMode():
            buf, w, s = torch.empty(6, 32, dtype=_BF), torch.empty(2, 16, 32, dtype=_BF), torch.tensor([2, 4])
            with pytest.raises(ckgemm.InvalidArgumentError, match="out overlaps a"):
                ckgemm.grouped_gemm_packed(buf, w, s, out=buf[:, :16])
            ckgemm.grouped_gemm_packed(buf, w, s, out=torch.empty(6, 16, dtype=_BF))


def test_a_fullgraph_dynamic_scaled_call_with_a_wrong_type_carries_the_eager_message():
    """Scale validation builds its expected-shapes text only on failure: with symbolic sizes, formatting it on
    every call stopped Dynamo (str.join) before the eager error of a bad out_dtype could be reported."""
    from ckgemm.testing import quant

    a, sa = quant.per_token_cast_to_fp8(torch.randn(8, 256))
    b, sb = quant.per_block_cast_to_fp8(torch.randn(2, 128, 256))
    sizes = torch.tensor([3, 5])
    call = lambda x, y, s: ckgemm.grouped_gemm_packed(x, y, s, scale_a=sa, scale_b=sb, out_dtype="bf16")  # noqa: E731
    with pytest.raises(ckgemm.InvalidTypeError) as eager:
        call(a, b, sizes)
    torch._dynamo.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(call, fullgraph=True, dynamic=True, backend="eager")(a, b, sizes)
    assert str(eager.value) in str(compiled.value)
