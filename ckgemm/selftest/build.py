"""Checks of the build and the device: the native extension (loaded or why not, and how to build it),
the GPU, the backend that runs there, the fp8 flavour, and what the build recorded about itself.

What a build records comes from ``ckgemm._C.build_info()`` (a JSON string, or a dict), with these keys
where they apply (docs/SELFTEST.md): ``backend``, ``archs``, ``dtypes``, ``compiler``, ``torch``,
``cuda``/``hip``, ``cutlass_version`` (CUDA), ``ck_generation``, ``ck_commit``, ``ck_source`` (ROCm),
``ckgemm_commit``, ``cxx`` and ``cxx_probe`` (build_support/toolchain.py). A build without it is
reported as recording nothing; the selftest never guesses the CK a binary was built from. The CK headers
visible now (``CK_DIR``, else ``$ROCM_PATH/include``) are reported beside it, labelled as such.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import torch

import ckgemm
from ckgemm.backends import native

from .checks import FAIL, PASS, SKIP, Check
from .environment import arch, device, fp8_flavour, platform_kind
from .procs import repo_root

BUILD_COMMAND = "pip install --no-build-isolation -e .   (from the ckgemm checkout, with the GPU torch installed)"
ROCM_KEYS = ("ck_generation", "ck_commit")
# The e4m3 flavour each device family's hardware decodes (README's dtype table).
EXPECTED_FP8 = {"gfx942": "float8_e4m3fnuz", "gfx950": "float8_e4m3fn", "nvidia": "float8_e4m3fn",
                "cpu": "float8_e4m3fn"}


def extension_module():
    return native._C


def build_info(module) -> dict | None:
    """What the build recorded (``_C.build_info()``), or None when this build has no such record."""
    fn = getattr(module, "build_info", None)
    if fn is None:
        return None
    raw = fn()
    return json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)


def check_extension() -> Check:
    kind = platform_kind()
    module = extension_module()
    if kind == "cpu":
        return Check("extension", SKIP, f"torch {torch.__version__} is a CPU build: no native extension; "
                     "everything below runs on the torch reference backend")
    if module is None:
        return Check("extension", FAIL, f"ckgemm._C is not built or does not load ({native._LOAD_ERROR}); the "
                     f"selftest builds nothing. Build it with: {BUILD_COMMAND}; CKGEMM_NATIVE=1 makes a failed "
                     "build an error" + ("; on ROCm set CK_DIR as docs/ROCM.md says" if kind == "rocm" else ""),
                     details={"load_error": str(native._LOAD_ERROR), "build_command": BUILD_COMMAND})
    details = {"backend": native.built_kind(), "file": getattr(module, "__file__", None)}
    if hasattr(module, "built_archs"):
        details["built_archs"] = list(module.built_archs())
    if hasattr(module, "instance_names"):
        details["instances"] = list(module.instance_names())
    count = f", {len(details['instances'])} kernel instances" if "instances" in details else ""
    return Check("extension", PASS, f"ckgemm._C loaded: backend {details['backend']}{count}", details=details)


def check_device() -> Check:
    if platform_kind() == "cpu":
        return Check("device", SKIP, "CPU build of torch: no GPU to check")
    if not torch.cuda.is_available():
        visible = {k: os.environ[k] for k in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if k in os.environ}
        return Check("device", FAIL, f"torch {torch.__version__} is a GPU build but sees no GPU"
                     + (f" ({visible})" if visible else "") + "; check the driver and device permissions",
                     details={"visible_devices": visible})
    dev = device()
    return Check("device", PASS, f"{torch.cuda.get_device_name(dev)} ({arch(dev)}), "
                 f"{torch.cuda.device_count()} visible", details={"arch": arch(dev)})


def check_backend() -> Check:
    dev = device()
    if dev.type == "cpu":
        return Check("backend", SKIP, "no GPU: the torch reference backend runs everything")
    status = ckgemm.backend_status(dev)
    native_ok = [n for n in native.NAMES if status.get(n) == "available"]
    if native_ok:
        return Check("backend", PASS, f"{native_ok[0]} runs on {torch.cuda.get_device_name(dev)}", details=status)
    wanted = "ck" if platform_kind() == "rocm" else "cutlass"
    return Check("backend", FAIL, f"no native backend can run on this GPU: {wanted}: {status.get(wanted)}",
                 details=status)


def _family(dev: torch.device) -> str:
    if dev.type == "cpu":
        return "cpu"
    if torch.version.hip is None:
        return "nvidia"
    return (arch(dev) or "")[:6]


def check_fp8() -> Check:
    dev = device()
    found, expected = fp8_flavour(dev), EXPECTED_FP8.get(_family(dev))
    if expected is None:
        return Check("fp8", SKIP, f"{arch(dev)} is not a device ckgemm has an fp8 rule for (found {found})")
    if found != expected:
        return Check("fp8", FAIL, f"ckgemm.fp8_dtype_for gives {found} on {arch(dev) or 'cpu'}; its hardware "
                     f"decodes {expected}")
    dtype = getattr(torch, found)
    probe = torch.tensor([1.5, -0.25, 240.0], device=dev).to(dtype).float().cpu()
    if probe.tolist() != [1.5, -0.25, 240.0]:
        return Check("fp8", FAIL, f"{found} does not round-trip exact values on {dev}: got {probe.tolist()}")
    return Check("fp8", PASS, f"{found} ({'OCP e4m3' if found.endswith('fn') else 'e4m3 fnuz, bias 8'}) on "
                 f"{arch(dev) or 'cpu'}", details={"dtype": found})


def _ck_tree(root: Path):
    """build_support.ck_tree of the checkout (it imports its siblings, so it is loaded as a package)."""
    saved = list(sys.path)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("build_support.ck_tree")
    finally:
        sys.path[:] = saved


def visible_ck_headers() -> dict | None:
    """Generation of the CK headers a build here would use now (not necessarily the built binary's)."""
    root = repo_root()
    if platform_kind() != "rocm" or root is None or not (root / "build_support" / "ck_tree.py").is_file():
        return None
    ck_tree = _ck_tree(root)
    source = os.environ.get("CK_DIR") or str(Path(os.environ.get("ROCM_PATH") or "/opt/rocm") / "include")
    include = ck_tree.ck_include_dir(source)
    return {"where": "CK_DIR" if os.environ.get("CK_DIR") else "$ROCM_PATH/include", "path": source,
            "generation": ck_tree.ck_generation(include) if include else "no ck_tile headers there",
            "missing": ck_tree.missing_features(include) if include else [],
            "supported": list(ck_tree.SUPPORTED_GENERATIONS)}


def check_build_record() -> Check:
    module = extension_module()
    headers = visible_ck_headers()
    details = {"ck_headers_visible_now": headers} if headers else {}
    if module is None:
        return Check("build_record", SKIP, "no native extension, so no build record", details=details)
    info = build_info(module)
    if info is None:
        return Check("build_record", SKIP, "this build records nothing about itself (ckgemm._C.build_info() is "
                     "missing), so the report cannot name the CK/CUTLASS it was built from", details=details)
    details["build_info"] = info
    missing = [k for k in ROCM_KEYS if native.built_kind() == "ck" and not info.get(k)]
    dev = device()
    built = [a.strip() for a in str(info.get("archs", "")).replace(",", ";").split(";") if a.strip()]
    wrong_arch = native.built_kind() == "ck" and dev.type == "cuda" and built and arch(dev) not in built
    # build_support/toolchain.py: the extension carries a libstdc++ of its own that formats numbers wrongly
    bad_cxx = str(info.get("cxx_probe", "")).startswith(("crashed", "wrong"))
    if missing or wrong_arch or bad_cxx:
        why = [f"no {', '.join(missing)} recorded"] if missing else []
        why += [f"built for {built}, the device is {arch(dev)}"] if wrong_arch else []
        if bad_cxx:
            why.append(f"its C++ compiler's probe library {info['cxx_probe']}: torch's own error messages inside "
                       "the extension would crash or misprint; rebuild with a compiler that links the shared libstdc++")
        return Check("build_record", FAIL, "; ".join(why), details=details)
    facts = ", ".join(f"{k} {info[k]}" for k in ("backend", "archs", "ck_generation", "ck_commit", "cutlass_version",
                                                  "compiler", "cxx_probe") if info.get(k))
    return Check("build_record", PASS, facts or "recorded", details=details)


def checks() -> list:
    """The build-and-device checks, in report order (callables, each returning a Check)."""
    return [check_extension, check_device, check_backend, check_fp8, check_build_record]
