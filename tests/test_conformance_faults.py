"""The conformance suite judges kernels, so it is tested on kernels whose verdict is known: a correct one
(tests/conformance_kernels.py, written without ckgemm.testing) passes every applicable check in every
dtype, form and scale recipe; each planted fault fails exactly the rows its fault shows in, at the
sub-check meant for it, and nowhere else. Expected rows are derived from each row's own case shapes."""
from __future__ import annotations

import pytest
import torch

import conformance_kernels as kernels
from conformance_kernels import one_cpu_thread  # noqa: F401 - the autouse fixture
from ckgemm.testing.conformance import CATALOGUE, Context, Kernel, Result, run_check
from ckgemm.testing.conformance.catalogue import TIERS

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn, "int8": torch.int8}
BY_ID = {c.id: c for c in CATALOGUE}


def run(fn, form="packed", dtype="fp16", recipe="none", layout="RC", seed=0):
    ctx = Context(Kernel.wrap(fn, fn.__name__, form, layout), torch.device("cpu"), DTYPES[dtype], dtype, recipe,
                  TIERS["smoke"], seed)
    print(f"[seed] conformance rows of {fn.__name__}: --seed {seed}")
    return [run_check(ctx, check) for check in CATALOGUE]


def shapes(row):
    """The (M, N, K) per group of the case a row ran."""
    return BY_ID[row.check].build(TIERS["smoke"], row.form, row.seed).shapes


def verdicts(rows) -> dict:
    """check id -> (status, failed sub-check) of every row that did not pass."""
    return {r.check: (r.status, r.failed) for r in rows if r.status not in ("pass", "n/a")}


def ran(rows) -> list:
    return [r for r in rows if r.status != "n/a"]


NA_ON_CPU = {"graph": "needs a CUDA device"}


@pytest.mark.parametrize("form", ["packed", "list"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp8", "int8"])
def test_a_correct_kernel_passes_every_applicable_check(form, dtype):
    fn = kernels.reference_packed if form == "packed" else kernels.reference_list
    rows = run(fn, form, dtype)
    assert verdicts(rows) == {}
    na = {r.check: r.detail for r in rows if r.status == "n/a"}
    expected_na = {"graph"} | ({"hetero"} if form == "packed" else set()) | (set() if dtype == "int8" else
                                                                            {"int8_exact"})
    assert set(na) == expected_na and "CUDA" in na["graph"]
    assert len(ran(rows)) == len(CATALOGUE) - len(expected_na) >= 15
    assert all(r.case and r.seed is not None for r in ran(rows))


@pytest.mark.parametrize("recipe,dtype,form,layout", [
    ("tensor", "int8", "packed", "RR"), ("tensor", "fp8", "list", "RC"), ("row", "fp8", "packed", "RC"),
    ("row", "int8", "list", "RR"), ("block", "fp8", "packed", "RR"), ("block", "fp8", "list", "RC")])
def test_a_correct_kernel_passes_with_every_scale_recipe(recipe, dtype, form, layout):
    """Scales laid out as DESIGN.md's table says reach a correct kernel, whose bf16 outputs match a
    reference built from the same codes and scales (not from the unquantized data)."""
    fn = kernels.reference_packed if form == "packed" else kernels.reference_list
    rows = run(fn, form, dtype, recipe, layout)
    assert verdicts(rows) == {}
    assert {r.check for r in rows if r.status == "pass"} >= {"basic", "k0", "odd_nk", "moe_empty", "long_k"}


def test_dropping_the_last_group_fails_every_row_at_the_outputs():
    rows = run(kernels.drop_last_group, "list")
    assert verdicts(rows) == {r.check: ("fail", "outputs") for r in ran(rows)}
    assert "returned 3 outputs for 4 groups" in {r.check: r.detail for r in rows}["basic"]


def test_skipping_the_last_packed_group_leaves_its_rows_unwritten():
    rows = run(kernels.drop_last_group_packed)
    expected = {r.check for r in ran(rows) if shapes(r)[-1][0] * shapes(r)[-1][1] > 0}
    assert verdicts(rows) == {c: ("fail", "unwritten") for c in expected}
    assert {"basic", "empty_groups", "poison"} <= expected and "k0" not in expected  # k0's last group is empty


def test_a_wrong_m_tail_fails_exactly_where_some_m_is_not_a_multiple_of_16():
    rows = run(kernels.wrong_m_tail)
    expected = {r.check for r in ran(rows) if any(m % 16 and n and k for m, n, k in shapes(r))}
    assert verdicts(rows) == {c: ("fail", "values") for c in expected}
    assert {"m1", "tile_edges", "odd_nk"} <= expected and not expected & {"basic", "long_k", "k0", "all_empty"}


def test_fp16_accumulation_fails_only_the_long_k_row():
    rows = run(kernels.fp16_accumulate)
    assert verdicts(rows) == {"long_k": ("fail", "values")}
    detail = {r.check: r.detail for r in rows}["long_k"]
    assert "K=16384" in detail and "outside rtol" in detail


def test_int8_through_fp32_fails_only_the_exact_int8_row():
    rows = run(kernels.int8_through_fp32, dtype="int8")
    assert verdicts(rows) == {"int8_exact": ("fail", "values")}
    assert {r.check: r.status for r in rows}["long_k"] == "pass"  # random int8 stays below 2**24: exact there


def test_unwritten_k0_outputs_fail_only_the_k0_row():
    rows = run(kernels.skip_k0)
    assert verdicts(rows) == {"k0": ("fail", "unwritten")}
    assert "never written" in {r.check: r.detail for r in rows}["k0"]


def test_writing_one_row_past_a_group_fails_at_the_guard_band():
    rows = run(kernels.one_row_past)
    expected = {r.check for r in ran(rows) if sum(m for m, _, _ in shapes(r)) and shapes(r)[0][1]}
    assert verdicts(rows) == {c: ("fail", "outside") for c in expected}
    assert {"poison", "basic", "k0"} <= expected and not expected & {"all_empty", "n0"}
    assert "after the end of the last output" in {r.check: r.detail for r in rows}["basic"]


def test_a_nondeterministic_kernel_fails_only_the_determinism_row():
    rows = run(kernels.nondeterministic)
    assert verdicts(rows) == {"determinism": ("fail", "determinism")}
    assert "differs from call 1 bit for bit" in {r.check: r.detail for r in rows}["determinism"]


def test_a_kernel_that_writes_its_inputs_fails_where_it_touches_them():
    rows = run(kernels.modifies_input)
    expected = {r.check for r in ran(rows) if any(m * k for m, _, k in shapes(r))}
    assert verdicts(rows) == {c: ("fail", "inputs") for c in expected}
    assert "was modified by the call" in {r.check: r.detail for r in rows}["basic"]


def test_a_refused_dtype_is_unsupported_never_a_pass():
    rows = run(kernels.refuses_fp8, dtype="fp8")
    assert {r.status for r in rows} == {"unsupported", "n/a"}
    assert "no fp8 kernel in this build" in rows[0].detail
    assert Result({}, rows).exit_code == 3  # nothing applied
    fp16 = run(kernels.refuses_fp8, dtype="fp16")
    assert Result({}, rows + fp16).exit_code == 0 and verdicts(fp16) == {}
