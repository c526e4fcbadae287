#!/usr/bin/env python
"""One small call per instance of the build (each forced with CKGEMM_CONFIG), the packed builder, the repack
kernel (8-bit RR transpose and K padding) and the fused verifier, for compute-sanitizer racecheck/memcheck
runs; every result is checked against an exact reference (entries in {-1, 0, 1}, so every sum is exact)."""
import os

import torch

import ckgemm
from ckgemm.backends.native import _C
from ckgemm.testing import check, gpu_verify, grouped_gemm_reference

DTYPES = {0: torch.float16, 1: torch.bfloat16, 2: torch.float8_e4m3fn, 4: torch.int8}
OUTS = {0: torch.float16, 1: torch.bfloat16, 2: torch.float32, 3: torch.int32}
SCALINGS = {0: "unscaled", 1: "row", 2: "block"}


def label(info) -> str:
    """E.g. 'float8_e4m3fn-bfloat16-RC-block-pingpong_64x128x128': what the argv filters match."""
    layout = "RC" if info["layout"] == 0 else "RR"
    return "-".join((str(DTYPES[info["dtype"]]).removeprefix("torch."), str(OUTS[info["out"]]).removeprefix("torch."),
                     layout, SCALINGS[info["scaling"]], info["name"]))


def _small(shape, dtype, dev):
    return torch.randint(-1, 2, shape, device=dev).to(dtype)


def run_instance(info, dev) -> None:
    dtype, out, layout = DTYPES[info["dtype"]], OUTS[info["out"]], "RC" if info["layout"] == 0 else "RR"
    m = 70 if info["tile"][0] >= 128 else 9
    a = [_small((mm, 200), dtype, dev) for mm in (m, 1)]
    b = [_small((136, 200) if layout == "RC" else (200, 136), dtype, dev) for _ in a]
    kwargs = {"layout": layout}
    if info["scaling"]:
        blocks = lambda x: -(-x // 128)  # noqa: E731
        if info["scaling"] == 1:
            kwargs["scale_a"] = [torch.ones(x.shape[0], device=dev) for x in a]
            kwargs["scale_b"] = [torch.ones(136, device=dev) for _ in a]
        else:
            kwargs["scale_a"] = [torch.ones(x.shape[0], blocks(200), device=dev) for x in a]
            kwargs["scale_b"] = [torch.ones(blocks(136), blocks(200), device=dev) for _ in a]
        kwargs["out_dtype"] = out
    os.environ["CKGEMM_CONFIG"] = info["name"]  # the selection rule puts this instance first where it fits
    c = ckgemm.grouped_gemm(a, b, **kwargs)
    exact = [r.to(out) for r in grouped_gemm_reference(a, b, layout=layout)]
    check(c, exact, rtol=0.0, atol=0.0, name=f"{info['name']} {dtype} {layout}")
    sizes = torch.tensor([m, 1], device=dev)
    packed = ckgemm.grouped_gemm_packed(torch.cat(a), torch.stack(b), sizes, layout=layout,
                                        **({} if not info["scaling"] else {
                                            "scale_a": torch.cat(kwargs["scale_a"]),
                                            "scale_b": torch.stack(kwargs["scale_b"]), "out_dtype": out}))
    check(packed, torch.cat(exact), rtol=0.0, atol=0.0, name=f"{info['name']} packed")
    # The own RC kernel on one cluster, its ring of stages wrapping (16-bit draws its units there, ws_units.cuh,
    # and its ring of slots wraps too); 16-bit again at 2048+ rows a group, where it takes its units by stride.
    if info["packed_only"] and layout == "RC" and not info["scaling"]:
        run_one_cluster(info, dtype, dev, [300, 0, 129, 64, 200])
    if info["packed_only"] and info["dtype"] in (0, 1):
        run_one_cluster(info, dtype, dev, [2100, 2000])
    if info["packed_only"] and layout == "RR":  # the own RR kernel (K 200 above is not its): on one cluster, its
        run_one_cluster(info, dtype, dev, [300, 0, 129, 64, 200], "RR")  # ring wrapping; int8's 256-row tile,
        run_one_cluster(info, dtype, dev, [30, 0, 51, 12], "RR")  # then its 128-row one (fp8 has that one only)
    print(f"ok {label(info)}: {ckgemm.last_dispatch()}")


def run_one_cluster(info, dtype, dev, sizes, layout="RC") -> None:
    # RC: K of 272 bytes for 16-bit, 144 for 8-bit (multiples of 16: no copy of A or B); RR: N and K multiples
    # of 16, five k-blocks
    k, n = ((136 if dtype.itemsize == 2 else 144), 520) if layout == "RC" else (640, 272)
    a = _small((sum(sizes), k), dtype, dev)
    b = _small((len(sizes), n, k) if layout == "RC" else (len(sizes), k, n), dtype, dev)
    before = ckgemm.get_num_sms()
    ckgemm.set_num_sms(2)
    try:
        got = ckgemm.grouped_gemm_packed(a, b, torch.tensor(sizes, device=dev), layout=layout)
    finally:
        ckgemm.set_num_sms(before)
    assert ckgemm.last_dispatch().paths[0].endswith(info["name"]), ckgemm.last_dispatch()
    exact = torch.cat([x @ (y.T if layout == "RC" else y)
                       for x, y in zip(a.float().split(sizes), b.float())]).to(got.dtype)
    check(got, exact, rtol=0.0, atol=0.0, name=f"{info['name']} one cluster")


def main(argv=None) -> None:
    """Arguments: substrings of instance labels to run (default: every instance); see label()."""
    import argparse
    import sys

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("labels", nargs="*", help="substrings of instance labels to run (default: every instance)")
    args = p.parse_args(argv)
    if _C is None or not torch.cuda.is_available():
        print("sanitizer_cases: needs a GPU and the native extension (ckgemm._C); nothing to run here", file=sys.stderr)
        sys.exit(2)
    torch.manual_seed(0)
    dev = "cuda"
    wanted = args.labels
    chosen = [i for i in _C.instances() if not wanted or any(w in label(i) for w in wanted)]
    if not chosen:
        sys.exit(f"no instance label contains any of {wanted}; labels: {[label(i) for i in _C.instances()]}")
    for info in chosen:
        run_instance(info, dev)
    x = _small((3, 200, 136), torch.int8, dev)
    assert torch.equal(torch.ops.ckgemm.transpose_b(x), x.transpose(-1, -2).contiguous())
    print("ok transpose")
    y = torch.randn(1 << 20, device=dev)
    stats = gpu_verify(y, y + 1e-7, rtol=1e-6, atol=0.0)
    assert stats.path.startswith("fused"), stats.path
    print("ok verify", stats)


if __name__ == "__main__":
    main()
