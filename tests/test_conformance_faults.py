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
    """Scales laid out as the README's table says reach a correct kernel, whose bf16 outputs match a
    reference built from the same codes and scales (not from the unquantized data)."""
    fn = kernels.reference_packed if form == "packed" else kernels.reference_list
    rows = run(fn, form, dtype, recipe, layout)
    assert verdicts(rows) == {}
    assert {r.check for r in rows if r.status == "pass"} >= {"basic", "k0", "odd_nk", "moe_empty", "long_k"}


# fault (a kernel of conformance_kernels): form, dtype, the rows it must fail (from the row's check id and
# case shapes), the sub-check they fail at, rows that must and must not be among them, and words of one reason.
FAULTS = {
    "drop_last_group": ("list", "fp16", lambda check, s: True, "outputs",
                        ({"basic", "all_empty", "hetero"}, set()), ("basic", "returned 3 outputs for 4 groups")),
    "drop_last_group_packed": ("packed", "fp16", lambda check, s: s[-1][0] * s[-1][1] > 0, "unwritten",
                               ({"basic", "empty_groups", "poison"}, {"k0", "n0"}), ("basic", "never written")),
    "wrong_m_tail": ("packed", "fp16", lambda check, s: any(m % 16 and n and k for m, n, k in s), "values",
                     ({"m1", "tile_edges", "odd_nk"}, {"basic", "long_k", "k0"}),
                     ("tile_edges", "group 0 (M=127, N=128, K=192)")),
    "fp16_accumulate": ("packed", "fp16", lambda check, s: check == "long_k", "values", ({"long_k"}, {"basic"}),
                        ("long_k", "K=16384")),
    "int8_through_fp32": ("packed", "int8", lambda check, s: check == "int8_exact", "values",
                          ({"int8_exact"}, {"long_k"}), ("int8_exact", "outside rtol 0, atol 0")),
    "skip_k0": ("packed", "fp16", lambda check, s: check == "k0", "unwritten", ({"k0"}, set()),
                ("k0", "never written")),
    "one_row_past": ("packed", "fp16", lambda check, s: sum(m for m, _, _ in s) and s[0][1], "outside",
                     ({"poison", "basic", "k0"}, {"all_empty", "n0"}), ("basic", "after the end of the last output")),
    "nondeterministic": ("packed", "fp16", lambda check, s: check == "determinism", "determinism",
                         ({"determinism"}, set()), ("determinism", "differs from call 1 bit for bit")),
    "modifies_input": ("packed", "fp16", lambda check, s: any(m * k for m, _, k in s), "inputs",
                       ({"basic", "n0"}, {"k0", "all_empty"}), ("basic", "was modified by the call")),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_planted_fault_fails_exactly_its_rows_at_the_sub_check_meant_for_it(fault):
    form, dtype, fails_where, failed, (among, not_among), (row, words) = FAULTS[fault]
    rows = run(getattr(kernels, fault), form, dtype)
    expected = {r.check for r in ran(rows) if fails_where(r.check, shapes(r))}
    assert verdicts(rows) == {check: ("fail", failed) for check in expected}
    assert among <= expected and not expected & not_among
    assert words in {r.check: r.detail for r in rows}[row]


def test_a_refused_dtype_is_unsupported_never_a_pass():
    rows = run(kernels.refuses_fp8, dtype="fp8")
    assert {r.status for r in rows} == {"unsupported", "n/a"}
    assert "no fp8 kernel in this build" in rows[0].detail
    assert Result({}, rows).exit_code == 3  # nothing applied
    fp16 = run(kernels.refuses_fp8, dtype="fp16")
    assert Result({}, rows + fp16).exit_code == 0 and verdicts(fp16) == {}
