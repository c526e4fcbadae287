"""Public API: pick the backend, run the call, record what ran.

Native backends: each form is one native op that validates, routes and launches in C++; a call it
rejects is re-validated here by ``validate.py``, which raises the message (so both paths raise the same
exception and text, and nothing is written). The torch reference: validate, then compute.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from . import _compile, backends, prepack, validate
from ._overlap import is_fake_tensor
from .backends.routes import REJECTED_MARK, UNSUPPORTED_MARK
from .errors import BackendUnavailableError, InternalError


@dataclass(frozen=True)
class Dispatch:
    """What the last call ran: the op, the backend, the path each group took, the scale recipe and the
    output dtype."""

    op: str
    backend: str
    layout: str
    dtype: str
    paths: tuple[str, ...]
    recipe: str = "none"
    out_dtype: str = ""
    stages: tuple[int, ...] = ()  # per group, the kernel's mainloop stages (0: no kernel, or not reported)

    @property
    def summary(self) -> str:
        """The distinct paths with their group counts, e.g. 'cutlass:coop_128x256x64_c1x2 x3, skip:empty x1'."""
        return self._counted(self.paths)

    @property
    def config_summary(self) -> str:
        """``summary`` with each native kernel's mainloop stages, e.g. 'cutlass:coop_128x256x64_c1x2 (4 stages)
        x3, skip:empty x1': the config op_tests and the benchmarks log (schedule, tile, cluster, stages)."""
        stages = self.stages or (0,) * len(self.paths)
        return self._counted([f"{p} ({s} stages)" if s else p for p, s in zip(self.paths, stages)])

    @staticmethod
    def _counted(labels) -> str:
        counts: dict[str, int] = {}
        for p in labels:
            counts[p] = counts.get(p, 0) + 1
        return ", ".join(f"{p} x{c}" for p, c in counts.items())

    def __str__(self) -> str:
        scaled = f", {self.recipe} scales -> {self.out_dtype}" if self.recipe != "none" else ""
        return f"{self.op}[{self.backend}, {self.dtype}, {self.layout}{scaled}]: {self.summary}"


_LAST = threading.local()


def last_dispatch() -> Dispatch | None:
    """The dispatch record of the last ckgemm call on this thread (None before the first).

    Native calls record route codes in C++ (decoded here, on demand). For the packed form with group
    sizes on a GPU (not read back), every group shows the kernel path, empty ones included: which
    groups were empty is known only on the device."""
    native = getattr(_LAST, "native", None)
    if native is not None:
        op, dtype, layout, recipe, out, paths, stages = native.last_dispatch_fields()
        _LAST.dispatch, _LAST.native = Dispatch(op, native.NAME, layout, dtype, paths, recipe, out, stages), None
    return getattr(_LAST, "dispatch", None)


def _record(op, module, problem, paths) -> None:
    _LAST.native = None
    paths = tuple(paths)
    _LAST.dispatch = Dispatch(op, module.NAME, problem.layout, problem.rule.name, paths, problem.recipe,
                              str(problem.output).replace("torch.", ""), (0,) * len(paths))


def _explain(op: str, exc: Exception, validator) -> None:
    """A native call raised: re-run the Python validator, which raises the user-facing error when the
    call is invalid (plus the native kernels' 32-bit size limit). If it accepts a call the native
    validator rejected, that is ckgemm's own bug."""
    validate.check_native_limits(op, validator())
    text = str(exc)
    if UNSUPPORTED_MARK in text:
        detail = text[text.index(UNSUPPORTED_MARK) + len(UNSUPPORTED_MARK):].strip().splitlines()[0]
        raise BackendUnavailableError(f"{op}: the native backend cannot compute this call: {detail}") from None
    if REJECTED_MARK in text:
        raise InternalError(f"ckgemm's native validator rejected a call that ckgemm/validate.py accepts; please "
                            f"report this: {str(exc).splitlines()[0]}") from exc
    raise exc


