"""The expert-parallel flow on real gloo worlds (fork + FileStore, one thread per rank): world sizes 2 and 4
run every scenario x {bf16, int8, fp8} x {exact, numeric} and every fault in one world each; the skipped
collective runs last, in a world of its own; world size 1 runs in this process. Each fault must change
something and be reported first by the stage meant for it, and every rank must reach the same verdict."""
from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

import ckgemm
from ckgemm.testing.data import poisoned
from ckgemm.testing.distributed import FAULTS, SCENARIOS, grid, launch, run_flow, run_in_process, run_self_test
from ckgemm.testing.distributed.config import Case, MoEConfig
from ckgemm.testing.distributed.exchange import SplitMismatch, handshake, wire_view
from ckgemm.testing.distributed.flow import run_case
from support import BASE_SEED

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")

DTYPES = ("bf16", "int8", "fp8")
MODES = ("exact", "numeric")
QUANTS = ("none", "row", "block")  # row: fp8, int8; block: fp8 (grid leaves out what a recipe cannot take)
SEED = BASE_SEED % 100_000
FAULTS_IN_WORLD = tuple(n for n, f in FAULTS.items() if not f.own_world)


class CountingGemm:
    """The default op, counting its calls: proves the GEMM callable is the one the layer runs."""

    def __init__(self):
        self.calls = 0

    def __call__(self, a, b, sizes, *, out, **scales):
        self.calls += 1
        return ckgemm.grouped_gemm_packed(a, b, sizes, out=out, **scales)


def gemm_skipping_last_group(a, b, sizes, *, out, **scales):
    """A kernel bug: the last group's rows are never written (they keep the NaN poison)."""
    last = int(sizes[-1])
    if a.shape[0] - last:
        head = torch.cat((sizes[:-1], sizes.new_zeros(1)))
        ckgemm.grouped_gemm_packed(a[:a.shape[0] - last], b, head, out=out[:a.shape[0] - last])
    return out


def gemm_that_raises(a, b, sizes, *, out, **scales):
    raise RuntimeError("kernel launch failed")


def _handshake_raises_everywhere(world) -> str:
    """Rank 0 expects one row too many from the last rank: every rank must raise, before any data moves."""
    sends = [3] * world.size
    expects = [3] * world.size
    if world.rank == 0:
        expects[-1] += 1
    try:
        handshake(sends, expects, world.group, world.device)
    except SplitMismatch as exc:
        return str(exc)
    return "no error"


def _world_body(world):
    handshake_error = _handshake_raises_everywhere(world)
    sizes = {"experts": max(8, 2 * world.size)}
    clean = run_flow(world, grid(tuple(SCENARIOS), DTYPES, MODES, sizes=sizes, quants=QUANTS, steps=3), seed=SEED)
    counting = CountingGemm()
    bf16 = MoEConfig(experts=sizes["experts"], dtype="bf16", mode="numeric")
    custom = {"counting": run_case(world, Case("zipf", bf16, 2), seed=SEED, gemm=counting),
              "skips last group": run_case(world, Case("balanced", bf16, 2), seed=SEED, gemm=gemm_skipping_last_group),
              "raises": run_case(world, Case("balanced", bf16, 2), seed=SEED, gemm=gemm_that_raises)}
    faults = run_self_test(world, seed=SEED, names=FAULTS_IN_WORLD)
    return {"clean": clean, "custom": custom, "gemm_calls": counting.calls, "faults": faults,
            "handshake": handshake_error}


@pytest.fixture(scope="module", params=(2, 4), ids=lambda w: f"world{w}")
def world_run(request):
    print(f"[seed] distributed flow: {SEED} (world {request.param}; CKGEMM_SEED sets it)")
    start = time.perf_counter()
    outcomes = launch(_world_body, request.param, timeout_s=30, deadline_s=150)
    failed = [f"rank {o.rank}: {o.error}" for o in outcomes if not o.ok]
    assert not failed, "\n".join(failed)
    print(f"world {request.param}: {time.perf_counter() - start:.1f} s")
    return [o.value for o in outcomes]


