"""The expert-parallel MoE layer under test: route -> count exchange + split handshake -> dispatch ->
reorder by local expert -> grouped GEMM -> return -> fixed-order fp32 weighted combine.

Rank r serves global experts ``r * E_l ... (r + 1) * E_l - 1``. A sender sorts its (token, slot) pairs by
expert (stable), so its rows for each destination rank are contiguous and sorted by local expert; a receiver
gets rows sorted by source rank, then local expert ("rank-major") and reorders them expert-major, which is
what the grouped GEMM takes (rows sorted by group). The GEMM is a parameter: any callable
``gemm(a, b, group_sizes, *, out, **scales)`` (default ``ckgemm.grouped_gemm_packed``, imported when
first used: ``ckgemm.testing`` never imports the op at import time). Every collective runs in the same
order on every rank; a local failure (the GEMM raising) is recorded and the rank still joins the rest.
``Trace`` keeps what each stage produced, for the checks.
"""
from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass, field

import torch

from ...dtypes import rule_for
from ..data import poisoned
from . import recipes
from .batch import LocalTokens
from .exchange import ExchangeError, ReceiveBuffer, all_to_all_rows, exchange_counts, handshake
from .faults import Injector
from .recipes import Operand

PHASES = ("count exchange", "dispatch", "GEMM", "return", "combine")
# The check stage a failure in each phase is reported at; phases with collectives break the group when they fail.
_PHASE_STAGE = {"count exchange": "handshake", "dispatch": "row contents", "GEMM": "GEMM", "return": "returned rows",
                "combine": "combine"}
_COLLECTIVE_PHASES = ("count exchange", "dispatch", "return")


def default_gemm(backend: str | None = None):
    import ckgemm  # the op, imported lazily (the harness never imports the op at module level)

    return functools.partial(ckgemm.grouped_gemm_packed, backend=backend)


def expert_major_order(recv_counts: torch.Tensor, total: int) -> torch.Tensor:
    """Gather indices that turn rank-major received rows into expert-major ones.

    ``recv_counts`` [W, E_l]: rows from source r for local expert e, laid out source by source, each
    source's rows by expert. The result lists, for e = 0.., for r = 0.., that segment's row indices."""
    world, local = recv_counts.shape
    lengths = recv_counts.reshape(-1)
    starts = (torch.cumsum(lengths, 0) - lengths).view(world, local).t().reshape(-1)  # expert-major segments
    lengths = lengths.view(world, local).t().reshape(-1)
    segment = torch.repeat_interleave(torch.arange(lengths.numel(), device=lengths.device), lengths,
                                      output_size=total)
    first_out = torch.cumsum(lengths, 0) - lengths
    return starts[segment] + torch.arange(total, device=lengths.device) - first_out[segment]


@dataclass
class Trace:
    """What one forward produced on this rank, stage by stage (None where the step stopped before it)."""

    send_counts: torch.Tensor | None = None  # [E] rows this rank sent to each global expert
    send_splits: list[int] | None = None
    recv_splits: list[int] | None = None
    recv_counts: torch.Tensor | None = None  # [W, E_l]
    tags: torch.Tensor | None = None  # [R, 3] (source rank, token, slot) of each received row, expert-major
    rows: Operand | None = None  # received rows (and scales), expert-major
    group_sizes: torch.Tensor | None = None  # [E_l] int32 on the device
    gemm_out: torch.Tensor | None = None  # [R, N] expert-major
    gemm_error: str | None = None
    returned: torch.Tensor | None = None  # [T, topk, N]: the GEMM row of each (token, slot), back home
    out: torch.Tensor | None = None  # [T, N] float32
    error: tuple[str, str] | None = None  # (stage, message) of a phase that raised
    broken: bool = False  # a collective failed other than by a handshake mismatch: the group is unusable
    skipped: bool = False
    times: dict = field(default_factory=dict)  # phase -> seconds


