"""The conformance suite's parts: calling conventions and op loading, the scale layouts handed to kernels,
guard bands, the judge's two paths, verdict kinds, the adapters that run on a CPU, and the outputs."""
from __future__ import annotations

import csv
import io
import json

import pytest
import torch

import conformance_kernels as kernels
from ckgemm.testing.conformance import Check, Context, Kernel, OpSpecError, Result, Row, load_op, run_check
from ckgemm.testing.conformance import adapters, guard, operands
from ckgemm.testing.conformance.catalogue import TIERS
from ckgemm.testing.conformance.judge import judge
from ckgemm.testing.conformance.kernel import accepted_keywords
from ckgemm.testing.shapes import Case
from conformance_kernels import one_cpu_thread  # noqa: F401 - the autouse fixture

CASE = Case(((5, 129, 192), (0, 129, 192), (3, 129, 192)), "two K blocks, two N blocks, an empty group")
F8 = torch.float8_e4m3fn


def test_keywords_are_passed_only_when_the_signature_names_them():
    seen = []

    def packed_plain(a, b, group_sizes):
        seen.append(("plain", len((a, b, group_sizes))))
        return kernels.reference_packed(a, b, group_sizes)

    def packed_all(a, b, group_sizes, scale_a, scale_b, *, layout, out=None, out_dtype=None):
        seen.append(("all", layout, out is not None, out_dtype))
        return kernels.reference_packed(a, b, group_sizes, scale_a, scale_b, layout=layout, out=out,
                                        out_dtype=out_dtype)

    def with_kwargs(a, b, group_sizes, **options):
        seen.append(("kwargs", options))
        return kernels.reference_packed(a, b, group_sizes)

    assert accepted_keywords(packed_all) == {"layout", "out", "out_dtype"}
    assert accepted_keywords(with_kwargs) == set() and accepted_keywords(torch._grouped_mm) == set()
    plain = operands.build(CASE, "packed", "RC", torch.float16, "none", 0, "cpu")
    scaled = operands.build(CASE, "packed", "RR", F8, "row", 0, "cpu")
    Kernel.wrap(packed_plain, "p", "packed", "RC")(plain.args())
    Kernel.wrap(with_kwargs, "k", "packed", "RC")(plain.args(), out=torch.empty(0))
    Kernel.wrap(packed_all, "a", "packed", "RR")(scaled.args(), out=guard.allocate(CASE, "packed", torch.bfloat16,
                                                                                   "cpu").out, out_dtype=torch.bfloat16)
    assert seen == [("plain", 3), ("kwargs", {}), ("all", "RR", True, torch.bfloat16)]
    a, b, sizes = plain.args()
    assert a.shape == (8, 192) and b.shape == (3, 129, 192) and sizes.dtype == torch.int32 and sizes.tolist() == \
        [5, 0, 3]
    assert operands.build(CASE, "packed", "RR", torch.float16, "none", 0, "cpu").b.shape == (3, 192, 129)


@pytest.mark.parametrize("layout", ["RC", "RR"])
def test_scales_have_the_layouts_of_the_design_table(layout):
    """tensor [] / [G]; row [sum M] / [G, N]; block [sum M, K/128] / [G, N/128, K/128] (ceil); per group in
    the list form; float32, in the logical N-before-K orientation whatever B's storage."""
    expected = {"tensor": ((), (3,), [(), (), ()], [(), (), ()]),
                "row": ((8,), (3, 129), [(5,), (0,), (3,)], [(129,)] * 3),
                "block": ((8, 2), (3, 2, 2), [(5, 2), (0, 2), (3, 2)], [(2, 2)] * 3)}
    for recipe, (sa, sb, sa_list, sb_list) in expected.items():
        packed = operands.build(CASE, "packed", layout, F8, recipe, 0, "cpu")
        listed = operands.build(CASE, "list", layout, F8, recipe, 0, "cpu")
        assert (tuple(packed.scale_a.shape), tuple(packed.scale_b.shape)) == (sa, sb), recipe
        assert [tuple(s.shape) for s in listed.scale_a] == sa_list and [tuple(s.shape) for s in listed.scale_b] == \
            sb_list, recipe
        for s in [packed.scale_a, packed.scale_b, *listed.scale_a, *listed.scale_b]:
            assert s.dtype == torch.float32 and s.is_contiguous()
        assert packed.a.dtype == F8 and packed.out_dtype == torch.bfloat16
        # the convention's scales reproduce the reference's dequantized operands (independent dequant)
        b_nk = packed.b[2] if layout == "RC" else packed.b[2].t()
        ref = packed.reference()[2]
        mine = kernels.product(packed.a[5:], b_nk, packed.scale_a if recipe == "tensor" else packed.scale_a[5:],
                               packed.scale_b[2])
        torch.testing.assert_close(mine, ref, rtol=1e-5, atol=1e-4)
    int8 = operands.build(CASE, "packed", layout, torch.int8, "row", 0, "cpu")
    assert int8.a.dtype == torch.int8 and int8.scaled and not int8.exact and int8.out_dtype == torch.bfloat16


