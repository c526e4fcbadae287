"""Quantization casts for building kernel inputs, each with its exact inverse ``dequant``.

Every cast scales blocks of a 2-D (or batched ``[..., R, C]``) tensor by one float32 scale each:

| cast                                  | block (rows x cols)  | scale shape (x: [..., R, C])     | ckgemm recipe          |
|---------------------------------------|----------------------|----------------------------------|------------------------|
| ``per_token_cast_to_fp8(x, gran)``    | 1 x gran             | [..., R, ceil(C/gran)]           | block, A (gran 128)    |
| ``per_block_cast_to_fp8(x, gran)``    | gran x gran          | [..., ceil(R/gran), ceil(C/gran)] | block, B (gran 128)   |
| ``per_row_cast_to_fp8(x)``            | 1 x C                | [..., R]                         | row (A per token, B per channel) |
| ``per_tensor_cast_to_fp8(x)``         | R x C                | [...]                            | tensor (A: [], B [G, N, K]: [G]) |
| ``per_channel_cast_to_fp8(x, gran)``  | gran x 1             | [..., ceil(R/gran), C]           | (DeepGEMM wgrad)       |
| ``cast_to_fp4(x, gran)``              | 1 x gran             | [..., R, ceil(C/gran)]           |                        |
| ``cast_to_int8(x, "row")``            | 1 x C                | [..., R]                         | row                    |
| ``cast_to_int8(x, "tensor")``         | R x C                | [...]                            | tensor                 |

(the fp8 blocks follow DeepGEMM's conventions). The scale shapes are exactly what ckgemm's scaled ops take
(README, "Scaled fp8 and int8 (quantized MoE)"): ``a, sa = per_token_cast_to_fp8(x)`` and ``b, sb = per_block_cast_to_fp8(w)``
feed ``grouped_gemm_packed(a, b, sizes, scale_a=sa, scale_b=sb)`` and the harness reference unchanged. A
``Quantized`` is a ``(codes, scale)`` tuple, as DeepGEMM's casts return: ``cast(x)[0]`` are the codes. Casts
do not track gradients (their outputs never require grad). Scales are ``amax / max_code`` (``amax`` floored at
``amax_floor``); with ``ue8m0=True`` they are rounded up to a power of two (UE8M0, as MX formats and
SM100 kernels store them; ``ue8m0_bytes`` gives the exponent bytes). Both e4m3 flavours are supported:
``float8_e4m3fn`` (max 448) and ``float8_e4m3fnuz`` (max 240, gfx942); the max comes from ckgemm's dtype table.
Codes are ``x * (1 / scale)`` in fp32 (DeepGEMM's arithmetic, so bf16/fp16/fp32 inputs give its codes bit
for bit), clamped to the format's range and rounded to nearest even. ``dequant`` is ``code * scale``,
exact in float64 (and in float32 whenever the scales are powers of two).
FP4 is e2m1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), two codes per byte, low nibble first.
"""
from __future__ import annotations


import torch

from ..dtypes import rule_for

FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
FP4_MAX = 6.0
INT8_MAX = 127.0
DEFAULT_AMAX_FLOOR = 1e-4


