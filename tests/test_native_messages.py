"""The native code builds its error messages without iostreams (csrc/common/message.h says why: on an H100
host whose compiler linked libstdc++ statically into the extension, c10::str's stream crashed every rejected
call). Checked on the sources, so CI catches a check that formats through a stream again, and the helper
compiled with g++: what it joins, what it refuses to compile, and that CKGEMM_CHECK hands TORCH_CHECK one C
string."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMON = ROOT / "csrc" / "common"
SOURCES = sorted(p for p in (ROOT / "csrc").rglob("*") if p.suffix in {".cpp", ".cu", ".cuh", ".h", ".hip", ".hpp"})
TORCH_MACRO = re.compile(r"\b(TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|TORCH_WARN\w*|AT_ERROR)\s*\(")
LITERALS = re.compile(r'^(?:"(?:[^"\\]|\\.)*"\s*)+$')  # one string literal, or adjacent ones
STREAMS = ("<sstream>", "<iostream>", "stringstream", "std::ostream", "std::cout", "std::cerr", "c10::str(")


def _literal_end(text: str, i: int) -> int | None:
    """The index just past the string or character literal that opens at ``i``, or None where none opens
    (a ' after a digit or letter is a digit separator, as in 1'000)."""
    quote = text[i]
    if quote != '"' and (quote != "'" or (i and text[i - 1].isalnum())):
        return None
    j = i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _code(text: str) -> str:
    """``text`` with its comments blanked (newlines kept, so line numbers hold); string and character literals
    are kept as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        two = text[i:i + 2]
        end = _literal_end(text, i)
        if two == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif end is not None:
            out.append(text[i:end])
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _arguments(code: str, start: int) -> list[str]:
    """The top-level comma-separated arguments of the call whose '(' is at ``start`` (comments blanked)."""
    depth, args, current, i = 0, [], [], start
    while i < len(code):
        ch, end = code[i], _literal_end(code, i)
        if end is not None:  # a literal's commas and parentheses are its own
            current.append(code[i:end])
            i = end
            continue
        if ch in "([{":
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


def _calls(pattern):
    for path in SOURCES:
        code = _code(path.read_text())
        for match in pattern.finditer(code):
            line_start = code.rfind("\n", 0, match.start()) + 1
            if code[line_start:match.start()].lstrip().startswith("#define"):
                continue  # a macro's definition (CKGEMM_CHECK's own, in message.h)
            line = code.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", match.group(1), _arguments(code, match.end() - 1)


def test_the_scan_finds_the_checks_it_polices():
    assert len(list(_calls(TORCH_MACRO))) >= 4
    assert len(list(_calls(re.compile(r"\b(CKGEMM_CHECK)\s*\(")))) >= 10


@pytest.mark.parametrize("where,macro,args", list(_calls(TORCH_MACRO)), ids=lambda x: x if isinstance(x, str) else None)
def test_torch_checks_carry_only_literal_messages(where, macro, args):
    messages = args[1:] if macro.startswith(("TORCH_CHECK", "TORCH_INTERNAL_ASSERT")) else args
    assert len(messages) <= 1 and all(LITERALS.match(m) for m in messages), \
        f"{where}: {macro}({', '.join(args)}) formats its message through a stream; use CKGEMM_CHECK " \
        "(csrc/common/message.h) for a message of several parts"


def test_no_native_source_uses_a_stream():
    for path in SOURCES:
        code = _code(path.read_text())
        for banned in STREAMS:
            assert banned not in code, f"{path.relative_to(ROOT)} uses {banned}"


def test_the_scanner_keeps_literals_and_drops_comments():
    text = 'TORCH_CHECK(a(b, c), "x, (y", \'(\', 1\'000) // TORCH_CHECK(d, e, f)\n/* g, h */ TORCH_CHECK(i, "j" "k")'
    code = _code(text)
    assert "TORCH_CHECK(d" not in code and "g, h" not in code and code.count("\n") == 1
    assert _arguments(code, code.index("(")) == ["a(b, c)", '"x, (y"', "'('", "1'000"]
    second = [m for m in TORCH_MACRO.finditer(code)][1]
    assert _arguments(code, second.end() - 1) == ["i", '"j" "k"']
    assert LITERALS.match('"j" "k"') and not LITERALS.match('"j", k') and not LITERALS.match("message(x)")


PROGRAM = r"""
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>
#define TORCH_CHECK(cond, msg)                                        \
  do {                                                                \
    static_assert(std::is_same_v<decltype(msg), const char*>, "C string"); \
    if (!(cond)) std::puts(msg);                                      \
  } while (0)
#include "message.h"
struct Report { char message[16]; };
int main() {
  Report r{"boom"};
  const char* what = "launch";
  const char* none = nullptr;
  std::string s = "why";
  std::puts(ckgemm::message("[rule=", 3, " group=", -1L, "] ", what, ": ", s, ": ", r.message, " ",
                            int64_t(1) << 40, " ", size_t(7), none).c_str());
  std::vector<long> sizes{2, 3}, empty;
  std::puts((ckgemm::dims(sizes) + ckgemm::dims(empty)).c_str());
  int evaluated = 0;
  CKGEMM_CHECK(true, "never ", ++evaluated);
  CKGEMM_CHECK(1 + 1 == 3, "n must be >= 0, got ", -5, " (", evaluated, " evaluated)");
}
"""


def _compile(tmp_path, program: str):
    src, exe = tmp_path / "m.cpp", tmp_path / "m"
    src.write_text(program)
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(COMMON), str(src), "-o", str(exe)],
                          capture_output=True, text=True)
    return proc, exe


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_message_joins_strings_and_integers_and_the_check_passes_a_c_string(tmp_path):
    proc, exe = _compile(tmp_path, PROGRAM)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[rule=3 group=-1] launch: why: boom 1099511627776 7(null)", "[2, 3][]",
                                "n must be >= 0, got -5 (0 evaluated)"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("argument", ["'x'", "true", "0.5", "Plain::kA"])
def test_message_refuses_what_would_print_as_something_else(tmp_path, argument):
    program = ('#include "message.h"\nenum Plain { kA };\n'
               f'int main() {{ return static_cast<int>(ckgemm::message("got ", {argument}).size()); }}\n')
    proc, _ = _compile(tmp_path, program)
    assert proc.returncode != 0 and "message():" in proc.stderr, proc.stderr[-2000:]
