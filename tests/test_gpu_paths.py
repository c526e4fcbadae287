"""Native paths beyond the kernels themselves, on a GPU: the bad-input catalogue through the native op
against the reference (same messages), prepacked 8-bit RR weights against the per-call transpose, and
the repack kernel's exactness."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from ckgemm.testing import check, grouped_gemm_reference_packed
from gpu_support import DEVICE, FP8_MAX_DIFF, MARKS, NATIVE
from support import generator, poison, rand_tensor

pytestmark = MARKS


def test_bad_input_catalogue_native_matches_reference():
    """The one bad-input catalogue through the native op and the reference: the same exception type and
    message (validate.py writes both), the same rule, nothing written."""
    from ckgemm import bad_inputs

    for case in bad_inputs.catalogue(DEVICE, seed=3):
        messages = {}
        for backend in ("torch", NATIVE):
            passed, detail = bad_inputs.check(case, backend=backend)
            assert passed, f"{case.name} [{backend}]: {detail}"
            messages[backend] = detail
        assert messages["torch"] == messages[NATIVE], case.name


@pytest.mark.parametrize("dtype", [ckgemm.fp8_dtype_for(DEVICE) if torch.cuda.is_available() else torch.float16,
                                   torch.int8, torch.bfloat16], ids=["fp8", "int8", "bf16"])
@pytest.mark.parametrize("form", ["list", "packed", "list-of-stacked"])
def test_prepack_reads_rr_weights_once(dtype, form):
    """8-bit RR: per call B is transposed by the repack kernel (+transpose), except packed calls, which
    ckgemm's own 8-bit RR kernel takes as they are (tests/test_gpu_own_s8.py); prepacked, the call reads the
    stored RC weights (no copy), with bit-identical results where the same kernel runs (int8: its RR and RC
    kernels sum exactly; packed fp8 runs the RR kernel per call and an RC tile prepacked, each checked against
    the reference). 16-bit: prepack is a no-op wrapper.
    list-of-stacked: weights prepacked from one [G, K, N] tensor, called in the list form."""
    sizes = [37, 0, 130, 64]
    n, k = 256, 192
    gen = generator(f"gpu-prepack-{dtype}-{form}")
    a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
    b = rand_tensor((len(sizes), k, n), dtype, gen, DEVICE)
    if form == "packed":
        gs = torch.tensor(sizes, device=DEVICE)
        per_call = ckgemm.grouped_gemm_packed(a, b, gs, layout="RR")
        per_call_paths = ckgemm.last_dispatch().paths
        weights = ckgemm.prepack(b, layout="RR")
        packed = ckgemm.grouped_gemm_packed(a, weights, gs)
    else:
        a_list, b_list = list(a.split(sizes)), list(b)
        per_call = torch.cat(ckgemm.grouped_gemm(a_list, b_list, layout="RR"))
        per_call_paths = [p for p in ckgemm.last_dispatch().paths if p != "skip:empty"]
        weights = ckgemm.prepack(b_list if form == "list" else b, layout="RR")
        packed = torch.cat(ckgemm.grouped_gemm(a_list, weights))
    paths = [p for p in ckgemm.last_dispatch().paths if p != "skip:empty"]
    transposes = dtype.itemsize == 1 and NATIVE == "cutlass"
    assert weights.transposed == transposes and weights.layout == ("RC" if transposes else "RR")
    per_call_transposes = transposes and form != "packed"
    assert all(p.endswith("+transpose") == per_call_transposes for p in per_call_paths), per_call_paths
    assert not any("+" in p for p in paths), paths
    if not (transposes and form == "packed" and dtype.is_floating_point):
        assert torch.equal(per_call.view(torch.uint8), packed.view(torch.uint8))
    ref = grouped_gemm_reference_packed(a, b, sizes, layout="RR")
    for got in (packed, per_call):
        if dtype == torch.int8:
            assert torch.equal(got.cpu(), ref.to(torch.int32).cpu())
        else:
            check(got, ref, in_dtype=dtype, k=k, max_diff=FP8_MAX_DIFF if dtype.itemsize == 1 else None)


def test_list_forms_compile_fullgraph_on_the_native_backend():
    """The list forms' custom ops trace as one node each and run the native op inside (same bits)."""
    gen = generator("gpu-compile-list")
    a_list = [rand_tensor((m, 64), torch.bfloat16, gen, DEVICE) for m in (17, 0, 40)]
    b_list = [rand_tensor((48, 64), torch.bfloat16, gen, DEVICE) for _ in range(3)]
    eager = ckgemm.grouped_gemm(a_list, b_list)
    compiled = torch.compile(lambda a, b: ckgemm.grouped_gemm(a, b), fullgraph=True, backend="aot_eager")(a_list, b_list)
    assert all(torch.equal(x, y) for x, y in zip(compiled, eager))
    c_list = [poison((m, 48), torch.bfloat16, DEVICE) for m in (17, 0, 40)]
    torch.compile(lambda a, b, c: ckgemm.grouped_gemm_out(a, b, c), fullgraph=True, backend="aot_eager")(
        a_list, b_list, c_list)
    assert all(torch.equal(x, y) for x, y in zip(c_list, eager))


