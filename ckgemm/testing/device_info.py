"""Facts about the device a benchmark runs on: name, last-level cache, flush size, and clocks/power read
through ``nvidia-smi`` or ``amd-smi`` when they are installed (None otherwise; never an error)."""
from __future__ import annotations

import json
import shutil
import subprocess

import torch

MIB = 1 << 20
_SMI_TIMEOUT_S = 5.0


def is_gpu(device) -> bool:
    return torch.device(device).type == "cuda" and torch.cuda.is_available()


def default_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def runs_on_gpu(device) -> bool:
    """Whether a measurement asked for ``device`` (None: the default device) runs on a GPU."""
    return is_gpu(device if device is not None else default_device())


def check_requested(what: str, device) -> None:
    """Raise ValueError when ``device`` asks for a GPU that torch does not see, or for a device with nothing to
    run (meta), rather than timing or profiling on the CPU instead."""
    if device is not None and torch.device(device).type not in ("cpu", "cuda"):
        raise ValueError(f"{what}: device {device} has nothing to run; use a GPU (cuda) or the CPU")
    if device is not None and torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{what}: device {device} asked for, but torch sees no GPU here (torch.cuda.is_available() "
                         f"is False); leave device unset to run on the CPU")


def device_name(device) -> str:
    device = torch.device(device)
    if is_gpu(device):
        return torch.cuda.get_device_name(device)
    return "cpu"


def gcn_arch(device) -> str | None:
    """AMD arch such as 'gfx942' (None on NVIDIA and CPU)."""
    if not is_gpu(device) or torch.version.hip is None:
        return None
    return torch.cuda.get_device_properties(torch.device(device)).gcnArchName.split(":")[0]


def is_mi300_class(device) -> bool:
    """gfx94x/gfx95x: a 256 MB Infinity Cache (MALL) sits behind the per-XCD L2."""
    arch = gcn_arch(device) or ""
    return arch.startswith("gfx94") or arch.startswith("gfx95")


def l2_cache_bytes(device) -> int | None:
    if not is_gpu(device):
        return None
    size = getattr(torch.cuda.get_device_properties(torch.device(device)), "L2_cache_size", None)
    return int(size) if size else None


def flush_bytes(device) -> int:
    """Size of a buffer whose memset evicts inputs from every cache level: at least 2x the L2, at least
    512 MB on MI300-class parts (MALL), and at least 256 MB elsewhere (Triton's and DeepGEMM's size)."""
    floor = 512 * MIB if is_mi300_class(device) else 256 * MIB
    return max(floor, 2 * (l2_cache_bytes(device) or 0))


def tool_output(cmd: list[str], timeout_s: float = _SMI_TIMEOUT_S) -> str | None:
    """stdout of a command-line tool, or None when it is not installed, fails or times out."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


_NV_FIELDS = ("clocks.sm", "clocks.mem", "power.draw", "temperature.gpu")
_NV_KEYS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c")


def _nvidia_id(device) -> str:
    props = torch.cuda.get_device_properties(torch.device(device))
    uuid = getattr(props, "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else str(torch.device(device).index or 0)


def parse_nvidia_smi(text: str) -> dict:
    """One CSV line of the query in ``_NV_FIELDS`` order (noheader, nounits) -> dict of floats."""
    values = [v.strip() for v in text.strip().splitlines()[0].split(",")]
    out = {}
    for key, value in zip(_NV_KEYS, values):
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = None  # "[N/A]" and the like
    return out


def _amd_number(node, *names):
    for name in names:
        if not isinstance(node, dict) or name not in node:
            return None
        node = node[name]
    if isinstance(node, dict):
        node = node.get("value")
    try:
        return float(node)
    except (TypeError, ValueError):
        return None


def parse_amd_smi(text: str) -> dict:
    """``amd-smi metric --json`` output (a list with one entry per GPU, or one dict) -> dict of floats."""
    data = json.loads(text)
    gpu = data[0] if isinstance(data, list) else data
    clock = gpu.get("clock", {})
    return {
        "sm_clock_mhz": _amd_number(clock, "gfx_0", "clk") or _amd_number(clock, "gfx", "clk"),
        "mem_clock_mhz": _amd_number(clock, "mem_0", "clk") or _amd_number(clock, "mem", "clk"),
        "power_w": _amd_number(gpu, "power", "socket_power") or _amd_number(gpu, "power", "current_socket_power"),
        "temperature_c": _amd_number(gpu, "temperature", "hotspot") or _amd_number(gpu, "temperature", "edge"),
    }


def read_telemetry(device) -> dict | None:
    """GPU clocks (MHz), power (W) and temperature (C) now, with the tool that read them; None when no
    tool answers (CPU, missing tool, or a failure: telemetry never breaks a run)."""
    if not is_gpu(device):
        return None
    try:
        if torch.version.hip is None:
            text = tool_output(["nvidia-smi", f"--query-gpu={','.join(_NV_FIELDS)}", "--format=csv,noheader,nounits",
                         "-i", _nvidia_id(device)])
            return None if text is None else {**parse_nvidia_smi(text), "source": "nvidia-smi"}
        index = str(torch.device(device).index or 0)
        text = tool_output(["amd-smi", "metric", "-g", index, "--json"])
        return None if text is None else {**parse_amd_smi(text), "source": "amd-smi"}
    except (ValueError, KeyError, IndexError, AttributeError, RuntimeError):
        return None


def throttled(before: dict | None, after: dict | None, drop: float = 0.1) -> bool:
    """True when the SM clock fell by more than ``drop`` (a fraction) between two readings."""
    if not before or not after or not before.get("sm_clock_mhz") or after.get("sm_clock_mhz") is None:
        return False
    return after["sm_clock_mhz"] < (1.0 - drop) * before["sm_clock_mhz"]


def environment(device=None) -> dict:
    """A small JSON-ready description of where a run happened, for report headers."""
    device = torch.device(device) if device is not None else default_device()
    env = {"device": device_name(device), "torch": torch.__version__, "cuda": torch.version.cuda,
           "hip": torch.version.hip}
    if is_gpu(device):
        env["arch"] = gcn_arch(device) or "sm_%d%d" % torch.cuda.get_device_capability(device)
        env["l2_bytes"] = l2_cache_bytes(device)
    return env
