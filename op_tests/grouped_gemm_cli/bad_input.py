"""Bad calls, each a pass/fail check: every case of ckgemm's bad-input catalogue (ckgemm/bad_inputs.py)
must raise the documented CkgemmError subclass with a message naming the group (or tensor) and the rule,
and leave the caller's outputs untouched (still NaN)."""
from __future__ import annotations

from ckgemm import bad_inputs


def run_bad_inputs(device, seed: int, backend: str | None = None) -> list[tuple[str, bool, str]]:
    """(case name, passed, detail) for every bad-input case on ``device``."""
    return [(case.name, *bad_inputs.check(case, backend)) for case in bad_inputs.catalogue(device, seed)]
