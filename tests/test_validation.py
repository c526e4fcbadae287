"""Every bad input raises the documented exception type, its message names the group, the tensor,
its shape/dtype/stride/device and the rule; and a bad call never writes into caller outputs. The shared
catalogue (ckgemm/bad_inputs.py) runs here on the reference; tests/test_native_rules.py runs it through
the native validator's g++ build, tests/test_gpu_native.py through the native op."""
from __future__ import annotations

import re

import pytest
import torch

import ckgemm
from ckgemm import InvalidArgumentError, InvalidTypeError, bad_inputs
from support import generator, make_group, poison, rand_tensor

F16 = torch.float16


def _groups(n=3, dtype=F16, layout="RC", m=8, nn=16, k=32):
    gen = generator(f"validation-{n}-{dtype}-{layout}")
    pairs = [make_group(m, nn, k, dtype, layout, gen) for _ in range(n)]
    return [a for a, _ in pairs], [b for _, b in pairs]


def _raises(exc_type, pattern, fn, *args, **kwargs):
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    assert issubclass(info.type, ckgemm.CkgemmError)
    assert re.search(pattern, str(info.value)), f"message {str(info.value)!r} lacks {pattern!r}"
    return str(info.value)


def test_non_2d_names_group_and_shape():
    a, b = _groups()
    b[2] = b[2].unsqueeze(0)
    msg = _raises(InvalidArgumentError, r"group 2: b\[2\] \(shape \(1, 16, 32\)", ckgemm.grouped_gemm, a, b)
    assert "dtype torch.float16" in msg and "stride" in msg and "device cpu" in msg and "must be 2-D" in msg


@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_k_mismatch(layout):
    a, b = _groups(layout=layout)
    a[1] = a[1][:, :31]
    _raises(InvalidArgumentError, r"group 1: .*K mismatch", ckgemm.grouped_gemm, a, b, layout=layout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int16, torch.float8_e5m2, torch.bool,
                                   torch.int32, torch.uint8])
def test_unsupported_dtype(dtype):
    a = [torch.zeros(4, 8).to(dtype)]
    b = [torch.zeros(6, 8).to(dtype)]
    _raises(InvalidTypeError, r"group 0: a\[0\].*unsupported dtype", ckgemm.grouped_gemm, a, b)


@pytest.mark.parametrize("family,wrong", [("nvidia", torch.float8_e4m3fnuz), ("gfx942", torch.float8_e4m3fn),
                                          ("gfx950", torch.float8_e4m3fnuz)])
def test_fp8_flavour_of_the_device(monkeypatch, family, wrong):
    """A device family's hardware uses one e4m3 flavour; the other is rejected, never reinterpreted."""
    monkeypatch.setattr(ckgemm.validate, "device_family", lambda device: family)
    gen = generator(f"fp8-flavour-{family}")
    a, b = make_group(4, 8, 16, wrong, "RC", gen)
    _raises(InvalidTypeError, rf"not the fp8 flavour of device .*family {family}", ckgemm.grouped_gemm, [a], [b])


def _outputs(a, b, dtype=F16):
    return [poison((x.shape[0], y.shape[0]), dtype) for x, y in zip(a, b)]


def _assert_untouched(outs):
    for c in outs:
        assert torch.isnan(c).all(), "a rejected call wrote into an output"


@pytest.mark.parametrize("case", ["length", "shape", "dtype", "device", "alias-input", "alias-output",
                                  "self-overlap", "late-k-mismatch"])
