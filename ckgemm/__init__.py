"""ckgemm: grouped GEMM for PyTorch over CK-tile (ROCm), CUTLASS SM90 (CUDA) and a PyTorch reference."""
from .dtypes import DTYPE_TABLE, device_family, fp8_dtype_for, rule_for
from .errors import (BackendUnavailableError, CkgemmError, InternalError, InvalidArgumentError, InvalidTypeError,
                     Rule)
from .ops import (
    Dispatch,
    available_backends,
    backend_status,
    ck_grouped_gemm,
    ck_grouped_gemm_out,
    grouped_gemm,
    grouped_gemm_out,
    grouped_gemm_packed,
    last_dispatch,
)
from .backends.native import get_num_sms, set_num_sms
from .prepack import PackedWeights, prepack

__version__ = "0.1.0"

__all__ = [
    "DTYPE_TABLE", "BackendUnavailableError", "CkgemmError", "Dispatch", "InternalError", "InvalidArgumentError",
    "InvalidTypeError", "PackedWeights", "Rule", "available_backends", "backend_status", "ck_grouped_gemm", "ck_grouped_gemm_out",
    "device_family", "fp8_dtype_for", "grouped_gemm", "grouped_gemm_out", "grouped_gemm_packed",
    "get_num_sms", "last_dispatch", "prepack", "rule_for", "set_num_sms",
]