def grouped_gemm(a_list, b_list, *, layout: str | None = None, backend: str | None = None, scale_a=None,
                 scale_b=None, out_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """C[i] = A[i] @ op(B[i]) for each group; allocates and returns the outputs.

    ``layout="RC"`` (default): b[i] stored [N, K] (C = A @ B^T). ``layout="RR"``: b[i] stored [K, N].
    ``scale_a``/``scale_b`` (fp8, int8): lists of per-group float32 scales of one recipe (README); the
    output is then ``out_dtype`` (default bfloat16). ``b_list`` may be a ``ckgemm.prepack`` result.
    """
    op = "grouped_gemm"
    compiling = torch.compiler.is_compiling()
    if not compiling:  # (a compiled call records inside its op)
        _forget()
    b_list, layout, scale_b = prepack.unwrap(op, b_list, layout, scale_a, scale_b)
    if compiling and _first_ok(a_list):  # one opaque node; the eager path runs inside it
        return _compile.listed(a_list, b_list, None, layout, backend, scale_a, scale_b, out_dtype)
    native = backends.native_for(backend, a_list[0]) if _first_ok(a_list) else None
    if native is not None:
        try:
            outs = native.grouped_gemm(a_list, b_list, scale_a, scale_b, layout, out_dtype)
        except (RuntimeError, TypeError, ValueError) as exc:
            _explain(op, exc, lambda: validate.validate_list(op, a_list, b_list, layout, scale_a, scale_b,
                                                             out_dtype))
        _LAST.native = native
        return outs
    problem = validate.validate_list(op, a_list, b_list, layout, scale_a, scale_b, out_dtype)
    module = backends.select(backend, problem.device, op)
    c_list = [torch.empty((m, n), dtype=problem.output, device=problem.device) for m, n, _ in problem.shapes]
    _record(op, module, problem, module.run_list(problem, a_list, b_list, c_list, scale_a, scale_b))
    return c_list


def grouped_gemm_out(a_list, b_list, c_list, *, layout: str | None = None, backend: str | None = None,
                     scale_a=None, scale_b=None, out_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """Like ``grouped_gemm`` but writes into caller-allocated outputs and returns them.

    c[i] must be [M_i, N_i] with the output dtype (scaled calls: ``out_dtype`` if given, else the
    outputs' own bfloat16/float16/float32), on the inputs' device, innermost stride 1; its leading
    stride may exceed N_i (a view of a larger buffer). Only the [M_i, N_i] view is written.
    """
    op = "grouped_gemm_out"
    compiling = torch.compiler.is_compiling()
    if not compiling:
        _forget()
    b_list, layout, scale_b = prepack.unwrap(op, b_list, layout, scale_a, scale_b)
    if compiling and _first_ok(a_list) and isinstance(c_list, (list, tuple)):
        return _compile.listed(a_list, b_list, c_list, layout, backend, scale_a, scale_b, out_dtype)

    def check():
        return validate.validate_list_call(op, a_list, b_list, c_list, layout, scale_a, scale_b, out_dtype, True)

    native = backends.native_for(backend, a_list[0]) if _first_ok(a_list) else None
    if native is not None:
        try:
            native.grouped_gemm_out(a_list, b_list, c_list, scale_a, scale_b, layout, out_dtype)
        except (RuntimeError, TypeError, ValueError) as exc:
            _explain(op, exc, check)
        _LAST.native = native
        return list(c_list)
    problem = check()
    module = backends.select(backend, problem.device, op)
    _record(op, module, problem, module.run_list(problem, a_list, b_list, c_list, scale_a, scale_b))
    return list(c_list)


def grouped_gemm_packed(a, b, group_sizes, *, layout: str | None = None, out: torch.Tensor | None = None,
                        backend: str | None = None, check_sizes: bool | None = None, scale_a=None, scale_b=None,
                        out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """MoE form: ``a`` is [sum(M_i), K]; ``b`` is [G, N, K] (RC) or [G, K, N] (RR) or a ``prepack``
    result; ``group_sizes`` an int32/int64 tensor [G] of rows per group, in order. Returns ``out``
    [sum(M_i), N]. Scales (fp8, int8) per the README's recipes; output ``out_dtype`` (default bfloat16).

    Group sizes on the CPU are checked on the host. Sizes on a GPU are not read back unless
    ``check_sizes=True`` (one host sync): the native backends check them on the device instead
    (a bad size stops the argument-building kernel with a message, never a silent wrong answer), so the call stays
    free of host syncs and can be captured in a CUDA/HIP graph.
    """
    op = "grouped_gemm_packed"
    compiling = torch.compiler.is_compiling()
    if not compiling:
        _forget()
    validate.check_sizes_flag(op, check_sizes)
    b, layout, scale_b = prepack.unwrap(op, b, layout, scale_a, scale_b)
    if compiling:  # one opaque node for Dynamo; the eager path runs inside it
        return _compile.packed(a, b, group_sizes, layout, out, backend, check_sizes, scale_a, scale_b, out_dtype)

    def check():
        return validate.validate_packed(op, a, b, group_sizes, layout, out, check_sizes, scale_a, scale_b, out_dtype)

    native = backends.native_for(backend, a) if isinstance(a, torch.Tensor) and not check_sizes else None
    if native is not None:
        return _native_packed(native, op, a, b, group_sizes, out, scale_a, scale_b, layout, out_dtype, check)
    if _sizes_unreadable(group_sizes):  # validated as eagerly, but without reading the sizes, then one op node
        problem = validate.validate_packed(op, a, b, group_sizes, layout, out, check_sizes, scale_a, scale_b,
                                           out_dtype, read_sizes=False)
        backends.select(backend, problem.device, op)
        return _compile.packed(a, b, group_sizes, layout, out, backend, check_sizes, scale_a, scale_b, out_dtype)
    problem = check()
    module = backends.select(backend, problem.device, op)
    if getattr(module, "native", False):  # check_sizes=True: the sizes were read and checked on the host
        return _native_packed(module, op, a, b, group_sizes, out, scale_a, scale_b, layout, out_dtype, check)
    if out is None:
        out = torch.empty((problem.rows, problem.n), dtype=problem.output, device=problem.device)
    _record(op, module, problem, module.run_packed(problem, a, b, group_sizes, out, scale_a, scale_b))
    return out


def _native_packed(native, op, a, b, group_sizes, out, scale_a, scale_b, layout, out_dtype, check):
    try:
        if out is None:
            out = native.grouped_gemm_packed(a, b, group_sizes, scale_a, scale_b, layout, out_dtype)
        else:
            native.grouped_gemm_packed_out(a, b, group_sizes, out, scale_a, scale_b, layout, out_dtype)
    except (RuntimeError, TypeError, ValueError) as exc:
        _explain(op, exc, check)
    _LAST.native = native
    return out


def _first_ok(seq) -> bool:
    return isinstance(seq, (list, tuple)) and len(seq) > 0 and isinstance(seq[0], torch.Tensor)


def _sizes_unreadable(sizes) -> bool:
    """The packed form's group sizes must not be read on the host: under make_fx (pre-dispatch too) a read
    would bake them into the graph as constants; meta and fake sizes hold no values. The registered op with
    its fake kernel is what these need, as under torch.compile (checked off the native hot path). A real CPU
    sizes tensor under a plain FakeTensorMode is read, as before."""
    if not isinstance(sizes, torch.Tensor):
        return False
    if sizes.is_meta or type(sizes) is not torch.Tensor and is_fake_tensor(sizes):
        return True
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    return get_proxy_mode() is not None


def _forget() -> None:
    """A call starts: the record of the previous one goes (a call that raises leaves none)."""
    _LAST.native = _LAST.dispatch = None


# aiter-style names kept for existing users.
ck_grouped_gemm = grouped_gemm
ck_grouped_gemm_out = grouped_gemm_out


def available_backends(device: torch.device | str | None = None) -> list[str]:
    """Backends that can run here (on ``device`` if given), best first; ``torch`` last, on every device that
    exists (none for an absent one, e.g. ``"cuda"`` on a machine without a GPU)."""
    return backends.available_backends(device)


def backend_status(device: torch.device | str | None = None) -> dict[str, str]:
    """Each backend and either 'available' or why it is not."""
    dev = torch.device(device) if device is not None else None
    return {n: backends.unavailable_reason(n, dev) or "available" for n in backends.BACKEND_NAMES}
