"""ckgemm.testing: a harness for checking and timing grouped-GEMM-like kernels (any kernel, not only ckgemm's).

One module per idea; its modules never call ckgemm's ops (importing the package runs ckgemm/__init__.py, which
loads them), so it judges them from outside:

- ``numeric``  calc_diff, count_bytes, assert_bitwise_equal, error_stats, CK-tile's tolerance model
- ``check``    check(out, ref, ...): hard-fails with a per-group report
- ``quant``    fp8 (e4m3fn / e4m3fnuz) per-token / per-block / per-channel, fp4 e2m1, int8; exact dequant
- ``reference`` grouped GEMM reference from exactly the quantized operands (fp32 / fp64 / exact int)
- ``shapes``   seeded shape generators with purpose labels (uniform, variable, MoE splits, edges, sweeps)
- ``data``     seeded inputs and NaN-poisoned outputs
- ``bench``    device-event timing, cold caches, graph replay, paired A/B
- ``rounds``   round_robin(fns): several variants timed one graph replay each per round, compared per round
- ``kineto``   breakdown(fn): an eager call's kernels and host gap, through the PyTorch profiler
- ``roofline`` datasheet and measured ceilings, FLOPs and bytes of real sizes
- ``report``, ``baseline``, ``plot``   tables, markdown/JSON, regression gate, roofline PNG
- ``verify``   gpu_verify: on-device statistics (fused kernel in csrc/common/verify.cuh, torch fallback)
- ``device_info``  device name, cache sizes, clocks and power
- ``conformance``  ``python -m ckgemm.testing.conformance``: all of the above as a conformance suite for any
  grouped GEMM (docs/CONFORMANCE.md); not imported here
- ``compat``   ``compat.deep_gemm`` / ``compat.aiter`` / ``compat.ck``: DeepGEMM's and aiter's testing helpers and
  CK-tile's checkers by their names, for ported scripts (docs/HARNESS.md, "Porting from DeepGEMM, aiter or
  CK"); not imported here

Functions that share their module's name (``bench``, ``check``) are the functions here; import the
modules as ``from ckgemm.testing.bench import ...`` when you need their other names.
"""
from . import data, device_info, quant, roofline, shapes
from .bench import BenchResult, PairedResult, bench, paired_ab, rotating_copies, there_and_back
from .check import CheckReport, check, group_tolerance
from .data import group_inputs, packed_inputs, poisoned, random_tensor
from .kineto import Breakdown, breakdown
from .numeric import ErrorStats, assert_bitwise_equal, calc_diff, count_bytes, error_stats, mismatch_mask, tolerance
from .plot import plot_roofline
from .quant import (
    Quantized,
    cast_for,
    cast_to_fp4,
    cast_to_fp8,
    cast_to_int8,
    ceil_to_ue8m0,
    dequant,
    per_block_cast_to_fp8,
    per_channel_cast_to_fp8,
    per_row_cast_to_fp8,
    per_tensor_cast_to_fp8,
    per_token_cast_to_fp8,
)
from .reference import gemm_reference, grouped_gemm_reference, grouped_gemm_reference_packed
from .report import Report
from .roofline import Ceilings, measure_ceilings, peak_for_device
from .rounds import RoundRobinResult, round_robin
from .shapes import Case
from .verify import VerifyStats, gpu_verify

_LAZY = {"baseline": None, "compare": "compare", "load_baseline": "load_baseline", "save_baseline": "save_baseline"}


def __getattr__(name):
    """``baseline`` and its functions load on first use, so ``python -m ckgemm.testing.baseline`` runs the module
    fresh (runpy warns when the package has imported it already)."""
    if name in _LAZY:
        import importlib

        module = importlib.import_module(".baseline", __name__)
        return module if _LAZY[name] is None else getattr(module, _LAZY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BenchResult", "Breakdown", "Case", "Ceilings", "CheckReport", "ErrorStats", "PairedResult", "Quantized", "Report",
    "RoundRobinResult",
    "VerifyStats", "assert_bitwise_equal", "baseline", "bench", "breakdown", "calc_diff", "cast_for", "cast_to_fp4", "cast_to_fp8", "cast_to_int8",
    "ceil_to_ue8m0", "check", "compare", "count_bytes", "data", "dequant", "device_info", "error_stats", "gemm_reference",
    "gpu_verify", "group_inputs", "group_tolerance", "grouped_gemm_reference", "grouped_gemm_reference_packed",
    "load_baseline", "measure_ceilings", "mismatch_mask", "packed_inputs", "paired_ab", "there_and_back", "peak_for_device",
    "per_block_cast_to_fp8", "per_channel_cast_to_fp8", "per_row_cast_to_fp8", "per_tensor_cast_to_fp8",
    "per_token_cast_to_fp8", "plot_roofline", "poisoned",
    "quant", "random_tensor", "roofline", "rotating_copies", "round_robin", "save_baseline", "shapes", "tolerance",
]
