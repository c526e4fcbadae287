"""Public API: validate, choose a backend, run, and record what ran.

Data flows one way: API -> validate -> choose backend -> backend -> outputs. A packed call that was
validated and planned before with the same metadata goes straight to the launch (``_plan_cache``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from . import _compile, _plan_cache, backends, validate


@dataclass(frozen=True)
class Dispatch:
    """What the last call ran: the op, the backend, and the path each group took."""

    op: str
    backend: str
    layout: str
    dtype: str
    paths: tuple[str, ...]

    def __str__(self) -> str:
        counts: dict[str, int] = {}
        for p in self.paths:
            counts[p] = counts.get(p, 0) + 1
        summary = ", ".join(f"{p} x{c}" for p, c in counts.items())
        return f"{self.op}[{self.backend}, {self.dtype}, {self.layout}]: {summary}"


_LAST = threading.local()


def last_dispatch() -> Dispatch | None:
    """The dispatch record of the last ckgemm call on this thread (None before the first).

    For the packed form with group sizes on a GPU (not read back), the per-group paths name the kernel
    path for every group, empty ones included: which groups were empty is known only on the device."""
    return getattr(_LAST, "dispatch", None)


def _record(op, module, problem, paths) -> None:
    _LAST.dispatch = Dispatch(op, module.NAME, problem.layout, problem.rule.name, tuple(paths))


def grouped_gemm(a_list, b_list, *, layout: str = "RC", backend: str | None = None) -> list[torch.Tensor]:
    """C[i] = A[i] @ op(B[i]) for each group; allocates and returns the outputs.

    ``layout="RC"``: b[i] stored [N, K] (C = A @ B^T). ``layout="RR"``: b[i] stored [K, N].
    """
    problem = validate.validate_list("grouped_gemm", a_list, b_list, layout)
    module = backends.select(backend, problem.device)
    c_list = [torch.empty((m, n), dtype=problem.rule.output, device=problem.device) for m, n, _ in problem.shapes]
    _record("grouped_gemm", module, problem, module.run_list(problem, a_list, b_list, c_list))
    return c_list


def grouped_gemm_out(a_list, b_list, c_list, *, layout: str = "RC", backend: str | None = None) -> list[torch.Tensor]:
    """Like ``grouped_gemm`` but writes into caller-allocated outputs and returns them.

    c[i] must be [M_i, N_i] with the output dtype, on the inputs' device, innermost stride 1; its
    leading stride may exceed N_i (a view of a larger buffer). Only the [M_i, N_i] view is written.
    """
    op = "grouped_gemm_out"
    problem = validate.validate_list(op, a_list, b_list, layout)
    validate.validate_outputs(op, problem, c_list, a_list, b_list)
    module = backends.select(backend, problem.device)
    _record(op, module, problem, module.run_list(problem, a_list, b_list, c_list))
    return list(c_list)


def grouped_gemm_packed(a, b, group_sizes, *, layout: str = "RC", out: torch.Tensor | None = None,
                        backend: str | None = None, check_sizes: bool | None = None) -> torch.Tensor:
    """MoE form: ``a`` is [sum(M_i), K]; ``b`` is [G, N, K] (RC) or [G, K, N] (RR); ``group_sizes`` an
    int32/int64 tensor [G] of rows per group, in order. Returns ``out`` [sum(M_i), N].

    Group sizes on the CPU are checked on the host. Sizes on a GPU are not read back unless
    ``check_sizes=True`` (one host sync): the native backends check them on the device instead
    (a bad size stops the argument-building kernel with a message, never a silent wrong answer), so the call stays
    free of host syncs and can be captured in a CUDA/HIP graph.
    """
    if torch.compiler.is_compiling():  # one opaque node for Dynamo; the eager path runs inside it
        if out is None:
            return _compile.packed_op(a, b, group_sizes, layout, backend, check_sizes)
        _compile.packed_out_op(a, b, group_sizes, out, layout, backend, check_sizes)
        return out
    op = "grouped_gemm_packed"
    key = _plan_cache.key(a, b, group_sizes, layout, out, backend, check_sizes)
    known = _plan_cache.lookup(key)
    if known is not None:  # this exact call validated and planned before: launch it
        out = _plan_cache.replay(known, a, b, group_sizes, out)
        _LAST.dispatch = known.dispatch
        return out
    problem = validate.validate_packed(op, a, b, group_sizes, layout, out, check_sizes)
    module = backends.select(backend, problem.device)
    if out is None:
        out = torch.empty((problem.rows, problem.n), dtype=problem.rule.output, device=problem.device)
    direct: list = []
    _record(op, module, problem, module.run_packed(problem, a, b, group_sizes, out, direct))
    _plan_cache.store(key, direct, problem, _LAST.dispatch)
    return out


# aiter-style names kept for existing users.
ck_grouped_gemm = grouped_gemm
ck_grouped_gemm_out = grouped_gemm_out


def available_backends(device: torch.device | str | None = None) -> list[str]:
    """Backends that can run here (on ``device`` if given), best first; ``torch`` is always last."""
    return backends.available_backends(device)


def backend_status(device: torch.device | str | None = None) -> dict[str, str]:
    """Each backend and either 'available' or why it is not."""
    dev = torch.device(device) if device is not None else None
    return {n: backends.unavailable_reason(n, dev) or "available" for n in backends.BACKEND_NAMES}
