"""The benchmark cases: real sizes from models, each with the question it answers."""
from __future__ import annotations

from dataclasses import dataclass

from ckgemm.testing import shapes


@dataclass(frozen=True)
class BenchCase:
    name: str
    case: shapes.Case
    decode: bool = False  # memory-bound: judge by weight bandwidth against the measured copy bandwidth
    dense_size: int | None = None  # uniform large case: compare with one dense size^3 matmul


def all_cases(seed: int = 0) -> list[BenchCase]:
    return [
        BenchCase("seed-default 3x1024^3", shapes.uniform(3, 1024, 1024, 1024, "op_tests default: launch-bound")),
        BenchCase("uniform 8x4096^3", shapes.uniform(8, 4096, 4096, 4096, "large uniform: compute-bound"),
                  dense_size=4096),
        BenchCase("DeepSeek-V3 prefill", shapes.moe_split(32768, 32, 4096, 7168, seed, dist="multinomial")),
        BenchCase("DeepSeek-V3 decode", shapes.moe_split(512, 32, 4096, 7168, seed, dist="multinomial"), decode=True),
        BenchCase("Mixtral prefill", shapes.moe_split(16384, 8, 14336, 4096, seed, dist="multinomial")),
        BenchCase("tiny-M", shapes.Case(tuple((m, 4096, 2048) for m in (1, 17, 33, 63, 65, 100)),
                                         "tiny per-group M: weight-bandwidth-bound", seed), decode=True),
    ]
