#!/usr/bin/env python3
"""Compile check of the CK-tile backend (csrc/hip) for gfx942 on a machine without ROCm.

For every instance TU and the runner: device pass to assembly (--cuda-device-only -S), assemble
the .s for the arch (inline-asm and ISA errors only show there), host pass (--cuda-host-only -c);
then a grep of each instance's assembly for MFMA instructions of its dtype (a config that fell back
to scalar code fails), and a host-side probe (tests/cpp/ck_host_probe.hip) linked from the host
objects and libamdhip64 that checks the registry and ckgemm's routing rules against CK's own
IsSupportedArgument. gfx950 is compiled when the compiler knows it and reported as skipped
otherwise. Flags, sources and the CK generation check are build_support/rocm.py's.

Needs (installs nothing): Debian `clang-19` and `libamdhip64-dev` (HIP 5.2 headers and library), and
CK headers: CK_DIR / --ck-dir, else the CK in the flash-attn 2.8.3 sdist, cached under
$CKGEMM_CACHE (default ~/.cache/ckgemm) and fetched with pip only when --fetch-ck or CKGEMM_FETCH_CK=1
is given (or extracted from --ck-sdist PATH). Exit status: 0 ok, 1 a check failed, 2 missing tools.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from build_support import rocm  # noqa: E402

SDIST = "flash_attn-2.8.3.tar.gz"
CK_IN_SDIST = "flash_attn-2.8.3/csrc/composable_kernel/"
MFMA = {  # expected MFMA mnemonics per instance dtype
    "fp16": r"v_mfma_f32_\w+?_f16\b",
    "bf16": r"v_mfma_f32_\w+?_bf16\w*",
    "fp8": r"v_mfma_f32_\w+?_fp8_fp8\b",
    "int8": r"v_mfma_i32_\w+?_i8\b",
}
LDS_LIMIT = 65536  # bytes per workgroup on gfx942 / gfx950


def die(msg: str, code: int = 2):
    print(f"check_hip_compile: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- prerequisites


def find_clang(explicit: str | None) -> str:
    for name in ([explicit] if explicit else ["clang++-19", "clang++"]):
        if name and shutil.which(name):
            return name
    die("no clang++-19 on PATH. Install Debian's: apt-get install -y clang-19 libamdhip64-dev")


def hip_version(include: Path) -> tuple[int, ...]:
    text = (include / "hip" / "hip_version.h").read_text()
    parts = [re.search(rf"#define HIP_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return tuple(int(m.group(1)) for m in parts if m)


def find_hip_include() -> Path:
    for base in (os.environ.get("HIP_INCLUDE"), "/usr/include", "/opt/rocm/include"):
        if base and (Path(base) / "hip" / "hip_runtime.h").is_file():
            return Path(base)
    die("no HIP headers (hip/hip_runtime.h). Install Debian's: apt-get install -y libamdhip64-dev")


def cache_dir() -> Path:
    return Path(os.environ.get("CKGEMM_CACHE", Path.home() / ".cache" / "ckgemm"))


def extract_ck(sdist: Path, dest: Path) -> None:
    """Only CK's include/ tree (and its license) from the flash-attn sdist."""
    with tarfile.open(sdist) as tar:
        wanted = [m for m in tar.getmembers() if m.name.startswith(CK_IN_SDIST + "include/")
                  or m.name == CK_IN_SDIST + "LICENSE"]
        if not wanted:
            die(f"{sdist} has no {CK_IN_SDIST}include/")
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # no links or paths out of dest
        tar.extractall(dest, members=wanted, **safe)


