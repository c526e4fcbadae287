#!/usr/bin/env python3
"""Compile check of the CK-tile backend (csrc/hip) for gfx942 and gfx950 on a machine without ROCm.

For every instance TU and the runner, per arch: device pass to assembly (--cuda-device-only -S),
assembling the .s for the arch (inline-asm and ISA errors only show there), and a read of the assembly
(scripts/hip_asm.py: MFMA instructions of the TU's dtype present, the row-scaled epilogue's fp32
scaling present, LDS within 64 KiB, scratch reported); per TU one host pass (--cuda-host-only -c). Then a
host-side probe (tests/cpp/ck_host_probe.hip) linked from the host objects and libamdhip64 checks the
instance table and the acceptance rule against CK's own IsSupportedArgument.

Compilers (Debian bookworm parts; this script installs nothing): gfx942 device passes, the host passes
and the probe use clang++-19; gfx950 device passes use clang++-22 (bookworm-security: clang-19 does not
know gfx950), which gets scripts/hip_shims/hip52_clang22.h force-included for what clang >= 21 dropped
from the HIP 5.2 headers (libamdhip64-dev). gfx950 compiles GFX950_SUBSET by default (--gfx950 all for
every TU), which keeps the check within its CI budget (docs/ROCM.md says which TUs and why).

CK headers: CK_DIR / --ck-dir, else the pinned CK (build_support/ck_fetch.py) cached under
$CKGEMM_CACHE, fetched with pip only with --fetch-ck or CKGEMM_FETCH_CK=1 (or unpacked from --ck-wheel).
Exit status: 0 ok, 1 a check failed, 2 missing tools or headers.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from build_support import ck_fetch, ck_tree, rocm  # noqa: E402
import hip_asm  # noqa: E402

SHIM = ROOT / "scripts" / "hip_shims" / "hip52_clang22.h"
# Output elements per thread of each tile (M x N over its 256 threads; the probe checks the tile sizes):
# a row-scaled instance multiplies each by sa[row] and sb[col].
ELEMENTS_PER_THREAD = {"ComputeV4": 128 * 128 // 256, "Padded": 16 * 64 // 256}
# gfx950's share of the CI budget: one TU per pipeline (CompV4 / padded CompV3) and dtype family,
# covering both layouts within each dtype and both outputs of each row-scaled dtype.
GFX950_SUBSET = (
    "fp16_rc_compute_v4", "fp16_rr_padded", "bf16_rr_compute_v4", "bf16_rc_padded",
    "fp8_rc_compute_v4", "fp8_rr_padded", "int8_rr_compute_v4", "int8_rc_padded",
    "fp8_row_bf16_rc_compute_v4", "fp8_row_f32_rr_padded", "int8_row_bf16_rr_compute_v4", "int8_row_f32_rc_padded",
    "runner",
)


def die(msg: str, code: int = 2):
    print(f"check_hip_compile: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- prerequisites


@dataclass
class Compiler:
    path: str
    version: str  # first line of --version
    major: int

    @classmethod
    def find(cls, name: str) -> Compiler:
        path = shutil.which(name)
        if path is None:
            die(f"no {name} on PATH. Debian: apt-get install -y --no-install-recommends {name.replace('++', '')}"
                " libamdhip64-dev (clang-22 comes from bookworm-security)")
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        major = re.search(r"version (\d+)", version)
        return cls(path, version, int(major.group(1)) if major else 0)

    def device_flags(self) -> list[str]:
        return ["-include", str(SHIM)] if self.major >= 21 else []


def hip_version(include: Path) -> tuple[int, ...]:
    text = (include / "hip" / "hip_version.h").read_text()
    parts = [re.search(rf"#define HIP_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return tuple(int(m.group(1)) for m in parts if m)


def find_hip_include() -> Path:
    for base in (os.environ.get("HIP_INCLUDE"), "/usr/include", "/opt/rocm/include"):
        if base and (Path(base) / "hip" / "hip_runtime.h").is_file():
            return Path(base)
    die("no HIP headers (hip/hip_runtime.h). Install Debian's: apt-get install -y libamdhip64-dev")


def locate_ck(args) -> Path:
    explicit = args.ck_dir or os.environ.get("CK_DIR")
    if explicit:
        include = ck_tree.ck_include_dir(explicit)
        if include is None:
            die(f"CK dir {explicit!r} holds no include/ck_tile/core.hpp")
    else:
        root = ck_fetch.pinned_ck_root()
        if not (root / "include" / "ck_tile" / "core.hpp").is_file():
            if not (args.fetch_ck or args.ck_wheel or os.environ.get("CKGEMM_FETCH_CK") == "1"):
                die(f"no CK headers. Give CK_DIR=<CK root>, or fetch the pinned CK ({ck_fetch.PINNED}) into "
                    f"{root} with --fetch-ck, CKGEMM_FETCH_CK=1 or: {ck_fetch.FETCH_COMMAND}")
            root = ck_fetch.fetch(wheel=Path(args.ck_wheel) if args.ck_wheel else None)
        include = root / "include"
    try:
        ck_tree.require_supported_ck(include, "compile check")
    except SystemExit as exc:
        die(str(exc))
    return include


def arch_supported(compiler: Compiler, arch: str, workdir: Path) -> tuple[bool, str]:
    probe = workdir / "arch_probe.hip"
    probe.write_text("#include <hip/hip_runtime.h>\n__global__ void k() {}\n")
    run = subprocess.run([compiler.path, "-x", "hip", f"--offload-arch={arch}", "-nogpulib", *compiler.device_flags(),
                          "--cuda-device-only", "-S", str(probe), "-o", os.devnull], capture_output=True, text=True)
    first = (run.stderr.strip().splitlines() or [""])[0]
    return run.returncode == 0, first


# ---------------------------------------------------------------- compile jobs


@dataclass
class Unit:
    name: str
    source: Path
    dtype: str | None  # None: no MFMA expected (runner)
    scale_muls: int    # fp32 multiplies the epilogue needs at least (0: unscaled)
    archs: list[str]
    wall: dict = field(default_factory=dict)  # step -> seconds
    cpu: dict = field(default_factory=dict)   # step -> user + sys seconds of the compiler
    mfma: dict = field(default_factory=dict)  # arch -> {mnemonic: count}
    kernel: dict = field(default_factory=dict)  # arch -> metadata of the GEMM kernel
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def run_step(unit: Unit, step: str, cmd: list[str], out: Path, verbose: bool) -> bool:
    """Runs one compiler command, recording its wall and CPU time (CPU is what a shared machine inflates least)."""
    if verbose:
        print("  $", " ".join(cmd), flush=True)
    log = out / f"{unit.name}.{step.replace(' ', '_')}.log"
    start = time.monotonic()
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    unit.wall[step] = time.monotonic() - start
    unit.cpu[step] = usage.ru_utime + usage.ru_stime
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-25:])
        unit.errors.append(f"{step} failed:\n{tail}")
        return False
    return True


def device_job(unit: Unit, arch: str, compiler: Compiler, flags: list[str], out: Path, verbose: bool) -> None:
    asm, obj = out / f"{unit.name}.{arch}.s", out / f"{unit.name}.{arch}.o"
    cmd = [compiler.path, "-x", "hip", f"--offload-arch={arch}", "-nogpulib", *compiler.device_flags(),
           "--cuda-device-only", "-S", *flags, str(unit.source), "-o", str(asm)]
    if not run_step(unit, f"device {arch}", cmd, out, verbose):
        return
    if not run_step(unit, f"assemble {arch}", [compiler.path, "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-c",
                                               str(asm), "-o", str(obj)], out, verbose):
        return
    mfma, meta, errors, warnings = hip_asm.inspect(asm.read_text(), arch, unit.dtype, unit.scale_muls)
    unit.mfma[arch], unit.kernel[arch] = mfma, meta
    unit.errors += [f"{arch}: {e}" for e in errors]
    unit.warnings += [f"{arch}: {w}" for w in warnings]


def host_job(unit: Unit, compiler: Compiler, flags: list[str], out: Path, verbose: bool) -> None:
    run_step(unit, "host", [compiler.path, "-x", "hip", "--offload-arch=gfx942", "--cuda-host-only", "-c", *flags,
                            str(unit.source), "-o", str(out / f"{unit.name}.host.o")], out, verbose)


def probe(compiler: Compiler, flags: list[str], units: list[Unit], entries: int, out: Path,
          verbose: bool) -> tuple[bool, str]:
    """Links the host objects with libamdhip64 and runs tests/cpp/ck_host_probe.hip."""
    probe_unit = Unit("ck_host_probe", ROOT / "tests" / "cpp" / "ck_host_probe.hip", None, 0, [])
    registry = Unit("registry", rocm.HIP_DIR / "registry.cpp", None, 0, [])
    ok = run_step(probe_unit, "host", [compiler.path, "-x", "hip", "--offload-arch=gfx942", "--cuda-host-only", "-c",
                                       *flags, f"-I{ROOT / 'csrc'}", f"-DCKGEMM_PROBE_ENTRIES={entries}",
                                       str(probe_unit.source), "-o", str(out / "probe.o")], out, verbose)
    ok = ok and run_step(registry, "host", [compiler.path, "-std=c++17", "-c",
                                            *[f for f in flags if f.startswith("-DCKGEMM")], str(registry.source),
                                            "-o", str(out / "registry.o")], out, verbose)
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
    ok = ok and run_step(probe_unit, "link", [compiler.path, str(stub), *map(str, objects), "-lamdhip64", "-o",
                                              str(exe)], out, verbose)
    if not ok:
        return False, "\n".join(probe_unit.errors + registry.errors)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    return run.returncode == 0, run.stdout + run.stderr


# ---------------------------------------------------------------- report


def arch_table(units: list[Unit], arch: str) -> str:
    rows = [("TU", "device s", "cpu s", "asm s", "MFMA", "regs (AGPR)", "LDS B", "scratch B", "occ", "result")]
    for u in (u for u in units if arch in u.archs):
        meta = u.kernel.get(arch, {})
        mfma = ", ".join(f"{k} x{v}" for k, v in u.mfma.get(arch, {}).items()) or ("-" if not u.dtype else "none")
        failed = any(e.startswith(f"{arch}:") or f" {arch} failed" in e for e in u.errors)
        rows.append((u.name, f"{u.wall.get(f'device {arch}', 0):.1f}", f"{u.cpu.get(f'device {arch}', 0):.1f}",
                     f"{u.wall.get(f'assemble {arch}', 0):.1f}", mfma,
                     f"{meta.get('vgpr_count', '?')} ({meta.get('agpr_count', '?')})",
                     str(meta.get("group_segment_fixed_size", "?")), str(meta.get("private_segment_fixed_size", "?")),
                     str(meta.get("occupancy", "?")), "FAIL" if failed or f"device {arch}" not in u.wall else "ok"))
    return hip_asm.table(rows)


def arch_verdict(units: list[Unit], arch: str) -> tuple[int, int]:
    mine = [u for u in units if arch in u.archs]
    ok = [u for u in mine if arch in u.kernel and not any(e.startswith(f"{arch}:") or f" {arch} failed" in e
                                                            for e in u.errors)]
    return len(ok), len(mine)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ck-dir", help="CK root or include dir (default: $CK_DIR, else the cached pinned CK)")
    ap.add_argument("--fetch-ck", action="store_true", help="pip-download the pinned CK if it is not cached")
    ap.add_argument("--ck-wheel", help=f"unpack the pinned CK from this {ck_fetch.WHEEL}")
    ap.add_argument("--clang", default="clang++-19", help="gfx942 device passes, host passes, probe")
    ap.add_argument("--clang-gfx950", default="clang++-22", help="gfx950 device passes")
    ap.add_argument("--archs", default="gfx942,gfx950", help="comma list (default gfx942,gfx950)")
    ap.add_argument("--gfx950", choices=("subset", "all"), default="subset", help="gfx950 TUs (default subset)")
    ap.add_argument("--dtypes", default=",".join(rocm.selected_dtypes()), help="instance dtypes (default all)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "hip_check"))
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    args = ap.parse_args()
    start = time.monotonic()

    host = Compiler.find(args.clang)
    compilers = {"gfx942": host, "gfx950": Compiler.find(args.clang_gfx950)}
    hip_include = find_hip_include()
    ck_include = locate_ck(args)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    out = Path(args.build_dir)
    out.mkdir(parents=True, exist_ok=True)
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    for arch in archs:
        if arch not in compilers:
            die(f"unknown arch {arch}; the CK instances target {', '.join(rocm.SUPPORTED_ARCHS)}")
        supported, why = arch_supported(compilers[arch], arch, out)
        if not supported:
            die(f"{compilers[arch].path} cannot compile for {arch}: {why}")
    hip_ver = hip_version(hip_include)
    # What torch's BuildExtension passes hipcc first (COMMON_HIP(CC)_FLAGS), then rocm.py's flags.
    flags = (["-D__HIP_PLATFORM_AMD__=1", "-D__HIP_NO_HALF_OPERATORS__=1", "-D__HIP_NO_HALF_CONVERSIONS__=1"]
             + rocm.CK_HIPCC_FLAGS + rocm.ck_compiler_flags(hip_ver) + rocm.dtype_macros(dtypes)
             + [f"-I{ck_include}"])
    generation, commit = ck_tree.ck_generation(ck_include), ck_fetch.commit_of(ck_include)
    specs = [s for s in rocm.instance_specs() if s.dtype_name in dtypes]
    units = [Unit(s.file, s.source, s.dtype_name, 2 * ELEMENTS_PER_THREAD[s.tile] if s.scaling == "Row" else 0,
                  [a for a in archs if a != "gfx950" or args.gfx950 == "all" or s.file in GFX950_SUBSET])
             for s in specs]
    units.append(Unit("runner", rocm.HIP_DIR / "runner.hip", None, 0, archs))
    shimmed = {a: f" (+ {SHIM.name})" if compilers[a].device_flags() else "" for a in archs}
    print("\n".join(f"compiler {a}: {compilers[a].version}{shimmed[a]}" for a in archs)
          + f"\nhost passes and probe: {host.version}\nHIP headers: {hip_include} (HIP {'.'.join(map(str, hip_ver))})"
          + f"\nCK: {ck_include} (generation {generation}, commit {commit}; pinned: {ck_fetch.PINNED})"
          + f"\narchs: {', '.join(archs)}; "
          + f"gfx950 TUs: {args.gfx950}\ndtypes: {', '.join(dtypes)}; jobs: {args.jobs}", flush=True)

    jobs = [(u, a) for u in units for a in u.archs] + [(u, None) for u in units]
    jobs.sort(key=lambda j: (j[1] is None, "compute_v4" not in j[0].name))  # device passes, slowest first
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(device_job, u, a, compilers[a], flags, out, args.verbose) if a else
                   pool.submit(host_job, u, host, flags, out, args.verbose): (u, a) for u, a in jobs}
        for fut in concurrent.futures.as_completed(futures):
            fut.result()
            u, a = futures[fut]
            step = f"device {a}" if a else "host"
            print(f"  {u.name} {a or 'host'}: {'FAIL' if u.errors else 'ok'} ({u.wall.get(step, 0):.0f} s)", flush=True)

    failed = [u for u in units if u.errors]
    entries = sum(2 if s.dtype == "FP8_E4M3_FNUZ" else 1 for s in specs)
    probe_ok, probe_out = (False, "not run: a compile step failed") if failed else probe(
        host, flags, units, entries, out, args.verbose)
    for arch in archs:
        print(f"\n{arch} ({compilers[arch].version}):\n{arch_table(units, arch)}")
    for u in units:
        for msg in u.warnings:
            print(f"WARN {u.name}: {msg}")
        for msg in u.errors:
            print(f"ERROR {u.name}: {msg}")
    print(f"\nhost probe ({'ok' if probe_ok else 'FAILED'}):\n{probe_out.rstrip()}")
    verdicts = {a: arch_verdict(units, a) for a in archs}
    wall = time.monotonic() - start
    print(f"\nCK generation {generation}, commit {commit}:")
    for a, (ok, total) in verdicts.items():
        cpu = sum(v for u in units for k, v in u.cpu.items() if k.endswith(a))
        print(f"  {a}: {ok}/{total} TUs compile and assemble ({cpu:.0f} s compiler CPU)")
    hosts_ok = sum(1 for u in units if "host" in u.wall and not any("host failed" in e for e in u.errors))
    print(f"  host passes: {hosts_ok}/{len(units)}; probe: {'ok' if probe_ok else 'FAILED'}")
    print(f"total {wall:.0f} s wall, {sum(sum(u.cpu.values()) for u in units):.0f} s compiler CPU on "
          f"{args.jobs} job(s); assembly and objects in {out}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "generation": generation, "ck_commit": commit, "pinned": ck_fetch.PINNED, "wall_s": round(wall, 1),
            "probe_ok": probe_ok,
            "compilers": {a: compilers[a].version for a in archs}, "verdicts": verdicts,
            "units": [{"name": u.name, "archs": u.archs, "wall": u.wall, "cpu": u.cpu, "mfma": u.mfma,
                       "kernel": u.kernel, "errors": u.errors, "warnings": u.warnings} for u in units]}, indent=1))
    ok = not failed and probe_ok and all(ok == total for ok, total in verdicts.values())
    print("check_hip_compile: " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
