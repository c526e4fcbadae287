"""benchmarks/bench_env.py's pieces on the CPU (the reference backend): the knob is set for the call and put back
as it was (common.env_set, which forced_instance uses too), a form that gives other bits than the first is
refused before anything is timed, and so is a CKGEMM_CONFIG form that ran another instance (path_miss)."""
from __future__ import annotations

import os

import pytest
import torch

from bench_scripts import benchmark_module  # noqa: F401 - a fixture

KNOB = "CKGEMM_TEST_BENCH_ENV_KNOB"


@pytest.fixture
def bench_env(benchmark_module):  # noqa: F811 - the fixture above
    """benchmarks/bench_env.py as a module (bench_scripts' path and sys.modules handling)."""
    return benchmark_module("bench_env")


def _operands():
    gen = torch.Generator().manual_seed(7)
    sizes = [3, 0, 5]
    a = torch.randn(sum(sizes), 32, generator=gen).to(torch.bfloat16)
    b = torch.randn(len(sizes), 16, 32, generator=gen).to(torch.bfloat16)
    return a, b, sizes


@pytest.mark.parametrize("before", [None, "outer"])
def test_env_set_sets_the_variable_and_puts_it_back(bench_env, monkeypatch, before):
    if before is None:
        monkeypatch.delenv(KNOB, raising=False)
    else:
        monkeypatch.setenv(KNOB, before)
    with bench_env.common.env_set(KNOB, "inner"):
        assert os.environ[KNOB] == "inner"
    assert os.environ.get(KNOB) == before
    with pytest.raises(ValueError), bench_env.common.env_set(KNOB, "inner"):
        raise ValueError("the call failed")
    assert os.environ.get(KNOB) == before


def test_forms_are_checked_and_call_with_their_value(bench_env, monkeypatch):
    a, b, sizes = _operands()
    seen = []
    real = bench_env.ckgemm.grouped_gemm_packed

    def spy(*args, **kwargs):
        seen.append(os.environ.get(KNOB))
        return real(*args, **kwargs)
    monkeypatch.setattr(bench_env.ckgemm, "grouped_gemm_packed", spy)
    fns, ref = bench_env.checked_forms(a, b, sizes, torch.bfloat16, KNOB, ["x", "y"], "cpu case")
    assert list(fns) == [f"{KNOB}=x", f"{KNOB}=y"] and seen == ["x", "y"]
    assert ref.shape == (sum(sizes), 16)
    fns[f"{KNOB}=y"]()  # a timed call runs with its own value, and leaves the knob as it found it
    assert seen[-1] == "y" and KNOB not in os.environ


def test_a_form_with_other_bits_is_refused_unless_any_bits(bench_env, monkeypatch):
    a, b, sizes = _operands()
    real = bench_env.ckgemm.grouped_gemm_packed

    def one_ulp_off_under_y(*args, out=None, **kwargs):
        result = real(*args, out=out, **kwargs)
        if os.environ.get(KNOB) == "y":  # the smallest value's last bit: within the reference's tolerance
            bits = out.view(-1).view(torch.int16)
            bits[out.view(-1).float().abs().argmin()] ^= 1
        return result
    monkeypatch.setattr(bench_env.ckgemm, "grouped_gemm_packed", one_ulp_off_under_y)
    with pytest.raises(AssertionError, match="gave other bits than x"):
        bench_env.checked_forms(a, b, sizes, torch.bfloat16, KNOB, ["x", "y"], "cpu case")
    fns, _ = bench_env.checked_forms(a, b, sizes, torch.bfloat16, KNOB, ["x", "y"], "cpu case", same_bits=False)
    assert len(fns) == 2


def test_a_knob_that_misses_the_path_is_named(bench_env):
    """CKGEMM_CONFIG must run the named instance (else the form is not what its label says); CKGEMM_WS_L2 reaches
    only the own kernel's ws_ tiles."""
    miss = bench_env.path_miss
    assert miss("CKGEMM_CONFIG", "ws_128x192x64_c1x2", "cutlass:ws_128x192x64_c1x2") == ""
    assert "not the named instance" in miss("CKGEMM_CONFIG", "ws_128x192x64_c1x2", "cutlass:ws_128x256x64_c1x2")
    assert miss("CKGEMM_WS_L2", "nnf", "cutlass:ws_128x192x128_c1x2") == ""
    assert "takes no L2 policy" in miss("CKGEMM_WS_L2", "nnf", "cutlass:coop_128x256x128_c1x2")
    assert miss("CKGEMM_OTHER", "x", "torch") == ""


def test_a_forced_instance_that_does_not_run_is_refused(bench_env):
    """On the CPU the reference runs whatever CKGEMM_CONFIG names: the form is refused before it is timed."""
    a, b, sizes = _operands()
    with pytest.raises(AssertionError, match="not the named instance"):
        bench_env.checked_forms(a, b, sizes, torch.bfloat16, "CKGEMM_CONFIG", ["ws_128x256x64_c1x2"], "cpu case")
