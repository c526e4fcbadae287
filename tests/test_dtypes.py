"""The dtype table is the one source: the README embeds it, and the per-family fp8 rules hold."""
from __future__ import annotations

from pathlib import Path

import torch

from ckgemm import dtypes

README = Path(__file__).resolve().parents[1] / "README.md"


def test_table_rows_match_the_semantics():
    rows = {r.name: r for r in dtypes.DTYPE_TABLE}
    assert rows["fp16"].output == torch.float16 and rows["bf16"].output == torch.bfloat16
    for name in ("fp8", "fp8_fnuz"):
        assert rows[name].accumulate == torch.float32 and rows[name].output == torch.float32
    assert rows["int8"].accumulate == torch.int32 and rows["int8"].output == torch.int32 and rows["int8"].exact
    assert [r.abi_code for r in dtypes.DTYPE_TABLE] == list(range(len(dtypes.DTYPE_TABLE)))


def test_fp8_flavour_per_family():
    fams = {r.input: r.families for r in dtypes.DTYPE_TABLE}
    assert dtypes.NVIDIA in fams[torch.float8_e4m3fn] and dtypes.NVIDIA not in fams[torch.float8_e4m3fnuz]
    assert dtypes.GFX942 in fams[torch.float8_e4m3fnuz] and dtypes.GFX942 not in fams[torch.float8_e4m3fn]
    assert dtypes.GFX950 in fams[torch.float8_e4m3fn] and dtypes.GFX950 not in fams[torch.float8_e4m3fnuz]
    assert dtypes.arch_family("gfx942:sramecc+:xnack-") == dtypes.GFX942
    assert dtypes.arch_family("gfx950") == dtypes.GFX950
    assert dtypes.arch_family("gfx90a") == dtypes.ROCM_OTHER
    assert dtypes.fp8_dtype_for("cpu") == torch.float8_e4m3fn


def test_readme_embeds_the_table():
    assert dtypes.markdown_table() in README.read_text(), \
        "README's dtype table is stale: paste the output of ckgemm.dtypes.markdown_table() into it"
