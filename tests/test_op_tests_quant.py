"""op_tests --quant on the CPU (torch backend): every recipe x fp8/int8 x layout x form passes against the
harness reference with the same quantization; fp16/bf16 and int8 block are skipped with a note; a kernel
that applies a wrong scale, writes a slightly wrong element or leaves a group unwritten fails the run."""
from __future__ import annotations

import sys
import types

import pytest
import torch

import ckgemm.backends.reference as reference_backend
from support import op_tests_on_one_thread, report_rows

SMALL = ["--groups", "3", "--m", "24", "--n", "40", "--k", "200"]  # K = 200: a partial last 128-block


@pytest.fixture(scope="module")
def cli():
    yield from op_tests_on_one_thread("ckgemm_op_tests_cli_quant")


def test_smoke_with_every_recipe_passes(cli, tmp_path, capsys):
    out = tmp_path / "quant.json"
    assert cli.main(["--smoke", "--quant", "all", "--no-perf", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "SKIP fp16 --quant tensor row block: fp16/bf16 take no scales" in text
    assert "SKIP int8 --quant block" in text and "ALL PASSED" in text
    cases = [r for r in report_rows(out) if r["op"] != "bad_input"]
    seen = {(r["dtype"], r["quant"], r["layout"], r["form"]) for r in cases}
    wanted = {(d, q, lay, f) for d, q in [("fp8", "tensor"), ("fp8", "row"), ("fp8", "block"), ("int8", "tensor"),
                                         ("int8", "row")] for lay in ("RC", "RR") for f in ("list", "packed")}
    assert wanted <= seen and not any(r["quant"] == "block" and r["dtype"] == "int8" for r in cases)
    assert not any(r["quant"] != "none" and r["dtype"] in ("fp16", "bf16") for r in cases)
    scaled = [r for r in cases if r["quant"] != "none"]
    assert all(r["passed"] and r["error"]["calc_diff"] is not None for r in scaled)
    assert any("K=0" in r["config"] for r in scaled) and any("empty" in r["config"] for r in scaled)


def test_moe_quant_runs_list_and_packed_forms_and_times_beside_scaled_peers(cli, tmp_path, capsys):
    out = tmp_path / "moe.json"
    assert cli.main(["--moe", *SMALL, "--moe-dist", "zipf", "-d", "fp8", "int8", "-q", "row", "block",
                     "--warmup", "0", "--repeat", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rows = report_rows(out)
    assert {(r["dtype"], r["quant"], r["form"]) for r in rows} == {
        (d, q, f) for d, q in [("fp8", "row"), ("fp8", "block"), ("int8", "row")] for f in ("list", "packed")}
    assert all("median_ms" in r and r["kernel"].startswith("torch") for r in rows)
    fp8_row = [r for r in rows if r["dtype"] == "fp8" and r["quant"] == "row"]
    assert all(r["loop_peer"] == "_scaled_mm loop" and r["grouped_peer"] == "_scaled_grouped_mm" for r in fp8_row)
    assert all(r["vs_loop"] != "n/a" for r in fp8_row), "torch._scaled_mm runs row scales on the CPU"
    assert "_scaled_mm loop: n/a (no torch op takes block scales)" in text


def test_fp16_has_no_recipes(cli, capsys):
    assert cli.main([*SMALL, "-d", "fp16", "bf16", "-q", "row", "--no-perf"]) == 2
    text = capsys.readouterr().out
    assert "SKIP fp16 --quant row" in text and "SKIP bf16 --quant row" in text and "nothing to run" in text


def _wrong_row_scale(real):
    def scaled_matmul(a, b, layout, rule, recipe, sa, sb, out_dtype):
        if recipe != "tensor" and sa.shape[0] > 1:
            sa = sa.roll(1, 0)  # each row gets its neighbour's scale
        return real(a, b, layout, rule, recipe, sa, sb, out_dtype)
    return scaled_matmul


def _first_k_block_scale_only(real):
    def scaled_matmul(a, b, layout, rule, recipe, sa, sb, out_dtype):
        if recipe == "block" and sa.dim() == 2 and sa.shape[1] > 1:
            sa = sa[:, :1].expand_as(sa)  # every K block scaled like the first one
        return real(a, b, layout, rule, recipe, sa, sb, out_dtype)
    return scaled_matmul


def _one_slightly_wrong_element(real):
    def scaled_matmul(a, b, layout, rule, recipe, sa, sb, out_dtype):
        c = real(a, b, layout, rule, recipe, sa, sb, out_dtype)
        if c.numel():
            c[-1, -1] += float(c.float().abs().max()) * 0.05  # 5% of max|C|: above the scaled tolerance
        return c
    return scaled_matmul


@pytest.mark.parametrize("fault,recipe,dtype", [
    (_wrong_row_scale, "row", "fp8"), (_wrong_row_scale, "row", "int8"), (_wrong_row_scale, "block", "fp8"),
    (_first_k_block_scale_only, "block", "fp8"), (_one_slightly_wrong_element, "tensor", "int8"),
    (_one_slightly_wrong_element, "block", "fp8"),
])
@pytest.mark.parametrize("form_args", [[], ["--moe", "--moe-dist", "balanced"]], ids=["list", "moe"])
def test_a_wrong_scaled_kernel_fails(cli, monkeypatch, capsys, fault, recipe, dtype, form_args):
    monkeypatch.setattr(reference_backend, "scaled_matmul", fault(reference_backend.scaled_matmul))
    assert cli.main([*SMALL, *form_args, "-b", "torch", "-d", dtype, "-q", recipe, "-l", "RR", "--no-perf"]) == 1
    text = capsys.readouterr().out
    assert f"FAIL {dtype}/{recipe} RR" in text and "first mismatches" in text


def test_an_unwritten_scaled_group_fails(cli, monkeypatch, capsys):
    real = reference_backend.run_list

    def forgets_last_group(problem, a_list, b_list, c_list, scale_a=None, scale_b=None):
        return real(problem, a_list[:-1], b_list[:-1], c_list[:-1], scale_a[:-1], scale_b[:-1]) + ("forgot",)

    monkeypatch.setattr(reference_backend, "run_list", forgets_last_group)
    assert cli.main([*SMALL, "-b", "torch", "-d", "fp8", "-q", "block", "-l", "RC", "--no-perf"]) == 1
    assert "out nan ref" in capsys.readouterr().out


def test_device_path_applies_the_calc_diff_bound(cli):
    """The GPU judge (gpu_verify per group, then calc_diff): run on CPU tensors through its torch fallback."""
    from grouped_gemm_cli.correctness import _gpu_passes

    gen = torch.Generator().manual_seed(7)
    ref = torch.randn(16, 24, generator=gen)
    good = ref.to(torch.bfloat16)
    ok, _ = _gpu_passes([good], [ref], torch.float8_e4m3fn, [256], True, 1e-4)
    assert ok
    ok, _ = _gpu_passes([good], [ref], torch.float8_e4m3fn, [256], True, 1e-12)  # bound below bf16 rounding
    assert not ok


def _fake_aiter(calls: list):
    """Stand-ins with aiter's signatures that record what they were given and compute the product."""
    def gemm_a8w8_CK(xq, wq, x_scale, w_scale, bias=None, dtype=torch.bfloat16):
        calls.append(("row", tuple(wq.shape), tuple(x_scale.shape), tuple(w_scale.shape)))
        return ((xq.float() * x_scale) @ (wq.float() * w_scale.t()).t()).to(dtype)

    def gemm_a8w8_blockscale(xq, wq, x_scale, w_scale, dtype=torch.bfloat16):
        calls.append(("block", tuple(wq.shape), tuple(x_scale.shape), tuple(w_scale.shape)))
        return (xq.float() @ wq.float().t()).to(dtype)

    class TGemm:
        @staticmethod
        def mm(x, w, bias=None, otype=None):
            calls.append(("mm", tuple(w.shape), otype))
            return (x.float() @ w.float().t()).to(otype)

    aiter = types.ModuleType("aiter")
    aiter.gemm_a8w8_CK, aiter.gemm_a8w8_blockscale = gemm_a8w8_CK, gemm_a8w8_blockscale
    tuned = types.ModuleType("aiter.tuned_gemm")
    tuned.tgemm = TGemm()
    return aiter, tuned


def test_aiter_peer_gets_b_as_n_by_k_and_the_runs_scales(cli, monkeypatch, tmp_path):
    calls = []
    aiter, tuned = _fake_aiter(calls)
    monkeypatch.setitem(sys.modules, "aiter", aiter)
    monkeypatch.setitem(sys.modules, "aiter.tuned_gemm", tuned)
    out = tmp_path / "aiter.json"
    assert cli.main([*SMALL, "-d", "bf16", "fp8", "-q", "none", "row", "block", "-l", "RR", "--aiter",
                     "--warmup", "0", "--repeat", "2", "--json", str(out)]) == 0
    rows = {(r["dtype"], r["quant"]): r for r in report_rows(out)}
    assert rows[("bf16", "none")]["aiter_peer"] == "aiter loop" and rows[("bf16", "none")]["vs_aiter"] != "n/a"
    assert rows[("fp8", "none")]["vs_aiter"] == "n/a" and "no aiter GEMM" in rows[("fp8", "none")]["aiter_reason"]
    assert ("mm", (40, 200), torch.bfloat16) in calls  # RR b [K, N] handed over as [N, K]
    assert ("row", (40, 200), (24, 1), (1, 40)) in calls
    assert ("block", (40, 200), (24, 2), (1, 2)) in calls  # K = 200: two 128-blocks, N = 40: one


def test_without_aiter_the_peer_says_why(cli, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "aiter", None)  # import aiter raises ImportError
    assert cli.main([*SMALL, "-d", "bf16", "-l", "RC", "--aiter", "--warmup", "0", "--repeat", "2"]) == 0
    assert "aiter loop: n/a (aiter is not importable: ModuleNotFoundError" in capsys.readouterr().out
