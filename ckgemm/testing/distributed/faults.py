"""Fault injection for the expert-parallel flow's self-test: each fault is a rank-coordination bug that the
flow's checks must catch, and catch at the stage meant for it.

Faults are switched on only through the ``faults=`` argument of ``EPMoE`` / ``run_flow`` (never an
environment variable, never by default). Each one misbehaves on one rank (``FAULTS[name].rank``; -1 is the
last rank) and records whether it changed anything: a fault that changed nothing proves nothing, and the
self-test fails it as such. Faults that need peers (``min_world=2``) are left out at world size 1.

| fault | the bug | caught by |
|---|---|---|
| swapped_experts | one rank runs two of its local experts with each other's weights | GEMM |
| off_by_one_split | a receiver expects one row too many from one source and one too few from another | handshake |
| dropped_token | a sender drops one (token, slot) and sends counts that agree with the drop | counts |
| stale_buffer | from step 1, the largest source segment of the persistent receive buffer is not refreshed | row contents |
| skipped_reorder | received rows go to the GEMM in source-rank order, not expert order | token order |
| unreordered_scales | (scaled recipes) the rows are reordered but their scales are not | row contents |
| skipped_return_reorder | GEMM rows go back in expert order, not in the order they arrived | returned rows |
| wrong_combine_weight | the combine weighs slot k with slot k-1's weight | combine |
| rerun_drift | the GEMM output moves by one ulp in one element on every call after the first (numeric mode) | rerun determinism |
| skipped_collective | a rank skips the step's exchanges (the "nothing to send" early return); its own world | handshake |
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FaultSpec:
    name: str
    stage: str  # the check stage that must report it first
    rank: int = 0  # the rank that misbehaves; -1: the last rank
    numeric_only: bool = False  # exact mode catches it earlier (any drift is a GEMM mismatch there)
    quant: str = "none"  # the recipe it needs (scales to misplace); its self-test case uses fp8
    own_world: bool = False  # it breaks the process group, so it runs last, alone
    min_world: int = 1  # 2: it needs peers (one source: rank-major order is expert-major, no split to shift)


FAULTS = {f.name: f for f in (
    FaultSpec("swapped_experts", "GEMM"),
    FaultSpec("off_by_one_split", "handshake", min_world=2),
    FaultSpec("dropped_token", "counts"),
    FaultSpec("stale_buffer", "row contents"),
    FaultSpec("skipped_reorder", "token order", min_world=2),
    FaultSpec("unreordered_scales", "row contents", quant="block", min_world=2),
    FaultSpec("skipped_return_reorder", "returned rows", min_world=2),
    FaultSpec("wrong_combine_weight", "combine"),
    FaultSpec("rerun_drift", "rerun determinism", numeric_only=True),
    FaultSpec("skipped_collective", "handshake", rank=-1, own_world=True, min_world=2),
)}


def check_fault_names(names) -> tuple[str, ...]:
    """Known fault names (``swapped-experts`` and ``swapped experts`` also name ``swapped_experts``)."""
    names = (names,) if isinstance(names, str) else tuple(names or ())
    names = tuple(n.replace("-", "_").replace(" ", "_") for n in names)
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault(s) {unknown}; known: {sorted(FAULTS)}")
    return names


class Injector:
    """The faults active on this rank, with a hook for each, and what each hook changed."""

    def __init__(self, names=(), rank: int = 0, world: int = 1):
        self.names = check_fault_names(names)
        self.active = {n for n in self.names if (FAULTS[n].rank % world) == rank}
        self.applied = {n: False for n in self.names}
        self.gemm_calls = 0

    def on(self, name: str) -> bool:
        return name in self.active

    def _record(self, name: str, changed: bool) -> None:
        self.applied[name] = self.applied[name] or bool(changed)

    def dropped_token(self, order: torch.Tensor, flat_ids: torch.Tensor, counts: torch.Tensor):
        """(order, counts) without the last routed (token, slot) of this rank."""
        if not self.on("dropped_token") or order.numel() == 0:
            return order, counts
        counts = counts.clone()
        counts[flat_ids[order[-1]]] -= 1
        self._record("dropped_token", True)
        return order[:-1], counts

    def off_by_one_split(self, recv_splits: list[int]) -> list[int]:
        if not self.on("off_by_one_split") or len(recv_splits) < 2:
            return recv_splits
        source = max(range(len(recv_splits)), key=lambda r: recv_splits[r])
        if recv_splits[source] == 0:
            return recv_splits
        splits = list(recv_splits)
        splits[source] -= 1
        splits[(source + 1) % len(splits)] += 1
        self._record("off_by_one_split", True)
        return splits

    def stale(self, step: int) -> bool:
        return self.on("stale_buffer") and step > 0

    def keep_stale_segment(self, buffer: torch.Tensor, fresh: torch.Tensor, recv_splits: list[int]) -> None:
        """Refresh ``buffer`` from ``fresh`` except the largest source segment, which keeps old rows."""
        source = max(range(len(recv_splits)), key=lambda r: recv_splits[r])
        start = sum(recv_splits[:source])
        end = start + recv_splits[source]
        changed = not torch.equal(buffer[start:end].view(torch.uint8), fresh[start:end].view(torch.uint8))
        buffer[:start].copy_(fresh[:start])
        buffer[end:].copy_(fresh[end:])
        self._record("stale_buffer", changed)

    def _skip_permutation(self, name: str, perm: torch.Tensor) -> torch.Tensor:
        if not self.on(name):
            return perm
        identity = torch.arange(perm.numel(), device=perm.device)
        self._record(name, not torch.equal(perm, identity))
        return identity

    def reorder(self, perm: torch.Tensor) -> torch.Tensor:
        return self._skip_permutation("skipped_reorder", perm)

    def scale_reorder(self, perm: torch.Tensor) -> torch.Tensor:
        return self._skip_permutation("unreordered_scales", perm)

    def return_reorder(self, perm: torch.Tensor) -> torch.Tensor:
        return self._skip_permutation("skipped_return_reorder", perm)

    def gemm_weights(self, weights, group_sizes: torch.Tensor):
        """Local expert weights with the two busiest experts' swapped."""
        if not self.on("swapped_experts") or weights.data.shape[0] < 2:
            return weights
        busiest = torch.argsort(group_sizes.cpu(), descending=True, stable=True)[:2].tolist()
        if int(group_sizes[busiest[0]]) == 0:
            return weights
        order = list(range(weights.data.shape[0]))
        order[busiest[0]], order[busiest[1]] = busiest[1], busiest[0]
        swapped = weights.rows(torch.tensor(order, device=weights.data.device))
        self._record("swapped_experts", not torch.equal(swapped.data.view(torch.uint8),
                                                        weights.data.view(torch.uint8)))
        return swapped

    def gemm_output(self, out: torch.Tensor) -> torch.Tensor:
        """From the second GEMM call on, flip the lowest mantissa bit of the smallest non-zero output."""
        self.gemm_calls += 1
        if not self.on("rerun_drift") or self.gemm_calls == 1 or not out.is_floating_point():
            return out
        magnitude = out.float().abs()
        magnitude[magnitude == 0] = float("inf")
        if out.numel() == 0 or not torch.isfinite(magnitude.min()):
            return out
        bits = {2: torch.int16, 4: torch.int32}[out.element_size()]
        flat = out.view(-1).view(bits)
        where = int(magnitude.view(-1).argmin())
        flat[where] ^= 1
        self._record("rerun_drift", True)
        return out

    def combine_weights(self, weights: torch.Tensor) -> torch.Tensor:
        if not self.on("wrong_combine_weight"):
            return weights
        rolled = weights.roll(1, dims=1)
        self._record("wrong_combine_weight", not torch.equal(rolled, weights))
        return rolled

    def skips_exchange(self) -> bool:
        if self.on("skipped_collective"):
            self._record("skipped_collective", True)
            return True
        return False

