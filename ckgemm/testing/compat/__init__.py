"""Drop-in names for test and benchmark scripts ported from DeepGEMM's and aiter's testing helpers and from
CK-tile's host-side checkers.

A script that imports ``bench``, ``bench_kineto``, ``calc_diff``, ``count_bytes`` and ``assert_bitwise_equal``
from ``deep_gemm.testing``, or ``checkAllclose``, ``perftest``, ``run_perftest`` and ``benchmark`` from
``aiter.test_common``, or a CK example's ``check_err`` and ``calculate_rtol_atol`` turned into Python, runs on
ckgemm's harness after changing the import:

    from ckgemm.testing.compat.deep_gemm import assert_bitwise_equal, bench, bench_kineto, calc_diff, count_bytes
    from ckgemm.testing.compat.aiter import benchmark, checkAllclose, perftest, run_perftest
    from ckgemm.testing.compat.ck import calculate_rtol_atol, check_err, get_absolute_threshold, get_relative_threshold

Signatures, argument names, defaults and return units are theirs (seconds for DeepGEMM's timers, microseconds
for aiter's, a mismatch ratio from ``checkAllclose``, a bool from ``check_err``). What differs is where theirs can
pass silently, and is listed in each module: a kernel name that matches nothing is an error, not a time of 0;
``checkAllclose`` raises when more than ``tol_err_ratio`` of the elements mismatch, where aiter's only prints
"failed", and ``check_err`` raises where CK's returns false (``strict=False`` gives their return values);
shapes that differ are an error, not broadcast. Timing comes from
``ckgemm.testing.bench`` (device events per call, cold L2 outside the timed window, the median) and the
per-kernel table from ``ckgemm.testing.kineto``; both also run on a CPU-only machine.

Nothing here is imported by ``ckgemm.testing`` itself: import the module you port from.
"""
