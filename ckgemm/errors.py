"""Exception types, and the ids of the rules a call can break.

Every input error is a ValueError (wrong types and dtypes are a TypeError as well), so callers that catch the
built-in types keep working, and every one is a CkgemmError, so callers can catch ours alone. Each carries ``rule`` (a
``Rule``) and ``group`` (the offending group, or None): the native validator (csrc/common/validate.h)
reports the same pair, and csrc/common/rules.inc lists the same ids (tests/test_native_rules.py keeps the two
in sync).
"""
from __future__ import annotations

import enum

import torch


class Rule(enum.IntEnum):
    """What a rejected call broke. Values are shared with csrc/common/rules.inc."""

    NONE = 0
    LAYOUT = 1  # unknown layout string
    NOT_A_LIST = 2  # a_list / b_list / c_list is not a list or tuple
    LIST_EMPTY = 3
    LIST_LENGTH = 4  # a_list and b_list (or c_list, or a scale list) lengths differ
    NOT_A_TENSOR = 5
    NDIM = 6
    INNER_STRIDE = 7
    REQUIRES_GRAD = 8
    DTYPE_UNSUPPORTED = 9
    FP8_FLAVOUR = 10  # the e4m3 flavour this device does not use
    DEVICE = 11  # a tensor is on another device than the call's
    DTYPE_MISMATCH = 12  # b vs a, or a group vs group 0
    K_MISMATCH = 13
    OUT_SHAPE = 14
    OUT_DTYPE = 15  # an output tensor of the wrong dtype, or an out_dtype the call cannot produce
    ROWS_OVERLAP = 16  # an output's own rows overlap (leading stride below N)
    OVERLAP = 17  # an output overlaps an input or another output
    SIZES_DTYPE = 18
    SIZES_SHAPE = 19
    GROUPS_ZERO = 20
    SIZE_NEGATIVE = 21
    SIZES_SUM = 22
    SCALES_UNEXPECTED = 23  # scales for fp16/bf16 inputs
    SCALES_PAIR = 24  # scale_a without scale_b or the reverse
    SCALE_DTYPE = 25
    SCALE_SHAPE = 26
    SCALE_STRIDE = 27
    SCALE_RECIPE = 28  # recipes of scale_a and scale_b differ (or differ across groups)
    SCALE_RECIPE_DTYPE = 29  # a recipe the input dtype does not have (block scales for int8)
    PREPACKED = 30  # prepacked weights used against their own layout or scales
    TOO_LARGE = 31  # a dimension exceeds the native kernels' 32-bit sizes
    INFERENCE_OUTPUT = 32  # an output made under torch.inference_mode(), written outside it


class CkgemmError(Exception):
    """Base of every error ckgemm raises on purpose."""

    rule: Rule = Rule.NONE
    group: int | None = None

    def __init__(self, message: str = "", *, rule: Rule = Rule.NONE, group: int | None = None):
        # No super().__init__ call: Dynamo cannot trace one, and a raise inside torch.compile(fullgraph=True)
        # then hides this message behind its own; setting args is what BaseException.__init__ does.
        self.args = (message,)
        self.rule = Rule(rule)
        self.group = group


class InvalidArgumentError(CkgemmError, ValueError):
    """A value, shape, stride, device, layout or group size breaks a rule of the op."""


class InvalidTypeError(CkgemmError, TypeError, ValueError):
    """An argument has the wrong Python type or an unsupported dtype. A TypeError, and a ValueError too (as
    ``numpy.exceptions.AxisError`` is both a ValueError and an IndexError), so ``except ValueError`` catches
    every bad input ckgemm rejects."""


class BackendUnavailableError(CkgemmError, RuntimeError):
    """The requested backend cannot run here; the message says why."""


class InternalError(CkgemmError, RuntimeError):
    """ckgemm disagrees with itself (the native validator rejected a call validate.py accepts): a bug to report."""


def describe(t: torch.Tensor) -> str:
    """Shape, dtype, stride and device of a tensor, as every error message prints them."""
    stride = f"stride {tuple(t.stride())}" if t.layout == torch.strided else f"layout {t.layout}"
    return f"shape {tuple(t.shape)}, dtype {t.dtype}, {stride}, device {t.device}"
