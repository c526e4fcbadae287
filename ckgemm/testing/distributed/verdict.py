"""One verdict for the whole world: every rank's first failed stage, whether a collective broke the process
group, and which faults changed something, all-reduced so any rank's failure fails every rank; and the
per-rank summary table that rank 0 prints.

The verdict travels on the control group (gloo, CPU tensors), never on the layer's group: after a
collective of the layer failed (a rank skipped it, a timeout), the control group still works, so every rank
still learns the verdict.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass

import torch
import torch.distributed as dist
from tabulate import tabulate

from .checks import STAGES, LocalVerdict


@dataclass
class WorldVerdict:
    stages: list[int]  # per rank: index of its first failed stage, -1 when it passed
    broken: bool  # a collective of the layer failed on some rank: its group is unusable
    applied: dict  # fault name -> changed something on some rank

    @property
    def failing_ranks(self) -> list[int]:
        return [r for r, s in enumerate(self.stages) if s >= 0]

    @property
    def failed(self) -> bool:
        return bool(self.failing_ranks)

    @property
    def stage(self) -> str | None:
        """The earliest stage that failed on any rank (the world's verdict), or None."""
        failed = [s for s in self.stages if s >= 0]
        return STAGES[min(failed)] if failed else None


def world_verdict(local: LocalVerdict, broken: bool, applied: dict, control, rank: int, world: int) -> WorldVerdict:
    names = sorted(applied)
    table = torch.zeros((world, 2 + len(names)), dtype=torch.int64)
    table[rank, 0] = local.stage_index + 1
    table[rank, 1] = int(broken)
    for i, name in enumerate(names):
        table[rank, 2 + i] = int(bool(applied[name]))
    dist.all_reduce(table, group=control)
    stages = [int(v) - 1 for v in table[:, 0]]
    any_applied = {name: bool(table[:, 2 + i].any()) for i, name in enumerate(names)}
    return WorldVerdict(stages, bool(table[:, 1].any()), any_applied)


def gather_to_rank0(obj, control, rank: int, world: int):
    """Every rank's ``obj`` as a list on rank 0 (None elsewhere). Pickled into uint8 tensors by hand:
    ``dist.gather_object`` needs numpy, which torch does not depend on."""
    payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([payload.numel()], dtype=torch.int64), group=control)
    longest = max(int(s) for s in sizes)
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[:payload.numel()] = payload
    parts = [torch.empty(longest, dtype=torch.uint8) for _ in range(world)] if rank == 0 else None
    dist.gather(padded, parts, dst=0, group=control)
    if rank != 0:
        return None
    return [pickle.loads(bytes(part[:int(n)].tolist())) for part, n in zip(parts, sizes)]


SUMMARY_COLUMNS = ("case", "rank", "tokens", "sent", "received", "rows per local expert", "steps", "stage",
                   "world stage", "detail")


def summary_table(rows: list[dict], width: int = 100) -> str:
    """Per case and rank: traffic, the rank's own first failed stage, the world's verdict, the first lines of
    the failure (the full text is in the JSON report)."""
    def cell(row: dict, column: str) -> str:
        value = row.get(column)
        if column == "detail":
            return ((value or "").splitlines() or [""])[0][:width]
        return "pass" if column.endswith("stage") and value is None else str(value)

    body = [[cell(row, c) for c in SUMMARY_COLUMNS] for row in rows]
    return tabulate(body, headers=SUMMARY_COLUMNS, tablefmt="simple", disable_numparse=True)