def test_guard_bands_locate_writes_outside_the_outputs():
    packed = guard.allocate(CASE, "packed", torch.float16, "cpu")
    assert packed.guard_writes() is None and packed.unwritten_counts() == [5 * 129, 0, 3 * 129]
    packed.views[0].zero_()
    assert packed.unwritten_counts() == [0, 0, 3 * 129]
    past = packed.out.as_strided((9, 129), (129, 1), packed.out.storage_offset())
    past[8, 3] = 1.0
    assert "1 element(s) outside the outputs were written; the first 3 element(s) after the end" in \
        packed.guard_writes()
    listed = guard.allocate(CASE, "list", torch.int32, "cpu")
    listed.views[0].as_strided((6, 129), (129, 1), listed.views[0].storage_offset())[5, 0] = 7
    assert "past the end of group 0's output (M=5)" in listed.guard_writes()
    listed.reset()
    assert listed.guard_writes() is None
    listed.buffer[0] = 1
    assert "before the start of the first output" in listed.guard_writes()


def test_the_device_path_of_the_judge_agrees_with_the_cpu_path():
    ops = operands.build(CASE, "packed", "RC", torch.bfloat16, "none", 0, "cpu")
    refs = ops.reference()
    outs = [r.to(torch.bfloat16) for r in refs]
    for on_device in (False, True):
        ok, detail, metrics, _ = judge(outs, refs, ops, on_device=on_device)
        assert ok and detail == "" and metrics["mismatches"] == 0
    outs[2] = outs[2].clone()
    outs[2][1, 4] += 1.0
    verdicts = [judge(outs, refs, ops, on_device=d) for d in (False, True)]
    assert [v[0] for v in verdicts] == [False, False]
    assert all("group 2 (M=3, N=129, K=192)" in v[1] for v in verdicts) and "(1, 4)" in verdicts[0][3]


def _ctx(fn, dtype=torch.float16, form="packed"):
    return Context(Kernel.wrap(fn, "op", form, "RC"), torch.device("cpu"), dtype, "fp16", "none", TIERS["smoke"], 0)


def test_a_device_fault_is_a_failure_and_a_suite_bug_an_error():
    def crashes(a, b, group_sizes):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    basic = Check("basic", "b", "p", lambda t, form, seed: Case(((4, 8, 16),), ""))
    row = run_check(_ctx(crashes), basic)
    assert (row.status, row.failed) == ("fail", "crash") and "the device faulted" in row.detail
    broken = Check("broken", "b", "p", lambda t, form, seed: 1 / 0)
    row = run_check(_ctx(kernels.reference_packed), broken)
    assert (row.status, row.failed) == ("error", "suite") and "the suite failed: ZeroDivisionError" in row.detail
    assert Result({}, [row]).exit_code == 1


def test_outputs_of_the_wrong_dtype_or_shape_fail_at_the_outputs():
    basic = Check("basic", "b", "p", lambda t, form, seed: Case(((4, 8, 16), (2, 8, 16)), ""))

    def as_fp32(a, b, group_sizes):
        return kernels.reference_packed(a, b, group_sizes).float()

    def transposed(a_list, b_list):
        return [c.t() for c in kernels.reference_list(a_list, b_list)]
    row = run_check(_ctx(as_fp32), basic)
    assert (row.status, row.failed) == ("fail", "outputs") and "torch.float32" in row.detail
    row = run_check(_ctx(transposed, form="list"), basic)
    assert (row.status, row.failed) == ("fail", "outputs") and "group 0: output has shape (8, 4)" in row.detail


