"""Shared pieces of the GPU tests: the device, the native backend that runs here (or a skip), seeded inputs
and the reference check with per-group tolerances (int8 exact)."""
from __future__ import annotations

import os

import pytest
import torch

import ckgemm
from ckgemm.testing import check, grouped_gemm_reference, grouped_gemm_reference_packed
from support import generator, poison, rand_tensor

DEVICE = "cuda"
_status = ckgemm.backend_status(DEVICE) if torch.cuda.is_available() else {}
NATIVE = next((n for n in ("cutlass", "ck") if _status.get(n) == "available"), None)
MARKS = [pytest.mark.gpu]
if torch.cuda.is_available() and NATIVE is None:
    MARKS.append(pytest.mark.skip(reason=f"no native backend can run here: {_status}"))

M_SHAPES = [0, 1, 17, 63, 65, 100]


def _dtypes():
    if not torch.cuda.is_available():
        return [torch.float16]
    return [torch.float16, torch.bfloat16, ckgemm.fp8_dtype_for(DEVICE), torch.int8]


DTYPES = _dtypes()
IDS = [str(d).replace("torch.", "") for d in DTYPES]

# CK-tile's tolerance for fp8 -> fp32 allows errors of max|ref|/16 (it budgets an fp8 compute type), far
# above what a kernel given the reference's exact fp8 inputs makes. A calc_diff bound is the second
# criterion: ~1e-8 is typical for Hopper's fp8 accumulation at these K, a 5% scale error gives 1.3e-3.
FP8_MAX_DIFF = 1e-6


def inputs(shapes, dtype, layout, tag):
    gen = generator(tag)
    a = [rand_tensor((m, k), dtype, gen, DEVICE) for m, n, k in shapes]
    b = [rand_tensor((n, k) if layout == "RC" else (k, n), dtype, gen, DEVICE) for m, n, k in shapes]
    return a, b


def check_list(outs, a, b, layout, dtype, name):
    rule = ckgemm.rule_for(dtype)
    refs = grouped_gemm_reference(a, b, layout=layout)
    if rule.exact:
        check(outs, [r.to(torch.int32) for r in refs], name=name)
    else:
        check(outs, refs, in_dtype=dtype, k=[x.shape[1] for x in a], name=name,
              max_diff=FP8_MAX_DIFF if dtype.itemsize == 1 else None)


def check_packed(out, a, b, sizes, dtype, k, name, layout="RC"):
    """A packed call's output against the reference, group by group (int8 exact)."""
    ref = grouped_gemm_reference_packed(a, b, sizes, layout=layout)
    if ckgemm.rule_for(dtype).exact:
        check(out, ref.to(torch.int32), name=name)
        return
    starts = [sum(sizes[:g]) for g in range(len(sizes))]
    check([out[s:s + m] for s, m in zip(starts, sizes)], [ref[s:s + m] for s, m in zip(starts, sizes)],
          in_dtype=dtype, k=k, name=name, max_diff=FP8_MAX_DIFF if dtype.itemsize == 1 else None)


def replay_with_new_sizes(call, gs, out, judge, path):
    """Capture ``call`` (after a warm-up on the capture stream) and check that it ran ``path``; then replay it with
    new device sizes in ``gs``, each result judged (``judge(new_sizes)``) from a freshly poisoned ``out``."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            call()
    assert set(ckgemm.last_dispatch().paths) - {"skip:empty"} == {path}, ckgemm.last_dispatch()
    for new in ([0, 1024, 0, 0], [1, 1, 1, 1021], [256, 256, 256, 256]):
        gs.copy_(torch.tensor(new, dtype=gs.dtype))
        out.copy_(poison(out.shape, out.dtype, out.device))
        graph.replay()
        torch.cuda.synchronize()
        judge(new)


def assert_only_view_written(buf, index):
    """``buf``, poisoned before the call wrote into ``buf[index]``, still holds its poison bit for bit everywhere
    else: no store landed outside the output view."""
    guard = buf.clone()
    guard[index] = poison((), buf.dtype, buf.device)
    want = poison(buf.shape, buf.dtype, buf.device)
    assert torch.equal(guard.view(torch.uint8), want.view(torch.uint8)), "a store outside the output"


def instance_of(path: str) -> dict:
    """The instance (ckgemm._C.instances()) a dispatch path names."""
    name = path.split(":", 1)[1].split("+")[0]
    return next(i for i in ckgemm.backends.native._C.instances() if i["name"] == name)


def packed_call(sizes, n, k, dtype, out_dtype, tag, size_dtype=torch.int32, config=None):
    """One packed RC call on seeded operands (A [rows, k], B [groups, n, k]) into a NaN-poisoned output, with
    CKGEMM_CONFIG=config while it runs when given (the caller's own setting kept otherwise): (a, b, device sizes,
    out)."""
    gen = generator(tag)
    a = rand_tensor((sum(sizes), k), dtype, gen, DEVICE)
    b = rand_tensor((len(sizes), n, k), dtype, gen, DEVICE)
    gs = torch.tensor(sizes, dtype=size_dtype, device=DEVICE)
    out = poison((sum(sizes), n), out_dtype, DEVICE)
    before = os.environ.get("CKGEMM_CONFIG")
    if config:
        os.environ["CKGEMM_CONFIG"] = config
    try:
        ckgemm.grouped_gemm_packed(a, b, gs, out=out)
    finally:  # the caller's setting back, if it had one
        if before is None:
            os.environ.pop("CKGEMM_CONFIG", None)
        else:
            os.environ["CKGEMM_CONFIG"] = before
    return a, b, gs, out


def ran_paths() -> set[str]:
    """The last call's paths, without the empty groups' skips."""
    return set(ckgemm.last_dispatch().paths) - {"skip:empty"}