def test_bad_outputs_raise_and_nothing_is_written(case):
    a, b = _groups(n=4)
    outs = _outputs(a, b)
    pattern, exc = {
        "length": ("c_list has 3 outputs but there are 4 groups", InvalidArgumentError),
        "shape": (r"group 1: c\[1\].*must have shape \(8, 16\)", InvalidArgumentError),
        "dtype": (r"group 2: c\[2\].*must have dtype torch.float16", InvalidTypeError),
        "device": (r"group 3: c\[3\].*is on meta", InvalidArgumentError),
        "alias-input": (r"output c\[0\] overlaps a\[0\]", InvalidArgumentError),
        "alias-output": (r"output c\[\d\] overlaps c\[\d\]", InvalidArgumentError),
        "self-overlap": (r"group 1: c\[1\].*rows overlap", InvalidArgumentError),
        "late-k-mismatch": (r"group 3: .*K mismatch", InvalidArgumentError),
    }[case]
    given = list(outs)
    if case == "length":
        given = given[:3]
    elif case == "shape":
        given[1] = poison((8, 15), F16)
    elif case == "dtype":
        given[2] = poison((8, 16), torch.float32)
    elif case == "device":
        given[3] = torch.empty((8, 16), dtype=F16, device="meta")
    elif case == "alias-input":
        big = rand_tensor((8, 32), F16, generator("alias"))
        a[0] = big
        given[0] = big[:, :16]
    elif case == "alias-output":
        given[2] = given[1]
    elif case == "self-overlap":
        given[1] = torch.full((200,), float("nan"), dtype=F16).as_strided((8, 16), (4, 1))
    elif case == "late-k-mismatch":
        b[3] = b[3][:, :16].contiguous()
    _raises(exc, pattern, ckgemm.grouped_gemm_out, a, b, given)
    _assert_untouched([c for c in outs])


def test_column_blocks_of_one_buffer_are_not_an_overlap():
    """Outputs that are disjoint column blocks of one buffer (leading stride > N) are valid."""
    a, b = _groups(n=3)
    buf = poison((8, 48), F16)
    outs = [buf[:, 16 * g:16 * (g + 1)] for g in range(3)]
    ckgemm.grouped_gemm_out(a, b, outs)
    assert torch.isfinite(buf).all()


def _packed(layout="RC", groups=3, rows=12, n=16, k=32, dtype=F16):
    gen = generator(f"packed-validation-{layout}")
    a = rand_tensor((rows, k), dtype, gen)
    b = rand_tensor((groups, n, k) if layout == "RC" else (groups, k, n), dtype, gen)
    return a, b


def test_unknown_and_unavailable_backends():
    a, b = _groups()
    _raises(InvalidArgumentError, "^grouped_gemm: unknown backend 'nope'", ckgemm.grouped_gemm, a, b, backend="nope")
    _raises(InvalidArgumentError, r"unknown backend 'TORCH' \(names are lower case\)", ckgemm.grouped_gemm, a, b,
            backend="TORCH")
    for bad in (3, ["torch"]):  # a wrong Python type is a TypeError, unhashable ones included
        _raises(InvalidTypeError, "^grouped_gemm: backend must be a str", ckgemm.grouped_gemm, a, b, backend=bad)
    _raises(InvalidTypeError, "^grouped_gemm_packed: backend must be a str", ckgemm.grouped_gemm_packed,
            torch.cat(a), torch.stack(b), torch.tensor([x.shape[0] for x in a]), backend=3)
    for name in ("cutlass", "ck"):
        with pytest.raises(ckgemm.BackendUnavailableError, match=f"^grouped_gemm: backend '{name}' cannot run on cpu: "):
            ckgemm.grouped_gemm(a, b, backend=name)
    assert "torch" in ckgemm.available_backends()
    status = ckgemm.backend_status("cpu")
    assert status["torch"] == "available" and status["cutlass"] != "available"
    if not torch.cuda.is_available():  # no backend can run on a GPU torch cannot see
        assert ckgemm.available_backends("cuda") == []
        assert "no GPU is visible" in ckgemm.backend_status("cuda")["torch"]


CATALOGUE = bad_inputs.catalogue("cpu", seed=7)


@pytest.mark.parametrize("case", CATALOGUE, ids=[c.name for c in CATALOGUE])
def test_catalogue_on_the_reference(case):
    """Purpose: each documented bad input raises its type, message and rule id, and writes nothing."""
    passed, detail = bad_inputs.check(case, backend="torch")
    assert passed, detail


