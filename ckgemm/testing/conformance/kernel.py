"""The op under test: loading it from ``--op`` and calling it by the suite's conventions.

Calling conventions (positional arguments; ``b`` is stored per ``--layout``: RC ``[N, K]``, RR ``[K, N]``):

    list form     fn(a_list, b_list)                         -> list of outputs [M_i, N_i]
    packed form   fn(a, b, group_sizes)                      -> out [sum M_i, N]
                  a [sum M_i, K]; b [G, N, K] (RC) or [G, K, N] (RR); group_sizes int32 [G] on the device
    with scales   fn(a_list, b_list, scale_a_list, scale_b_list) / fn(a, b, group_sizes, scale_a, scale_b)

Optional keywords, passed only when the function's signature names them: ``layout`` ("RC"/"RR"),
``out`` (NaN-poisoned outputs inside guard bands, which the function must fill and may return) and
``out_dtype`` (with scales: the output dtype the suite expects). Optional attributes a function (an adapter)
may carry: ``conformance_form`` ("list" or "packed", so ``--form`` can be left out),
``conformance_host_sizes`` (True: it reads group sizes on the host, so CUDA-graph replay with new sizes
cannot apply) and ``conformance_prepare`` (a function taking the same arguments that returns a
zero-argument callable running only the underlying kernel, timed by ``--perf`` as kernel-only time).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from pathlib import Path

import torch

FORMS = ("list", "packed")
LAYOUTS = ("RC", "RR")
OPTIONAL_KEYWORDS = ("layout", "out", "out_dtype")
# An exception whose text carries one of these is a crash of the device, not a refusal of the input.
FATAL_MARKERS = ("CUDA error", "HIP error", "hipError", "illegal memory access", "device-side assert",
                 "misaligned address", "unspecified launch failure", "an illegal instruction")


class OpSpecError(ValueError):
    """``--op`` does not name a callable; the message says which part is wrong."""


def _builtin_adapters() -> dict:
    from .adapters import BUILTIN  # the adapters module imports nothing heavy at import time
    return BUILTIN


def _import_module(spec: str, module: str):
    path = Path(module)
    if module.endswith(".py"):
        if not path.is_file():
            raise OpSpecError(f"--op {spec!r}: no file {module!r}")
        loader_spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(mod)
        except Exception as exc:  # noqa: BLE001 - any failure of the user's file is reported as such
            raise OpSpecError(f"--op {spec!r}: loading {module!r} failed: {type(exc).__name__}: {exc}") from exc
        return mod
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - ImportError, or whatever the module raises while importing
        raise OpSpecError(f"--op {spec!r}: cannot import module {module!r}: {type(exc).__name__}: {exc}") from exc


def load_op(spec: str) -> list:
    """The function(s) ``spec`` names: ``pkg.module:function`` (a dotted attribute path after the colon is
    allowed), ``path/to/file.py:function``, or a built-in adapter name (which may give one function per form)."""
    spec = (spec or "").strip()
    builtin = _builtin_adapters()
    if not spec:
        raise OpSpecError(f"--op is empty: give pkg.module:function or a built-in adapter ({', '.join(builtin)})")
    if ":" not in spec:
        if spec in builtin:
            return list(builtin[spec])
        raise OpSpecError(f"--op {spec!r}: expected pkg.module:function (module and function joined by a colon) "
                          f"or a built-in adapter: {', '.join(builtin)}")
    module, _, attr = spec.rpartition(":")
    if not module or not attr:
        raise OpSpecError(f"--op {spec!r}: both the module (before ':') and the function (after ':') are needed")
    obj = _import_module(spec, module)
    path = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            owner = f"module {module!r}" if i == 0 else repr(path)
            raise OpSpecError(f"--op {spec!r}: {owner} has no attribute {part!r}")
        obj = getattr(obj, part)
        path = f"{module}:{part}" if i == 0 else f"{path}.{part}"
    if not callable(obj):
        raise OpSpecError(f"--op {spec!r}: {attr!r} is a {type(obj).__name__}, not a callable")
    return [obj]


def accepted_keywords(fn) -> frozenset:
    """Which of ``OPTIONAL_KEYWORDS`` the function's signature names (none if it has no signature)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return frozenset()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(n for n, p in params.items() if n in OPTIONAL_KEYWORDS and p.kind in kinds)


def declared_form(fn) -> str | None:
    form = getattr(fn, "conformance_form", None)
    if form is not None and form not in FORMS:
        raise OpSpecError(f"{fn!r} declares conformance_form={form!r}; expected one of {FORMS}")
    return form


@dataclass
class Kernel:
    """One function under test, in one form and layout, with what its signature accepts."""

    fn: object
    name: str
    form: str
    layout: str
    keywords: frozenset
    host_sizes: bool = False

    @classmethod
    def wrap(cls, fn, name: str, form: str, layout: str) -> "Kernel":
        if form not in FORMS:
            raise OpSpecError(f"unknown form {form!r}; expected one of {FORMS}")
        if layout not in LAYOUTS:
            raise OpSpecError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")
        return cls(fn, name, form, layout, accepted_keywords(fn), bool(getattr(fn, "conformance_host_sizes", False)))

    @property
    def takes_out(self) -> bool:
        return "out" in self.keywords

    @property
    def prepare(self):
        return getattr(self.fn, "conformance_prepare", None)

    def keyword_args(self, out=None, out_dtype=None) -> dict:
        kwargs = {}
        if "layout" in self.keywords:
            kwargs["layout"] = self.layout
        if out is not None and self.takes_out:
            kwargs["out"] = out
        if out_dtype is not None and "out_dtype" in self.keywords:
            kwargs["out_dtype"] = out_dtype
        return kwargs

    def __call__(self, args: tuple, out=None, out_dtype=None):
        """Call with the convention's positional ``args``; on a GPU, wait for it so that an asynchronous
        error surfaces here, inside the caller's try."""
        result = self.fn(*args, **self.keyword_args(out, out_dtype))
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        return result


def is_fatal(exc: BaseException) -> bool:
    """A device fault (the kernel crashed), as opposed to a refusal of the input."""
    text = f"{type(exc).__name__}: {exc}"
    return any(marker in text for marker in FATAL_MARKERS)


def describe(exc: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message``, shortened."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"
    return text if len(text) <= limit else text[:limit - 3] + "..."
