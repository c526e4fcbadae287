"""What scripts/check_hip_compile.py reads out of an instance's AMDGPU assembly: the MFMA instructions of
its dtype (a config that fell back to scalar code has none), the GEMM kernel's resources from the
code-object metadata, and, for the row-scaled instances, the epilogue's fp32 scaling."""
from __future__ import annotations

import re

MFMA = {  # expected MFMA mnemonics per instance dtype, gfx942 and gfx950 spellings
    "fp16": r"v_mfma_f32_\w+?_f16\b",
    "bf16": r"v_mfma_f32_\w+?_bf16\w*",
    # gfx942: v_mfma_f32_32x32x16_fp8_fp8; gfx950 adds the f8f6f4 family (v_mfma_f32_16x16x128_f8f6f4)
    "fp8": r"v_mfma_f32_\w+?_(?:fp8_fp8|f8f6f4)\b",
    "int8": r"v_mfma_i32_\w+?_i8\b",
}
SCALE_MUL = r"\bv_(pk_)?mul_f32(?:_e32|_e64)?\s"  # acc * sa[row] * sb[col]: two per element of the tile
INT_TO_FLOAT = r"\bv_cvt_f32_i32(?:_e32|_e64)?\s"  # a scaled int8 instance converts its int32 accumulator first
LDS_LIMIT = 65536  # bytes per workgroup this check allows (all of gfx942's LDS per CU)
LDS_PER_CU = {"gfx942": 65536, "gfx950": 163840}
METADATA_KEYS = ("vgpr_count", "agpr_count", "group_segment_fixed_size", "private_segment_fixed_size")


def kernel_metadata(asm: str, arch: str) -> dict:
    """Resources of the GEMM (or argument-builder) kernel, from the code-object metadata."""
    meta = asm[asm.find("amdhsa.kernels:"):]
    for chunk in re.split(r"\n  - ", meta)[1:]:
        keys = dict(re.findall(r"^\s{0,4}\.(\w+):\s+(\S+)", "    " + chunk, flags=re.M))
        name = keys.get("name", "")
        if "grouped_gemm_persistent" in name or "build_packed_groups" in name:
            meta = {k: int(keys.get(k, 0)) for k in METADATA_KEYS}
            occ = re.search(rf"\n{re.escape(name)}:.*?; Occupancy: (\d+)\n", asm, flags=re.S)
            if occ is None:
                wave, block = int(keys.get("wavefront_size", 64)), int(keys.get("max_flat_workgroup_size", 256))
                return meta | {"occupancy": occupancy(meta, arch, wave, block)}
            return meta | {"occupancy": int(occ.group(1))}
    return {}


def occupancy(meta: dict, arch: str, wave: int, block: int) -> int:
    """Waves per SIMD from registers and LDS, where the compiler prints it only as an expression (clang 22):
    gfx942/gfx950 give a lane 512 VGPRs (arch + AGPR, allocated in 8s) and a CU 4 SIMDs and LDS_PER_CU."""
    vgprs = -(-max(meta["vgpr_count"], 1) // 8) * 8
    by_regs = min(8, 512 // vgprs)
    lds = meta["group_segment_fixed_size"]
    if lds == 0:
        return by_regs
    waves_per_block = -(-block // wave)
    return min(by_regs, (LDS_PER_CU[arch] // lds) * waves_per_block // 4)


def inspect(asm: str, arch: str, dtype: str | None, scale_muls: int = 0) -> tuple[dict, dict, list[str], list[str]]:
    """(mfma counts, kernel metadata, errors, warnings) of one arch's assembly of one TU; `scale_muls`:
    the fp32 multiplies a row-scaled instance's epilogue needs at least (0: unscaled)."""
    errors, warnings, mfma = [], [], {}
    if dtype:
        found = re.findall(MFMA[dtype], asm)
        mfma = {m: found.count(m) for m in sorted(set(found))}
        if not found:
            errors.append(f"no {MFMA[dtype]} instruction in the assembly: the GEMM did not lower to MFMA")
    muls = sum(2 if pk else 1 for pk in re.findall(SCALE_MUL, asm))
    if muls < scale_muls:
        errors.append(f"a row-scaled instance with {muls} fp32 multiplies, fewer than the {scale_muls} of "
                      "acc * sa[row] * sb[col]: the scales were not applied")
    converts = len(re.findall(INT_TO_FLOAT, asm))
    if scale_muls and dtype == "int8" and converts < scale_muls // 2:
        errors.append(f"a row-scaled int8 instance with {converts} v_cvt_f32_i32, fewer than one per accumulator "
                      f"({scale_muls // 2}): the int32 accumulator was not converted")
    meta = kernel_metadata(asm, arch)
    if not meta:
        errors.append("kernel metadata not found in the assembly")
    elif meta["group_segment_fixed_size"] > LDS_LIMIT:
        errors.append(f"LDS {meta['group_segment_fixed_size']} B exceeds {LDS_LIMIT} B")
    elif meta["private_segment_fixed_size"] > 0:
        warnings.append(f"{meta['private_segment_fixed_size']} B/lane of scratch (VGPR spills)")
    return mfma, meta, errors, warnings


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
