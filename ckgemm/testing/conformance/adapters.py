"""Adapters: grouped GEMMs whose own calling conventions differ from the suite's, wrapped to take it
(``kernel.py`` states the conventions). Each is a plain function; ``--op NAME`` picks one by the names in
``BUILTIN``, or ``--op ckgemm.testing.conformance.adapters:FUNCTION``.

An adapter converts only what the convention forces (offsets from sizes, B as a transposed view, scale
shapes); it never checks or fixes inputs for the kernel, so what the kernel refuses is reported as
``unsupported`` with the kernel's own message. Libraries are imported when an adapter is first called, so
a missing one turns its rows into ``unsupported`` ("... is not importable") instead of breaking the suite.
"""
from __future__ import annotations

import importlib

import torch


def adapter(form: str, *, host_sizes: bool = False, prepare=None):
    """Mark a function with the attributes ``kernel.Kernel`` reads (``conformance_*``)."""
    def mark(fn):
        fn.conformance_form = form
        fn.conformance_host_sizes = host_sizes
        if prepare is not None:
            fn.conformance_prepare = prepare
        return fn
    return mark


def _require(module: str, install: str):
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - not installed, or it fails to load here (no GPU, no toolkit)
        raise ModuleNotFoundError(f"{module} is not importable here ({install}): {type(exc).__name__}: {exc}") \
            from exc


def _scales(scale_a, scale_b, out_dtype) -> dict:
    if scale_a is None:
        return {}
    return {"scale_a": scale_a, "scale_b": scale_b, **({"out_dtype": out_dtype} if out_dtype is not None else {})}


def _offsets(group_sizes: torch.Tensor) -> torch.Tensor:
    """Cumulative row ends, int32 on the device (no host sync), as torch's grouped ops take them."""
    return torch.cumsum(group_sizes, 0, dtype=torch.int32)


def _b_kn(b: torch.Tensor, layout: str) -> torch.Tensor:
    """B as [G, K, N]: a transposed view for RC storage, as stored for RR."""
    return b.transpose(-2, -1) if layout == "RC" else b


# ckgemm itself ----------------------------------------------------------------------------------------------

@adapter("list")
def ckgemm_list(a_list, b_list, scale_a=None, scale_b=None, *, layout="RC", out=None, out_dtype=None):
    """``ckgemm.grouped_gemm`` (``grouped_gemm_out`` when given ``out``), scales as keywords."""
    import ckgemm  # lazily: ckgemm.testing never imports ckgemm's ops at import time
    scales = _scales(scale_a, scale_b, out_dtype)
    if out is None:
        return ckgemm.grouped_gemm(a_list, b_list, layout=layout, **scales)
    return ckgemm.grouped_gemm_out(a_list, b_list, out, layout=layout, **scales)


