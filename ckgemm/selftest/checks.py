"""A check and its verdict. Every part of the selftest returns ``Check`` objects; an exception inside a
check becomes an ``error`` verdict with the exception's text instead of stopping the run."""
from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"
VERDICTS = (PASS, FAIL, SKIP, ERROR)
MAX_FAILURES = 10  # first failures kept per check


@dataclass
class Failure:
    where: str  # e.g. "tests/test_gpu_native.py::test_list_forms[bf16-RC]" or "FAIL bf16 RC list 3x64x96x128"
    message: str  # the first lines that say what went wrong (mismatch indices included)


@dataclass
class Check:
    name: str
    verdict: str
    summary: str  # one line
    seconds: float = 0.0
    details: dict = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"check {self.name!r}: unknown verdict {self.verdict!r}; expected one of {VERDICTS}")
        self.failures = self.failures[:MAX_FAILURES]

    @property
    def failed(self) -> bool:
        return self.verdict in (FAIL, ERROR)

    def to_dict(self) -> dict:
        return asdict(self)


def guarded(name: str, fn, *args, **kwargs) -> list[Check]:
    """Run ``fn`` (returning a Check or a list of them), timing it; an exception becomes an error check."""
    started = time.perf_counter()
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a broken check is reported, never fatal to the run
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        return [Check(name, ERROR, f"the check itself raised {type(exc).__name__}: {exc}"[:300],
                      time.perf_counter() - started, failures=[Failure(name, tail)])]
    checks = result if isinstance(result, list) else [result]
    elapsed = time.perf_counter() - started
    for check in checks:
        check.seconds = check.seconds or elapsed
    return checks