def test_native_calls_refuse_grad_when_compiled_and_take_list_subclasses():
    """The compiled call's requires_grad refusal (eager's message, before the op) and a list subclass on the
    native path (it is a list: same bits as the plain list, and the native dispatch record)."""
    gen = generator("gpu-grad-subclass")
    a_list = [rand_tensor((m, 64), torch.bfloat16, gen, DEVICE) for m in (17, 40)]
    b_list = [rand_tensor((48, 64), torch.bfloat16, gen, DEVICE) for _ in range(2)]
    wants_grad = [b_list[0], b_list[1].detach().requires_grad_()]
    with pytest.raises(ckgemm.InvalidArgumentError, match=r"group 1: b\[1\] .*requires grad"):
        torch.compile(lambda a, b: ckgemm.grouped_gemm(a, b), backend="aot_eager")(a_list, wants_grad)

    class Experts(list):
        pass

    eager = ckgemm.grouped_gemm(a_list, b_list)
    got = ckgemm.grouped_gemm(Experts(a_list), Experts(b_list))
    assert all(torch.equal(x, y) for x, y in zip(got, eager)) and ckgemm.last_dispatch().backend == NATIVE


def test_the_logged_config_carries_each_kernels_stages():
    """ckgemm._C.instances() reports every CUTLASS instance's mainloop stages (CK: 0, not reported), and the
    config op_tests and the benchmarks log (Dispatch.config_summary) carries them."""
    infos = ckgemm.backends.native._C.instances()
    assert all(i["stages"] >= 2 for i in infos) if NATIVE == "cutlass" else all(i["stages"] == 0 for i in infos)
    gen = generator("gpu-config-stages")
    ckgemm.grouped_gemm([rand_tensor((200, 64), torch.bfloat16, gen, DEVICE)],
                        [rand_tensor((256, 64), torch.bfloat16, gen, DEVICE)])
    record = ckgemm.last_dispatch()
    (path,), (stages,) = record.paths, record.stages
    bf16 = ckgemm.rule_for(torch.bfloat16).abi_code
    assert stages == next(i["stages"] for i in infos if i["name"] == path.split(":")[1] and i["dtype"] == bf16
                          and i["scaling"] == 0 and i["layout"] == 0)
    assert record.config_summary == (f"{path} ({stages} stages) x1" if stages else f"{path} x1")


def test_transpose_kernel_is_exact_with_odd_shapes():
    for shape in [(3, 130, 77), (1, 7, 4099), (2, 300, 64)]:
        x = torch.randint(-128, 128, shape, dtype=torch.int8, device=DEVICE)
        assert torch.equal(torch.ops.ckgemm.transpose_b(x), x.transpose(-1, -2).contiguous()), shape
        y = x.to(torch.float16)
        assert torch.equal(torch.ops.ckgemm.transpose_b(y), y.transpose(-1, -2).contiguous()), shape




class _Sub(torch.Tensor):
    """A tensor subclass: eager calls on it go through torch.ops (the dispatcher's Python path)."""


