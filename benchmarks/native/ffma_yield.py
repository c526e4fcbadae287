#!/usr/bin/env python
"""Rewrite the scheduling hints of the promotion FFMAs in a library's embedded sm_90a cubins, in place, for an
A/B of warp interleaving (docs/PERF_2026-12-04.md). Only the control bits change, so outputs stay bit-identical.

Each sm_90 instruction is 128 bits; in its high word bit 45 set means "do not yield after this instruction" and
bits 58-61 are the operand-reuse flags (ptxas sets bit 45 on every instruction that carries a reuse flag, since
the next instruction reads the cached operand). In runs of at least 16 register-form FFMAs (opcode 0x223) of the
kernels whose mangled name holds SYMBOL, MODE sets:
  all       every FFMA yields (its reuse flags cleared)      none      no FFMA yields
  everyN    FFMA i of the run yields iff i % N == 0, the others do not
  firstF    FFMAs in the first fraction F of the run yield, the rest keep ptxas's bits
  lastF     the same for the last fraction F
ptxas itself alternates (the FFMAs without a reuse flag yield, about half).

    python benchmarks/native/ffma_yield.py LIB.so _ZN6ckgemm2ws every3
"""
from __future__ import annotations

import argparse
import re
import struct

NO_YIELD = 1 << 45
REUSE = 0xF << 58
FFMA_RRR = 0x223
SM90_MACHINE = 190  # EM_CUDA


def cubins(data: bytes):
    """Offsets of the CUDA ELF images embedded in a host library (uncompressed fatbins)."""
    for m in re.finditer(b"\x7fELF\x02\x01\x01", data):
        if m.start() and struct.unpack_from("<H", data, m.start() + 18)[0] == SM90_MACHINE:
            yield m.start()


def text_sections(data: bytes, off: int):
    """(name, file offset, size) of each .text section of the ELF image at off."""
    shoff, = struct.unpack_from("<Q", data, off + 0x28)
    entsize, num, strndx = struct.unpack_from("<HHH", data, off + 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, off + shoff + i * entsize) for i in range(num)]
    strtab = off + headers[strndx][4]
    for name, _type, _flags, _addr, sec_off, size in headers:
        label = data[strtab + name: data.index(b"\0", strtab + name)]
        if label.startswith(b".text."):
            yield label, off + sec_off, size


def wants_yield(mode: str, i: int, n: int):
    """True: yield after FFMA i of a run of n; False: do not; None: keep ptxas's bits."""
    if mode == "all":
        return True
    if mode == "none":
        return False
    if mode.startswith("every"):
        return i % int(mode[5:]) == 0
    if mode.startswith("first"):
        return True if i / n < float(mode[5:]) else None
    if mode.startswith("last"):
        return True if i / n >= 1 - float(mode[4:]) else None
    raise SystemExit(f"unknown mode {mode!r}")


def patch(data: bytearray, symbol: bytes, mode: str, min_run: int = 16):
    runs = changed = 0
    for off in list(cubins(bytes(data))):
        for label, base, size in text_sections(bytes(data), off):
            if symbol not in label:
                continue
            is_ffma = [(struct.unpack_from("<Q", data, base + 16 * k)[0] & 0xFFF) == FFMA_RRR for k in range(size // 16)]
            k = 0
            while k < len(is_ffma):
                end = k
                while end < len(is_ffma) and is_ffma[end]:
                    end += 1
                if end - k >= min_run:
                    runs += 1
                    for i in range(k, end):
                        y = wants_yield(mode, i - k, end - k)
                        if y is None:
                            continue
                        at = base + 16 * i + 8
                        hi, = struct.unpack_from("<Q", data, at)
                        new = hi & ~REUSE & ~NO_YIELD if y else hi | NO_YIELD
                        if new != hi:
                            struct.pack_into("<Q", data, at, new)
                            changed += 1
                k = max(end, k + 1)
    return runs, changed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib")
    ap.add_argument("symbol")
    ap.add_argument("mode")
    args = ap.parse_args()
    with open(args.lib, "rb") as f:
        data = bytearray(f.read())
    runs, changed = patch(data, args.symbol.encode(), args.mode)
    with open(args.lib, "wb") as f:
        f.write(data)
    print(f"{args.lib}: {runs} FFMA runs, {changed} instructions changed ({args.mode})")


if __name__ == "__main__":
    main()
