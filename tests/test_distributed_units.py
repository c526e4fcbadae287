"""Single-process tests of ckgemm.testing.distributed's pieces: the reorder permutation (torchtitan-style hand
cases), the router's scenarios, the shared data, the reference (against a per-token loop), the check helpers
and the argument checks. The multi-rank flow is in test_distributed_flow.py."""
from __future__ import annotations

import pytest
import torch

from ckgemm.testing.distributed import checks, faults, recipes, router
from ckgemm.testing.distributed.batch import make_batch, make_expert_weights
from ckgemm.testing.distributed.cli import parse_args
from ckgemm.testing.distributed.config import Case, MoEConfig, grid
from ckgemm.testing.distributed.layer import expert_major_order
from ckgemm.testing.distributed.reference import expected_for_rank
from support import BASE_SEED


def test_expert_major_order_hand_case():
    # source 0 sends 1 row to expert 0 and 2 to expert 1; source 1 sends 3 rows to expert 0, none to expert 1
    counts = torch.tensor([[1, 2], [3, 0]])
    assert expert_major_order(counts, 6).tolist() == [0, 3, 4, 5, 1, 2]


@pytest.mark.parametrize("counts, expected", [
    ([[4]], [0, 1, 2, 3]),  # one rank, one expert: nothing moves
    ([[2, 1, 0]], [0, 1, 2]),  # one rank: rank-major is expert-major
    ([[0, 0], [0, 0]], []),  # nothing received
    ([[0, 2], [1, 0], [0, 1]], [2, 0, 1, 3]),  # empty segments interleaved
])
def test_expert_major_order_edge_cases(counts, expected):
    counts = torch.tensor(counts)
    assert expert_major_order(counts, int(counts.sum())).tolist() == expected


def test_expert_major_order_is_a_permutation_sorted_by_expert():
    gen = torch.Generator().manual_seed(BASE_SEED)
    counts = torch.randint(0, 5, (4, 3), generator=gen)
    total = int(counts.sum())
    perm = expert_major_order(counts, total)
    assert sorted(perm.tolist()) == list(range(total))
    expert_of_row = torch.cat([torch.full((int(c),), e) for r in range(4) for e, c in enumerate(counts[r])])
    assert torch.equal(expert_of_row[perm], torch.sort(expert_of_row, stable=True).values)


def _route(name, world=4, experts=8, tokens=40, exact=True, seed=BASE_SEED):
    return router.route(router.scenario_named(name), tokens=tokens, experts=experts, topk=2, world=world,
                        exact=exact, gen=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", sorted(router.SCENARIOS))
def test_routing_is_seeded_and_picks_distinct_experts(name):
    a, b = _route(name), _route(name)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.weights, b.weights)
    assert a.tokens_per_rank == b.tokens_per_rank
    assert a.ids.shape == (sum(a.tokens_per_rank), 2)
    assert bool((a.ids[:, 0] != a.ids[:, 1]).all()) and int(a.ids.min()) >= 0 and int(a.ids.max()) < 8
    assert not torch.equal(a.ids, _route(name, seed=BASE_SEED + 1).ids)


def test_scenarios_shape_the_traffic():
    tokens = _route("balanced").tokens_per_rank
    assert len(set(tokens)) == 4, "tokens per rank are uneven in every scenario"
    assert _route("zero-token-rank").tokens_per_rank[-1] == 0
    empty_rank = _route("empty-rank")
    assert int(empty_rank.ids.max()) < 6, "no token routes to the last rank's experts (6, 7)"
    counts = torch.bincount(_route("empty-expert").ids.flatten(), minlength=8)
    assert int((counts == 0).sum()) >= 1
    zipf = torch.bincount(_route("zipf", tokens=400).ids.flatten(), minlength=8).sort(descending=True).values
    flat = torch.bincount(_route("balanced", tokens=400).ids.flatten(), minlength=8).sort(descending=True).values
    assert int(zipf[0]) > 1.5 * int(flat[0]), (zipf, flat)


def test_exact_weights_are_powers_of_two_and_numeric_ones_sum_to_one():
    w = _route("balanced").weights
    assert bool(torch.isin(w, torch.tensor([0.5, 0.25, 0.125, 0.0625])).all())
    numeric = _route("balanced", exact=False).weights
    torch.testing.assert_close(numeric.sum(1), torch.ones(numeric.shape[0]))


def test_empty_rank_at_world_one_has_no_tokens():
    assert sum(_route("empty-rank", world=1).tokens_per_rank) == 0


@pytest.mark.parametrize("dtype", ["bf16", "fp8", "int8"])
def test_batch_is_rebuilt_bit_for_bit_and_exact_values_are_small(dtype):
    cfg = MoEConfig(dtype=dtype, mode="exact")
    a, b = (make_batch(cfg, "zipf", BASE_SEED, 2, 4, "cpu") for _ in range(2))
    assert torch.equal(a.x.data.view(torch.uint8), b.x.data.view(torch.uint8))
    assert set(a.x.data.float().unique().tolist()) <= {-1.0, 0.0, 1.0}
    other_step = make_batch(cfg, "zipf", BASE_SEED, 3, 4, "cpu")
    assert not torch.equal(other_step.routing.ids[:8], a.routing.ids[:8])
    w = make_expert_weights(cfg, BASE_SEED, "cpu")
    assert w.data.shape == (8, 256, 256) and w.data.dtype == cfg.input_dtype("cpu")  # two scale blocks each way


