"""benchmarks/native/ffma_yield.py (the FFMA scheduling-hint A/B tool) on a synthetic library: a CUDA ELF image
embedded past a host prefix, one .text section of a matching kernel and one of another. Only the control bits
of FFMA runs of the matching kernel may change, exactly as the mode says; everything else stays byte-identical."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ffma_yield", ROOT / "benchmarks" / "native" / "ffma_yield.py")
ffma_yield = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ffma_yield)

FFMA_HI_REUSE = (1 << 59) | ffma_yield.NO_YIELD  # as ptxas writes a reused FFMA: a reuse flag, no yield
FFMA_HI_PLAIN = 0x000001E000000000  # no reuse flag, yields


def _instr(opcode, hi):
    return struct.pack("<QQ", 0x0000000000000000 | opcode, hi)


def _text(n_ffma):
    body = _instr(0x947, 0)  # a non-FFMA first (a branch-like opcode)
    for i in range(n_ffma):
        body += _instr(ffma_yield.FFMA_RRR, FFMA_HI_REUSE if i % 2 == 0 else FFMA_HI_PLAIN)
    return body + _instr(0x947, 0)


def _library(n_ffma=20):
    names = [b"", b".shstrtab", b".text._ZN6ckgemm2ws6kernelE", b".text._ZN5other6kernelE"]
    strtab = b"\0".join(names) + b"\0"
    offsets = [sum(len(n) + 1 for n in names[:i]) for i in range(len(names))]
    texts = [_text(n_ffma), _text(n_ffma)]
    ehdr_size, shentsize = 64, 64
    data_off = ehdr_size
    sec_data = strtab + texts[0] + texts[1]
    shoff = data_off + len(sec_data)
    sections = [(0, 0, 0, 0), (offsets[1], 3, data_off, len(strtab)),
                (offsets[2], 1, data_off + len(strtab), len(texts[0])),
                (offsets[3], 1, data_off + len(strtab) + len(texts[0]), len(texts[1]))]
    ehdr = bytearray(ehdr_size)
    ehdr[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<H", ehdr, 18, ffma_yield.SM90_MACHINE)
    struct.pack_into("<Q", ehdr, 0x28, shoff)
    struct.pack_into("<HHH", ehdr, 0x3A, shentsize, len(sections), 1)
    shdrs = b"".join(struct.pack("<IIQQQQQ", name, typ, 0, 0, off, size, 0).ljust(shentsize, b"\0")
                     for name, typ, off, size in sections)
    image = bytes(ehdr) + sec_data + shdrs
    prefix = b"\x7fELF\x02\x01\x01" + b"\0" * 57  # the host library's own header, not a CUDA image
    return bytearray(prefix + image), len(prefix) + data_off + len(strtab), len(texts[0])


def _his(data, base, n):
    return [struct.unpack_from("<Q", data, base + 16 * k + 8)[0] for k in range(n)]


@pytest.mark.parametrize("mode", ["all", "none", "every3", "first0.5"])
def test_only_matching_ffma_runs_change(mode):
    data, base, size = _library()
    before = bytes(data)
    runs, changed = ffma_yield.patch(data, b"_ZN6ckgemm2ws", mode)
    assert runs == 1
    his = _his(data, base + 16, 20)
    for i, hi in enumerate(his):
        want = ffma_yield.wants_yield(mode, i, 20)
        if want is None:
            assert hi == _his(before, base + 16, 20)[i]
        elif want:
            assert hi & ffma_yield.NO_YIELD == 0 and hi & ffma_yield.REUSE == 0
        else:
            assert hi & ffma_yield.NO_YIELD
    assert changed == sum(a != b for a, b in zip(his, _his(before, base + 16, 20)))
    # the low words, the non-FFMA instructions and the other kernel's section are untouched
    for k in range(size // 16):
        assert data[base + 16 * k: base + 16 * k + 8] == before[base + 16 * k: base + 16 * k + 8]
    for off in (base, base + size - 16):
        assert data[off: off + 16] == before[off: off + 16]
    assert data[base + size:] == before[base + size:]
    assert data[:base] == before[:base]


def test_short_runs_are_left_alone():
    data, _, _ = _library(n_ffma=15)
    before = bytes(data)
    assert ffma_yield.patch(data, b"_ZN6ckgemm2ws", "all") == (0, 0)
    assert bytes(data) == before


def test_unknown_mode_is_refused():
    data, _, _ = _library()
    with pytest.raises(SystemExit, match="unknown mode"):
        ffma_yield.patch(data, b"_ZN6ckgemm2ws", "sometimes")