def fetch_sdist(into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CUDA_HOME="/usr/local/cuda", FLASH_ATTENTION_SKIP_CUDA_BUILD="TRUE")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
           "flash-attn==2.8.3", "-d", str(into)]
    print("fetching the pinned CK:", " ".join(cmd), flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        die("pip download of flash-attn==2.8.3 failed (its setup.py needs torch, setuptools, packaging and wheel)")
    return into / SDIST


def locate_ck(args) -> Path:
    explicit = args.ck_dir or os.environ.get("CK_DIR")
    if explicit:
        include = rocm.ck_include_dir(explicit)
        if include is None:
            die(f"CK dir {explicit!r} holds no include/ck_tile/core.hpp")
        return include
    cached = cache_dir() / "ck"
    include = rocm.ck_include_dir(cached / CK_IN_SDIST)
    if include is not None:
        return include
    sdist = Path(args.ck_sdist or os.environ.get("CKGEMM_CK_SDIST", "")) if (
        args.ck_sdist or os.environ.get("CKGEMM_CK_SDIST")) else None
    if sdist is None and (args.fetch_ck or os.environ.get("CKGEMM_FETCH_CK") == "1"):
        sdist = fetch_sdist(cache_dir() / "sdist")
    if sdist is None:
        die("no CK headers. Give CK_DIR=<CK root> (or --ck-sdist PATH), or let this script fetch the pinned CK "
            f"(flash-attn 2.8.3 sdist) into {cached} with --fetch-ck or CKGEMM_FETCH_CK=1; it runs:\n  {rocm.FETCH_CK}")
    extract_ck(sdist, cached)
    include = rocm.ck_include_dir(cached / CK_IN_SDIST)
    if include is None:
        die(f"extracting {sdist} gave no CK include dir")
    return include


def arch_supported(clang: str, arch: str, workdir: Path) -> tuple[bool, str]:
    probe = workdir / "arch_probe.hip"
    probe.write_text("__global__ void k() {}\n")
    run = subprocess.run([clang, "-x", "hip", f"--offload-arch={arch}", "-nogpulib", "--cuda-device-only", "-S",
                          str(probe), "-o", os.devnull], capture_output=True, text=True)
    first = (run.stderr.strip().splitlines() or [""])[0]
    return run.returncode == 0, first


# ---------------------------------------------------------------- compile jobs


@dataclass
class Unit:
    name: str
    source: Path
    dtype: str | None  # None: no MFMA expected (runner)
    times: dict = field(default_factory=dict)
    mfma: dict = field(default_factory=dict)  # arch -> {mnemonic: count}
    kernel: dict = field(default_factory=dict)  # arch -> metadata of the GEMM kernel
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def run_step(unit: Unit, step: str, cmd: list[str], verbose: bool) -> bool:
    if verbose:
        print("  $", " ".join(cmd), flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    unit.times[step] = time.monotonic() - start
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        unit.errors.append(f"{step} failed:\n{tail}")
        return False
    return True


def kernel_metadata(asm: str) -> dict:
    """vgpr/agpr/LDS/scratch of the GEMM (or builder) kernel, from the code-object metadata."""
    meta = asm[asm.find("amdhsa.kernels:"):]
    for chunk in re.split(r"\n  - ", meta)[1:]:
        keys = dict(re.findall(r"^\s{0,4}\.(\w+):\s+(\S+)", "    " + chunk, flags=re.M))
        name = keys.get("name", "")
        if "grouped_gemm_persistent" in name or "build_packed_groups" in name:
            occ = re.search(rf"\n{re.escape(name)}:.*?; Occupancy: (\d+)", asm, flags=re.S)
            return {k: int(keys.get(k, 0)) for k in ("vgpr_count", "agpr_count", "group_segment_fixed_size",
                                                        "private_segment_fixed_size")} | {
                "occupancy": int(occ.group(1)) if occ else 0}
    return {}


def compile_unit(unit: Unit, clang: str, archs: list[str], flags: list[str], out: Path, verbose: bool) -> Unit:
    for arch in archs:
        asm, obj = out / f"{unit.name}.{arch}.s", out / f"{unit.name}.{arch}.o"
        if not run_step(unit, f"device {arch}", [clang, "-x", "hip", f"--offload-arch={arch}", "-nogpulib",
                                                 "--cuda-device-only", "-S", *flags, str(unit.source), "-o", str(asm)],
                        verbose):
            return unit
        if not run_step(unit, f"assemble {arch}", [clang, "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-c",
                                                   str(asm), "-o", str(obj)], verbose):
            return unit
        text = asm.read_text()
        unit.kernel[arch] = kernel_metadata(text)
        if unit.dtype:
            found = re.findall(MFMA[unit.dtype], text)
            unit.mfma[arch] = {m: found.count(m) for m in sorted(set(found))}
            if not found:
                unit.errors.append(f"{arch}: no {MFMA[unit.dtype]} instruction in the assembly: the GEMM did not "
                                   "lower to MFMA")
        meta = unit.kernel[arch]
        if not meta:
            unit.errors.append(f"{arch}: kernel metadata not found in the assembly")
        elif meta["group_segment_fixed_size"] > LDS_LIMIT:
            unit.errors.append(f"{arch}: LDS {meta['group_segment_fixed_size']} B exceeds {LDS_LIMIT} B")
        elif meta["private_segment_fixed_size"] > 0:
            unit.warnings.append(f"{arch}: {meta['private_segment_fixed_size']} B/lane of scratch (VGPR spills)")
    run_step(unit, "host", [clang, "-x", "hip", f"--offload-arch={archs[0]}", "--cuda-host-only", "-c", *flags,
                            str(unit.source), "-o", str(out / f"{unit.name}.host.o")], verbose)
    return unit


def probe(clang: str, flags: list[str], units: list[Unit], out: Path, verbose: bool) -> tuple[bool, str]:
    """Links the host objects with libamdhip64 and runs tests/cpp/ck_host_probe.hip."""
    probe_unit = Unit("ck_host_probe", ROOT / "tests" / "cpp" / "ck_host_probe.hip", None)
    registry = Unit("registry", ROOT / "csrc" / "hip" / "registry.cpp", None)
    ok = run_step(probe_unit, "host", [clang, "-x", "hip", "--offload-arch=gfx942", "--cuda-host-only", "-c", *flags,
                                       f"-I{ROOT / 'csrc'}", str(probe_unit.source), "-o", str(out / "probe.o")],
                  verbose)
    ok = ok and run_step(registry, "host", [clang, "-std=c++17", "-c", *[f for f in flags if f.startswith("-DCKGEMM")],
                                            str(registry.source), "-o", str(out / "registry.o")], verbose)
    # Host-only objects each define __hip_cuid_ and reference the device fat binary the full
    # compile would embed; the probe launches nothing, so localize the one and stub the other.
    stub = out / "fatbin_stub.cpp"
    stub.write_text('extern "C" { alignas(4096) char __hip_fatbin_[4096] = {}; void* __hip_gpubin_handle_ = 0; }\n')
    objects = [out / "probe.o", out / "registry.o"] + [out / f"{u.name}.host.o" for u in units]
    objcopy = shutil.which("objcopy") or shutil.which("llvm-objcopy-19")
    if ok and objcopy:
        for obj in objects:
            subprocess.run([objcopy, "--localize-symbol=__hip_cuid_", str(obj)], check=True)
    exe = out / "ck_host_probe"
    ok = ok and run_step(probe_unit, "link", [clang, str(stub), *map(str, objects), "-lamdhip64", "-o", str(exe)],
                         verbose)
    if not ok:
        return False, "\n".join(probe_unit.errors + registry.errors)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return run.returncode == 0, run.stdout + run.stderr


# ---------------------------------------------------------------- report


def summary(units: list[Unit], archs: list[str]) -> str:
    rows = [("TU", "device s", "asm s", "host s", "MFMA (gfx942)", "regs (AGPR)", "LDS B", "scratch B", "occ", "result")]
    for u in units:
        a = archs[0]
        meta = u.kernel.get(a, {})
        mfma = ", ".join(f"{k} x{v}" for k, v in u.mfma.get(a, {}).items()) or ("-" if not u.dtype else "none")
        rows.append((u.name, f"{u.times.get(f'device {a}', 0):.1f}", f"{u.times.get(f'assemble {a}', 0):.1f}",
                     f"{u.times.get('host', 0):.1f}", mfma,
                     f"{meta.get('vgpr_count', '?')} ({meta.get('agpr_count', '?')})",
                     str(meta.get("group_segment_fixed_size", "?")), str(meta.get("private_segment_fixed_size", "?")),
                     str(meta.get("occupancy", "?")), "FAIL" if u.errors else ("warn" if u.warnings else "ok")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ck-dir", help="CK root or include dir (default: $CK_DIR, else the cached pinned CK)")
    ap.add_argument("--fetch-ck", action="store_true", help="pip-download the pinned CK if it is not cached")
    ap.add_argument("--ck-sdist", help="extract the pinned CK from this flash_attn-2.8.3.tar.gz")
    ap.add_argument("--clang", help="clang++ to use (default clang++-19)")
    ap.add_argument("--archs", default="gfx942,gfx950", help="comma list (default gfx942,gfx950)")
    ap.add_argument("--dtypes", default=",".join(rocm.selected_dtypes()), help="instance dtypes (default all)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "hip_check"))
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    args = ap.parse_args()
    start = time.monotonic()

    clang = find_clang(args.clang)
    hip_include = find_hip_include()
    ck_include = locate_ck(args)
    rocm.require_supported_ck(ck_include, "compile check")
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    out = Path(args.build_dir)
    out.mkdir(parents=True, exist_ok=True)

    archs, skipped = [], []
    for arch in [a.strip() for a in args.archs.split(",") if a.strip()]:
        supported, why = arch_supported(clang, arch, out)
        (archs.append(arch) if supported else skipped.append(f"{arch}: SKIPPED, {clang} cannot target it ({why})"))
    if not archs:
        die("the compiler supports none of the requested archs:\n  " + "\n  ".join(skipped))
    version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    hip_ver = hip_version(hip_include)
    # What torch's BuildExtension passes hipcc first (COMMON_HIP(CC)_FLAGS), then rocm.py's flags.
    flags = (["-D__HIP_PLATFORM_AMD__=1", "-D__HIP_NO_HALF_OPERATORS__=1", "-D__HIP_NO_HALF_CONVERSIONS__=1"]
             + rocm.CK_HIPCC_FLAGS + rocm.ck_compiler_flags(hip_ver) + rocm.dtype_macros(dtypes) + [f"-I{ck_include}"])
    print(f"compiler: {version}\nHIP headers: {hip_include} (HIP {'.'.join(map(str, hip_ver))})\n"
          f"CK: {ck_include} (generation {rocm.ck_generation(ck_include)})\narchs: {', '.join(archs)}"
          + "".join(f"\n{s}" for s in skipped) + f"\ndtypes: {', '.join(dtypes)}; jobs: {args.jobs}", flush=True)

    units = [Unit(p.stem, p, p.stem.split("_")[0]) for p in rocm.instance_sources(dtypes)]
    units.sort(key=lambda u: not u.name.endswith("large"))  # the slowest first
    units.append(Unit("runner", rocm.HIP_DIR / "runner.hip", None))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(compile_unit, u, clang, archs, flags, out, args.verbose) for u in units]
        for fut in concurrent.futures.as_completed(futures):
            u = fut.result()
            print(f"  {u.name}: {'FAIL' if u.errors else 'ok'} ({sum(u.times.values()):.0f} s)", flush=True)

    failed = [u for u in units if u.errors]
    probe_ok, probe_out = (False, "not run: a compile step failed") if failed else probe(
        clang, flags, units, out, args.verbose)
    print("\n" + summary(units, archs))
    for u in units:
        for msg in u.warnings:
            print(f"WARN {u.name}: {msg}")
        for msg in u.errors:
            print(f"ERROR {u.name}: {msg}")
    print(f"\nhost probe ({'ok' if probe_ok else 'FAILED'}):\n{probe_out.rstrip()}")
    for s in skipped:
        print(s)
    print(f"\ntotal {time.monotonic() - start:.0f} s wall, {sum(sum(u.times.values()) for u in units):.0f} s "
          f"compile time on {args.jobs} job(s); assembly and objects in {out}")
    ok = not failed and probe_ok
    print("check_hip_compile: " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
