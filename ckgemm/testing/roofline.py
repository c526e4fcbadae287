"""Roofline: device ceilings (datasheet peaks, or measured on this device) and the work of a grouped GEMM.

A group's work is counted over its real sizes: ``2*M*N*K`` FLOPs; bytes = A (M*K) and B (N*K) read once,
C (M*N) written once. Groups with M = 0 or N = 0 count nothing (no kernel need touch them); a K = 0 group
writes its zeros. Padding and repeated tile loads are not work, so % of roofline shows their cost.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import torch

from ..dtypes import fp8_dtype_for
from . import device_info
from .bench import bench

TERA = 1e12


@dataclass(frozen=True)
class Ceilings:
    """Compute ceilings in TFLOP/s (TOP/s for int8) per input dtype name, and memory bandwidth in TB/s."""

    name: str
    tflops: dict  # {"fp16": ..., "bf16": ..., "fp8": ..., "int8": ...}
    hbm_tbs: float
    source: str  # "datasheet: ..." or "measured on ..."

    def to_dict(self) -> dict:
        return asdict(self)


# Dense (no structured sparsity) peaks from vendor datasheets. fp8 is the device's e4m3 flavour.
PEAKS = (
    # NVIDIA H100 SXM5 datasheet (nvidia.com/en-us/data-center/h100): 989.4 TF bf16/fp16, 1978.9 fp8,
    # 1978.9 TOPS int8 (half of the "with sparsity" figures), HBM3 3.35 TB/s.
    Ceilings("H100 SXM", {"fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}, 3.35,
             "datasheet: NVIDIA H100 Tensor Core GPU, SXM5, dense"),
    # Same datasheet, PCIe card: 756 TF bf16/fp16, 1513 fp8 / int8, HBM2e 2.0 TB/s.
    Ceilings("H100 PCIe", {"fp16": 756.0, "bf16": 756.0, "fp8": 1513.0, "int8": 1513.0}, 2.0,
             "datasheet: NVIDIA H100 Tensor Core GPU, PCIe, dense"),
    # NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200): the H100 SXM's tensor rates, HBM3e 4.8 TB/s.
    Ceilings("H200", {"fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}, 4.8,
             "datasheet: NVIDIA H200 Tensor Core GPU, SXM, dense"),
    # NVIDIA HGX B200 datasheet (per GPU, dense = half the sparse figures): 2.25 PF fp16/bf16, 4.5 PF fp8,
    # 4.5 POPS int8, HBM3e 8 TB/s.
    Ceilings("B200", {"fp16": 2250.0, "bf16": 2250.0, "fp8": 4500.0, "int8": 4500.0}, 8.0,
             "datasheet: NVIDIA HGX B200, per GPU, dense"),
    # AMD Instinct MI300X datasheet (amd.com): 1307.4 TF fp16/bf16, 2614.9 TF fp8, 2614.9 TOPS int8 (dense),
    # HBM3 5.3 TB/s. (304 CUs x 2100 MHz x 2048 fp16 FLOP/clk/CU.)
    Ceilings("MI300X", {"fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9, "int8": 2614.9}, 5.3,
             "datasheet: AMD Instinct MI300X, dense"),
    # AMD Instinct MI325X datasheet: MI300X compute rates, HBM3E 6.0 TB/s.
    Ceilings("MI325X", {"fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9, "int8": 2614.9}, 6.0,
             "datasheet: AMD Instinct MI325X, dense"),
    # AMD Instinct MI355X datasheet (CDNA 4): 2516.6 TF fp16/bf16, 5033.2 TF fp8, 5033.2 TOPS int8 (dense),
    # HBM3E 8 TB/s. (256 CUs x 2400 MHz x 4096 fp16 FLOP/clk/CU.)
    Ceilings("MI355X", {"fp16": 2516.6, "bf16": 2516.6, "fp8": 5033.2, "int8": 5033.2}, 8.0,
             "datasheet: AMD Instinct MI355X, dense"),
)

# Words of torch.cuda.get_device_name() that pick a table row (most specific first), matched as whole words:
# "GH200" (a Grace Hopper superchip, its own memory) and "GB200" are not an H200 or a B200.
_NAME_KEYS = (("H100 PCIe", "H100 PCIe"), ("H100", "H100 SXM"), ("H200", "H200"), ("B200", "B200"),
              ("MI300X", "MI300X"), ("MI325X", "MI325X"), ("MI355X", "MI355X"))
# Parts that share a row's chip name but not its clocks or power: no row (no MFU) rather than the wrong one.
_OTHER_PARTS = ("NVL",)


def peak_for_name(name: str) -> Ceilings | None:
    """The table row of a device name, or None where the table has no row for that part."""
    by_name = {c.name: c for c in PEAKS}
    if any(re.search(rf"\b{part}\b", name, re.IGNORECASE) for part in _OTHER_PARTS):
        return None
    for key, row in _NAME_KEYS:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", name, re.IGNORECASE):
            return by_name[row]
    return None


def peak_for_device(device=None) -> Ceilings | None:
    """The datasheet row of a device (None for the CPU and for GPUs not in the table)."""
    device = torch.device(device) if device is not None else device_info.default_device()
    return peak_for_name(device_info.device_name(device)) if device_info.is_gpu(device) else None


def group_flops(shapes) -> int:
    """Sum of 2*M*N*K over groups (M, N, K)."""
    return sum(2 * m * n * k for m, n, k in shapes)


def group_bytes(shapes, in_bytes: float, out_bytes: float) -> int:
    """Bytes moved at least once: A and B read, C written, per group with M > 0 and N > 0."""
    return int(sum((m * k + n * k) * in_bytes + m * n * out_bytes for m, n, k in shapes if m and n))


def roofline_time_s(flops: float, nbytes: float, ceilings: Ceilings, dtype_name: str) -> float:
    """The least time the work can take: max(compute time, memory time)."""
    peak = ceilings.tflops.get(dtype_name)
    if not peak:
        raise KeyError(f"no {dtype_name!r} ceiling for {ceilings.name}; known: {sorted(ceilings.tflops)}")
    return max(flops / (peak * TERA), nbytes / (ceilings.hbm_tbs * TERA))


def percent_of_roofline(time_s: float, flops: float, nbytes: float, ceilings: Ceilings, dtype_name: str) -> float:
    return 100.0 * roofline_time_s(flops, nbytes, ceilings, dtype_name) / time_s


def achieved(time_s: float, flops: float, nbytes: float) -> dict:
    """TFLOP/s and GB/s achieved in ``time_s`` seconds."""
    return {"tflops": flops / time_s / TERA, "gbps": nbytes / time_s / 1e9}


def _matmul_peers(device, size: int):
    """Callables for a dense size^3 product per dtype name, where this device and torch support it."""
    gen = torch.Generator(device=device).manual_seed(0)
    peers = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a = torch.randn(size, size, generator=gen, device=device).to(dtype)
        b = torch.randn(size, size, generator=gen, device=device).to(dtype)
        peers[name] = (lambda a=a, b=b: a @ b)
    if device_info.is_gpu(device):
        try:
            f8 = fp8_dtype_for(device)
            a8 = torch.randn(size, size, generator=gen, device=device).to(f8)
            b8 = torch.randn(size, size, generator=gen, device=device).to(f8).t()
            one = torch.ones((), device=device)
            torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            peers["fp8"] = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        except (RuntimeError, ValueError, AttributeError, TypeError):
            pass
        try:
            ai = torch.randint(-128, 128, (size, size), generator=gen, device=device, dtype=torch.int8)
            # B column-major (K-major), the layout cuBLASLt's int8 kernels take; row-major B is ~7x slower
            bi = torch.randint(-128, 128, (size, size), generator=gen, device=device, dtype=torch.int8).t()
            torch._int_mm(ai, bi)
            peers["int8"] = lambda: torch._int_mm(ai, bi)
        except (RuntimeError, AttributeError, TypeError):
            pass
    return peers


def _copy_tbs(device, copy_bytes: int, iters: int) -> float:
    """Device-to-device copy rate in TB/s, counting bytes read and written."""
    src = torch.empty(copy_bytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    seconds = bench(lambda: dst.copy_(src), warmup=2, iters=iters, device=device, telemetry=False).median_ms / 1e3
    return 2 * src.numel() * 4 / seconds / TERA


def measure_ceilings(device=None, *, size: int = 8192, copy_bytes: int = 1 << 30, iters: int = 10) -> Ceilings:
    """Ceilings measured here: device-to-device copy bandwidth (bytes read + written per second) and the
    median TFLOP/s of a dense size^3 matmul per dtype torch supports on this device. Use these instead of
    the datasheet when judging kernels: they are what this machine actually sustains."""
    device_info.check_requested("measure_ceilings", device)
    device = torch.device(device) if device is not None else device_info.default_device()
    hbm = _copy_tbs(device, copy_bytes, iters)
    tflops = {}
    for name, fn in _matmul_peers(device, size).items():
        t = bench(fn, warmup=2, iters=iters, device=device, telemetry=False, flush=False).median_ms / 1e3
        tflops[name] = 2 * size**3 / t / TERA
    return Ceilings(device_info.device_name(device), tflops, hbm, f"measured on {device_info.device_name(device)}")
