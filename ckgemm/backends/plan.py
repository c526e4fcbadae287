"""Planning for the native backends, in plain Python so it is tested on a CPU: which groups a
kernel takes as they are, which must be repacked first, and which kernel config runs.

A group the kernel cannot take directly (misaligned base pointer, leading dimension or K; 8-bit RR
on CUTLASS, whose grouped kernels need K-major B) is repacked into fresh RC tensors with K zero-padded
to a multiple of 16 elements. Zero padding adds exact zeros to every dot product, so the result is
the same for every dtype; only the extra copy costs time. An output the kernels cannot write (base,
leading dimension or N not 16-byte aligned) takes the direct-store Small config where the backend has
one (CUTLASS); otherwise (CK-tile) the group runs into an aligned temporary with N padded by zero rows
of B, and the [M, N] part is copied into the caller's output.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

LAYOUT_CODE = {"RC": 0, "RR": 1}
LARGE, SMALL = 0, 1
CONFIG_NAME = {LARGE: "large", SMALL: "small"}
K_PAD = 16  # elements; 16 bytes for 8-bit inputs, 32 for 16-bit

# Mean rows per non-empty group at or below which the Small config runs; above it the Large one does.
# On the H200 (docs/PERF.md) decode-size groups (mean M = 16) reach 87-97% of the copy bandwidth with
# Small and prefill-size groups run Large; the boundary between them has not been swept yet.
SMALL_MEAN_M = 64

# Tuning knob, read once: CKGEMM_CONFIG=small or large overrides the choice below (large only where the
# output allows it). Anything else, or unset, keeps the heuristic.
FORCED_CONFIG = {"small": SMALL, "large": LARGE}.get(os.environ.get("CKGEMM_CONFIG", "").lower())


@dataclass(frozen=True)
class Rules:
    """What a backend's kernels need to take a group without repacking."""

    align_bytes: int  # base pointers, leading dimensions and the contiguous extent
    native_8bit_rr: bool  # 8-bit inputs with B stored [K, N]
    output_align_bytes: int  # output base, leading dimension and N for the Large config (0: any)
    direct_store_small: bool  # the Small config writes any output (else: stage through a temporary)


RULES = {
    # TMA loads need 16-byte aligned bases/strides/extents; the ping-pong config stores D directly.
    "cutlass": Rules(align_bytes=16, native_8bit_rr=False, output_align_bytes=16, direct_store_small=True),
    # CK-tile's vector loads/stores are 16 bytes wide in every instance (csrc/hip/routing.h).
    "ck": Rules(align_bytes=16, native_8bit_rr=True, output_align_bytes=16, direct_store_small=False),
}


def _aligned(t: torch.Tensor, ld: int, nbytes: int) -> bool:
    es = t.element_size()
    return t.data_ptr() % nbytes == 0 and (ld * es) % nbytes == 0


def leading_dim(t: torch.Tensor) -> int:
    """Row stride in elements, as the bindings compute it (a matrix of <= 1 row uses its width)."""
    return t.shape[-1] if t.shape[-2] <= 1 else t.stride(-2)


def native_layout(rules: Rules, layout: str, element_size: int) -> str:
    """The layout the backend's kernels run for a call of ``layout``: RC when it has no kernel for
    ``layout`` with this element size (8-bit RR on CUTLASS), else ``layout`` itself."""
    return "RC" if element_size == 1 and layout == "RR" and not rules.native_8bit_rr else layout


MAX_DIM = 2**31 - 1  # the kernels' per-group M, N and K are 32-bit


def too_large(m: int, n: int, k: int) -> str | None:
    """Why the native kernels cannot run a group of this size at all (repacking does not help)."""
    if max(m, n, k) > MAX_DIM:
        return f"a dimension of {m}x{n}x{k} exceeds 2^31-1, the kernels' 32-bit sizes; use backend='torch'"
    return None


def repack_reason(rules: Rules, layout: str, a: torch.Tensor, b: torch.Tensor,
                  b_group_stride: int | None = None) -> str | None:
    """Why a group (or, with 3-D ``b`` and its ``b_group_stride``, every group of a packed call) must be
    repacked; None if the kernel takes it as it is."""
    es = a.element_size()
    k = a.shape[-1]
    n = b.shape[-2] if layout == "RC" else b.shape[-1]
    nb = rules.align_bytes
    if es == 1 and layout == "RR" and not rules.native_8bit_rr:
        return "8-bit RR: B is transposed to [N, K]"
    lda, ldb = leading_dim(a), leading_dim(b)
    if a.shape[-2] > 1 and lda < k:
        return "A rows overlap (leading dimension below K, e.g. an expanded tensor)"
    if b.shape[-2] > 1 and ldb < b.shape[-1]:
        return "B rows overlap (leading dimension below the stored row, e.g. an expanded tensor)"
    if b_group_stride is not None and b_group_stride < b.shape[-2] * ldb:
        return "B groups overlap (group stride below one matrix, e.g. an expanded expert)"
    if not _aligned(a, lda, nb):
        return f"A base or leading dimension not {nb}-byte aligned"
    if not _aligned(b, ldb, nb) or ((b_group_stride or 0) * es) % nb:
        return f"B base or leading dimension not {nb}-byte aligned"
    if (k * es) % nb:
        return f"K={k} is not a multiple of {nb} bytes"
    if layout == "RR" and (n * es) % nb:
        return f"N={n} (contiguous in RR B) is not a multiple of {nb} bytes"
    return None


def output_takes_large(rules: Rules, c: torch.Tensor) -> bool:
    """Whether the Large config's epilogue can write this output."""
    nb = rules.output_align_bytes
    if nb == 0 or c.numel() == 0:
        return True
    return _aligned(c, leading_dim(c), nb) and (c.shape[-1] * c.element_size()) % nb == 0


def choose_config(ms, outputs_ok: bool) -> int:
    """Large for big per-group M, Small for small M or an output only direct stores can write."""
    busy = [m for m in ms if m > 0]
    if not outputs_ok or not busy:
        return SMALL
    if FORCED_CONFIG is not None:
        return FORCED_CONFIG
    return SMALL if sum(busy) / len(busy) <= SMALL_MEAN_M else LARGE


def pad_k(x: torch.Tensor, multiple: int = K_PAD) -> torch.Tensor:
    """A contiguous copy of ``x`` [..., K] with K zero-padded up to a multiple."""
    k = x.shape[-1]
    kp = -(-k // multiple) * multiple
    out = x.new_zeros((*x.shape[:-1], kp))
    out[..., :k] = x
    return out


def repack(a: torch.Tensor, b: torch.Tensor, layout: str, n_multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A and B as RC tensors the kernel always takes: contiguous, K padded with zeros, and B's N rows
    padded with zero rows up to ``n_multiple`` (their output columns are zeros, sliced off later)."""
    b_nk = b if layout == "RC" else b.transpose(-1, -2)
    n, k = b_nk.shape[-2], b_nk.shape[-1]
    n_pad = -(-n // n_multiple) * n_multiple
    k_pad = -(-k // K_PAD) * K_PAD
    padded = b_nk.new_zeros((*b_nk.shape[:-2], n_pad, k_pad))  # one copy, whatever is padded
    padded[..., :n, :k] = b_nk
    return pad_k(a), padded


def staged_output_columns(rules: Rules, c: torch.Tensor) -> int:
    """0 when the backend can write ``c`` itself; otherwise the padded N of the temporary it writes."""
    if rules.direct_store_small or output_takes_large(rules, c):
        return 0
    multiple = max(1, rules.output_align_bytes // c.element_size())
    return -(-c.shape[-1] // multiple) * multiple
