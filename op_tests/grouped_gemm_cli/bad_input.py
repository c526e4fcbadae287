"""Bad calls, each a pass/fail check: it must raise the documented CkgemmError subclass, with a message that
names the group (or tensor) and the rule, and must leave the caller's outputs untouched (still NaN)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

import ckgemm
from ckgemm import InvalidArgumentError as Arg
from ckgemm import InvalidTypeError as Type
from ckgemm.testing import data

F16 = torch.float16


@dataclass
class BadCase:
    name: str
    call: object  # zero-argument callable that must raise
    error: type
    pattern: str  # regex the message must match
    outputs: tuple = ()  # tensors that must still hold the poison afterwards


def _groups(dev, gen, count=4, m=8, n=16, k=32, layout="RC", dtype=F16):
    a = [data.random_tensor((m, k), dtype, gen, dev) for _ in range(count)]
    b = [data.random_tensor(data.b_shape(n, k, layout), dtype, gen, dev) for _ in range(count)]
    outs = [data.poisoned((m, n), ckgemm.rule_for(dtype).output, dev) for _ in range(count)]
    return a, b, outs


def _with(seq, index, value):
    seq = list(seq)
    seq[index] = value
    return seq


def list_cases(dev, gen) -> list[BadCase]:
    a, b, outs = _groups(dev, gen)
    rr_a, rr_b, _ = _groups(dev, gen, layout="RR")
    wide = data.random_tensor((8, 32), F16, gen, dev)
    bf = [x.to(torch.bfloat16) for x in (a[2], b[2])]
    g = ckgemm.grouped_gemm
    go = ckgemm.grouped_gemm_out
    cases = [
        BadCase("a_list not a list", lambda: g(torch.stack(a), b), Type, "a_list must be a list"),
        BadCase("empty lists", lambda: g([], []), Arg, "a_list is empty"),
        BadCase("group count mismatch", lambda: g(a, b[:3]), Arg, "a_list has 4 groups but b_list has 3"),
        BadCase("non-tensor group", lambda: g(_with(a, 1, [[1.0]]), b), Type, r"group 1: a\[1\] is a list"),
        BadCase("3-D group", lambda: g(a, _with(b, 2, b[2].unsqueeze(0))), Arg, r"group 2: b\[2\] \(shape.*must be 2-D"),
        BadCase("K mismatch (RC)", lambda: g(_with(a, 1, a[1][:, :31]), b), Arg, r"group 1: .*K mismatch"),
        BadCase("K mismatch (RR)", lambda: g(_with(rr_a, 3, rr_a[3][:, :16]), rr_b, layout="RR"), Arg,
                r"group 3: .*K mismatch"),
        BadCase("a/b dtype differ", lambda: g(a, _with(b, 0, b[0].to(torch.bfloat16))), Type,
                r"group 0: b\[0\].*differs from a\[0\] dtype"),
        BadCase("dtype differs across groups", lambda: g(_with(a, 2, bf[0]), _with(b, 2, bf[1])), Type,
                r"group 2: a\[2\].*differs from group 0"),
        BadCase("unsupported dtype", lambda: g([x.float() for x in a], [x.float() for x in b]), Type,
                r"group 0: a\[0\].*unsupported dtype"),
        BadCase("group on another device", lambda: g(a, _with(b, 1, torch.empty(b[1].shape, dtype=F16, device="meta"))),
                Arg, r"group 1: b\[1\].*is on meta"),
        BadCase("unknown layout", lambda: g(a, b, layout="CR"), Arg, "unknown layout 'CR'"),
        BadCase("innermost stride", lambda: g(_with(a, 1, torch.empty(32, 8, dtype=F16, device=dev).t()), b), Arg,
                r"group 1: a\[1\].*innermost stride must be 1"),
        BadCase("unknown backend", lambda: g(a, b, backend="nope"), Arg, "unknown backend 'nope'"),
        BadCase("outputs: count", lambda: go(a, b, outs[:3]), Arg, "c_list has 3 outputs but there are 4 groups",
                tuple(outs)),
        BadCase("outputs: shape", lambda: go(a, b, _with(outs, 1, data.poisoned((8, 15), F16, dev))), Arg,
                r"group 1: c\[1\].*must have shape \(8, 16\)", tuple(outs)),
        BadCase("outputs: dtype", lambda: go(a, b, _with(outs, 2, data.poisoned((8, 16), torch.float32, dev))), Type,
                r"group 2: c\[2\].*must have dtype torch.float16", tuple(outs)),
        BadCase("outputs: alias an input", lambda: go(_with(a, 0, wide), b, _with(outs, 0, wide[:, :16])), Arg,
                r"output c\[0\] overlaps a\[0\]", tuple(outs[1:])),
        BadCase("outputs: alias each other", lambda: go(a, b, _with(outs, 2, outs[1])), Arg,
                r"output c\[\d\] overlaps c\[\d\]", tuple(outs)),
        BadCase("outputs: overlapping rows", lambda: go(a, b, _with(
            outs, 1, torch.full((200,), float("nan"), dtype=F16, device=dev).as_strided((8, 16), (4, 1)))), Arg,
            r"group 1: c\[1\].*rows overlap", tuple(outs)),
        BadCase("late K mismatch", lambda: go(a, _with(b, 3, b[3][:, :16].contiguous()), outs), Arg,
                r"group 3: .*K mismatch", tuple(outs)),
    ]
    if dev.type == "cuda":  # the CPU reference takes both e4m3 flavours; a GPU takes only its own
        other = torch.float8_e4m3fnuz if ckgemm.fp8_dtype_for(dev) == torch.float8_e4m3fn else torch.float8_e4m3fn
        f8 = [x.to(other) for x in (a[0], b[0])]
        cases.append(BadCase("fp8 flavour of another device", lambda: g([f8[0]], [f8[1]]), Type,
                             "not the fp8 flavour of device"))
    return cases


def packed_cases(dev, gen) -> list[BadCase]:
    a = data.random_tensor((12, 32), F16, gen, dev)
    b = data.random_tensor((3, 16, 32), F16, gen, dev)
    out = data.poisoned((12, 16), F16, dev)
    sizes = torch.tensor([4, 4, 4], dtype=torch.int32)  # on the CPU: checked on the host, on every backend
    p = ckgemm.grouped_gemm_packed

    def call(a_=a, b_=b, sizes_=sizes, out_=out):
        return lambda: p(a_, b_, sizes_, out=out_)

    alias_src = data.random_tensor((12, 32), F16, gen, dev)
    return [
        BadCase("packed: sizes length", call(sizes_=sizes[:2]), Arg, r"group_sizes .*must be 1-D of length G=3", (out,)),
        BadCase("packed: negative size", call(sizes_=torch.tensor([8, -2, 6])), Arg,
                r"group 1: group_sizes\[1\] = -2 is negative", (out,)),
        BadCase("packed: sizes sum", call(sizes_=torch.tensor([4, 4, 3])), Arg, "group_sizes sum to 11 but a has 12 rows",
                (out,)),
        BadCase("packed: float sizes", call(sizes_=sizes.float()), Type, "must be an int32 or int64 tensor", (out,)),
        BadCase("packed: sizes not a tensor", call(sizes_=[4, 4, 4]), Type, "group_sizes is a list", (out,)),
        BadCase("packed: 2-D b", call(b_=b[0]), Arg, r"b \(shape \(16, 32\).*must be 3-D", (out,)),
        BadCase("packed: K mismatch", call(a_=a[:, :16]), Arg, "K mismatch", (out,)),
        BadCase("packed: out shape", call(out_=data.poisoned((12, 15), F16, dev)), Arg,
                r"out \(shape \(12, 15\).*must have shape \(12, 16\)", (out,)),
        BadCase("packed: out aliases a", call(a_=alias_src, out_=alias_src[:, :16]), Arg, "out overlaps a", (out,)),
    ]


def run_bad_inputs(device, seed: int) -> list[tuple[str, bool, str]]:
    """(case name, passed, detail) for every bad-input case on ``device``."""
    gen = data.generator(seed, device)
    results = []
    for case in list_cases(device, gen) + packed_cases(device, gen):
        results.append((case.name, *_run_one(case)))
    return results


def _run_one(case: BadCase) -> tuple[bool, str]:
    try:
        case.call()
    except ckgemm.CkgemmError as exc:
        msg = str(exc)
        if not isinstance(exc, case.error):
            return False, f"raised {type(exc).__name__}, expected {case.error.__name__}: {msg}"
        if not re.search(case.pattern, msg):
            return False, f"message lacks /{case.pattern}/: {msg}"
        if any(not bool(data.unwritten(t).all()) for t in case.outputs):
            return False, "a rejected call wrote into an output"
        return True, msg
    except Exception as exc:  # noqa: BLE001 - anything but a CkgemmError is a failure of the contract
        return False, f"raised {type(exc).__name__} (not a CkgemmError): {exc}"
    return False, "no error raised"
