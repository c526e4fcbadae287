"""The native code builds its error messages without iostreams (csrc/common/message.h says why: on an H100
host whose compiler's libstdc++ was newer than the runtime one, c10::str's stream crashed every rejected
call). Checked on the sources, so CI catches a TORCH_CHECK that formats through a stream again, and the
helper itself compiled with g++."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for p in (ROOT / "csrc").rglob("*") if p.suffix in {".cpp", ".cu", ".cuh", ".h", ".hip", ".hpp"})
CHECK = re.compile(r"\b(TORCH_CHECK(?:_[A-Z]+)?)\s*\(")
STRING = re.compile(r'^"(?:[^"\\]|\\.)*"$')


def _arguments(text: str, start: int) -> list[str]:
    """The top-level comma-separated arguments of the call whose '(' is at ``start``."""
    depth, args, current, i, quote = 0, [], [], start, None
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\":
                current.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            current.append(ch)
        elif ch in "([{":
            depth += 1
            if depth > 1:
                current.append(ch)
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(current).strip())
                return args
            current.append(ch)
        elif ch == "," and depth == 1:
            args.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    raise AssertionError(f"unbalanced call at offset {start}")


def _checks():
    for path in SOURCES:
        text = path.read_text()
        for match in CHECK.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if "//" in text[line_start:match.start()] or text[: match.start()].rstrip().endswith("#define"):
                continue  # a comment or a macro's own definition
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", match.group(1), _arguments(text, match.end() - 1)


def test_the_sources_have_torch_checks_to_look_at():
    found = list(_checks())
    assert len(found) >= 10, found  # the scan finds the checks it is meant to police


@pytest.mark.parametrize("where,macro,args", list(_checks()), ids=lambda x: x if isinstance(x, str) else None)
def test_every_check_passes_one_message_built_without_a_stream(where, macro, args):
    assert len(args) <= 2, f"{where}: {macro} with {len(args) - 1} message arguments formats through a stream; " \
                           "join them with ckgemm::message(...) (csrc/common/message.h)"
    if len(args) == 2:
        message = args[1]
        assert STRING.match(message) or message.startswith("message("), \
            f"{where}: {macro}'s message {message!r} is neither a string literal nor message(...)"


def test_no_native_source_uses_a_stream():
    for path in SOURCES:
        text = path.read_text()
        for banned in ("<sstream>", "<iostream>", "ostringstream", "std::cout", "std::cerr", "c10::str("):
            assert banned not in text or path.name == "message.h", f"{path.relative_to(ROOT)} uses {banned}"


def test_the_argument_scanner_splits_at_top_level_commas_only():
    text = 'TORCH_CHECK(a(b, c), message("x, y", f(1, 2)), "z")'
    assert _arguments(text, text.index("(")) == ["a(b, c)", 'message("x, y", f(1, 2))', '"z"']


PROGRAM = r"""
#include <cstdint>
#include <cstdio>
#include <vector>
#include "message.h"
struct Report { char message[16]; };
int main() {
  Report r{"boom"};
  const char* what = "launch";
  std::string s = "why";
  std::puts(ckgemm::message("[rule=", 3, " group=", -1L, "] ", what, ": ", s, ": ", r.message, " ",
                            int64_t(1) << 40).c_str());
  std::vector<long> sizes{2, 3}, none;
  std::puts((ckgemm::dims(sizes) + ckgemm::dims(none)).c_str());
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_message_joins_strings_and_numbers(tmp_path):
    src, exe = tmp_path / "m.cpp", tmp_path / "m"
    src.write_text(PROGRAM)
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(ROOT / "csrc" / "common"), str(src), "-o",
                    str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out == "[rule=3 group=-1] launch: why: boom 1099511627776\n[2, 3][]\n"