def test_every_rejected_input_is_a_value_error():
    """`except ValueError` catches every bad input (dtype errors are TypeErrors as well), as users of
    torch.testing-style harnesses and DeepGEMM's asserts write their guards."""
    for case in CATALOGUE:
        with pytest.raises(ValueError):
            bad_inputs.run(case, backend="torch")
    assert issubclass(ckgemm.InvalidTypeError, TypeError) and issubclass(ckgemm.InvalidTypeError, ValueError)


def test_catalogue_covers_every_rule_the_validator_has():
    """A rule with no catalogue case is a rule nobody checks on the native path."""
    exercised = {c.rule for c in CATALOGUE}
    untested = {ckgemm.Rule.NONE, ckgemm.Rule.TOO_LARGE, ckgemm.Rule.FP8_FLAVOUR, ckgemm.Rule.PREPACKED}  # below
    missing = set(ckgemm.Rule) - exercised - untested
    assert not missing, f"rules without a catalogue case: {sorted(r.name for r in missing)}"


def test_native_size_limit_names_the_group_or_the_packed_rows():
    """TOO_LARGE (checked when a native call failed; the reference has no limit): per group in the list
    form, sum(M) in the packed form, whose kernels index all rows with 32 bits."""
    from ckgemm.dtypes import rule_for
    from ckgemm.validate import ListProblem, PackedProblem, check_native_limits

    bf16, cpu, big = rule_for(torch.bfloat16), torch.device("cpu"), 2**31
    check_native_limits("op", ListProblem(bf16, cpu, "RC", ((big - 1, 16, 16),)))  # at the limit: fine
    with pytest.raises(InvalidArgumentError, match=r"op: group 1: 2147483648x16x16 has a dimension above 2\^31-1") as e:
        check_native_limits("op", ListProblem(bf16, cpu, "RC", ((1, 16, 16), (big, 16, 16))))
    assert (e.value.rule, e.value.group) == (ckgemm.Rule.TOO_LARGE, 1)
    with pytest.raises(InvalidArgumentError, match=r"op: sum\(M\) x N x K = 2147483648x16x16") as e:
        check_native_limits("op", PackedProblem(bf16, cpu, "RC", 2, big, 16, 16, None))
    assert (e.value.rule, e.value.group) == (ckgemm.Rule.TOO_LARGE, None)


def test_prepacked_weights_against_their_layout():
    a, b = _groups(layout="RR")
    weights = ckgemm.prepack(b, layout="RR")
    assert weights.layout == "RR" and not weights.transposed  # the torch reference reads RR as it is
    _raises(InvalidArgumentError, "prepacked from layout RR, but the call asks for layout RC", ckgemm.grouped_gemm,
            a, weights, layout="RC")
    assert [c.shape for c in ckgemm.grouped_gemm(a, weights)] == [(8, 16)] * 3
    for layout, error in ((1, InvalidTypeError), ("rr", InvalidArgumentError)):  # not a layout: that error first
        with pytest.raises(error, match="layout") as e:
            ckgemm.grouped_gemm(a, weights, layout=layout)
        assert e.value.rule == ckgemm.Rule.LAYOUT


@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_tensor_prepacked_weights_serve_every_form(layout):
    """A PackedWeights from one [G, ., .] tensor (and its carried scales) works in the list forms too."""
    gen = generator(f"prepack-forms-{layout}")
    f8 = torch.float8_e4m3fn
    g, m, n, k = 3, 5, 16, 200
    b = rand_tensor((g, n, k) if layout == "RC" else (g, k, n), f8, gen)
    a = rand_tensor((g * m, k), f8, gen)
    sa, sb = torch.rand(g * m, generator=gen) + 0.5, torch.rand(g, n, generator=gen) + 0.5
    weights = ckgemm.prepack(b, layout=layout, scales=sb)
    sizes = torch.tensor([m] * g)
    packed = ckgemm.grouped_gemm_packed(a, weights, sizes, scale_a=sa)
    outs = ckgemm.grouped_gemm(list(a.split(m)), weights, scale_a=list(sa.split(m)))
    assert torch.equal(torch.cat(outs), packed)
    c = [torch.full((m, n), float("nan"), dtype=torch.bfloat16) for _ in range(g)]
    ckgemm.grouped_gemm_out(list(a.split(m)), weights, c, scale_a=list(sa.split(m)))
    assert torch.equal(torch.cat(c), packed)


