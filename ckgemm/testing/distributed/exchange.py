"""The collectives of the expert-parallel layer, on ``torch.distributed`` only (gloo, NCCL, RCCL alike).

1. ``exchange_counts``: every rank sends each rank its per-expert row counts (``all_to_all_single`` of E ints).
2. ``handshake``: every rank tells each receiver how many rows it will send; each receiver compares that with
   what its count exchange made it expect; the verdicts are all-reduced, and a mismatch anywhere raises
   ``SplitMismatch`` on every rank before any row moves. Without it a receiver expecting more rows than
   sent stays silent on gloo (the extra rows keep their prefill), one expecting fewer aborts the process,
   and NCCL validates nothing at all (research/distributed_moe.md 4.2).
3. ``all_to_all_rows``: uneven ``all_to_all_single`` of rows into a caller's (NaN-filled) buffer. 1-byte
   floats travel as a uint8 view (gloo rejects float8 tensors; NCCL takes the same bytes).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from ..data import poisoned


class ExchangeError(RuntimeError):
    """A phase of the layer failed; ``stage`` names the check stage it belongs to, ``broken`` says that a
    collective failed with it, so the layer's process group cannot be trusted any more."""

    def __init__(self, stage: str, message: str, broken: bool):
        super().__init__(message)
        self.stage, self.broken = stage, broken


class SplitMismatch(ExchangeError):
    """Ranks disagree on split sizes; raised on every rank, before any data moves (the group stays usable)."""

    def __init__(self, message: str):
        super().__init__("handshake", message, broken=False)


def wire_view(t: torch.Tensor) -> torch.Tensor:
    """The tensor as it travels: 1-byte floats (fp8 flavours) as uint8, everything else unchanged."""
    return t.view(torch.uint8) if t.is_floating_point() and t.element_size() == 1 else t


def exchange_counts(counts: torch.Tensor, world: int, group) -> torch.Tensor:
    """``counts`` [E] rows this rank sends to each global expert -> [world, E / world]: row r holds what
    rank r sends to each of this rank's experts."""
    local_experts = counts.numel() // world
    received = torch.empty(world * local_experts, dtype=counts.dtype, device=counts.device)
    dist.all_to_all_single(received, counts.contiguous(), group=group)
    return received.view(world, local_experts)


def handshake(send_splits: list[int], recv_splits: list[int], group, device) -> None:
    """Raise ``SplitMismatch`` on every rank if any receiver's expected rows differ from what its senders
    announce. Three small collectives; nothing of the layer's data has moved yet."""
    world = len(send_splits)
    told = torch.empty(world, dtype=torch.int64, device=device)
    dist.all_to_all_single(told, torch.tensor(send_splits, dtype=torch.int64, device=device), group=group)
    announced = told.tolist()
    bad_sources = [r for r in range(world) if announced[r] != recv_splits[r]]
    me = dist.get_rank(group)
    flags = torch.zeros(world, dtype=torch.int64, device=device)
    flags[me] = 1 if bad_sources else 0
    dist.all_reduce(flags, group=group)
    bad_ranks = [r for r in range(world) if int(flags[r])]
    if not bad_ranks:
        return
    local = "; ".join(f"rank {r} announces {announced[r]} rows, the count exchange made rank {me} expect "
                      f"{recv_splits[r]}" for r in bad_sources)
    raise SplitMismatch(f"split handshake failed on rank(s) {bad_ranks}" + (f": {local}" if local else ""))


def all_to_all_rows(send: torch.Tensor, send_splits: list[int], recv_splits: list[int], group,
                    out: torch.Tensor | None = None) -> torch.Tensor:
    """Rows of ``send`` (sorted by destination rank) to their ranks; returns the received rows, sorted by
    source rank, in ``out`` (default: a new poisoned buffer). ``out`` must hold sum(recv_splits) rows."""
    rows = sum(recv_splits)
    if out is None:
        out = poisoned((rows, *send.shape[1:]), send.dtype, send.device)
    if out.shape[0] != rows or out.shape[1:] != send.shape[1:] or out.dtype != send.dtype:
        raise ValueError(f"all_to_all_rows: out is {tuple(out.shape)} {out.dtype}, expected "
                         f"({rows}, {', '.join(map(str, send.shape[1:]))}) {send.dtype}")
    dist.all_to_all_single(wire_view(out), wire_view(send.contiguous()), output_split_sizes=list(recv_splits),
                           input_split_sizes=list(send_splits), group=group)
    return out


class ReceiveBuffer:
    """A persistent receive buffer reused across steps (as a serving layer would keep one), refilled with
    poison before every receive, so rows a step fails to write cannot pass for last step's."""

    def __init__(self):
        self._storage: torch.Tensor | None = None

    def view(self, rows: int, tail: tuple[int, ...], dtype: torch.dtype, device, *, refill: bool = True):
        need = (rows, *tail)
        s = self._storage
        if s is None or s.shape[0] < rows or tuple(s.shape[1:]) != tail or s.dtype != dtype or s.device != device:
            self._storage = poisoned((max(rows, 1), *tail), dtype, device)
            return self._storage[:rows]
        out = s[:rows]
        if refill:
            out.copy_(poisoned(need, dtype, device))
        return out
