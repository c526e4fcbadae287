"""benchmarks/units_model.py, the arithmetic behind docs/PERF_2026-12-06i.md's account of Mixtral: unit costs,
the stride's and the drawn schedule's makespans, and the rows computed but never stored, on hand-worked cases."""
from __future__ import annotations

import pytest

from bench_scripts import benchmark_module  # noqa: F401 - a fixture


@pytest.fixture
def units_model(benchmark_module):  # noqa: F811 - the fixture above
    """benchmarks/units_model.py as a module (bench_scripts' path and sys.modules handling)."""
    return benchmark_module("units_model")


def test_unit_costs_follow_the_warp_groups_rows(units_model):
    # 200 rows: M-blocks of 128 and 72 (both warp groups run); 130 rows: 128 and 2 (one warp group: half)
    assert units_model.unit_costs([200], n=512) == [1.0, 1.0]
    assert units_model.unit_costs([130], n=512) == [1.0, 0.5]
    # N 1024 in 256-wide blocks is two pairs; N 768 rounds its odd block up to a pair; empty groups have none
    assert units_model.unit_costs([130, 0], n=1024) == [1.0, 0.5, 1.0, 0.5]
    assert len(units_model.unit_costs([64], n=768)) == 2
    assert units_model.unit_costs([64], n=256, half=0.7) == [0.7]


def test_drawn_units_balance_what_the_stride_cannot(units_model):
    costs = [1, 0.5, 1, 0.5, 1, 1]
    assert units_model.makespan(costs, 2) == 3  # cluster 0 takes 1 + 1 + 1
    assert units_model.makespan(costs, 2, drawn_rounds=None) == 2.5
    assert units_model.makespan(costs, 2, drawn_rounds=1) == 3  # the last two drawn: too late to balance
    assert units_model.makespan(costs, 2, drawn_rounds=2) == 2.5  # the last four
    assert units_model.makespan([1.0] * 5, 2) == 3 and units_model.makespan([1.0] * 5, 2, None) == 3
    # a split tail: the last round's unit in halves, drawn, fills the idle cluster
    assert units_model.makespan([1.0] * 5, 2, drawn_rounds=1, slices=2) == 2.5
    assert units_model.makespan([1.0] * 3, 2, drawn_rounds=None, slices=2) == 1.5
    # a drawn body: the cheap units balance before the tail; then its halves fill in
    assert units_model.makespan(costs, 2, drawn_rounds=1, body_drawn=True) == 2.5
    assert units_model.makespan([1, 1, 1, 0.5, 0.5], 2, drawn_rounds=1, slices=2, body_drawn=True) == 2.0
    # each slice's cost beyond its share: the last round's two units in halves of 0.5 + 0.25 end later than whole
    assert units_model.makespan([1.0] * 5, 2, drawn_rounds=1, slices=2, overhead=0.25) == 3.25  # 3 unsplit
    assert units_model.makespan([1.0] * 5, 2, drawn_rounds=1, slices=1, overhead=0.25) == 3  # unsplit: none


def test_balanced_rounds_spread_the_cheap_units(units_model):
    costs = [1, 0.5, 1, 0.5, 1, 1]  # the stride puts both halves on cluster 1: 3 against 2
    assert units_model.balanced(costs, 2) == 2.5 == units_model.makespan(costs, 2, drawn_rounds=None)
    assert units_model.balanced([1.0] * 5, 2) == 3  # nothing cheap: the stride's
    # the last round's missing unit goes to the cluster that had no cheap unit: cluster 0 takes 1 + 0.5 + 1,
    # cluster 1 1 + 1; by stride cluster 0 takes 1 + 1 + 1
    assert units_model.balanced([1, 1, 1, 0.5, 1], 2) == 2.5 < units_model.makespan([1, 1, 1, 0.5, 1], 2) == 3


def test_rows_not_stored_count_whole_warp_group_tiles(units_model):
    assert units_model.waste([192, 256]) == 0
    assert units_model.waste([200]) == pytest.approx(256 / 200 - 1)
    assert units_model.waste([1]) == 63


def test_the_mixtral_figures_of_the_perf_record(units_model):
    mixtral = next(c for c in units_model.all_cases(0) if c.name == "Mixtral prefill")
    row = units_model.model(list(mixtral.case.ms), 14336, clusters=66, half=0.5)
    assert row["units"] == 3696 and row["one-warp-group units"] == 84 and row["stride"] == 56 and row["drawn"] == 56
    assert row["mean per cluster"] == pytest.approx(55.36, abs=0.01)
    assert row["stride loss %"] == pytest.approx(1.15, abs=0.01)
    assert row["rows not stored %"] == pytest.approx(1.95, abs=0.01)
    assert row["stride+split 4x2"] == 55.5  # the split tail's bound: 0.25% over the mean
    assert row["stride+split 2x1"] == 55.5  # two slices in the last round get as far on this split
    assert row["balanced"] == 55.5  # as far again, with no split: every cluster takes one cheap unit or two
    # with the per-slice overhead fitted to the H100 runs (docs/PERF_2026-12-07.md), the split tail loses
    fitted = units_model.model(list(mixtral.case.ms), 14336, clusters=66, half=0.5, overhead=0.5)
    assert fitted["stride+split 2x1"] > fitted["stride"]