def test_prepack_refuses_bad_scales_and_list_weights_in_the_packed_form():
    a, b = _groups(dtype=torch.int8)
    stacked = torch.stack(b)
    _raises(InvalidArgumentError, r"scales \(shape \(5,\).*fits no recipe.*\(3, 16\) = \[G, N\] \(one per expert",
            ckgemm.prepack, stacked, scales=torch.ones(5))
    _raises(InvalidTypeError, "scales must be float32", ckgemm.prepack, stacked, scales=torch.ones(3, 16, dtype=F16))
    _raises(InvalidArgumentError, "scales are for fp8 and int8 weights", ckgemm.prepack,
            stacked.to(torch.bfloat16), scales=torch.ones(3))
    _raises(InvalidArgumentError, r"scales\[1\] .*fits no recipe", ckgemm.prepack, b,
            scales=[torch.ones(16), torch.ones(15), torch.ones(16)])
    _raises(InvalidArgumentError, "scales has 2 entries but b has 3 groups", ckgemm.prepack, b,
            scales=[torch.ones(16)] * 2)
    _raises(InvalidArgumentError, "block scales are for fp8 weights", ckgemm.prepack, stacked, scales=torch.ones(3, 1, 1))
    _raises(InvalidArgumentError, r"group 1: scales\[1\] .*one recipe for every expert", ckgemm.prepack, b,
            scales=[torch.ones(16), torch.ones(()), torch.ones(16)])
    listed = ckgemm.prepack(b, scales=[torch.ones(16)] * 3)
    _raises(InvalidArgumentError, "prepacked from a list", ckgemm.grouped_gemm_packed, torch.cat(a), listed,
            torch.tensor([8, 8, 8]), scale_a=torch.ones(24))


def test_prepack_checks_the_weights_and_stores_contiguous_scales():
    a, b = _groups(dtype=torch.int8)
    stacked = torch.stack(b)
    strided = torch.rand(3, 32)[:, ::2] + 0.5
    weights = ckgemm.prepack(stacked, scales=strided)  # the load-time step stores what the calls take
    assert weights.scale_b.is_contiguous() and torch.equal(weights.scale_b, strided)
    sa = torch.rand(24) + 0.5
    got = ckgemm.grouped_gemm_packed(torch.cat(a), weights, torch.tensor([8, 8, 8]), scale_a=sa)
    assert torch.equal(got, ckgemm.grouped_gemm_packed(torch.cat(a), stacked, torch.tensor([8, 8, 8]), scale_a=sa,
                                                       scale_b=strided.contiguous()))
    expanded = ckgemm.prepack(b, scales=list(torch.tensor(0.5).expand(3)))  # stride-0 views
    assert all(s.is_contiguous() for s in expanded.scale_b)
    _raises(InvalidTypeError, "unsupported dtype torch.float32", ckgemm.prepack, stacked.float())
    _raises(InvalidArgumentError, "^prepack: b has G=0 groups", ckgemm.prepack, stacked[:0])  # as every form says
    _raises(InvalidTypeError, r"scales must be float32, got torch.float64; expected a float32 tensor on cpu of "
            r"shape one of \(3,\) = \[G\]", ckgemm.prepack, stacked, scales=torch.ones(3, 16, dtype=torch.float64))
    _raises(InvalidTypeError, r"group 1: b\[1\] .*share one dtype and device", ckgemm.prepack,
            [b[0], b[1].to(torch.bfloat16), b[2]])
    weights = ckgemm.prepack(stacked, scales=torch.ones(3, 16))
    _raises(InvalidArgumentError, "scale_a: not given, but the prepacked weights carry scales", ckgemm.grouped_gemm_packed,
            torch.cat(a), weights, torch.tensor([8, 8, 8]))