def test_every_scenario_dtype_and_mode_passes(world_run):
    lead = world_run[0]["clean"]
    expected = {f"{s} {d} {m}" for s in SCENARIOS for d in DTYPES for m in MODES}
    expected |= {f"{s} {d}/{q} {m}" for s in SCENARIOS for d, q in (("fp8", "row"), ("int8", "row"), ("fp8", "block"))
                 for m in MODES}
    assert {r.case for r in lead} == expected
    for r in lead:
        assert r.passed, "\n".join(f"rank {row['rank']}: {row['stage']}: {row['detail']}" for row in r.rows)
        assert r.steps_run == 4  # 3 steps with fresh tokens, then the rerun of step 0


def test_a_split_mismatch_raises_on_every_rank(world_run):
    last = len(world_run) - 1
    for v in world_run:
        assert v["handshake"].startswith("split handshake failed on rank(s) [0]"), v["handshake"]
    assert f"rank {last} announces 3 rows, the count exchange made rank 0 expect 4" in world_run[0]["handshake"]


def test_every_rank_reaches_the_same_verdicts(world_run):
    verdicts = [[(r.case, r.stage, r.failing_ranks) for r in v["clean"]] +
                [(o.fault, o.mode, o.stage, o.failing_ranks) for o in v["faults"]] for v in world_run]
    assert all(v == verdicts[0] for v in verdicts[1:])


def test_scenarios_move_the_traffic_they_promise(world_run):
    rows = {(row["case"], row["rank"]): row for r in world_run[0]["clean"] for row in r.rows}
    last = len(world_run) - 1
    assert rows[("zero-token-rank bf16 exact", last)]["sent"] == 0
    assert rows[("zero-token-rank bf16 exact", last)]["received"] > 0
    assert rows[("empty-rank bf16 exact", last)]["received"] == 0
    assert rows[("empty-rank bf16 exact", last)]["sent"] > 0
    per_expert = [n for rank in range(len(world_run))
                  for n in rows[("empty-expert int8 exact", rank)]["rows per local expert"]]
    assert 0 in per_expert


@pytest.mark.parametrize("fault", [n for n in FAULTS_IN_WORLD])
def test_each_fault_changes_something_and_its_stage_reports_it(world_run, fault):
    outcomes = [o for o in world_run[0]["faults"] if o.fault == fault]
    assert outcomes and {o.mode for o in outcomes} == ({"numeric"} if FAULTS[fault].numeric_only else set(MODES))
    for o in outcomes:
        assert o.applied, f"{fault} ({o.mode}) changed nothing, so it proves nothing"
        assert o.stage == FAULTS[fault].stage, f"{fault} ({o.mode}) reported by {o.stage!r}: {o.detail}"


def test_the_gemm_is_a_parameter(world_run):
    custom = world_run[0]["custom"]
    assert custom["counting"].passed
    assert all(v["gemm_calls"] == 3 for v in world_run)  # 2 steps and the rerun, on every rank
    assert custom["skips last group"].stage == "GEMM"
    unwritten = [row["detail"] for row in custom["skips last group"].rows if row["stage"] == "GEMM"]
    assert unwritten and all("out nan" in d for d in unwritten)  # the poison shows the rows never written
    raised = custom["raises"]
    assert raised.stage == "GEMM" and raised.failing_ranks == list(range(len(world_run)))
    assert "kernel launch failed" in raised.local["detail"]


def _skip_body(world):
    return run_self_test(world, seed=SEED, names=("skipped_collective",))


def test_skipped_collective_times_out_and_every_rank_fails_at_the_handshake():
    start = time.perf_counter()
    outcomes = launch(_skip_body, 2, timeout_s=30, deadline_s=60)
    elapsed = time.perf_counter() - start
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    for o in outcomes:
        (result,) = o.value
        assert result.applied and result.stage == "handshake" and result.failing_ranks == [0, 1]
    assert "Timed out" in outcomes[0].value[0].detail  # rank 0 waited for the rank that skipped
    assert elapsed < 20, f"the skipped collective took {elapsed:.1f} s to detect"


def _world_eight_body(world):
    return run_flow(world, grid(("balanced", "empty-rank"), ("bf16", "fp8"), MODES, sizes={"experts": 16}, steps=2),
                    seed=SEED)


@pytest.mark.skipif((os.cpu_count() or 1) < 8, reason="world size 8 needs 8 cores (one rank each)")
def test_world_size_eight():
    outcomes = launch(_world_eight_body, 8, timeout_s=60, deadline_s=120)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    assert all(r.passed for r in outcomes[0].value), [(r.case, r.stage) for r in outcomes[0].value]


