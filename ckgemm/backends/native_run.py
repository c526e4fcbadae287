"""Turns validated calls into launches of the native extension (`torch.ops.ckgemm.*`).

The C++ side skips empty groups, zero-fills K=0 groups and refuses anything its kernels cannot take;
this module repacks such groups first (see plan.py) and picks the kernel config, so a call never
fails for alignment and never returns a wrong answer.
"""
from __future__ import annotations

import torch

from ..errors import InvalidArgumentError
from . import native, plan

_FAKES_REGISTERED = False


def _register_fakes() -> None:
    """Fake (meta) kernels for the C++ ops, for torch.compile and torch.library.opcheck."""
    global _FAKES_REGISTERED
    if _FAKES_REGISTERED:
        return
    from ..dtypes import rule_for

    @torch.library.register_fake("ckgemm::run_packed")
    def _run_packed_fake(a, b, group_sizes, layout, config):
        n = b.shape[1] if layout == 0 else b.shape[2]
        return a.new_empty((a.shape[0], n), dtype=rule_for(a.dtype).output)

    @torch.library.register_fake("ckgemm::run_packed_out")
    def _run_packed_out_fake(a, b, group_sizes, out, layout, config):
        return None

    @torch.library.register_fake("ckgemm::run_list")
    def _run_list_fake(a, b, c, layout, config):
        return None

    @torch.library.register_fake("ckgemm::verify_stats")
    def _verify_stats_fake(out, ref, rtol, atol):
        from ..testing.verify import STATS_SIZE

        return out.new_empty((STATS_SIZE,), dtype=torch.float64)

    _FAKES_REGISTERED = True


if native._C is not None:
    _register_fakes()


def device_reason(name: str, device: torch.device) -> str | None:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if name == "cutlass":
        major, minor = torch.cuda.get_device_capability(index)
        if (major, minor) != (9, 0):
            return f"it is built for sm_90a (Hopper); {torch.cuda.get_device_name(index)} is sm_{major}{minor}"
        return None
    arch = torch.cuda.get_device_properties(index).gcnArchName
    built = native._C.built_archs()
    if arch.split(":")[0] not in built:
        return f"this build targets {built}; the device is {arch} (rebuild with GPU_ARCHS={arch.split(':')[0]})"
    return None


def _paths(backend: str, config: int, shapes, notes) -> tuple[str, ...]:
    out = []
    for (m, n, k), note in zip(shapes, notes):
        if m == 0 or n == 0:
            out.append("skip:empty")
        elif k == 0:
            out.append("zero-k")
        else:
            out.append(f"{backend}:{plan.CONFIG_NAME[config]}" + note)
    return tuple(out)


def _prepare(rules, layout, a, b, c, compute: bool, b_group_stride: int | None = None):
    """(a, b, c, layout, note) the kernel takes for one group (or one packed call): repacked inputs
    when they are misaligned, and an aligned temporary output when the backend cannot write ``c``."""
    reason = plan.repack_reason(rules, layout, a, b, b_group_stride) if compute else None
    n_stage = plan.staged_output_columns(rules, c) if compute else 0
    if reason is None and not n_stage:
        return a, b, c, layout, ""
    a, b = plan.repack(a, b, layout, n_multiple=max(1, rules.output_align_bytes // c.element_size()) if n_stage else 1)
    if n_stage:
        return a, b, c.new_empty((c.shape[0], b.shape[-2])), "RC", "+staged"
    return a, b, c, "RC", "+repack"


def _check_not_capturing(op: str) -> None:
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise InvalidArgumentError(f"{op}: the list forms stage per-group arguments from host memory and cannot be "
                                   "captured in a CUDA/HIP graph; use grouped_gemm_packed, which builds them on the "
                                   "device")


def run_list(problem, a_list, b_list, c_list) -> tuple[str, ...]:
    _check_not_capturing("grouped_gemm")
    backend = native.built_kind()
    rules = plan.RULES[backend]
    home = plan.native_layout(rules, problem.layout, problem.rule.input.itemsize)
    launches = {home: ([], [], [])}
    notes, staged, compute_outputs = [], [], []
    for a, b, c, (m, n, k) in zip(a_list, b_list, c_list, problem.shapes):
        if m == 0 or n == 0:
            notes.append("")
            continue  # nothing to compute or write: the group never reaches the runner
        too_large = plan.too_large(m, n, k)
        if too_large is not None:
            raise InvalidArgumentError(f"grouped_gemm: group {len(notes)}: {too_large}")
        a, b, run_c, layout, note = _prepare(rules, problem.layout, a, b, c, k > 0)
        if run_c is not c:
            staged.append((c, run_c))
        if not note and layout != home:  # K = 0 and no kernel for this layout: hand over as RC
            b, layout = b.new_empty((n, 0)), home  # the runner zero-fills C
        if k:
            compute_outputs.append(run_c)
        notes.append(note)
        group = launches.setdefault(layout, ([], [], []))
        group[0].append(a)
        group[1].append(b)
        group[2].append(run_c)
    outputs_ok = all(plan.output_takes_large(rules, c) for c in compute_outputs)
    config = plan.choose_config([m for m, _, _ in problem.shapes], outputs_ok)
    for layout, (a_sub, b_sub, c_sub) in launches.items():
        if a_sub:
            torch.ops.ckgemm.run_list(a_sub, b_sub, c_sub, plan.LAYOUT_CODE[layout], config)
    for c, run_c in staged:
        c.copy_(run_c[:, :c.shape[1]])
    return _paths(backend, config, problem.shapes, notes)


def run_packed(problem, a, b, group_sizes, out, direct: list | None = None) -> tuple[str, ...]:
    """Launch one packed call. When the kernel ran on the caller's own tensors (nothing repacked or
    staged) and ``direct`` is a list, (layout code, config) is appended to it (see ckgemm._plan_cache)."""
    backend = native.built_kind()
    rules = plan.RULES[backend]
    compute = bool(problem.k and problem.n and problem.rows)
    too_large = plan.too_large(0, problem.n, problem.k)  # per-group M is checked on the device
    if too_large is not None:
        raise InvalidArgumentError(f"grouped_gemm_packed: {too_large}")
    a, b, run_out, layout, note = _prepare(rules, problem.layout, a, b, out, compute,
                                           b.stride(0) if b.shape[0] > 1 else None)
    if not note and layout != plan.native_layout(rules, layout, a.element_size()):
        # Nothing to multiply (K, N or every size is 0) and no kernel for this layout: any B of the
        # right RC shape will do, as the runner only zero-fills or validates the sizes.
        b = b.new_empty((1, 1, max(problem.k, 1)))[..., :problem.k].expand(problem.groups, problem.n, problem.k)
        layout = "RC"
    mean_m = [problem.rows / problem.groups] if problem.sizes is None else list(problem.sizes)
    config = plan.choose_config(mean_m, plan.output_takes_large(rules, run_out))
    torch.ops.ckgemm.run_packed_out(a, b, group_sizes, run_out, plan.LAYOUT_CODE[layout], config)
    if direct is not None and compute and not note:
        direct.append((plan.LAYOUT_CODE[layout], config))
    if run_out is not out:
        out.copy_(run_out[:, :problem.n])
    sizes = problem.sizes if problem.sizes is not None else [1] * problem.groups
    return _paths(backend, config, [(m, problem.n, problem.k) for m in sizes], [note] * problem.groups)
