"""Roofline plot of report rows (PNG). Needs matplotlib (``pip install ckgemm[plot]``); without it
``plot_roofline`` does nothing and returns None, so callers need no guard."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from .roofline import Ceilings


def matplotlib_available() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["matplotlib"] is None (import blocked)
        return False


def plot_roofline(rows, ceilings: Ceilings, path, *, title: str | None = None) -> Path | None:
    """Plot achieved TFLOP/s against arithmetic intensity (FLOPs per byte) for rows that carry ``flops``,
    ``bytes`` and ``tflops``, with one roof per dtype found in the rows. Returns the PNG path, or None
    when matplotlib is not installed or no row can be placed."""
    if not matplotlib_available():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [r for r in rows if r.get("flops") and r.get("bytes") and r.get("tflops")]
    if not points:
        return None
    intensities = [r["flops"] / r["bytes"] for r in points]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    fig, ax = plt.subplots(figsize=(8, 5))
    for dtype in sorted({r.get("dtype", "") for r in points}):
        peak = ceilings.tflops.get(dtype)
        if peak:
            xs = [lo * (hi / lo) ** (i / 63) for i in range(64)]
            ax.plot(xs, [min(peak, x * ceilings.hbm_tbs) for x in xs], "--", label=f"roof {dtype}")
        mine = [r for r in points if r.get("dtype", "") == dtype]
        ax.scatter([r["flops"] / r["bytes"] for r in mine], [r["tflops"] for r in mine], label=f"{dtype} rows")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title or f"roofline: {ceilings.name} ({ceilings.source})")
    ax.legend(fontsize="small")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