def test_load_op_names_what_is_wrong():
    assert [f.conformance_form for f in load_op("ckgemm")] == ["list", "packed"]
    assert load_op("ckgemm.testing.conformance.adapters:torch_grouped_mm") == [adapters.torch_grouped_mm]
    assert load_op("os:path.join")[0]("a", "b") == "a/b"
    with pytest.raises(OpSpecError, match=r"'os:path' has no attribute 'nope'"):
        load_op("os:path.nope")
    with pytest.raises(OpSpecError, match=r"built-in adapter: ckgemm, torch_grouped_mm"):
        load_op("deepgemm")


def test_ckgemm_and_torch_adapters_compute_the_product_on_cpu():
    ops = operands.build(CASE, "packed", "RC", torch.bfloat16, "none", 3, "cpu")
    refs = torch.cat(ops.reference())
    for fn in (adapters.ckgemm_packed, adapters.torch_grouped_mm):
        out = fn(*ops.args(), layout="RC")
        assert out.shape == (8, 129) and out.dtype == torch.bfloat16
        torch.testing.assert_close(out.float(), refs, rtol=1.6e-2, atol=1e-2)
    listed = operands.build(CASE, "list", "RR", torch.int8, "none", 3, "cpu")
    outs = adapters.ckgemm_list(*listed.args(), layout="RR")
    assert all(torch.equal(o, r.to(torch.int32)) for o, r in zip(outs, listed.reference()))


def test_adapters_refuse_what_their_kernel_does_not_do_with_the_reason():
    plain = operands.build(CASE, "packed", "RC", F8, "none", 0, "cpu")
    block = operands.build(CASE, "packed", "RC", F8, "block", 0, "cpu")
    row = operands.build(CASE, "packed", "RC", F8, "row", 0, "cpu")
    with pytest.raises(NotImplementedError, match="takes scales"):
        adapters.torch_scaled_grouped_mm(*plain.args())
    with pytest.raises(NotImplementedError, match=r"torch._grouped_mm takes no scales \(run it with --quant none"):
        adapters.torch_grouped_mm(*row.args())
    with pytest.raises(NotImplementedError, match="no 1x128 / 128x128 block recipe"):
        adapters.torch_scaled_grouped_mm(*block.args())
    with pytest.raises(NotImplementedError, match="--quant block"):
        adapters.deep_gemm_contiguous(*row.args())
    with pytest.raises(NotImplementedError, match="layout RC"):
        adapters.deep_gemm_contiguous(*block.args(), layout="RR")
    with pytest.raises(NotImplementedError, match="--quant block"):
        adapters.deep_gemm_masked(*row.args())
    with pytest.raises(NotImplementedError, match="layout RC"):
        adapters.deep_gemm_masked(*block.args(), layout="RR")
    with pytest.raises(NotImplementedError, match="CUDA tensors only"):
        adapters.deep_gemm_masked(*block.args())
    with pytest.raises(ModuleNotFoundError, match=r"aiter.ops.triton.gmm is not importable here \(pip install aiter"):
        adapters.aiter_gmm(*plain.args())
    for fn in (adapters.deep_gemm_contiguous, adapters.deep_gemm_masked):
        assert fn.conformance_form == "packed" and fn.conformance_host_sizes and fn.conformance_prepare
        assert adapters.BUILTIN[fn.__name__.replace("_contiguous", "")] == (fn,)


def test_deep_gemm_contiguous_layout_pads_groups_to_the_alignment():
    ops = operands.build(CASE, "packed", "RC", F8, "block", 0, "cpu")
    a_pad, sfa, m_indices, rows = adapters.contiguous_layout(ops.a, ops.scale_a, ops.sizes, 4)
    assert a_pad.shape == (12, 192) and a_pad.dtype == F8 and sfa.shape == (12, 2)
    assert m_indices.tolist() == [0] * 5 + [-1] * 3 + [2] * 3 + [-1]
    assert rows.tolist() == [0, 1, 2, 3, 4, 8, 9, 10]
    assert torch.equal(a_pad[rows].view(torch.uint8), ops.a.view(torch.uint8)) and torch.equal(sfa[rows], ops.scale_a)
    assert bool((a_pad.view(torch.uint8)[5:8] == 0).all()) and bool((sfa[5:8] == 1).all())


