"""Numbers behind bench's timings: the quantile it reports, and the arithmetic that lets a BenchResult
stand for its median in milliseconds (any object with a ``median_ms``)."""
from __future__ import annotations

import math
import numbers


def quantile(values, q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) of a non-empty sequence."""
    if not values:
        raise ValueError("quantile of no values")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _ms(value):
    """The number a timing stands for (its median in ms), or NotImplemented for other operands."""
    if hasattr(value, "median_ms") and not isinstance(value, type):
        return value.median_ms
    if isinstance(value, numbers.Real):
        return float(value)
    return NotImplemented


def arith(op):
    def forward(self, other):
        value = _ms(other)
        return NotImplemented if value is NotImplemented else op(self.median_ms, value)

    def reverse(self, other):
        value = _ms(other)
        return NotImplemented if value is NotImplemented else op(value, self.median_ms)
    return forward, reverse


def compare(op):
    def method(self, other):
        value = _ms(other)
        return NotImplemented if value is NotImplemented else op(self.median_ms, value)
    return method
