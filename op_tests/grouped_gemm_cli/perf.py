"""Timing of one prepared run: ckgemm with cold caches, then each available peer, its output first checked
against the run's reference as ckgemm's was (a peer that fails is n/a, "wrong result"), in ABBA order against
ckgemm (ratio of medians). FLOPs and bytes count real group sizes only; MFU is achieved TFLOP/s over
the device's datasheet peak for the input dtype (``ckgemm.testing.roofline``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ckgemm.testing import bench, paired_ab, roofline
from ckgemm.testing.peers import checked

from .peers import peers_for

PEER_COLUMNS = ("loop", "grouped", "aiter")


def work(case, dtype: torch.dtype, out_dtype: torch.dtype) -> tuple[int, int]:
    """(FLOPs, bytes) of a case over its real sizes: A, B read once and C written once per group."""
    return roofline.group_flops(case.shapes), roofline.group_bytes(case.shapes, dtype.itemsize, out_dtype.itemsize)


def tflops(flops: int, ms: float) -> float:
    return flops / (ms / 1e3) / 1e12


def mfu_pct(flops: int, ms: float, ceilings, dtype_name: str) -> float | None:
    """Achieved TFLOP/s as % of the datasheet peak of ``dtype_name``; None without a peak (CPU, unknown GPU)."""
    peak = ceilings.tflops.get(dtype_name) if ceilings is not None else None
    return 100.0 * tflops(flops, ms) / peak if peak else None


@dataclass
class PeerTime:
    column: str  # "loop" or "grouped"
    name: str  # e.g. "matmul loop", "_scaled_grouped_mm"
    ms: float | None = None  # None: not available here
    speedup: float | None = None  # peer time / ckgemm time in the same paired rounds (above 1: ckgemm is faster)
    reason: str = ""
    ours_ms: float | None = None  # ckgemm's median in those rounds: the time the speedup divides


@dataclass
class Timed:
    ours: object  # BenchResult
    peers: list[PeerTime] = field(default_factory=list)

    @property
    def ms(self) -> float:
        return self.ours.median_ms

    def columns(self) -> dict:
        """Report columns: vs_<peer> ratios ("n/a" when absent), <peer>_peer names, and <peer>_ms with
        <peer>_ours_ms (the peer's and ckgemm's medians in the paired rounds the ratio comes from) or, for a
        peer not available here, <peer>_reason."""
        out = {}
        for pt in self.peers:
            out[f"vs_{pt.column}"] = "n/a" if pt.ms is None else f"{pt.speedup:.2f}x"
            out[f"{pt.column}_peer"] = pt.name
            if pt.ms is not None:
                out[f"{pt.column}_ms"] = pt.ms
                out[f"{pt.column}_ours_ms"] = pt.ours_ms
            else:
                out[f"{pt.column}_reason"] = pt.reason
        return out


def time_run(p, case, recipe: str, warmup: int, repeat: int, device, aiter: bool = False) -> Timed:
    """Our BenchResult, then each peer of the run paired against ckgemm."""
    timed = Timed(bench(p.call, warmup=warmup, iters=repeat, device=device))
    in_dtype = (p.a if p.form == "packed" else p.a[0]).dtype
    for column, peer in zip(PEER_COLUMNS, peers_for(p, case, recipe, aiter)):
        if p.refs is not None:  # a peer's output is judged as ckgemm's was, before it is timed
            peer = checked(peer, p.refs, case.ms, case.ns, in_dtype, case.ks, scaled=recipe != "none")
        if peer.fn is None:
            timed.peers.append(PeerTime(column, peer.name, reason=peer.reason))
            continue
        try:
            pair = paired_ab(p.call, peer.fn, rounds=2, iters=max(repeat // 2, 1), warmup=min(warmup, 2),
                             device=device)
        except Exception as exc:  # noqa: BLE001 - a peer that fails is no time for it, not a failure of ckgemm's
            timed.peers.append(PeerTime(column, peer.name, reason=f"error: {type(exc).__name__}: {str(exc)[:80]}"))
            continue
        timed.peers.append(PeerTime(column, peer.name, pair.b.median_ms, pair.speedup, ours_ms=pair.a.median_ms))
    return timed


def _rate(flops: int, ms: float, ceilings, dtype_name: str) -> str:
    text = f"{ms:.4g} ms, {tflops(flops, ms):.4g} TFLOP/s"
    mfu = mfu_pct(flops, ms, ceilings, dtype_name)
    return text if ceilings is None else text + ", MFU " + ("n/a" if mfu is None else f"{mfu:.3g}%")


def perf_line(label: str, case, kernel: str, timed: Timed, ceilings, dtype_name: str) -> str:
    """One line per timed case: shape, kernel config, time, TFLOP/s and MFU, then each peer."""
    parts = [f"perf: {label} {case.id} [{kernel}]: ckgemm {_rate(case.flops, timed.ms, ceilings, dtype_name)}"]
    for pt in timed.peers:
        if pt.ms is None:
            parts.append(f"{pt.name}: n/a ({pt.reason})")
        else:
            # the ratio comes from the paired rounds, so print ckgemm's time in those rounds beside it
            parts.append(f"{pt.name}: {_rate(case.flops, pt.ms, ceilings, dtype_name)}, ckgemm {pt.speedup:.2f}x "
                         f"(ckgemm {pt.ours_ms:.4g} ms in the same rounds)")
    if ceilings is None:
        parts.append("MFU n/a: no datasheet peak for this device")
    return " | ".join(parts)