def _row(check, status, failed="", detail="", dtype="fp16"):
    return Row(check, check.upper(), f"purpose of {check}", "packed", "RC", dtype, "none", status, failed, detail,
               "2x4x8x16", 1, {"max_abs_err": float("nan") if status == "fail" else 0.0})


def test_exit_codes_and_every_output_format():
    rows = [_row("basic", "pass"), _row("k0", "fail", "unwritten", "group 1: 8 of 8 never written"),
            _row("graph", "n/a", detail="needs a CUDA device"), _row("basic", "unsupported", detail="no fp8", dtype="fp8")]
    result = Result({"op": "mine:fn", "seed": 1}, rows)
    assert result.exit_code == 1 and result.counts() == {"pass": 1, "fail": 1, "unsupported": 1, "n/a": 1, "error": 0}
    assert Result({}, [rows[0], rows[2], rows[3]]).exit_code == 0
    assert Result({}, rows[2:]).exit_code == 3 and Result({}, []).exit_code == 3
    assert Result({}, [rows[0], _row("x", "error")]).exit_code == 1
    matrix = result.matrix()
    assert "FAIL (unwritten)" in matrix and "fp16 packed RC" in matrix and "fp8 packed RC" in matrix
    data = json.loads(json.dumps(result.to_json(), allow_nan=False))  # strict JSON: NaN became a string
    assert data["summary"]["exit_code"] == 1 and data["rows"][1]["metrics"]["max_abs_err"] == "nan"
    assert data["summary"]["verdict"].startswith("FAILED: 1 pass, 1 fail, 1 unsupported, 1 n/a")
    records = list(csv.DictReader(io.StringIO(result.to_csv())))
    assert [(r["check"], r["status"], r["failed"]) for r in records] == [
        ("basic", "pass", ""), ("k0", "fail", "unwritten"), ("graph", "n/a", ""), ("basic", "unsupported", "")]
    assert records[1]["detail"] == "group 1: 8 of 8 never written" and records[1]["max_abs_err"] == "nan"
    markdown = result.to_markdown()
    assert markdown.startswith("# Conformance: `mine:fn`") and "| k0 " in markdown
    assert "needs a CUDA device" in markdown and "purpose of k0" in markdown
    console = result.console()
    assert "group 1: 8 of 8 never written" in console and console.rstrip().endswith(result.verdict())


def test_graph_replays_with_new_sizes_through_a_stand_in_for_cuda_graphs(monkeypatch):
    """The graph check's logic on a CPU: 'capture' calls the op once and 'replay' calls it again (what a
    graph does to device work). An op that reads its sizes each time passes; one that baked in the sizes
    it saw when captured fails at the replay with the new ones."""
    from ckgemm.testing.conformance import checks
    from ckgemm.testing.conformance.catalogue import CATALOGUE

    class Replayer:
        def __init__(self, call):
            self.call = call
            call()

        def replay(self):
            self.call()
    monkeypatch.setattr(checks, "capture_graph", Replayer)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    graph = {c.id: c for c in CATALOGUE}["graph"]
    baked = {}

    def bakes_sizes(a, b, group_sizes, *, out=None):
        sizes = baked.setdefault("sizes", group_sizes.clone())  # as a capture freezes host-read values
        return kernels.reference_packed(a, b, sizes, out=out)

    for fn, expected in ((kernels.reference_packed, ("pass", "")), (bakes_sizes, ("fail", "graph"))):
        ctx = _ctx(fn)
        case = graph.build(TIERS["smoke"], "packed", 0)
        ops = operands.build(case, "packed", "RC", torch.float16, "none", 0, "cpu")
        row = Row("graph", "", "", "packed", "RC", "fp16", "none", "n/a")
        checks.run_graph(ctx, graph, ops, row)
        assert (row.status, row.failed) == expected, row.detail
    assert "replay with sizes [0, 17, 64, 3, 4, 40]: group 1 (M=17, N=128, K=192)" in row.detail, row.detail