class EPMoE:
    """One rank's share of an expert-parallel MoE layer (its E_l local experts' weights)."""

    def __init__(self, weights: Operand, *, num_experts: int, recipe: str = "none", group=None, gemm=None,
                 backend: str | None = None, faults=None, rank: int = 0, world: int = 1,
                 sync_phases: bool = False):
        if weights.data.shape[0] * world != num_experts:
            raise ValueError(f"{weights.data.shape[0]} local experts x {world} ranks != {num_experts} experts")
        self.weights, self.num_experts, self.recipe, self.group = weights, num_experts, recipe, group
        self.gemm = gemm if gemm is not None else default_gemm(backend)
        self.rank, self.world = rank, world
        self.faults = faults if isinstance(faults, Injector) else Injector(faults or (), rank, world)
        self.sync_phases = sync_phases  # bench: synchronize the device at phase ends, so times are the phase's
        self.calls = 0
        self._row_buffer = ReceiveBuffer()

    @contextlib.contextmanager
    def _phase(self, trace: Trace, name: str):
        start = time.perf_counter()
        try:
            yield
        except ExchangeError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed phase becomes a named, reported stage
            raise ExchangeError(_PHASE_STAGE[name], f"{name}: {type(exc).__name__}: {exc}",
                                broken=name in _COLLECTIVE_PHASES) from exc
        finally:
            if self.sync_phases and self.weights.data.is_cuda:
                torch.cuda.synchronize()
            trace.times[name] = trace.times.get(name, 0.0) + time.perf_counter() - start

    def forward(self, tokens: LocalTokens) -> Trace:
        step, self.calls = self.calls, self.calls + 1
        trace = Trace()
        n, device = self.weights.data.shape[1], self.weights.data.device
        if self.faults.skips_exchange():
            trace.skipped = True
            trace.out = poisoned((tokens.ids.shape[0], n), torch.float32, device)
            return trace
        try:
            with self._phase(trace, "count exchange"):
                send = self._count_exchange(tokens, trace)
            with self._phase(trace, "dispatch"):
                perm = self._dispatch(send, trace, step)
            with self._phase(trace, "GEMM"):
                self._gemm(trace)
            with self._phase(trace, "return"):
                self._return(perm, send[1], tokens, trace)
            with self._phase(trace, "combine"):
                trace.out = self._combine(trace.returned, self.faults.combine_weights(tokens.weights))
        except ExchangeError as exc:
            trace.error, trace.broken = (exc.stage, str(exc)), exc.broken
        return trace

    def _count_exchange(self, tokens: LocalTokens, trace: Trace):
        topk = tokens.ids.shape[1]
        flat = tokens.ids.reshape(-1)
        order = torch.sort(flat, stable=True).indices
        counts = torch.bincount(flat, minlength=self.num_experts)
        order, counts = self.faults.dropped_token(order, flat, counts)
        token, slot = order // topk, order % topk
        tags = torch.stack((torch.full_like(token, self.rank), token, slot), dim=1)
        recv_counts = exchange_counts(counts, self.world, self.group)
        local = self.num_experts // self.world
        splits = torch.cat((counts.view(self.world, local).sum(1), recv_counts.sum(1))).tolist()  # the host sync
        trace.send_counts, trace.recv_counts = counts, recv_counts
        trace.send_splits = splits[:self.world]
        trace.recv_splits = self.faults.off_by_one_split(splits[self.world:])
        handshake(trace.send_splits, trace.recv_splits, self.group, counts.device)
        return tokens.x.rows(token), order, tags

    def _dispatch(self, send, trace: Trace, step: int) -> torch.Tensor:
        rows_out, _, tags = send
        ss, rs = trace.send_splits, trace.recv_splits
        total = sum(rs)
        stale = self.faults.stale(step)
        data = rows_out.data
        rows = self._row_buffer.view(total, tuple(data.shape[1:]), data.dtype, data.device, refill=not stale)
        if stale:
            self.faults.keep_stale_segment(rows, all_to_all_rows(data, ss, rs, self.group), rs)
        else:
            all_to_all_rows(data, ss, rs, self.group, out=rows)
        scales = None if rows_out.scale is None else all_to_all_rows(rows_out.scale, ss, rs, self.group)
        received_tags = all_to_all_rows(tags, ss, rs, self.group)
        perm = self.faults.reorder(expert_major_order(trace.recv_counts, total))
        trace.rows = Operand(rows[perm], None if scales is None else scales[self.faults.scale_reorder(perm)])
        trace.tags = received_tags[perm]
        trace.group_sizes = trace.recv_counts.sum(0).to(torch.int32)
        return perm

    def _gemm(self, trace: Trace) -> None:
        rows, sizes = trace.rows, trace.group_sizes
        weights = self.faults.gemm_weights(self.weights, sizes)
        out_dtype = recipes.output_dtype(self.recipe, rule_for(rows.data.dtype).output)
        out = poisoned((rows.data.shape[0], weights.data.shape[1]), out_dtype, rows.data.device)
        try:
            result = self.gemm(rows.data, weights.data, sizes, out=out,
                               **recipes.gemm_kwargs(self.recipe, rows.scale, weights))
            out = out if result is None else result
        except Exception as exc:  # noqa: BLE001 - reported at the GEMM stage; the rank still joins the return
            trace.gemm_error = f"{type(exc).__name__}: {exc}"
        trace.gemm_out = self.faults.gemm_output(out)

    def _return(self, perm: torch.Tensor, order: torch.Tensor, tokens: LocalTokens, trace: Trace) -> None:
        y = trace.gemm_out
        rank_major = poisoned(tuple(y.shape), y.dtype, y.device)
        rank_major[self.faults.return_reorder(perm)] = y
        back = all_to_all_rows(rank_major, trace.recv_splits, trace.send_splits, self.group)
        t, topk = tokens.ids.shape
        returned = poisoned((t * topk, y.shape[1]), y.dtype, y.device)
        returned[order] = back
        trace.returned = returned.view(t, topk, y.shape[1])

    @staticmethod
    def _combine(returned: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """sum over slots k = 0, 1, ... in that order of w[:, k] * row[:, k], in fp32."""
        out = torch.zeros(returned.shape[0], returned.shape[2], dtype=torch.float32, device=returned.device)
        for k in range(returned.shape[1]):
            out.add_(returned[:, k].float() * weights[:, k:k + 1])
        return out