def _world_one_body(world):
    cases = grid(tuple(SCENARIOS), DTYPES + ("fp16",), MODES, quants=QUANTS, steps=2)
    return run_flow(world, cases, seed=SEED), run_self_test(world, seed=SEED)


def test_world_size_one_runs_in_process():
    results, faults = run_in_process(_world_one_body)
    assert len(results) == len(SCENARIOS) * (len(DTYPES) + 4) * len(MODES)  # + fp16, fp8/row, int8/row, fp8/block
    assert all(r.passed for r in results), [(r.case, r.stage, r.local["detail"]) for r in results if not r.passed]
    assert {o.fault for o in faults} == {n for n, f in FAULTS.items() if f.min_world == 1}
    assert all(o.ok for o in faults), [o.row() for o in faults if not o.ok]
    assert not dist.is_initialized()


def _dies(world):
    dist.barrier(group=world.control)  # both ranks are up; now rank 1 dies without reporting
    if world.rank == 1:
        os._exit(3)
    return "ok"


def _raises(world):
    dist.barrier(group=world.control)
    if world.rank == 1:
        raise ValueError("rank 1 refuses")
    return "ok"


def test_launcher_reports_ranks_that_die_or_raise():
    died = launch(_dies, 2, deadline_s=30)
    assert died[0].ok and died[0].value == "ok"
    assert not died[1].ok and "exit code 3" in died[1].error
    raised = launch(_raises, 2, deadline_s=30)
    assert raised[0].ok and not raised[1].ok and "ValueError: rank 1 refuses" in raised[1].error


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e4m3fnuz])
def test_fp8_travels_as_bytes_and_its_poison_survives(dtype):
    buffer = poisoned((2, 3), dtype)
    wire = wire_view(buffer)
    assert wire.dtype == torch.uint8 and wire.data_ptr() == buffer.data_ptr()  # a view: the receive writes fp8
    assert bool(torch.isnan(wire.view(dtype).float()).all())
    assert wire_view(poisoned((2, 3), torch.bfloat16)).dtype == torch.bfloat16


def gemm_casting_to_bf16(a, b, sizes, *, out, **scales):
    """A kernel bug: the right values in the wrong output dtype (int8's int32, or fp8's float32, as bf16)."""
    return ckgemm.grouped_gemm_packed(a, b, sizes, **scales).to(torch.bfloat16)


def gemm_with_the_first_scale_blocks(a, b, sizes, *, out, scale_a, scale_b):
    """A kernel bug: every K and N block scaled with the first block's scales."""
    first_a = scale_a[:, :1].expand_as(scale_a).contiguous()
    first_b = scale_b[:, :1, :1].expand_as(scale_b).contiguous()
    return ckgemm.grouped_gemm_packed(a, b, sizes, out=out, scale_a=first_a, scale_b=first_b)


def _wrong_gemms_body(world):
    numeric = [run_case(world, Case("balanced", MoEConfig(dtype=d, mode="numeric"), 2), seed=SEED,
                        gemm=gemm_casting_to_bf16) for d in ("int8", "fp8")]
    block = [run_case(world, Case("balanced", MoEConfig(dtype="fp8", quant="block", mode=m), 2), seed=SEED,
                      gemm=gemm_with_the_first_scale_blocks) for m in MODES]
    return numeric, block


def test_wrong_output_dtypes_and_block_scale_indexing_fail_at_the_gemm():
    """Numeric mode checks the GEMM's output dtype before its tolerance (which follows the dtype); the default
    sizes (K 256, N 256) give two scale blocks each way, so block 0's scales everywhere is caught."""
    numeric, block = run_in_process(_wrong_gemms_body)
    for r in numeric + block:
        assert not r.passed and r.stage == "GEMM", (r.case, r.stage, r.local)
    assert all("expected torch." in r.local["detail"] for r in numeric), [r.local["detail"] for r in numeric]


def _fault_needing_peers_body(world):
    with pytest.raises(ValueError, match=r"off_by_one_split.*need at least 2 ranks; this world has 1"):
        run_case(world, Case("balanced", MoEConfig(), 1), seed=SEED, faults=("off_by_one_split",))
    return True


def test_a_fault_that_needs_peers_is_refused_at_world_size_one():
    """Injected there it could change nothing, and the case would pass as if the fault were caught."""
    assert run_in_process(_fault_needing_peers_body)
