"""The expert-parallel correctness flow on one rank: for each case, build the layer from the shared seed,
run it for ``steps`` steps with fresh tokens (one persistent layer, so stale state shows), check each step
locally against the rank's own reference, all-reduce the verdict, stop at the first failing step, and
finally rerun step 0 (determinism). Every rank runs the same sequence of collectives whatever its checks
found; a failure on any rank stops every rank after the same step.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .batch import local_expert_weights, make_batch, make_expert_weights
from .checks import LocalVerdict, check_rerun, check_step
from .config import Case
from .faults import FAULTS, Injector, check_fault_names
from .world import World
from .layer import EPMoE
from .recipes import check_recipe
from .reference import expected_for_rank
from .verdict import gather_to_rank0, world_verdict


@dataclass
class CaseResult:
    case: str  # "<scenario> <label>"
    scenario: str
    label: str  # MoEConfig.label: dtype, recipe, mode
    stage: str | None  # the world's verdict: earliest failed stage on any rank, None when all passed
    failing_ranks: list[int]
    steps_run: int  # including the rerun
    applied: dict  # fault -> changed something (on any rank, at any step)
    broken: bool  # the layer's group failed: no further case can run in this world
    local: dict  # this rank's row of the summary table
    rows: list[dict] | None = None  # every rank's row, on rank 0
    times: dict = field(default_factory=dict)  # phase -> seconds on this rank, summed over steps

    @property
    def passed(self) -> bool:
        return self.stage is None


def _summary_row(case: Case, world: World, verdict: LocalVerdict, trace, steps: int, world_stage) -> dict:
    local_rows = trace.recv_counts.sum(0).tolist() if trace.recv_counts is not None else None
    return {"case": case.name, "rank": world.rank, "tokens": None if trace.out is None else trace.out.shape[0],
            "sent": None if trace.send_splits is None else sum(trace.send_splits),
            "received": None if trace.recv_splits is None else sum(trace.recv_splits),
            "rows per local expert": local_rows, "steps": steps, "stage": verdict.stage,
            "world stage": world_stage, "detail": verdict.detail, "worst": verdict.worst}


def run_case(world: World, case: Case, *, seed: int, gemm=None, backend: str | None = None, faults=()) -> CaseResult:
    """One case through the layer for its steps and a rerun. ``faults`` are injected; a fault that needs more
    ranks than the world has is refused, and ``CaseResult.applied`` says whether each changed anything (one
    that changed nothing leaves the case passing: check it, as the self-test does)."""
    cfg = case.config
    check_recipe(cfg.quant, cfg.dtype)
    short = [n for n in check_fault_names(faults) if FAULTS[n].min_world > world.size]
    if short:
        raise ValueError(f"fault(s) {short} need at least 2 ranks; this world has {world.size}")
    if case.steps < 1:
        raise ValueError(f"case {case.name}: steps must be >= 1")
    rank, size, device = world.rank, world.size, world.device
    weights = make_expert_weights(cfg, seed, device)
    injector = Injector(faults, rank, size)
    layer = EPMoE(local_expert_weights(weights, rank, size), num_experts=cfg.experts, recipe=cfg.quant,
                  group=world.group, gemm=gemm, backend=backend, faults=injector, rank=rank, world=size)
    first, times = None, {}
    for step in range(case.steps + 1):
        rerun = step == case.steps  # the last pass reruns step 0 through the same, used layer
        batch = make_batch(cfg, case.scenario, seed, 0 if rerun else step, size, device)
        trace = layer.forward(batch.local(rank))
        local = check_step(trace, expected_for_rank(batch, weights, cfg, rank, size), cfg)
        if rerun and local.stage is None:
            problem = check_rerun(first, trace)
            local = LocalVerdict("rerun determinism", problem, local.worst) if problem else local
        first = trace if step == 0 else first
        for phase, seconds in trace.times.items():
            times[phase] = times.get(phase, 0.0) + seconds
        verdict = world_verdict(local, trace.broken, injector.applied, world.control, rank, size)
        if verdict.failed:
            break
    row = _summary_row(case, world, local, trace, step + 1, verdict.stage)
    rows = gather_to_rank0(row, world.control, rank, size)
    return CaseResult(case.name, case.scenario, cfg.label, verdict.stage, verdict.failing_ranks, step + 1,
                      verdict.applied, verdict.broken, row, rows, times)


def run_flow(world: World, cases, *, seed: int, gemm=None, backend: str | None = None, faults=()) -> list[CaseResult]:
    """Every case in order; stops early only when a collective broke the layer's group."""
    results = []
    for case in cases:
        results.append(run_case(world, case, seed=seed, gemm=gemm, backend=backend, faults=faults))
        if results[-1].broken:
            break
    return results
