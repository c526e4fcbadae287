"""The dynamic symbols of a shared library, read from its ELF file (64-bit little-endian, as every Linux build
here; no binutils needed): what tests of the build's visibility rule (build_support/__init__.py HIDDEN) look at."""
from __future__ import annotations

import struct
from pathlib import Path

SHT_DYNSYM = 11
STB_GNU_UNIQUE = 10


def dynamic_symbols(path: str | Path) -> list[tuple[str, int, bool]]:
    """(name, binding, defined here) of each entry of the library's .dynsym."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    symbols = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != SHT_DYNSYM:
            continue
        strtab = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name_at, info, _, shndx = struct.unpack_from("<IBBH", data, at)
            end = data.index(b"\0", strtab + name_at)
            symbols.append((data[strtab + name_at:end].decode(), info >> 4, shndx != 0))
    return symbols


def unique_symbols(path: str | Path) -> list[str]:
    """The names the library binds process-wide whatever flags it is loaded with (STB_GNU_UNIQUE): GCC's
    static locals of inline functions and templates built with default visibility."""
    return [name for name, binding, _ in dynamic_symbols(path) if binding == STB_GNU_UNIQUE]
