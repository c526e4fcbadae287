"""The fault self-test: every fault of ``faults.FAULTS`` in one world, each in its own case, each required to
change something and to be reported first by the stage meant for it. A fault that changed nothing, or that a
different stage (or no stage) reported, fails the self-test.

Faults run at E >= 2 W experts (at least two local experts per rank, or swapping or reordering experts
changes nothing), on the balanced scenario, for 3 steps (the stale buffer shows from step 1).
``skipped_collective`` goes last, on a process group of its own with a collective timeout of a few seconds:
the skipping rank leaves its peers waiting until that group times out, after which the group is unusable.
On NCCL a timed-out collective brings the process down (the watchdog), so it runs on gloo only. At world
size 1 there is no split to shift, no peer to leave waiting, and rows from one source are already in expert
order: the faults with ``min_world=2`` are left out there.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, replace

import torch.distributed as dist

from .config import Case, MoEConfig
from .faults import FAULTS, check_fault_names
from .flow import run_case
from .world import World

SKIP_TIMEOUT_S = 3.0


@dataclass
class FaultOutcome:
    fault: str
    mode: str
    label: str  # the case's MoEConfig.label
    expected: str  # the stage meant to catch it
    stage: str | None  # the stage that reported it first (world verdict)
    applied: bool  # it changed something
    failing_ranks: list[int]
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.applied and self.stage == self.expected

    def row(self) -> dict:
        return {"fault": self.fault, "mode": self.mode, "expected stage": self.expected,
                "reported by": self.stage or "nothing", "changed something": "yes" if self.applied else "no",
                "failing ranks": self.failing_ranks, "ok": self.ok}


def fault_config(world_size: int, mode: str, dtype: str = "bf16", quant: str = "none") -> MoEConfig:
    """A fault's case: ``dtype`` unscaled, or fp8 when the fault needs a scaled recipe."""
    return MoEConfig(experts=max(8, 2 * world_size), dtype=dtype if quant == "none" else "fp8", quant=quant,
                     mode=mode)


def fault_plan(names=None, modes=("exact", "numeric"), *, backend: str = "gloo", world_size: int = 2):
    """(fault, mode) pairs in run order: ``skipped_collective`` last (and only on gloo); faults that need
    peers only at world size 2 and up."""
    names = [n for n in check_fault_names(names if names is not None else tuple(FAULTS))
             if world_size >= FAULTS[n].min_world]
    plan = [(n, m) for n in names if not FAULTS[n].own_world for m in modes
            if m == "numeric" or not FAULTS[n].numeric_only]
    if "skipped_collective" in names and backend == "gloo":
        plan.append(("skipped_collective", modes[0]))
    return plan


def run_self_test(world: World, *, seed: int, names=None, modes=("exact", "numeric"), dtype: str = "bf16",
                  gemm=None, backend: str | None = None, steps: int = 3) -> list[FaultOutcome]:
    outcomes = []
    for name, mode in fault_plan(names, modes, backend=world.backend, world_size=world.size):
        spec = FAULTS[name]
        cfg = fault_config(world.size, mode, dtype, spec.quant)
        run_world = world
        scenario, case_steps = "balanced", steps
        if spec.own_world:
            group = dist.new_group(backend=world.backend, timeout=datetime.timedelta(seconds=SKIP_TIMEOUT_S))
            run_world, scenario, case_steps = replace(world, group=group), "zero-token-rank", 1
        result = run_case(run_world, Case(scenario, cfg, case_steps), seed=seed, gemm=gemm, backend=backend,
                          faults=(name,))
        outcomes.append(FaultOutcome(name, mode, cfg.label, spec.stage, result.stage, result.applied.get(name, False),
                                     result.failing_ranks, result.local["detail"]))
    return outcomes
