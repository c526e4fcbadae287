"""The pinned CK: the CK-tile headers carried by the ``amd-aiter==0.1.7.post2.dev18`` wheel (CK commit
e31a7a4f, generation G3), fetched with pip, verified by sha256 and unpacked (only CK's ``include/`` and
its LICENSE) into ``$CKGEMM_CACHE`` (default ``~/.cache/ckgemm``). Nothing of CK is in this repository.

    python -m build_support.ck_fetch          # prints the CK_DIR to export

Used by scripts/check_hip_compile.py (``--fetch-ck``) and named in the build's error messages.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

PACKAGE = "amd-aiter==0.1.7.post2.dev18"
WHEEL = "amd_aiter-0.1.7.post2.dev18-py3-none-any.whl"
WHEEL_SHA256 = "fe139d74438217c35e87e3b961166bac8db2d381eadccb371da2e63615f05a31"
CK_IN_WHEEL = "aiter_meta/3rdparty/composable_kernel/"
CK_COMMIT = "e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40"
# tree_digest() of the pinned wheel's include/ck_tile: how a build tells the pinned CK from another tree.
CK_TILE_DIGEST = "51c9901f148c7ae4a34eacd8d7b2f07075d5f98823d19700d5404d9533cf0bd5"
PINNED = f"{PACKAGE} (CK {CK_COMMIT[:8]}, CK-tile generation G3)"
FETCH_COMMAND = "python -m build_support.ck_fetch"  # from the ckgemm checkout; prints the CK_DIR to export


def cache_dir() -> Path:
    return Path(os.environ.get("CKGEMM_CACHE") or Path.home() / ".cache" / "ckgemm")


def _unpack_dir(cache: Path) -> Path:
    return cache / "ck" / CK_COMMIT[:12]


def pinned_ck_root(cache: Path | None = None) -> Path:
    """Where the pinned CK is (or would be) unpacked: a CK root with include/ and LICENSE."""
    return _unpack_dir(cache or cache_dir()) / CK_IN_WHEEL


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(include: Path) -> str:
    """sha256 over the relative paths and contents of every file under include/ck_tile (sorted)."""
    digest = hashlib.sha256()
    for path in sorted((include / "ck_tile").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(include).as_posix()).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def commit_of(include: Path) -> str:
    """The CK commit of a header tree: the pinned one when its ck_tile files are the pinned wheel's."""
    digest = tree_digest(include)
    return CK_COMMIT if digest == CK_TILE_DIGEST else f"unknown (not the pinned tree; ck_tile digest {digest[:16]})"


def verify(wheel: Path) -> None:
    actual = sha256_of(wheel)
    if actual != WHEEL_SHA256:
        raise SystemExit(f"ckgemm: {wheel} has sha256 {actual}, not the pinned {WHEEL_SHA256}; refusing to use it")


def extract(wheel: Path, dest: Path) -> Path:
    """Unpacks CK's include/ tree and LICENSE from a verified wheel into dest; returns the CK root."""
    with zipfile.ZipFile(wheel) as zf:
        wanted = [n for n in zf.namelist() if (n.startswith(CK_IN_WHEEL + "include/") and not n.endswith("/"))
                  or n == CK_IN_WHEEL + "LICENSE"]
        if not any(n.startswith(CK_IN_WHEEL + "include/ck_tile/") for n in wanted):
            raise SystemExit(f"ckgemm: {wheel} holds no {CK_IN_WHEEL}include/ck_tile/")
        for name in wanted:
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts:
                raise SystemExit(f"ckgemm: {wheel} has an unsafe member name {name!r}")
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    return dest / CK_IN_WHEEL


def download(into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--pre", PACKAGE, "-d", str(into)]
    print("ckgemm: fetching the pinned CK:", " ".join(cmd), file=sys.stderr, flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"ckgemm: pip download of {PACKAGE} failed")
    return into / WHEEL


def fetch(cache: Path | None = None, wheel: Path | None = None) -> Path:
    """The pinned CK root, unpacked into the cache on first use (from `wheel`, else downloaded)."""
    cache = cache or cache_dir()
    root = pinned_ck_root(cache)
    if (root / "include" / "ck_tile" / "core.hpp").is_file():
        return root
    wheel = wheel or download(cache / "wheels")
    verify(wheel)
    final = _unpack_dir(cache)
    staging = final.with_name(final.name + ".partial")
    for stale in (staging, final):  # an interrupted unpack leaves one of these without core.hpp
        shutil.rmtree(stale, ignore_errors=True)
    extract(wheel, staging)
    staging.rename(final)
    return root


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=f"Fetch the CK that csrc/hip is pinned to: {PINNED}.")
    ap.add_argument("--wheel", help=f"use this already downloaded {WHEEL} instead of pip download")
    args = ap.parse_args(argv)
    root = fetch(wheel=Path(args.wheel) if args.wheel else None)
    print(f"export CK_DIR={root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
