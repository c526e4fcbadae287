"""``python -m ckgemm.selftest``: one command that checks ckgemm on the machine it runs on and writes a report.

In order, each a check with a verdict (pass, fail, skip with the reason, or error when the check itself
broke):

- environment and build (``environment``, ``build``): torch and its CUDA/HIP, the device and its arch,
  the fp8 flavour, the native extension (built or not, which backend, archs, what the build recorded:
  CK generation and commit on ROCm, CUTLASS on CUDA). Nothing is ever built: a missing extension is
  reported with the command that builds it, and the rest runs on what is there;
- the GPU test suite (``gpu_suite``): ``pytest -m gpu`` as a subprocess, its JUnit XML parsed;
- op_tests (``optests``): ``op_tests/test_grouped_gemm.py --smoke --moe --quant ...`` as a subprocess;
- a short benchmark (``benchmark``): op_tests' timed cases beside the torch peers available here (a loop
  of ``torch.matmul``, i.e. cuBLAS / hipBLASLt; ``torch._grouped_mm``, ``torch._scaled_grouped_mm``), and
  aiter's GEMMs with ``--aiter``.

It writes ``selftest.md`` and ``selftest.json`` (schema ``schema.SCHEMA``, checked by ``schema.validate``)
plus each subprocess's log, prints a one-line verdict, and exits 1 when any check failed.
See docs/SELFTEST.md.
"""
from .schema import SCHEMA, validate

__all__ = ["SCHEMA", "validate"]
