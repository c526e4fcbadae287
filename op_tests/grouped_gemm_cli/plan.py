"""What a run covers: device, (dtype, scale recipe) variants, layouts and the shape cases (each with its
form: list or packed)."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import torch

import ckgemm
from ckgemm.testing import shapes

from .args import MOE_DISTS

SMOKE_SEED_OFFSET = 1000  # smoke shapes use their own seeds, so --seed changes data, not the smoke set
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}
RECIPE_DTYPES = {"tensor": ("fp8", "int8"), "row": ("fp8", "int8"), "block": ("fp8",)}  # README's recipe table


@dataclass(frozen=True)
class Item:
    case: shapes.Case
    form: str  # "list" (grouped_gemm_out) or "packed" (grouped_gemm_packed)
    perf: bool  # time this item (smoke times only a few)


@dataclass(frozen=True)
class Variant:
    name: str  # dtype name shown: fp16, bf16, fp8, int8
    dtype: torch.dtype
    quant: str  # scale recipe: none, tensor, row, block

    @property
    def label(self) -> str:
        return self.name if self.quant == "none" else f"{self.name}/{self.quant}"


@dataclass(frozen=True)
class Plan:
    device: torch.device
    variants: tuple[Variant, ...]
    layouts: tuple[str, ...]
    items: tuple[Item, ...]
    skipped: tuple[str, ...] = ()  # (dtype, recipe) pairs asked for that have no meaning, with why


def run_device(choice: str = "auto") -> torch.device:
    """--device: auto (the current GPU where one is visible, else the CPU), cpu, or cuda (ROCm's GPUs too)."""
    if choice == "cpu" or not torch.cuda.is_available():  # --device cuda without a GPU: refused by args.py
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def dtypes_for(names, device: torch.device, explicit: bool) -> tuple[tuple[str, torch.dtype], ...]:
    """CLI dtype names -> torch dtypes; "fp8" is the device's e4m3 flavour (absent where it has none:
    an error when asked for by name, a note when it came from "all")."""
    out = []
    for name in names:
        if name != "fp8":
            out.append((name, TORCH_DTYPES[name]))
            continue
        try:
            out.append((name, ckgemm.fp8_dtype_for(device)))
        except ValueError as exc:
            if explicit:  # nothing asked for can run: exit 2, as the epilog says (1 is a failed check)
                print(f"--dtype fp8: {exc}", file=sys.stderr)
                raise SystemExit(2) from None
            print(f"note: skipping fp8: {exc}")
    return tuple(out)


def variants_for(dtypes, recipes) -> tuple[tuple[Variant, ...], tuple[str, ...]]:
    """Every meaningful (dtype, recipe) pair, and one note per dtype for the recipes asked for that it lacks."""
    variants, missing = [], {}
    for recipe in recipes:
        for name, dtype in dtypes:
            if recipe == "none" or name in RECIPE_DTYPES[recipe]:
                variants.append(Variant(name, dtype, recipe))
            else:
                missing.setdefault(name, []).append(recipe)
    skipped = []
    for name, lacking in missing.items():
        why = ("fp16/bf16 take no scales (the recipes are for fp8 and int8)" if name in ("fp16", "bf16") else
               f"no {'/'.join(lacking)} recipe for {name} (block scales are for fp8 only)")
        skipped.append(f"{name} --quant {' '.join(lacking)}: {why}")
    return tuple(variants), tuple(skipped)


def smoke_items() -> list[Item]:
    """Small shapes over the branches kernels get wrong; cheap enough for a CPU in seconds."""
    s = SMOKE_SEED_OFFSET
    cases = [shapes.uniform(3, 64, 96, 128, "uniform groups"),
             shapes.variable(4, 48, 64, 96, seed=s),
             shapes.heterogeneous(5, s + 1, m_range=(1, 96), n_range=(8, 96), k_range=(8, 160))]
    cases += shapes.edge_cases(n=72, k=136, tile_m=64, granularity=128)
    items = [Item(c, "list", perf=(i == 0)) for i, c in enumerate(cases)]
    moe = [shapes.moe_split(96, 6, 64, 96, seed=s + 2 + i, dist=d) for i, d in enumerate(MOE_DISTS)]
    # K 320: several 128-deep scale blocks with a partial last one, in the packed form too
    moe.append(shapes.moe_split(80, 4, 72, 320, seed=s + 2 + len(MOE_DISTS), dist=MOE_DISTS[0]))
    items += [Item(c, "packed", perf=(i == 0)) for i, c in enumerate(moe)]
    return items


def user_items(args) -> list[Item]:
    """The cases the shape options ask for; with none of -mnk/--group-shapes/--variable/--heterogeneous/--moe, the uniform
    case (unless ``smoke`` runs: then only the asked-for ones are added to it)."""
    g, m, n, k, seed = args.groups, args.m, args.n, args.k, args.seed
    items = []
    for mm, nn, kk in args.mnk or ():  # aiter's shape list: one case per shape
        items.append(Item(shapes.uniform(g, mm, nn, kk, "-mnk shape"), "list", True))
    if args.group_shapes:
        given = shapes.Case(tuple(args.group_shapes), "groups from --group-shapes")
        items += [Item(given, form, True) for form in (("list", "packed") if given.packable else ("list",))]
    if args.variable:
        items.append(Item(shapes.variable(g, m, n, k, seed=seed), "list", True))
    if args.heterogeneous:
        items.append(Item(shapes.heterogeneous(g, seed, m_range=(1, max(2 * m, 1)), n_range=(max(n // 2, 1), max(n, 1)),
                                               k_range=(max(k // 2, 1), max(k, 1))), "list", True))
    if args.moe:
        dists = MOE_DISTS if args.moe_dist == "all" else (args.moe_dist,)
        # every split from --seed itself, so that --moe-dist d alone reruns the d case of a run of all four
        moe = [shapes.moe_split(g * m, g, n, k, seed=seed, dist=d) for d in dists]
        items += [Item(c, "packed", True) for c in moe]
        items += [Item(c, "list", True) for c in moe]  # the list form of the same splits, for every --quant
    if not items and not args.smoke:
        items.append(Item(shapes.uniform(g, m, n, k), "list", True))
    if args.layout_variants:  # the layout-variant tests: every shared-N/K case in both forms
        forms = {(it.case, it.form) for it in items}
        items += [Item(it.case, other, it.perf) for it in list(items) for other in ("list", "packed")
                  if it.case.packable and (it.case, other) not in forms]
    return items


def make_plan(args) -> Plan:
    device = run_device(getattr(args, "device", "auto"))
    layouts = ("RC", "RR") if args.layout == "all" else (args.layout,)
    items = (smoke_items() if args.smoke else []) + user_items(args)
    explicit = args.dtype != "all"
    variants, skipped = variants_for(dtypes_for(args.dtypes, device, explicit), args.quant)
    return Plan(device, variants, layouts, tuple(items), skipped)


def cells(plan: Plan) -> list[tuple[Variant, str, Item]]:
    """Every (variant, layout, item) of a plan, in the order test_grouped_gemm.py runs them; a sharded run
    (test_grouped_gemm_sharded.py) takes every world-th one."""
    return [(variant, layout, item) for variant in plan.variants for layout in plan.layouts for item in plan.items]