@pytest.mark.parametrize("dtype, mode", [("bf16", "exact"), ("int8", "numeric"), ("fp8", "numeric")])
def test_reference_matches_a_per_token_loop(dtype, mode):
    """The oracle itself, at world size 2: every (token, slot) row and combined output by plain loops."""
    cfg = MoEConfig(dtype=dtype, mode=mode)
    batch = make_batch(cfg, "balanced", BASE_SEED, 0, 2, "cpu")
    weights = make_expert_weights(cfg, BASE_SEED, "cpu")
    for rank in range(2):
        exp = expected_for_rank(batch, weights, cfg, rank, 2)
        tokens = batch.local(rank)
        x, w = tokens.x.data.double(), weights.data.double()
        for t in range(tokens.ids.shape[0]):
            rows = torch.stack([x[t] @ w[int(e)].t() for e in tokens.ids[t]])
            torch.testing.assert_close(exp.returned[t].double(), rows, rtol=1e-6, atol=1e-5)
            torch.testing.assert_close(exp.out[t], (rows * tokens.weights[t].double()[:, None]).sum(0),
                                       rtol=1e-6, atol=1e-5)
        assert exp.tags.shape[0] == sum(exp.group_sizes) == int(exp.recv_counts.sum())
        experts_of_rows = torch.repeat_interleave(torch.arange(4) + 4 * rank, torch.tensor(exp.group_sizes))
        source_rows = [batch.routing.rows_of(int(r)).start + int(t) for r, t, _ in exp.tags.tolist()]
        assert torch.equal(batch.routing.ids[source_rows, exp.tags[:, 2]], experts_of_rows)


def test_same_bits_tells_zero_signs_and_nan_apart():
    a = torch.tensor([0.0, float("nan")])
    assert checks.same_bits(a, a.clone())
    assert not checks.same_bits(a, torch.tensor([-0.0, float("nan")]))
    assert not checks.same_bits(a, a.to(torch.float64))


def test_calc_diff_bound_follows_the_output_precision():
    bf16 = checks.calc_diff_bound(torch.bfloat16, torch.float32, 128)
    fp32 = checks.calc_diff_bound(torch.float32, torch.float32, 128)
    assert 1e-5 < bf16 < 1e-3 and fp32 < 1e-9
    assert checks.calc_diff_bound(torch.int32, torch.int32, 4096) < 1e-13


def test_unknown_fault_scenario_and_recipe_are_clear_errors():
    with pytest.raises(ValueError, match="unknown fault"):
        faults.Injector(["no_such_fault"])
    with pytest.raises(ValueError, match="unknown scenario"):
        router.scenario_named("nope")
    with pytest.raises(ValueError, match="takes dtypes"):
        recipes.check_recipe("block", "int8")
    with pytest.raises(ValueError, match="exact mode with bf16 needs hidden <= 256"):
        MoEConfig(hidden=512)
    with pytest.raises(ValueError, match="do not split evenly"):
        MoEConfig(experts=6).local_experts(4)


def test_faults_are_off_unless_named():
    injector = faults.Injector()
    assert not injector.active and not injector.applied
    order, counts = torch.arange(4), torch.tensor([2, 2])
    assert injector.dropped_token(order, torch.tensor([0, 0, 1, 1]), counts) == (order, counts)
    on_rank_1 = faults.Injector(["dropped_token", "skipped_collective"], rank=1, world=2)
    assert on_rank_1.active == {"skipped_collective"}  # dropped_token misbehaves on rank 0 only
    assert faults.check_fault_names("stale-buffer") == ("stale_buffer",)  # one name, not its letters
    assert router.scenario_named("zero_token_rank").idle_last_rank


def test_grid_covers_every_cell_and_leaves_out_what_a_recipe_cannot_take():
    cases = grid(["balanced", "zipf"], ["bf16", "fp8", "int8"], ["exact", "numeric"], quants=("none", "block"))
    assert len(cases) == 2 * 3 * 2 + 2 * 1 * 2
    assert {c.config.dtype for c in cases if c.config.quant == "block"} == {"fp8"}
    assert isinstance(cases[0], Case) and cases[0].name == "balanced bf16 exact"


def test_cli_rejects_unknown_names(capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(["--scenario", "balanced,nope"])
    assert exc.value.code == 2 and "unknown ['nope']" in capsys.readouterr().err
    args = parse_args(["--dtype", "all", "--mode", "numeric"])
    assert args.dtypes == ["bf16", "fp16", "fp8", "int8"] and args.modes == ["numeric"]


def test_a_failed_phase_is_reported_at_its_own_stage():
    """A dispatch collective that raised leaves no received rows; the verdict must name the dispatch's stage
    (row contents), not the first stage that finds its input missing."""
    from ckgemm.testing.distributed.layer import Trace

    cfg = MoEConfig()
    batch = make_batch(cfg, "balanced", BASE_SEED, 0, 2, "cpu")
    exp = expected_for_rank(batch, make_expert_weights(cfg, BASE_SEED, "cpu"), cfg, 0, 2)
    trace = Trace(send_counts=exp.send_counts, recv_counts=exp.recv_counts,
                  error=("row contents", "dispatch: RuntimeError: Timed out"), broken=True)
    verdict = checks.check_step(trace, exp, cfg)
    assert (verdict.stage, verdict.detail) == ("row contents", "dispatch: RuntimeError: Timed out")
    trace.recv_counts = exp.recv_counts + 1  # wrong counts that did arrive still fail first, at their stage
    assert checks.check_step(trace, exp, cfg).stage == "counts"
