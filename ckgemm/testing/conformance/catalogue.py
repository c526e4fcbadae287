"""The checks of the conformance matrix, each with its purpose, and the shapes it runs at two sizes:
``smoke`` (seconds on a CPU) and ``full`` (realistic MoE sizes, for a GPU).

Every "values" check runs the op once on seeded inputs into NaN-poisoned, guard-banded outputs (when the
op takes ``out=``) and judges, in order: the outputs returned (one per group, shape, dtype), writes outside
the outputs, changed inputs, unwritten elements, and the values against the quantization-aware reference
(per-group tolerance, calc_diff bound, int8 exact). The other kinds add what their name says.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import shapes
from ..shapes import Case

TIERS = {
    "smoke": dict(n=128, k=192, tile=128, groups=4, m=64, experts=32, expert_n=128, expert_k=192, tokens=512,
                  huge=768, long=(2, 16, 64, 16384), int8=(2, 16, 64, 4096), poison=(6, 40),
                  graph=(40, 0, 17, 64, 3, 4), hetero=(5, (1, 160), (16, 256), (16, 256))),
    "full": dict(n=4096, k=7168, tile=128, groups=8, m=512, experts=256, expert_n=512, expert_k=7168, tokens=16384,
                 huge=32768, long=(2, 256, 512, 32768), int8=(2, 256, 512, 8192), poison=(8, 512),
                 graph=(300, 0, 1000, 77, 1, 2048, 0, 500), hetero=(8, (1, 2048), (128, 4096), (128, 4096))),
}
DETERMINISM_REPEATS = 3


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    purpose: str
    build: object  # (tier: dict, form: str, seed: int) -> Case, or None when the form cannot express it
    kind: str = "values"  # values, poison, determinism, graph or bad_input (checks.py runs each)
    values: str = "normal"  # operands.VALUES
    requires: frozenset = field(default_factory=frozenset)  # checks.REQUIREMENTS: unmet ones give "n/a"


def _same(shapes_list):
    return lambda t, form, seed: Case(tuple(shapes_list(t)), "")


def _k0(t, form, seed):
    n, k = t["n"], t["k"]
    if form == "packed":  # K is shared: every group has K = 0
        return Case(((64, n, 0), (33, n, 0), (0, n, 0)), "")
    return Case(((64, n, k), (33, n, 0), (17, n, k)), "")


def _n0(t, form, seed):
    n, k = t["n"], t["k"]
    return Case(((64, 0, k), (33, 0, k)), "") if form == "packed" else Case(((64, n, k), (33, 0, k)), "")


def _odd(t, form, seed):
    n, k = t["n"] + 1, t["k"] + 1
    if form == "packed":
        return Case(((t["tile"] - 1, n, k), (1, n, k), (64, n, k)), "")
    return Case(((t["tile"] - 1, n, k), (1, n - 2, k + 2)), "")


def _hetero(t, form, seed):
    if form == "packed":
        return None
    groups, m_range, n_range, k_range = t["hetero"]
    return shapes.heterogeneous(groups, seed, m_range=m_range, n_range=n_range, k_range=k_range,
                                align={"n_multiple": 16, "k_multiple": 16})


def _moe(dist: str):
    def build(t, form, seed):
        if dist == "multinomial":  # many experts, decode-sized groups
            return shapes.moe_split(t["tokens"], t["experts"], t["expert_n"], t["expert_k"], seed, dist=dist)
        return shapes.moe_split(t["tokens"], 4 * t["groups"], t["n"], t["k"], seed, dist=dist)
    return build


def _graph(t, form, seed):
    return Case(tuple((m, t["n"], t["k"]) for m in t["graph"]), "") if form == "packed" else None


def _bad(t, form, seed):
    return shapes.uniform(3, 16, 64, 128)


CATALOGUE = (
    Check("basic", "uniform groups", "the baseline every kernel must pass: equal groups, aligned sizes",
          _same(lambda t: [(t["m"], t["n"], t["k"])] * t["groups"])),
    Check("m1", "M=1 per group", "one row per group (decode): the smallest tile, mostly masked",
          _same(lambda t: [(1, t["n"], t["k"])] * t["groups"])),
    Check("tile_edges", "M = tile-1, tile, tile+1", "the M-tile boundary (128 rows): partial last tiles",
          _same(lambda t: [(t["tile"] + d, t["n"], t["k"]) for d in (-1, 0, 1)])),
    Check("empty_groups", "M=0 groups among others", "empty groups first, between and around non-empty ones",
          _same(lambda t: [(m, t["n"], t["k"]) for m in (0, 64, 0, 33, 0, 17)])),
    Check("all_empty", "all groups empty", "sum M = 0: nothing to do, and nothing may fail",
          _same(lambda t: [(0, t["n"], t["k"])] * 4)),
    Check("k0", "K=0", "an empty reduction: the output must be exact zeros (written, not left alone)", _k0),
    Check("n0", "N=0", "outputs without columns: nothing to write", _n0),
    Check("odd_nk", "odd N and K", "N and K of no vector width (n+1, k+1): masked loads and stores", _odd),
    Check("hetero", "per-group N and K", "list form: every group its own M, N and K (16-aligned)", _hetero),
    Check("many_experts", "many experts", "a MoE layer with many experts and few rows each", _moe("multinomial")),
    Check("moe_zipf", "MoE Zipf split", "skewed routing (Zipf 1.2): a few experts take most tokens", _moe("zipf")),
    Check("moe_empty", "MoE empty experts", "routing that leaves a quarter of the experts without tokens",
          _moe("empty")),
    Check("huge_group", "one huge group", "one group holding nearly all rows beside tiny and empty ones",
          _same(lambda t: [(t["huge"], t["n"], t["k"]), (3, t["n"], t["k"]), (0, t["n"], t["k"]),
                           (17, t["n"], t["k"])])),
    Check("long_k", "long K", "accumulation precision over a long reduction (an fp16 accumulator drifts here)",
          _same(lambda t: [(t["long"][1], t["long"][2], t["long"][3])] * t["long"][0])),
    Check("int8_exact", "int8 beyond 2^24", "int8 codes in [64, 127]: sums pass 2^24, exact only in integers "
          "(fp32 accumulation rounds)", _same(lambda t: [(t["int8"][1], t["int8"][2], t["int8"][3])] * t["int8"][0]),
          values="int8_large", requires=frozenset({"int8_plain"})),
    Check("poison", "every element written", "NaN-poisoned out= with guard bands: every element written, "
          "nothing outside the outputs touched", lambda t, form, seed: shapes.variable(
              t["poison"][0], t["poison"][1], t["n"], t["k"], seed), kind="poison", requires=frozenset({"out"})),
    Check("determinism", "bitwise determinism", f"{DETERMINISM_REPEATS} calls on the same inputs give the same "
          "bits", _moe("zipf"), kind="determinism"),
    Check("graph", "CUDA graph, new sizes", "captured once, replayed after new group sizes are copied in "
          "(and back)", _graph, kind="graph", requires=frozenset({"cuda", "packed", "device_sizes"})),
)

BAD_INPUT = (
    Check("bad_k", "bad input: K differs", "a's K differs from b's: must raise, not compute garbage", _bad,
          kind="bad_input"),
    Check("bad_groups", "bad input: group count", "b holds one group fewer than the sizes say: must raise", _bad,
          kind="bad_input"),
    Check("bad_sizes", "bad input: sizes sum", "group sizes sum past a's rows: must raise, not read out of "
          "bounds", _bad, kind="bad_input", requires=frozenset({"packed", "host_checkable_sizes"})),
    Check("bad_negative", "bad input: negative size", "a negative group size (the sum still matches): must "
          "raise", _bad, kind="bad_input", requires=frozenset({"packed", "host_checkable_sizes"})),
    Check("bad_scale", "bad input: scale shape", "scale_a one entry short: must raise", _bad, kind="bad_input",
          requires=frozenset({"scaled"})),
)


def find(ids) -> list[Check]:
    """Checks by id, in catalogue order (``ids`` None: the whole catalogue without the bad-input checks)."""
    known = {c.id: c for c in CATALOGUE + BAD_INPUT}
    if ids is None:
        return list(CATALOGUE)
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise KeyError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [c for c in CATALOGUE + BAD_INPUT if c.id in set(ids)]