class Quantized(tuple):
    """Codes, their block scales and the logical shape. A ``(codes, scale)`` tuple, as DeepGEMM's casts return:
    ``codes, scale = cast(...)``, ``cast(...)[0]``, and anything that takes a tuple of tensors
    (``torch.testing.assert_close``, a DeepGEMM call) takes it; ``block``, ``fmt``, ``shape`` and ``squeezed``
    ride along as read-only attributes."""

    # data: fp8 or int8 codes in the logical shape; fp4: uint8, two codes per byte. scale: float32, one per
    # block, in the layout of the table above. block: rows x cols covered by one scale. fmt: "float8_e4m3fn",
    # "float8_e4m3fnuz", "int8" or "fp4_e2m1". shape: logical shape of the values. squeezed: trailing block
    # dimensions dropped from ``scale`` (1 per row, 2 per tensor).
    def __new__(cls, data: torch.Tensor, scale: torch.Tensor, block: tuple[int, int], fmt: str,
                shape: tuple[int, ...], squeezed: int = 0):
        self = super().__new__(cls, (data, scale))
        for name, value in (("block", tuple(block)), ("fmt", fmt), ("shape", tuple(shape)), ("squeezed", squeezed)):
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"Quantized is read-only ({name})")

    def __getnewargs__(self):  # copy and pickle
        return (self[0], self[1], self.block, self.fmt, self.shape, self.squeezed)

    def __repr__(self) -> str:
        return (f"Quantized(data={tuple(self[0].shape)} {self[0].dtype}, scale={tuple(self[1].shape)}, "
                f"block={self.block}, fmt={self.fmt!r}, shape={self.shape}, squeezed={self.squeezed})")

    @property
    def data(self) -> torch.Tensor:
        return self[0]

    @property
    def scale(self) -> torch.Tensor:
        return self[1]

    def full_scale(self) -> torch.Tensor:
        """The scales with both block dimensions: [..., ceil(R / block[0]), ceil(C / block[1])]."""
        return self.scale.reshape(*self.scale.shape, *([1] * self.squeezed))

    def dequant(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return dequant(self, dtype)


def from_pair(codes: torch.Tensor, scale: torch.Tensor, *, gran: int = 128) -> Quantized:
    """A ``Quantized`` from a ``(codes, scale)`` pair in one of ckgemm's scale layouts, read off the
    scale's shape: [...] per tensor, [..., R] per row, [..., R or ceil(R/gran), ceil(C/gran) or C] per block."""
    rows, cols = codes.shape[-2], codes.shape[-1]
    lead = tuple(codes.shape[:-2])
    fmt = str(codes.dtype).replace("torch.", "")
    shape = tuple(codes.shape)
    if tuple(scale.shape) == lead:
        return Quantized(codes, scale, (max(rows, 1), max(cols, 1)), fmt, shape, 2)
    if tuple(scale.shape) == lead + (rows,):
        return Quantized(codes, scale, (1, max(cols, 1)), fmt, shape, 1)
    if scale.dim() == codes.dim() and tuple(scale.shape[:-2]) == lead:
        rb, cb = scale.shape[-2], scale.shape[-1]
        block_rows = 1 if rb == rows else gran
        block_cols = gran if cb == -(-cols // gran) else 1
        if rb == -(-rows // block_rows) and cb == -(-cols // block_cols):
            return Quantized(codes, scale, (block_rows, block_cols), fmt, shape, 0)
    raise ValueError(f"from_pair: scale shape {tuple(scale.shape)} is no scale layout of codes {shape} "
                     f"(per tensor {lead}, per row {lead + (rows,)}, or per block of {gran})")


def ceil_to_ue8m0(x: torch.Tensor) -> torch.Tensor:
    """Round positive normal float32 values up to a power of two (exactly: bit operations, no log2)."""
    bits = x.float().contiguous().view(torch.int32)
    exponent = (bits >> 23) & 0xFF
    exponent = exponent + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    rounded = (exponent.clamp(1, 254) << 23).view(torch.float32)
    # NaN and inf stay, so a block that held them dequantizes to NaN and fails its check. DeepGEMM's bit version
    # (sgl-deep-gemm 0.1.0, utils/math.py) clamps them to 2**127 instead; finite inputs round the same.
    return torch.where(torch.isfinite(x), rounded, x.float())


def ue8m0_bytes(scale: torch.Tensor) -> torch.Tensor:
    """The biased exponent byte of power-of-two float32 scales (UE8M0 storage); NaN and inf (a block whose
    values were not finite) give 0xFF, UE8M0's NaN."""
    bits = scale.float().contiguous().view(torch.int32)
    finite = torch.isfinite(scale)
    if bool(((bits & 0x7FFFFF).ne(0) & finite).any()) or bool(((scale <= 0) & finite).any()):
        raise ValueError("ue8m0_bytes: finite scales must be positive powers of two (cast with ue8m0=True)")
    return torch.where(finite, (bits >> 23) & 0xFF, 0xFF).to(torch.uint8)


def ue8m0_to_float(codes: torch.Tensor) -> torch.Tensor:
    """Inverse of ``ue8m0_bytes``: byte e is 2^(e - 127) (OCP E8M0: 0x00 is 2^-127, 0xFF is NaN). 0x00 decodes
    from outside bytes only: ``ue8m0_bytes`` refuses 2^-127, an fp32 subnormal, so the casts never make it."""
    as_float = (codes.to(torch.int32) << 23).view(torch.float32)  # exact for 0x01..0xFE
    as_float = torch.where(codes == 0, torch.full_like(as_float, 2.0 ** -127), as_float)
    return torch.where(codes == 0xFF, torch.full_like(as_float, float("nan")), as_float)


def _block_sizes(shape, block) -> tuple[int, int]:
    """The block in elements (None: the whole dimension, at least 1); a given size must be a positive int."""
    if len(block) != 2 or any(b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1)
                              for b in block):
        raise ValueError(f"block sizes must be positive ints or None (the whole dimension), got {tuple(block)}")
    rows, cols = shape[-2], shape[-1]
    bm = rows if block[0] is None else block[0]
    bk = cols if block[1] is None else block[1]
    return max(int(bm), 1), max(int(bk), 1)


def _block_amax(x: torch.Tensor, block: tuple[int, int], whole: tuple[bool, bool] = (False, False)) -> torch.Tensor:
    bm, bk = block
    rows, cols = x.shape[-2], x.shape[-1]
    # A block that spans a whole dimension is one block even when the dimension is empty (K = 0: one
    # scale per row still exists); a finer block tiles the dimension (no rows: no row blocks).
    rb = max(-(-rows // bm), int(whole[0]))
    cb = max(-(-cols // bk), int(whole[1]))
    padded = torch.nn.functional.pad(x.abs(), (0, cb * bk - cols, 0, rb * bm - rows))
    return padded.reshape(*x.shape[:-2], rb, bm, cb, bk).amax(dim=(-3, -1))


def expand_scale(scale: torch.Tensor, block: tuple[int, int], shape) -> torch.Tensor:
    """Block scales broadcast to one per element of ``shape``."""
    rows, cols = shape[-2], shape[-1]
    full = scale.repeat_interleave(block[0], dim=-2).repeat_interleave(block[1], dim=-1)
    return full[..., :rows, :cols]


def _scales(x: torch.Tensor, block, qmax: float, ue8m0: bool, amax_floor: float,
            whole: tuple[bool, bool] = (False, False)) -> torch.Tensor:
    scale = _block_amax(x, block, whole).clamp(min=amax_floor) / qmax
    return ceil_to_ue8m0(scale) if ue8m0 else scale


def _scaled_values(x: torch.Tensor, scale: torch.Tensor, block, shape) -> torch.Tensor:
    """x times 1/scale per element in fp32, as DeepGEMM's casts compute it (``x * (1.0 / sf)``), so the codes
    match theirs bit for bit (``x / scale`` rounds differently near a code's midpoint); a zero scale (an
    all-zero block with amax_floor=0) gives zero codes, not NaN. A scale whose reciprocal overflows fp32 (below
    2^-128: blocks of amax under ~1e-36 with amax_floor=0) divides instead, where 1/scale would saturate every
    code."""
    full = expand_scale(scale, block, shape)
    inverse = 1.0 / full
    scaled = torch.where(torch.isinf(inverse), x / full, x * inverse)
    return torch.where(full == 0, torch.zeros_like(x), scaled)


def _check_2d(x: torch.Tensor, what: str) -> None:
    if x.dim() < 2:
        raise ValueError(f"{what}: expected a [..., rows, cols] tensor, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{what}: expected floating values, got {x.dtype}")


def _fp8_max(dtype: torch.dtype) -> float:
    rule = rule_for(dtype)
    if rule is None or not dtype.is_floating_point or rule.mantissa_bits != 3:
        raise ValueError(f"expected an e4m3 fp8 dtype (float8_e4m3fn or float8_e4m3fnuz), got {dtype}")
    return rule.max_value


def _squeeze(scale: torch.Tensor, block: tuple[int | None, int | None]) -> tuple[torch.Tensor, int]:
    """Scales in ckgemm's layout: drop the column-block dim of whole-row blocks, both of whole-tensor ones."""
    if block[1] is None and block[0] is None:
        return scale.reshape(scale.shape[:-2]), 2
    if block[1] is None and block[0] == 1:
        return scale.reshape(scale.shape[:-1]), 1
    return scale, 0


@torch.no_grad()
def cast_to_fp8(x: torch.Tensor, block: tuple[int | None, int | None], *, dtype=torch.float8_e4m3fn,
                ue8m0: bool = False, amax_floor: float = DEFAULT_AMAX_FLOOR) -> Quantized:
    """FP8 cast with one scale per ``block`` (rows x cols; None means the whole dimension). Whole-row
    blocks ``(1, None)`` give scales [..., R]; whole-tensor blocks ``(None, None)`` give [...]."""
    _check_2d(x, "cast_to_fp8")
    qmax = _fp8_max(dtype)
    xf = x.float()
    blk = _block_sizes(xf.shape, block)
    scale = _scales(xf, blk, qmax, ue8m0, amax_floor, (block[0] is None, block[1] is None))
    codes = _scaled_values(xf, scale, blk, xf.shape).clamp(-qmax, qmax).to(dtype)
    scale, squeezed = _squeeze(scale, block)
    return Quantized(codes, scale, blk, str(dtype).replace("torch.", ""), tuple(x.shape), squeezed)


def _deepgemm_spelling(fn: str, gran, ue8m0: bool, use_ue8m0, gran_k, use_packed_ue8m0=False) -> tuple[int, bool]:
    """DeepGEMM's spelling of the same casts: ``cast(x, use_ue8m0, gran_k=128, use_packed_ue8m0=False)``, all four
    positional or not (its second positional argument is the UE8M0 flag, its third the granularity),
    accepted beside ckgemm's ``gran`` and ``ue8m0``. Packed UE8M0 (four exponents in an int32, DeepGEMM's
    SM100 layout) is refused: ckgemm's ops take float32 scales; ``use_ue8m0=True`` gives the same powers of
    two as float32."""
    if use_packed_ue8m0:
        raise ValueError(f"{fn}: use_packed_ue8m0=True packs UE8M0 exponents into int32 (DeepGEMM's SM100 layout); "
                         "ckgemm's ops take float32 scales: use use_ue8m0=True for the same powers of two as float32")
    if isinstance(gran, bool):  # DeepGEMM's positional use_ue8m0
        if use_ue8m0 is not None and use_ue8m0 != gran:
            raise ValueError(f"{fn}: the positional flag {gran} and use_ue8m0={use_ue8m0} disagree; give one")
        use_ue8m0, gran = gran, 128
    if use_ue8m0 is not None:
        if ue8m0 and not use_ue8m0:
            raise ValueError(f"{fn}: ue8m0=True and use_ue8m0=False disagree; give one")
        ue8m0 = bool(use_ue8m0)
    if gran_k is not None:
        if gran != 128 and gran != gran_k:
            raise ValueError(f"{fn}: gran={gran} and gran_k={gran_k} disagree; give one")
        gran = gran_k
    if not isinstance(gran, int) or gran < 1:
        raise ValueError(f"{fn}: gran must be a positive int, got {gran!r}")
    return gran, ue8m0


def per_token_cast_to_fp8(x, gran: int = 128, gran_k: int | None = None, use_packed_ue8m0: bool = False, *,
                          dtype=torch.float8_e4m3fn, ue8m0: bool = False, amax_floor: float = DEFAULT_AMAX_FLOOR,
                          use_ue8m0: bool | None = None) -> Quantized:
    """One scale per row and ``gran`` columns (1 x gran), the usual activation recipe. DeepGEMM's
    ``per_token_cast_to_fp8(x, use_ue8m0, gran_k=128)`` spelling works too."""
    gran, ue8m0 = _deepgemm_spelling("per_token_cast_to_fp8", gran, ue8m0, use_ue8m0, gran_k,
                                     use_packed_ue8m0)
    return cast_to_fp8(x, (1, gran), dtype=dtype, ue8m0=ue8m0, amax_floor=amax_floor)


def per_block_cast_to_fp8(x, gran: int = 128, gran_k: int | None = None, use_packed_ue8m0: bool = False, *,
                          dtype=torch.float8_e4m3fn, ue8m0: bool = False, amax_floor: float = DEFAULT_AMAX_FLOOR,
                          use_ue8m0: bool | None = None) -> Quantized:
    """One scale per gran x gran block, the usual weight recipe (DeepGEMM's spelling works too)."""
    gran, ue8m0 = _deepgemm_spelling("per_block_cast_to_fp8", gran, ue8m0, use_ue8m0, gran_k,
                                     use_packed_ue8m0)
    return cast_to_fp8(x, (gran, gran), dtype=dtype, ue8m0=ue8m0, amax_floor=amax_floor)


def per_row_cast_to_fp8(x, *, dtype=torch.float8_e4m3fn, ue8m0: bool = False,
                        amax_floor: float = DEFAULT_AMAX_FLOOR) -> Quantized:
    """One scale per row ([..., R]): per-token activations, or per-channel weights [G, N, K] -> [G, N]."""
    return cast_to_fp8(x, (1, None), dtype=dtype, ue8m0=ue8m0, amax_floor=amax_floor)


def per_tensor_cast_to_fp8(x, *, dtype=torch.float8_e4m3fn, ue8m0: bool = False,
                           amax_floor: float = DEFAULT_AMAX_FLOOR) -> Quantized:
    """One scale per matrix ([...]): [sum M, K] -> [], weights [G, N, K] -> [G] (one per expert)."""
    return cast_to_fp8(x, (None, None), dtype=dtype, ue8m0=ue8m0, amax_floor=amax_floor)


def per_channel_cast_to_fp8(x, gran: int = 128, gran_k: int | None = None, use_packed_ue8m0: bool = False, *,
                            dtype=torch.float8_e4m3fn, ue8m0: bool = False, amax_floor: float = DEFAULT_AMAX_FLOOR,
                            use_ue8m0: bool | None = None) -> Quantized:
    """One scale per column and ``gran`` rows (gran x 1), DeepGEMM's recipe for K-major wgrad operands
    (DeepGEMM's spelling works too)."""
    gran, ue8m0 = _deepgemm_spelling("per_channel_cast_to_fp8", gran, ue8m0, use_ue8m0, gran_k,
                                     use_packed_ue8m0)
    return cast_to_fp8(x, (gran, 1), dtype=dtype, ue8m0=ue8m0, amax_floor=amax_floor)


def cast_for(x: torch.Tensor, recipe: str, operand: str, dtype: torch.dtype = torch.float8_e4m3fn) -> Quantized:
    """The cast of ckgemm's scale ``recipe`` ("tensor", "row" or "block") for ``operand`` "a" ([sum M, K] or
    [M, K]) or "b" (weights in their logical [.., N, K] orientation), into ``dtype`` (an fp8 flavour, or
    torch.int8: tensor and row only). The scale layouts are the op's (README's recipe table)."""
    if operand not in ("a", "b"):
        raise ValueError(f"cast_for: operand must be 'a' or 'b', got {operand!r}")
    if dtype == torch.int8:
        if recipe not in ("tensor", "row"):
            raise ValueError(f"cast_for: int8 takes the tensor or row recipe, not {recipe!r}")
        return cast_to_int8(x, recipe)
    if recipe == "tensor":
        return per_tensor_cast_to_fp8(x, dtype=dtype)
    if recipe == "row":
        return per_row_cast_to_fp8(x, dtype=dtype)
    if recipe == "block":
        return (per_token_cast_to_fp8 if operand == "a" else per_block_cast_to_fp8)(x, 128, dtype=dtype)
    raise ValueError(f"cast_for: unknown scale recipe {recipe!r}")


@torch.no_grad()
def cast_to_int8(x: torch.Tensor, per: str = "row", *, amax_floor: float = DEFAULT_AMAX_FLOOR) -> Quantized:
    """Symmetric int8 (codes in [-127, 127], round half to even): ``per="row"`` (scales [..., R]) or
    ``per="tensor"`` (scales [...])."""
    _check_2d(x, "cast_to_int8")
    if per not in ("row", "tensor"):
        raise ValueError(f"cast_to_int8: per must be 'row' or 'tensor', got {per!r}")
    xf = x.float()
    block = (1, None) if per == "row" else (None, None)
    blk = _block_sizes(xf.shape, block)
    scale = _scales(xf, blk, INT8_MAX, False, amax_floor, (block[0] is None, block[1] is None))
    codes = torch.round(_scaled_values(xf, scale, blk, xf.shape)).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
    scale, squeezed = _squeeze(scale, block)
    return Quantized(codes, scale, blk, "int8", tuple(x.shape), squeezed)


_FP4_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def _fp4_codes(v: torch.Tensor) -> torch.Tensor:
    """e2m1 codes (sign in bit 3) of values already scaled into [-6, 6]; round to nearest, ties to even."""
    mids = torch.tensor(_FP4_MIDPOINTS, dtype=v.dtype, device=v.device)
    mag = v.abs()
    idx = torch.bucketize(mag, mids)  # mids[i-1] < mag <= mids[i]: a tie lands on the lower code
    tie = mag == mids[idx.clamp(max=len(_FP4_MIDPOINTS) - 1)]
    idx = idx + (tie & (idx % 2 == 1)).to(idx.dtype)  # the even code of a tie is the upper one
    sign = ((v < 0) & (idx > 0)).to(idx.dtype) * 8  # no negative zero
    return (idx | sign).to(torch.uint8)


@torch.no_grad()
def cast_to_fp4(x: torch.Tensor, gran: int = 32, *, ue8m0: bool = False,
                amax_floor: float = DEFAULT_AMAX_FLOOR) -> Quantized:
    """FP4 e2m1 with one scale per row and ``gran`` columns; two codes per byte (low nibble first)."""
    _check_2d(x, "cast_to_fp4")
    xf = x.float()
    blk = _block_sizes(xf.shape, (1, gran))
    scale = _scales(xf, blk, FP4_MAX, ue8m0, amax_floor)
    codes = _fp4_codes(_scaled_values(xf, scale, blk, xf.shape).clamp(-FP4_MAX, FP4_MAX))
    if codes.shape[-1] % 2:
        codes = torch.nn.functional.pad(codes, (0, 1))
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return Quantized(packed, scale, blk, "fp4_e2m1", tuple(x.shape))


def fp4_unpack(packed: torch.Tensor, cols: int) -> torch.Tensor:
    """e2m1 codes (uint8, one per element) from bytes holding two codes each."""
    low, high = packed & 0xF, packed >> 4
    return torch.stack((low, high), dim=-1).flatten(-2)[..., :cols]


def fp4_values(codes: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    table = torch.tensor(FP4_VALUES, dtype=dtype, device=codes.device)
    magnitude = table[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


def dequant(q: Quantized, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``code * scale`` per element, computed in ``dtype`` (float64: exact for every format here). ``q`` may
    also be a plain ``(codes, scale)`` pair in one of ckgemm's scale layouts (read with ``from_pair``)."""
    if not isinstance(q, Quantized):
        q = from_pair(*q)
    if q.fmt == "fp4_e2m1":
        values = fp4_values(fp4_unpack(q.data, q.shape[-1]), dtype)
    else:
        values = q.data.to(dtype)
    return values * expand_scale(q.full_scale().to(dtype), q.block, q.shape)
