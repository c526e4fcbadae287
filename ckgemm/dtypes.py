"""The dtype table: the one place that says what ckgemm computes for each input dtype.

Validation, dispatch, the reference backend, the harness, the tests and the README all read
``DTYPE_TABLE``. ``abi_code`` matches ``ckgemm::DType`` in ``csrc/ckgemm.h``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# Device families. The fp8 flavour a device uses depends on its family.
CPU = "cpu"
NVIDIA = "nvidia"
GFX942 = "gfx942"  # MI300X / MI325X: fp8 is e4m3fnuz (bias 8, max 240)
GFX950 = "gfx950"  # MI350 / MI355X: fp8 is OCP e4m3fn (max 448)
ROCM_OTHER = "rocm-other"  # other AMD GPUs: no fp8
OTHER = "other"  # any other torch device (mps, xpu, ...)


@dataclass(frozen=True)
class DtypeRule:
    name: str  # short name used by the CLI and reports
    input: torch.dtype
    accumulate: torch.dtype
    output: torch.dtype
    exact: bool  # True: outputs are compared with torch.equal against an exact integer reference
    mantissa_bits: int  # explicit mantissa bits of the input (0 for integers)
    max_value: float  # largest finite input value
    families: frozenset  # device families whose hardware uses this dtype
    abi_code: int  # ckgemm::DType in csrc/ckgemm.h

    @property
    def exactness(self) -> str:
        if self.exact:
            return "exact: torch.equal against an exact integer reference"
        return "tolerance from mantissa bits, K and max abs(ref), per group"


_ALL = frozenset({CPU, NVIDIA, GFX942, GFX950, ROCM_OTHER, OTHER})

DTYPE_TABLE: tuple[DtypeRule, ...] = (
    DtypeRule("fp16", torch.float16, torch.float32, torch.float16, False, 10, 65504.0, _ALL, 0),
    DtypeRule("bf16", torch.bfloat16, torch.float32, torch.bfloat16, False, 7, 3.3895313892515355e38, _ALL, 1),
    DtypeRule("fp8", torch.float8_e4m3fn, torch.float32, torch.float32, False, 3, 448.0,
              frozenset({CPU, NVIDIA, GFX950, OTHER}), 2),
    DtypeRule("fp8_fnuz", torch.float8_e4m3fnuz, torch.float32, torch.float32, False, 3, 240.0,
              frozenset({CPU, GFX942}), 3),
    DtypeRule("int8", torch.int8, torch.int32, torch.int32, True, 0, 127.0, _ALL, 4),
)

_BY_DTYPE = {rule.input: rule for rule in DTYPE_TABLE}
_BY_NAME = {rule.name: rule for rule in DTYPE_TABLE}


def rule_for(dtype: torch.dtype) -> DtypeRule | None:
    """The table row for an input dtype, or None when ckgemm does not take that dtype."""
    return _BY_DTYPE.get(dtype)


def rule_named(name: str) -> DtypeRule:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown dtype name {name!r}; known: {sorted(_BY_NAME)}") from None


def supported_input_dtypes() -> tuple[torch.dtype, ...]:
    return tuple(rule.input for rule in DTYPE_TABLE)


def device_family(device: torch.device | str) -> str:
    """The family of a torch device, which decides its fp8 flavour."""
    device = torch.device(device)
    if device.type == "cpu":
        return CPU
    if device.type != "cuda":
        return OTHER
    if torch.version.hip is None:
        return NVIDIA
    arch = torch.cuda.get_device_properties(device).gcnArchName.split(":")[0]
    return arch_family(arch)


def arch_family(arch: str) -> str:
    """Family of an AMD arch name such as 'gfx942' or 'gfx950:sramecc+:xnack-'."""
    arch = arch.split(":")[0]
    if arch.startswith("gfx94"):
        return GFX942
    if arch.startswith("gfx95"):
        return GFX950
    return ROCM_OTHER


def fp8_dtype_for(device: torch.device | str) -> torch.dtype:
    """The fp8 (e4m3) flavour that the hardware of this device uses."""
    family = device_family(device)
    for rule in DTYPE_TABLE:
        if rule.input.is_floating_point and rule.mantissa_bits == 3 and family in rule.families:
            if family == CPU and rule.input != torch.float8_e4m3fn:
                continue  # both work on CPU; OCP e4m3fn is the default
            return rule.input
    raise ValueError(f"device {device} (family {family}) has no fp8 support")


def markdown_table() -> str:
    """The dtype table as markdown; the README embeds exactly this text."""
    lines = [
        "| input dtype | accumulate | output | devices | exactness |",
        "|---|---|---|---|---|",
    ]
    for rule in DTYPE_TABLE:
        fams = "all" if rule.families == _ALL else ", ".join(sorted(rule.families))
        lines.append(
            f"| `{_short(rule.input)}` | `{_short(rule.accumulate)}` | `{_short(rule.output)}` | {fams} | "
            f"{rule.exactness} |"
        )
    return "\n".join(lines)


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


if __name__ == "__main__":
    print(markdown_table())
