"""How the native backend enters its ops (CPU, with a stand-in extension): eager calls go through
_C.eager_*, which decline anything but plain tensors (None/False); a declined call takes torch.ops.ckgemm.*
with the same arguments (calls Dynamo traces never get here: ckgemm.ops hands every form to its custom
ops, tests/test_compile.py). The GPU side is tests/test_gpu_paths.py."""
from __future__ import annotations

import torch

from ckgemm.backends import native


class _FakeExtension:
    """_C's eager entries: each records its arguments and returns its result, or what it returns when it
    declines the call (None for the allocating forms, False for the in-place ones)."""

    RESULTS = {"eager_gemm_list": (["eager out"], None), "eager_gemm_list_out": (True, False),
               "eager_gemm_packed": ("eager packed", None), "eager_gemm_packed_out": (True, False)}

    def __init__(self, handled: bool):
        self.handled, self.calls = handled, []

    def __getattr__(self, name):
        if name not in self.RESULTS:
            raise AttributeError(name)
        taken, declined = self.RESULTS[name]

        def call(*args):
            self.calls.append((name, args))
            return taken if self.handled else declined
        return call


def _backend(monkeypatch, handled: bool):
    fake = _FakeExtension(handled)
    monkeypatch.setattr(native, "_C", fake)
    backend = native.NativeBackend("cutlass")
    ops_calls = []
    backend._ops = tuple((lambda *args, i=i: ops_calls.append((i, args)) or f"op {i}") for i in range(4))
    return backend, fake.calls, ops_calls


def _call_all(backend):
    a, b, c = [torch.zeros(2, 4)], [torch.zeros(3, 4)], [torch.zeros(2, 3)]
    sizes = torch.tensor([2])
    return [backend.grouped_gemm(a, b, None, None, "RR", None),
            backend.grouped_gemm_out(a, b, c, [torch.ones(2)], None, None, torch.float32),
            backend.grouped_gemm_packed(a[0], b[0][None], sizes, None, None, None, None),
            backend.grouped_gemm_packed_out(a[0], b[0][None], sizes, c[0], None, None, "RC", None)]


def test_a_handled_eager_call_never_reaches_torch_ops(monkeypatch):
    backend, eager, ops = _backend(monkeypatch, handled=True)
    results = _call_all(backend)
    assert results == [["eager out"], None, "eager packed", None]
    assert [name for name, _ in eager] == ["eager_gemm_list", "eager_gemm_list_out", "eager_gemm_packed",
                                           "eager_gemm_packed_out"]
    assert ops == []
    # the op's own argument encoding: scale lists with their "given" mask, layout codes
    assert eager[0][1][2:] == ((), (), 0, 1, None)
    assert eager[1][1][3][0].shape == (2,) and eager[1][1][5:] == (1, 0, torch.float32)


def test_a_declined_call_takes_torch_ops_with_the_same_arguments(monkeypatch):
    backend, eager, ops = _backend(monkeypatch, handled=False)
    results = _call_all(backend)
    assert results == ["op 0", None, "op 2", None]
    assert [i for i, _ in ops] == [0, 1, 2, 3]
    assert [name for name, _ in eager] == ["eager_gemm_list", "eager_gemm_list_out", "eager_gemm_packed",
                                           "eager_gemm_packed_out"]
    for (_, eager_args), (_, op_args) in zip(eager, ops):
        assert eager_args == op_args
