"""What a run covers: device, dtypes, layouts and the shape cases (each with its form: list or packed)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

import ckgemm
from ckgemm.testing import shapes

from .args import MOE_DISTS

SMOKE_SEED_OFFSET = 1000  # smoke shapes use their own seeds, so --seed changes data, not the smoke set


@dataclass(frozen=True)
class Item:
    case: shapes.Case
    form: str  # "list" (grouped_gemm_out) or "packed" (grouped_gemm_packed)
    perf: bool  # time this item (smoke times only a few)


@dataclass(frozen=True)
class Plan:
    device: torch.device
    dtypes: tuple[tuple[str, torch.dtype], ...]  # (name shown, torch dtype)
    layouts: tuple[str, ...]
    items: tuple[Item, ...]


def run_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def dtypes_for(choice: str, device: torch.device) -> tuple[tuple[str, torch.dtype], ...]:
    """CLI dtype names -> torch dtypes; "fp8" is the device's e4m3 flavour (absent where it has none)."""
    names = ("fp16", "bf16", "fp8", "int8") if choice == "all" else (choice,)
    table = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}
    out = []
    for name in names:
        if name == "fp8":
            try:
                out.append((name, ckgemm.fp8_dtype_for(device)))
            except ValueError as exc:
                if choice == "fp8":
                    raise SystemExit(f"--dtype fp8: {exc}") from None
                print(f"note: skipping fp8: {exc}")
        else:
            out.append((name, table[name]))
    return tuple(out)


def smoke_items() -> list[Item]:
    """Small shapes over the branches kernels get wrong; cheap enough for a CPU in seconds."""
    s = SMOKE_SEED_OFFSET
    cases = [shapes.uniform(3, 64, 96, 128, "uniform groups"),
             shapes.variable(4, 48, 64, 96, seed=s),
             shapes.heterogeneous(5, s + 1, m_range=(1, 96), n_range=(8, 96), k_range=(8, 160))]
    cases += shapes.edge_cases(n=72, k=136, tile_m=64, granularity=128)
    items = [Item(c, "list", perf=(i == 0)) for i, c in enumerate(cases)]
    moe = [shapes.moe_split(96, 6, 64, 96, seed=s + 2 + i, dist=d) for i, d in enumerate(MOE_DISTS)]
    items += [Item(c, "packed", perf=(i == 0)) for i, c in enumerate(moe)]
    return items


def user_items(args) -> list[Item]:
    g, m, n, k, seed = args.groups, args.m, args.n, args.k, args.seed
    items = []
    if args.variable:
        items.append(Item(shapes.variable(g, m, n, k, seed=seed), "list", True))
    if args.heterogeneous:
        items.append(Item(shapes.heterogeneous(g, seed, m_range=(1, max(2 * m, 1)), n_range=(max(n // 2, 1), max(n, 1)),
                                               k_range=(max(k // 2, 1), max(k, 1))), "list", True))
    if args.moe:
        dists = MOE_DISTS if args.moe_dist == "all" else (args.moe_dist,)
        items += [Item(shapes.moe_split(g * m, g, n, k, seed=seed + i, dist=d), "packed", True)
                  for i, d in enumerate(dists)]
    if not items:
        items.append(Item(shapes.uniform(g, m, n, k), "list", True))
    return items


def make_plan(args) -> Plan:
    device = run_device()
    layouts = ("RC", "RR") if args.layout == "all" else (args.layout,)
    items = smoke_items() if args.smoke else user_items(args)
    return Plan(device, dtypes_for(args.dtype, device), layouts, tuple(items))


def cells(plan: Plan) -> list[tuple[str, torch.dtype, str, Item]]:
    """Every (dtype name, dtype, layout, item) of a plan, in the order test_grouped_gemm.py runs them; a
    sharded run (test_grouped_gemm_sharded.py) takes every world-th one."""
    return [(name, dtype, layout, item) for name, dtype in plan.dtypes for layout in plan.layouts
            for item in plan.items]