def test_prepacked_weights_describe_themselves():
    _, b = _groups()
    stacked = torch.stack(b)
    weights = ckgemm.prepack(stacked)
    assert (weights.shape, weights.dtype, weights.device) == (stacked.shape, stacked.dtype, stacked.device)
    listed = ckgemm.prepack(b)
    assert listed.shape == tuple(x.shape for x in b) and listed.dtype == b[0].dtype
    assert weights == weights and weights != ckgemm.prepack(stacked.clone())  # identity, never a tensor compare


def test_cumulative_offsets_as_group_sizes_get_a_hint():
    a, b = _groups()
    _raises(InvalidArgumentError, "look like cumulative offsets", ckgemm.grouped_gemm_packed, torch.cat(a),
            torch.stack(b), torch.tensor([8, 16, 24]))


def test_overlap_errors_name_the_group_and_describe_both_tensors():
    a, b = _groups()
    c = [torch.empty(8, 16, dtype=a[0].dtype) for _ in a]
    with pytest.raises(InvalidArgumentError, match=r"group 2: output c\[2\] overlaps c\[1\] in memory") as e:
        ckgemm.grouped_gemm_out(a, b, [c[0], c[1], c[1]])
    assert (e.value.rule, e.value.group) == (ckgemm.Rule.OVERLAP, 2)
    assert str(e.value).count("shape (8, 16)") == 2


def test_an_out_beside_weights_sliced_from_fused_ones_is_accepted():
    """Weights sliced from fused [G, 2N, K] ones (batch stride not their rows'): memory between their groups is
    free for the output, and only an out over some group's rows is refused."""
    gen = generator("fused-slice")
    buf = torch.randn(2, 5, 16, generator=gen).half()
    b, a, sizes = buf[:, :4, :8], torch.randn(10, 8, generator=gen).half(), torch.tensor([5, 5])
    out = buf.view(10, 16)[:, 8:12]
    expected = ckgemm.grouped_gemm_packed(a, b.contiguous(), sizes)
    assert torch.equal(ckgemm.grouped_gemm_packed(a, b, sizes, out=out), expected)
    with pytest.raises(InvalidArgumentError, match="out overlaps b in memory") as e:
        ckgemm.grouped_gemm_packed(a, b, sizes, out=buf.view(10, 16)[:, 4:8])
    assert e.value.rule == ckgemm.Rule.OVERLAP
    torch._dynamo.reset()  # compiled, such an out is refused while tracing (README: a torch issue drops its writes)
    compiled = torch.compile(lambda x, y, s, o: ckgemm.grouped_gemm_packed(x, y, s, out=o), backend="aot_eager")
    with pytest.raises(Exception, match="out overlaps b in memory"):
        compiled(a, b, sizes, out)


def test_a_failed_call_leaves_no_dispatch_record():
    a, b = _groups()
    ckgemm.grouped_gemm(a, b)
    assert ckgemm.last_dispatch() is not None
    with pytest.raises(InvalidArgumentError):
        ckgemm.grouped_gemm(a, b[:2])
    assert ckgemm.last_dispatch() is None
    ckgemm.grouped_gemm(a, b)
    with pytest.raises(InvalidArgumentError, match="prepacked from layout RC"):  # refused while unwrapping
        ckgemm.grouped_gemm(a, ckgemm.prepack(b), layout="RR")
    assert ckgemm.last_dispatch() is None
    ckgemm.grouped_gemm(a, b)
    with pytest.raises(InvalidTypeError):  # the packed form's first check
        ckgemm.grouped_gemm_packed(torch.cat(a), torch.stack(b), torch.tensor([8, 8, 8]), check_sizes="yes")
    assert ckgemm.last_dispatch() is None


def test_list_subclasses_are_lists():
    class Experts(list):
        pass

    a, b = _groups()
    got = ckgemm.grouped_gemm(Experts(a), Experts(b))
    assert all(torch.equal(x, y) for x, y in zip(got, ckgemm.grouped_gemm(a, b)))


def test_sparse_inputs_are_refused_by_name():
    a, b = _groups()
    _raises(InvalidArgumentError, r"group 0: a\[0\] .*layout torch.sparse_coo.*dense \(strided\) tensors",
            ckgemm.grouped_gemm, [a[0].to_sparse()], [b[0]])


