"""The harness's device paths (skipped without a GPU): event timing with the flush outside the timed window,
graph replay, rotation, telemetry, measured ceilings, the GPU reference, the ported DeepGEMM/aiter timers
(ckgemm.testing.compat), gpu_verify's torch fallback on the device, and the fused kernel of
csrc/common/verify.cuh (torch.ops.ckgemm.verify_stats, when the extension is built) agreeing with the CPU
path."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from ckgemm.testing import (bench, device_info, error_stats, gpu_verify, grouped_gemm_reference, measure_ceilings,
                            rotating_copies, verify)
from support import generator

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]
DEV = "cuda"

def _flat_index(index, shape) -> int:
    flat = 0
    for i, size in zip(index, shape):
        flat = flat * size + i
    return flat


def _same_as_cpu(stats, out, ref, rtol, atol):
    s = error_stats(out, ref, rtol, atol)
    assert (stats.mismatches, stats.nan_out, stats.inf_out, stats.nan_ref, stats.inf_ref, stats.numel) == \
        (s.mismatches, s.nan_out, s.inf_out, s.nan_ref, s.inf_ref, s.numel), stats.path
    assert stats.max_abs_err == s.max_abs_err and stats.max_abs_ref == s.max_abs_ref, stats.path
    assert stats.max_abs_index == (-1 if s.max_abs_index is None else _flat_index(s.max_abs_index, out.shape))
    assert stats.out_all_zero == s.out_all_zero and stats.passed == s.passed


def _cases():
    """(out, ref, rtol, atol) on the GPU: random data in several dtype pairs, plus adversarial specials/ties."""
    gen = generator("gpu-verify")
    cases = []
    for out_dtype, ref_dtype in ((torch.float16, torch.float16), (torch.float16, torch.float32),
                                 (torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
                                 (torch.float32, torch.float32), (torch.float32, torch.float64)):
        ref = (torch.randn(300, 517, generator=gen) * 16).to(ref_dtype)
        out = (ref.double() * (1 + 3e-3 * torch.randn(ref.shape, generator=gen, dtype=torch.float64))).to(out_dtype)
        out.view(-1)[::997] = float("nan")
        out.view(-1)[5::1013] = float("inf")
        ref.view(-1)[7::1009] = float("-inf")
        out.view(-1)[11] = 0.0
        for rtol, atol in ((1e-3, 1e-3), (1e-2, 0.0625), (0.0, 0.0)):
            cases.append((out.to(DEV), ref.to(DEV), rtol, atol))
    ref = torch.randint(-2**30, 2**30, (64, 129), generator=gen, dtype=torch.int64)
    out = ref.to(torch.int32)
    out.view(-1)[::37] += 1
    cases.append((out.to(DEV), ref.to(DEV), 0.0, 0.0))
    cases.append((out.to(DEV), out.to(DEV), 0.0, 0.0))
    tie_ref = torch.tensor([2.0, 2.0, -4.0, 0.0, float("nan"), float("inf"), 7.0] * 40000, dtype=torch.float64)
    tie_out = torch.tensor([3.0, 3.0 + 2.0**-50, -5.5, 0.5, float("nan"), float("inf"), 7.0] * 40000,
                           dtype=torch.float64)
    cases.append((tie_out.to(DEV), tie_ref.to(DEV), 0.25, 0.5))
    # all finite (the kernel's per-vector fast path): equal maxima at lanes 1 and 3 of every period of 5
    fin_ref = torch.tensor([1.0, 2.0, 3.0, 5.0, 0.0] * 60001, dtype=torch.float32)
    fin_out = fin_ref + torch.tensor([0.0, 0.5, 0.0, -0.5, 0.25] * 60001, dtype=torch.float32)
    cases.append((fin_out.to(DEV), fin_ref.to(DEV), 0.1, 0.2))
    # long enough that each thread visits several vectors (both halves of the kernel's two-vector step),
    # with a few specials and two planted large errors far apart
    big_ref = torch.randn(5_000_003, generator=gen)
    big_out = big_ref * (1 + 1e-3 * torch.randn(big_ref.shape, generator=gen))
    big_out[[17, 2_500_000, 4_999_999]] = float("nan")
    big_ref[[33, 3_000_001]] = float("inf")
    big_out[3_000_001] = float("inf")
    big_out[[1_234_567, 4_400_000]] = big_ref[[1_234_567, 4_400_000]] + 64.0
    for rtol, atol in ((1e-3, 1e-3), (2e-3, 1e-4)):
        cases.append((big_out.to(DEV), big_ref.to(DEV), rtol, atol))
    cases.append((torch.zeros(5, 7, device=DEV), torch.ones(5, 7, device=DEV), 0.0, 1.0))
    cases.append((torch.zeros(0, device=DEV), torch.zeros(0, device=DEV), 0.0, 0.0))
    return cases


def test_fallback_on_the_device_matches_the_cpu():
    for out, ref, rtol, atol in _cases():
        stats = gpu_verify(out, ref, rtol, atol, op=lambda *a: (_ for _ in ()).throw(RuntimeError("refused")),
                           chunk_elems=1 << 15)
        assert stats.path.startswith(verify.FALLBACK)
        _same_as_cpu(stats, out, ref, rtol, atol)


def test_registered_extension_op_matches_the_cpu():
    """The fused kernel (torch.ops.ckgemm.verify_stats) gives the CPU path's verdict and statistics on
    random data in every dtype pair it dispatches and on NaN/Inf/exact-tie inputs."""
    if verify.registered_op() is None:
        pytest.skip("torch.ops.ckgemm.verify_stats is not registered (extension not built)")
    for out, ref, rtol, atol in _cases():
        stats = gpu_verify(out, ref, rtol, atol)
        assert stats.path == verify.FUSED, stats.path
        _same_as_cpu(stats, out, ref, rtol, atol)
    misaligned = torch.randn(4097, device=DEV)  # a view 4 bytes past a 16-byte boundary: scalar path
    stats = gpu_verify(misaligned[1:], misaligned[1:] * (1 + 1e-4), 1e-5, 0.0)
    assert stats.path == verify.FUSED
    _same_as_cpu(stats, misaligned[1:], misaligned[1:] * (1 + 1e-4), 1e-5, 0.0)


def test_events_time_the_kernel_not_the_flush():
    x = torch.randn(1024, device=DEV)
    res = bench(lambda: x.add_(1.0), warmup=3, iters=20, device=DEV, telemetry=False)
    assert res.method == "cuda-events" and res.cold.startswith("flush")
    buffer = torch.empty(device_info.flush_bytes(DEV) // 4, dtype=torch.int32, device=DEV)
    memset = bench(lambda: buffer.zero_(), warmup=2, iters=10, device=DEV, flush=False, telemetry=False)
    assert res.median_ms < 0.2 * memset.median_ms, (str(res), str(memset))


def test_ported_timers_time_kernels_by_name_and_never_the_flush():
    from ckgemm.testing.compat import aiter, deep_gemm
    x = torch.randn(1 << 22, device=DEV)
    assert 0 < deep_gemm.bench_kineto(lambda: torch.sin(x), "sin_kernel", num_tests=5) < 1e-3
    # Two launches per call: per launch (the default) against their sum per call, of the same fn, so that both
    # see the same caches. Against a lone sin's time the ratio is not 2: the pair's two outputs and x (48 MiB)
    # fill about all of an H100's 50 MiB L2, and a pair measured 2.88-3.05x a lone warm sin there
    # (docs/PERF_2026-12-07c.md).
    pair = lambda: (torch.sin(x), torch.sin(x))  # noqa: E731
    per_launch = deep_gemm.bench_kineto(pair, "sin_kernel", num_tests=5, flush_l2=False)
    per_call = deep_gemm.bench_kineto(pair, ("sin_kernel",), num_tests=5, with_multiple_kernels=True,
                                      flush_l2=False, barrier=lambda: None)
    assert 1.6 * per_launch < per_call[0] < 2.5 * per_launch, (per_launch, per_call)  # summed; no sleep kernel
    with pytest.raises(ValueError, match="no kernel name contains 'Memcpy'"):  # the flush's copy is left out
        deep_gemm.bench_kineto(lambda: torch.sin(x), "Memcpy", num_tests=2)
    assert 0 < deep_gemm.bench(lambda: torch.sin(x), num_tests=5) < 1e-3
    out, us = aiter.run_perftest(torch.sin, x, num_iters=5, testGraph=True)  # graph replay on the GPU
    assert torch.equal(out, torch.sin(x)) and 0 < us < 1000


def test_bench_kineto_flush_is_the_profile_event_it_leaves_out():
    # the flush bench_kineto runs before each call, profiled on its own: its event must carry the name the
    # matching leaves out (a renamed copy would otherwise be matched, or counted, as fn's kernel)
    from ckgemm.testing import kineto
    from ckgemm.testing.compat import deep_gemm as dg
    table = kineto.profile_table(lambda: None, 3, gpu=True, before=dg._before_each(True, True, None))
    flush = {name: entry for name, entry in table.items() if name.startswith(dg._FLUSH_EVENT)}
    assert flush and sum(count for _, count in flush.values()) == 3, table
    assert set(table) == set(flush), table  # nothing else ran: the flush is one copy a call


def test_warm_up_runs_for_warmup_ms_of_device_time():
    x = torch.empty(64 << 20, dtype=torch.uint8, device=DEV)
    x.zero_()  # load the kernel before the warm-up times its first calls
    calls = []
    res = bench(lambda: calls.append(x.zero_()), warmup=2, iters=5, device=DEV, flush=False, telemetry=False,
                warmup_ms=20.0)
    # each memset of 64 MiB takes well under 1 ms, so 20 ms of warm-up needs many more than 2 calls
    assert res.warmup > 2 and len(calls) == res.warmup + 5, (res.warmup, len(calls))
    assert res.warmup * res.median_ms >= 0.8 * 20.0, (res.warmup, res.median_ms)  # timed calls: warm pace
    off = bench(lambda: x.zero_(), warmup=2, iters=5, device=DEV, flush=False, telemetry=False, warmup_ms=0)
    assert off.warmup == 2


def test_graph_replay_and_rotation():
    a = torch.randn(512, 512, device=DEV)
    b = torch.randn(512, 512, device=DEV)
    out = torch.empty(512, 512, device=DEV)
    graph = bench(lambda: torch.matmul(a, b, out=out), graph=True, warmup=2, iters=10, device=DEV)
    assert graph.method == "cuda-graph" and graph.min_ms > 0
    torch.testing.assert_close(out, a @ b)
    copies = rotating_copies((a, b), device=DEV, budget_bytes=64 << 20)
    assert len(copies) > 8
    rot = bench(lambda x, y: torch.matmul(x, y), rotate=copies, warmup=2, iters=10, device=DEV)
    assert rot.cold.startswith("rotate") and "flush" not in rot.cold


def test_telemetry_is_read_when_the_tool_exists():
    tool = "nvidia-smi" if torch.version.hip is None else "amd-smi"
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    reading = device_info.read_telemetry(DEV)
    assert reading is not None and reading["source"] == tool and reading["sm_clock_mhz"] > 0
    x = torch.randn(4096, 4096, device=DEV)
    timed = bench(lambda: x @ x, warmup=2, iters=5, device=DEV)
    assert timed.telemetry_before and timed.telemetry_after
    print("telemetry:", timed.telemetry_before, timed.telemetry_after)


def test_measured_ceilings():
    c = measure_ceilings(DEV, size=4096, copy_bytes=1 << 28, iters=5)
    print("measured:", c)
    assert c.hbm_tbs > 0.3 and c.tflops["bf16"] > 20


def test_reference_on_the_gpu_ignores_tf32():
    gen = generator("gpu-ref")
    a = [torch.randn(300, 1024, generator=gen).to(DEV)]
    b = [torch.randn(200, 1024, generator=gen).to(DEV)]
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        (c,) = grouped_gemm_reference(a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    exact = a[0].double() @ b[0].double().t()
    magnitude = a[0].double().abs() @ b[0].double().abs().t()
    assert bool(((c.double() - exact).abs() <= 1024 * 2.0**-24 * magnitude).all()), "TF32 leaked into the reference"


def test_cli_smoke_on_the_gpu(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("ckgemm_op_tests_cli_gpu", ROOT / "op_tests" / "test_grouped_gemm.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    assert cli.main(["--smoke"]) == 0
    text = capsys.readouterr().out
    print(text[-6000:])
    assert "ALL PASSED" in text
