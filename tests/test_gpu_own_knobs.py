"""The run-time knobs of ckgemm's own RC kernel, read at each call: CKGEMM_WS_L2, the L2 cache policies of its A
loads, B loads and C stores (csrc/cuda/ws_fp8_rules.h's l2_policies; default nnf, C evict_first), and
CKGEMM_WS_ORDER, the order of a group's units (unit_order; default plain; in bands of rows or not). Every value gives the bits of the
plain form (no hint; plain order), on 16-bit, fp8 and int8 packed RC calls through the own tiles (NaN-poisoned
outputs, each also checked against the harness reference; whole m64 blocks take the hinted 16-byte stores,
partial ones the plain stores), and an unknown value refuses the call without writing. CUTLASS only."""
from __future__ import annotations

import pytest
import torch

import ckgemm
from gpu_support import MARKS, NATIVE, check_packed, packed_call, ran_paths

pytestmark = MARKS + [pytest.mark.skipif(NATIVE != "cutlass", reason="ckgemm's own kernel is CUDA (sm_90a)")]

# operand dtype, output dtype, the own tile forced
FORMS = {"bf16": (torch.bfloat16, torch.bfloat16, "ws_128x256x64_c1x2"),
         "fp16": (torch.float16, torch.float16, "ws_128x192x64_c1x2"),
         "fp8": (torch.float8_e4m3fn, torch.float32, "ws_128x256x128_c1x2"),
         "int8": (torch.int8, torch.int32, "ws_128x256x128_c1x2")}
# partial tiles, an empty group and N past the last pair (three columns of pairs: the snake turns twice); then
# whole M-blocks (the 256-wide pairs' tiles whole too; the 192-wide tile still has a partial N tile)
CASES = [([0, 1, 65, 129, 300, 1000], 1280, 1024), ([256, 512], 512, 384)]
# each knob's values, the first the plain form; "": unset, the default
KNOBS = {"CKGEMM_WS_L2": ["nnn", "", "lff", "NlN", "fnl"],
         "CKGEMM_WS_ORDER": ["plain", "", "snake", "plain:3", "snake:2", "snake:1"]}
# an unknown value of each knob, and what the refusal says
REFUSED = [("CKGEMM_WS_L2", v, "CKGEMM_WS_L2 must be three letters of n, N, f, l") for v in ("nn", "nnx", "NNF")] + \
          [("CKGEMM_WS_ORDER", v, "CKGEMM_WS_ORDER must be plain") for v in ("Snake", "1", "snake:0", "plain:")]


@pytest.mark.parametrize("knob", KNOBS)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_value_gives_the_bits_of_the_plain_form(knob, form, case, monkeypatch):
    dtype, out_dtype, config = FORMS[form]
    sizes, n, k = CASES[case]
    values = KNOBS[knob]
    outs = {}
    for value in values:
        monkeypatch.setenv(knob, value)
        a, b, _, out = packed_call(sizes, n, k, dtype, out_dtype, f"{knob}-{form}-{case}", config=config)
        assert ran_paths() == {f"cutlass:{config}"}, ckgemm.last_dispatch()
        check_packed(out, a, b, sizes, dtype, k, f"own {form} case {case} {knob}={value!r}")
        outs[value] = out
    for value, out in outs.items():
        assert torch.equal(out, outs[values[0]]), (value, (out.float() - outs[values[0]].float()).abs().max())


@pytest.mark.parametrize("knob,value,message", REFUSED)
def test_an_unknown_value_is_refused_before_any_write(knob, value, message, monkeypatch):
    monkeypatch.setenv(knob, value)
    monkeypatch.setenv("CKGEMM_CONFIG", FORMS["bf16"][2])
    a = torch.randn(600, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2, 512, 256, device="cuda", dtype=torch.bfloat16)
    out = torch.full((600, 512), float("nan"), dtype=torch.bfloat16, device="cuda")
    with pytest.raises(RuntimeError, match=message):
        ckgemm.grouped_gemm_packed(a, b, torch.tensor([300, 300], device="cuda"), out=out)
    torch.cuda.synchronize()
    assert out.isnan().all()