@adapter("packed")
def ckgemm_packed(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC", out=None, out_dtype=None):
    """``ckgemm.grouped_gemm_packed`` with sizes on the device (graph-capturable), scales as keywords."""
    import ckgemm
    return ckgemm.grouped_gemm_packed(a, b, group_sizes, layout=layout, out=out,
                                      **_scales(scale_a, scale_b, out_dtype))


# torch ------------------------------------------------------------------------------------------------------

def _unscaled(name: str, scale_a) -> None:
    if scale_a is not None:
        raise NotImplementedError(f"{name} takes no scales (run it with --quant none)")


@adapter("packed")
def torch_grouped_mm(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC"):
    """``torch._grouped_mm(a, b[G, K, N], offs=cumsum(sizes))``: no scales (it has no fp8 path)."""
    _unscaled("torch._grouped_mm", scale_a)
    return torch._grouped_mm(a, _b_kn(b, layout), offs=_offsets(group_sizes))


@adapter("packed")
def torch_scaled_grouped_mm(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC"):
    """``torch._scaled_grouped_mm`` (row-wise fp32 scales, bf16 out). The tensor recipe is given to it as
    rows of equal scales, which is the same product; the block recipe it does not have."""
    if scale_a is None:
        raise NotImplementedError("torch._scaled_grouped_mm takes scales: run with --quant row (or tensor)")
    if scale_a.dim() == 2:
        raise NotImplementedError("torch._scaled_grouped_mm has no 1x128 / 128x128 block recipe (row-wise only)")
    b_kn = _b_kn(b, layout)
    if scale_a.dim() == 0:
        scale_a = scale_a.expand(a.shape[0]).contiguous()
        scale_b = scale_b[:, None].expand(b_kn.shape[0], b_kn.shape[2]).contiguous()
    return torch._scaled_grouped_mm(a, b_kn, scale_a, scale_b, offs=_offsets(group_sizes), out_dtype=torch.bfloat16)


# DeepGEMM ---------------------------------------------------------------------------------------------------

DEEP_GEMM_INSTALL = "pip install sgl-deep-gemm==0.1.0 apache-tvm-ffi==0.1.9 (with CUDA_HOME set)"


def _row_groups(group_sizes, device):
    """(sizes on the host, each packed row's group, each group's first packed row), the latter two on ``device``."""
    sizes = [int(s) for s in group_sizes.tolist()]
    counts = torch.tensor(sizes, device=device, dtype=torch.int64)
    group_of_row = torch.repeat_interleave(torch.arange(len(sizes), device=device), counts)
    return sizes, group_of_row, torch.cumsum(counts, 0) - counts


def contiguous_layout(a, scale_a, group_sizes, align: int):
    """DeepGEMM's M-grouped contiguous layout: every group's rows padded to ``align`` (zero rows, scale 1),
    ``m_indices`` giving each padded row its group (-1 for padding). Returns (a_pad, sfa_pad, m_indices,
    rows), ``rows`` being each real row's place in the padded layout. Reads the sizes on the host."""
    device = a.device
    sizes, group_of_row, starts = _row_groups(group_sizes, device)
    padded = [-(-m // align) * align for m in sizes]
    padded_t = torch.tensor(padded, device=device)
    starts_padded = torch.cumsum(padded_t, 0) - padded_t
    rows = torch.arange(a.shape[0], device=device) - starts[group_of_row] + starts_padded[group_of_row]
    total = sum(padded)
    a_pad = torch.zeros((total, a.shape[1]), dtype=torch.uint8, device=device)
    a_pad[rows] = a.view(torch.uint8)  # fp8 moves as bytes: index_put has no fp8 kernel everywhere
    sfa = torch.ones((total, scale_a.shape[1]), dtype=torch.float32, device=device)
    sfa[rows] = scale_a
    m_indices = torch.full((total,), -1, dtype=torch.int32, device=device)
    m_indices[rows] = group_of_row.to(torch.int32)
    return a_pad.view(a.dtype), sfa, m_indices, rows


def masked_layout(a, scale_a, group_sizes, align: int):
    """DeepGEMM's masked layout (its decode kernel's): group g's rows at the start of slot g of a
    [G, M_max, K] buffer, M_max the largest group rounded up to ``align`` (at least ``align``), the rest zero
    rows with scale 1. Returns (a_m, sfa_m, masked_m, rows, expected_m): ``masked_m`` the sizes as int32 on the
    device, ``rows`` each real row's place in the flattened [G * M_max] rows, ``expected_m`` the mean size
    rounded up (at least 1), DeepGEMM's hint. Reads the sizes on the host."""
    device = a.device
    sizes, group_of_row, starts = _row_groups(group_sizes, device)
    groups = len(sizes)
    m_max = max(align, -(-max(sizes, default=0) // align) * align)
    rows = group_of_row * m_max + torch.arange(a.shape[0], device=device) - starts[group_of_row]
    a_m = torch.zeros((groups * m_max, a.shape[1]), dtype=torch.uint8, device=device)
    a_m[rows] = a.view(torch.uint8)  # fp8 moves as bytes, as in contiguous_layout
    sfa_m = torch.ones((groups * m_max, scale_a.shape[1]), dtype=torch.float32, device=device)
    sfa_m[rows] = scale_a
    masked_m = torch.tensor(sizes, dtype=torch.int32, device=device)
    expected_m = max(1, -(-sum(sizes) // max(groups, 1)))
    return (a_m.view(a.dtype).view(groups, m_max, a.shape[1]), sfa_m.view(groups, m_max, -1), masked_m, rows,
            expected_m)


MASKED_NAMES = ("fp8_m_grouped_gemm_nt_masked", "m_grouped_fp8_fp4_gemm_nt_masked", "m_grouped_fp8_gemm_nt_masked")


def deep_gemm_masked_fn(dg):
    """DeepGEMM's fp8 masked grouped GEMM under whichever name this version exports it, or None."""
    return next((fn for fn in (getattr(dg, name, None) for name in MASKED_NAMES) if fn is not None), None)


def _deep_gemm(a, scale_a, layout, kernel: str):
    """The deep_gemm module, once the call is one its ``kernel`` takes (else NotImplementedError, why)."""
    if scale_a is None or scale_a.dim() != 2:
        raise NotImplementedError(f"DeepGEMM's {kernel} takes 1x128 / 128x128 block scales: run with --quant block")
    if layout != "RC":
        raise NotImplementedError(f"{kernel} is NT: B stored [G, N, K] (layout RC) only")
    if not a.is_cuda:
        raise NotImplementedError("DeepGEMM runs on CUDA tensors only")
    return _require("deep_gemm", DEEP_GEMM_INSTALL)


def contiguous_launch(a, b, group_sizes, scale_a, scale_b, layout="RC"):
    """(launch, d, rows): ``launch()`` runs DeepGEMM's contiguous kernel alone on operands laid out here once,
    into ``d`` (bf16, its padded rows); ``rows`` picks the real ones. NotImplementedError or ModuleNotFoundError,
    with the reason, where DeepGEMM cannot take the call (the benchmarks' DeepGEMM peers are built on this)."""
    dg = _deep_gemm(a, scale_a, layout, "m_grouped_fp8_gemm_nt_contiguous")
    a_pad, sfa, m_indices, rows = contiguous_layout(a, scale_a, group_sizes,
                                                     int(dg.get_mk_alignment_for_contiguous_layout()))
    d = torch.empty((a_pad.shape[0], b.shape[1]), dtype=torch.bfloat16, device=a.device)

    def launch():
        # The fp32 SFA goes in K-major, [rows, K/128]; the entry point turns it into the TMA-aligned
        # MN-major layout the SM90 kernel reads (its transform_sf_pair_into_required_layout).
        dg.m_grouped_fp8_gemm_nt_contiguous((a_pad, sfa), (b, scale_b), d, m_indices)
    return launch, d, rows


def masked_launch(a, b, group_sizes, scale_a, scale_b, layout="RC"):
    """(launch, d, rows) for DeepGEMM's masked kernel, as ``contiguous_launch``; ``d`` its [G, M_max, N] output
    seen as rows."""
    dg = _deep_gemm(a, scale_a, layout, "fp8_m_grouped_gemm_nt_masked")
    masked = deep_gemm_masked_fn(dg)
    if masked is None:
        raise NotImplementedError("this deep_gemm exports no fp8 masked grouped GEMM (none of "
                                  f"{', '.join(MASKED_NAMES)})")
    a_m, sfa_m, masked_m, rows, expected_m = masked_layout(a, scale_a, group_sizes,
                                                            int(dg.get_mk_alignment_for_contiguous_layout()))
    d = torch.empty((a_m.shape[0], a_m.shape[1], b.shape[1]), dtype=torch.bfloat16, device=a.device)

    def launch():
        masked((a_m, sfa_m), (b, scale_b), d, masked_m, expected_m)
    return launch, d.flatten(0, 1), rows


def _deep_gemm_adapter(name: str, launcher, doc: str):
    """A packed-form adapter over ``launcher``: lays the operands out, runs, gathers the real rows back (both
    copies inside the call); its ``conformance_prepare`` lays out once and returns the kernel's launch alone,
    which ``--perf`` times too."""
    def prepare(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC"):
        return launcher(a, b, group_sizes, scale_a, scale_b, layout)[0]

    def run(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC"):
        launch, d, rows = launcher(a, b, group_sizes, scale_a, scale_b, layout)
        launch()
        return d.index_select(0, rows)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = doc
    return adapter("packed", host_sizes=True, prepare=prepare)(run)


deep_gemm_contiguous = _deep_gemm_adapter(
    "deep_gemm_contiguous", contiguous_launch,
    """DeepGEMM ``m_grouped_fp8_gemm_nt_contiguous``: our packed rows padded to its 128-row alignment, run, the
    real rows gathered back.""")
deep_gemm_masked = _deep_gemm_adapter(
    "deep_gemm_masked", masked_launch,
    """DeepGEMM's decode kernel ``fp8_m_grouped_gemm_nt_masked``: our packed rows placed in its [G, M_max, K]
    slots, run with the sizes as ``masked_m`` (their mean as ``expected_m``), the real rows gathered back.""")


# aiter ------------------------------------------------------------------------------------------------------

@adapter("packed")
def aiter_gmm(a, b, group_sizes, scale_a=None, scale_b=None, *, layout="RC", out=None):
    """aiter's Triton grouped GEMM ``aiter.ops.triton.gmm.gmm(lhs, rhs[G, K, N], group_sizes)``."""
    _unscaled("aiter's gmm", scale_a)
    gmm = _require("aiter.ops.triton.gmm", "pip install aiter (ROCm)").gmm
    return gmm(a, _b_kn(b, layout), group_sizes, preferred_element_type=a.dtype, existing_out=out)


BUILTIN = {
    "ckgemm": (ckgemm_list, ckgemm_packed),
    "torch_grouped_mm": (torch_grouped_mm,),
    "torch_scaled_grouped_mm": (torch_scaled_grouped_mm,),
    "deep_gemm": (deep_gemm_contiguous,),
    "deep_gemm_masked": (deep_gemm_masked,),
    "aiter_gmm": (aiter_gmm,),
}