def test_set_num_sms_takes_a_non_negative_int():
    """DeepGEMM's set_num_sms: an SM cap for the native kernels (0: every SM); the torch backend ignores it."""
    try:
        ckgemm.set_num_sms(16)
        assert ckgemm.get_num_sms() == 16
        a = [torch.randint(-9, 9, (5, 32), dtype=torch.int8)]
        b = [torch.randint(-9, 9, (7, 32), dtype=torch.int8)]
        assert torch.equal(ckgemm.grouped_gemm(a, b, backend="torch")[0], a[0].int() @ b[0].int().t())
        with pytest.raises(ckgemm.InvalidArgumentError, match=">= 0"):
            ckgemm.set_num_sms(-1)
        with pytest.raises(ckgemm.InvalidTypeError, match="must be an int"):
            ckgemm.set_num_sms(8.0)
        with pytest.raises(ckgemm.InvalidTypeError):
            ckgemm.set_num_sms(True)
        assert ckgemm.get_num_sms() == 16  # a refused value changes nothing
    finally:
        ckgemm.set_num_sms(0)
    assert ckgemm.get_num_sms() == 0


def test_out_dtype_hint_fits_the_inputs():
    """An unscaled call asking for another output: 8-bit inputs are pointed at scales, 16-bit ones are not (scales
    for 16-bit inputs are refused)."""
    a, b = _groups()
    msg = _raises(InvalidTypeError, "unscaled torch.float16 inputs give torch.float16", ckgemm.grouped_gemm, a, b,
                  out_dtype=torch.float32)
    assert "scale_a" not in msg and "no other output" in msg
    a8, b8 = [x.to(torch.float8_e4m3fn) for x in a], [x.to(torch.float8_e4m3fn) for x in b]
    _raises(InvalidTypeError, "pass scale_a and scale_b for a scaled output", ckgemm.grouped_gemm, a8, b8,
            out_dtype=torch.bfloat16)


def test_transposed_weights_are_pointed_at_the_other_layout():
    """torch._grouped_mm users pass B as w.transpose(-2, -1): the message names the layout that reads w as it is."""
    gen = generator("transposed-weights")
    w = rand_tensor((3, 16, 32), F16, gen)  # [G, N, K]
    a = rand_tensor((12, 32), F16, gen)
    msg = _raises(InvalidArgumentError, "innermost stride must be 1", ckgemm.grouped_gemm_packed, a, w.transpose(1, 2),
                  torch.tensor([4, 4, 4]), layout="RR")
    assert "layout='RC'" in msg and "no copy" in msg
    c = ckgemm.grouped_gemm_packed(a, w, torch.tensor([4, 4, 4]), layout="RC")  # the advice works, with no copy
    torch.testing.assert_close(c, torch.cat([a[4 * g:4 * g + 4].float() @ w[g].float().t() for g in range(3)]).half(),
                               rtol=1e-2, atol=1e-2)
    msg = _raises(InvalidArgumentError, "innermost stride must be 1", ckgemm.grouped_gemm,
                  [rand_tensor((32, 4), F16, gen).t()], [w[0]])
    assert "layout=" not in msg  # activations get no layout advice


def test_an_inference_output_written_outside_inference_mode_is_refused_before_any_write():
    a, b = _groups()
    outs = [poison((x.shape[0], y.shape[0]), x.dtype) for x, y in zip(a, b)]
    with torch.inference_mode():
        late = poison(outs[-1].shape, outs[-1].dtype)
    _raises(InvalidArgumentError, rf"group {len(a) - 1}: c\[{len(a) - 1}\].*inference tensor", ckgemm.grouped_gemm_out,
            a, b, outs[:-1] + [late])
    assert all(torch.isnan(c.float()).all() for c in outs[:-1] + [late])
    with torch.inference_mode():  # inside inference mode torch allows the write, and so does ckgemm
        ckgemm.grouped_gemm_out(a, b, outs[:-1] + [late])
    assert not torch.isnan(late.float()).any()