def test_deep_gemm_masked_layout_puts_each_group_at_the_start_of_its_slot():
    ops = operands.build(CASE, "packed", "RC", F8, "block", 0, "cpu")
    a_m, sfa_m, masked_m, rows, expected_m = adapters.masked_layout(ops.a, ops.scale_a, ops.sizes, 4)
    assert a_m.shape == (3, 8, 192) and a_m.dtype == F8 and sfa_m.shape == (3, 8, 2)
    assert masked_m.dtype == torch.int32 and masked_m.tolist() == [5, 0, 3] and expected_m == 3
    assert rows.tolist() == [0, 1, 2, 3, 4, 16, 17, 18]
    assert torch.equal(a_m.flatten(0, 1)[rows].view(torch.uint8), ops.a.view(torch.uint8))
    assert torch.equal(sfa_m.flatten(0, 1)[rows], ops.scale_a)
    assert bool((a_m[0, 5:].view(torch.uint8) == 0).all()) and bool((sfa_m[1] == 1).all())
    empty = adapters.masked_layout(ops.a[:0], ops.scale_a[:0], torch.zeros(3, dtype=torch.int64), 4)
    assert empty[0].shape == (3, 4, 192) and empty[3].numel() == 0 and empty[4] == 1


def test_deep_gemm_masked_kernel_is_found_under_any_exported_name():
    def kernel():
        pass

    older = type("deep_gemm", (), {"fp8_m_grouped_gemm_nt_masked": None, "m_grouped_fp8_gemm_nt_masked": kernel})
    assert adapters.deep_gemm_masked_fn(older) is kernel  # a name exported as None is skipped
    assert adapters.deep_gemm_masked_fn(type("deep_gemm", (), {})) is None


def test_deep_gemm_masked_adapter_runs_its_kernel_on_the_slots_and_gathers_the_rows(monkeypatch):
    """The adapter end to end with a stand-in for DeepGEMM's masked kernel (it computes every slot row,
    padding included, from the dequantized slots): what comes back is each group's real rows, in order."""
    ops = operands.build(CASE, "packed", "RC", F8, "block", 0, "cpu")
    calls = []

    def masked(a_pair, b_pair, d, masked_m, expected_m):
        (a_m, sfa_m), (b, sfb) = a_pair, b_pair
        calls.append((masked_m.tolist(), expected_m, tuple(d.shape)))
        k = a_m.shape[-1]
        a_deq = a_m.float() * sfa_m.repeat_interleave(128, dim=-1)[..., :k]
        b_deq = b.float() * sfb.repeat_interleave(128, dim=1).repeat_interleave(128, dim=2)[:, :b.shape[1], :k]
        d.copy_(torch.bmm(a_deq, b_deq.transpose(1, 2)))

    stand_in = type("deep_gemm", (), {"fp8_m_grouped_gemm_nt_masked": staticmethod(masked),
                                      "get_mk_alignment_for_contiguous_layout": staticmethod(lambda: 4)})
    monkeypatch.setattr(adapters, "_deep_gemm", lambda a, scale_a, layout, kernel: stand_in)
    out = adapters.deep_gemm_masked(*ops.args())
    assert calls == [([5, 0, 3], 3, (3, 8, 129))]
    assert out.shape == (8, 129) and out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), torch.cat(ops.reference()).float(), rtol=1.6e-2, atol=1e-2)
    launch = adapters.deep_gemm_masked.conformance_prepare(*ops.args())
    launch()
    assert len(calls) == 2


def test_an_unmet_requirement_is_named_once():
    """A packed-only check on a list op that also needs a GPU: each reason once, in requirement order."""
    graph_like = Check("graph_like", "g", "p", lambda t, form, seed: None if form == "list" else Case(((4, 8, 16),), ""),
                       requires=frozenset({"cuda", "packed"}))
    row = run_check(_ctx(kernels.reference_list, form="list"), graph_like)
    assert row.status == "n/a" and row.detail == "needs a CUDA device; packed form only"