class _SeesOps(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_eager_entry_equals_the_registered_op():
    """Plain tensors: each form runs through _C.eager_* (the C++ dispatcher) and gives bit-identical
    results to torch.ops.ckgemm.*; a subclass or a torch-function mode is declined there and takes
    torch.ops (the mode sees the op), with the same result."""
    C = ckgemm.backends.native._C
    sizes = [5, 0, 70]
    gen = generator("gpu-eager-entry")
    a = rand_tensor((sum(sizes), 128), torch.bfloat16, gen, DEVICE)
    b = rand_tensor((3, 192, 128), torch.bfloat16, gen, DEVICE)
    a_list, b_list = list(a.split(sizes)), list(b)
    gs = torch.tensor(sizes, dtype=torch.int32, device=DEVICE)
    ops = torch.ops.ckgemm
    want_list = ops.gemm_list(a_list, b_list, [], [], 0, 0, None)
    want_packed = ops.gemm_packed(a, b, gs, None, None, 0, None)

    got = C.eager_gemm_list(a_list, b_list, (), (), 0, 0, None)
    assert got is not None and all(torch.equal(x, y) for x, y in zip(got, want_list))
    outs = [poison(x.shape, x.dtype, DEVICE) for x in want_list]
    assert C.eager_gemm_list_out(a_list, b_list, outs, (), (), 0, 0, None) is True
    assert all(torch.equal(x, y) for x, y in zip(outs, want_list))
    got = C.eager_gemm_packed(a, b, gs, None, None, 0, None)
    assert got is not None and torch.equal(got, want_packed)
    out = poison(want_packed.shape, want_packed.dtype, DEVICE)
    assert C.eager_gemm_packed_out(a, b, gs, out, None, None, 0, None) is True
    assert torch.equal(out, want_packed)

    sub_list = [x.as_subclass(_Sub) for x in a_list]
    assert C.eager_gemm_list(sub_list, b_list, (), (), 0, 0, None) is None
    assert C.eager_gemm_packed_out(a.as_subclass(_Sub), b, gs, out, None, None, 0, None) is False
    got = ckgemm.grouped_gemm(sub_list, b_list)
    assert all(torch.equal(x.as_subclass(torch.Tensor), y) for x, y in zip(got, want_list))
    mode = _SeesOps()
    with mode:
        assert C.eager_gemm_list_out(a_list, b_list, outs, (), (), 0, 0, None) is False
        out.fill_(float("nan"))
        ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    assert any("gemm_packed_out" in s for s in mode.seen), mode.seen
    assert torch.equal(out, want_packed)


def test_eager_entry_raises_the_validators_message():
    """A call the native validator rejects raises validate.py's text through the eager entry too."""
    a = [torch.zeros(4, 64, dtype=torch.bfloat16, device=DEVICE)]
    b = [torch.zeros(32, 48, dtype=torch.bfloat16, device=DEVICE)]  # K 48 != 64
    with pytest.raises(ckgemm.InvalidArgumentError, match="group 0: b\\[0\\].*K mismatch"):
        ckgemm.grouped_gemm(a, b)
    with pytest.raises(RuntimeError, match="ckgemm-rejected"):
        ckgemm.backends.native._C.eager_gemm_list(a, b, (), (), 0, 0, None)


@pytest.mark.parametrize("sms", [1, 2, 7, 64])
def test_a_capped_sm_count_changes_speed_never_results(sms):
    """ckgemm.set_num_sms(n) caps the persistent kernels' grid (CUTLASS's tile scheduler, ckgemm's own fp8
    kernel): every form and path computes the same bits as with every SM, and 0 restores the default."""
    gen = generator(f"gpu-num-sms-{sms}")
    fp8 = ckgemm.fp8_dtype_for(DEVICE)
    sizes, n, k = [300, 0, 513, 129], 384, 256
    gs = torch.tensor(sizes, device=DEVICE)
    cases = []
    for dtype in (torch.bfloat16, fp8, torch.int8):  # fp8 packed takes the own kernel, the others CUTLASS
        a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
        b = rand_tensor((len(sizes), n, k), dtype, gen, DEVICE)
        cases.append((lambda a=a, b=b: ckgemm.grouped_gemm_packed(a, b, gs)))
        cases.append((lambda a=a, b=b: torch.cat(ckgemm.grouped_gemm(list(a.split(sizes)), list(b)))))
    want = [fn() for fn in cases]
    try:
        ckgemm.set_num_sms(sms)
        assert ckgemm.get_num_sms() == sms
        got = [fn() for fn in cases]
    finally:
        ckgemm.set_num_sms(0)
    for w, g in zip(want, got):
        assert torch.equal(w.view(torch.uint8), g.view(torch.uint8))
