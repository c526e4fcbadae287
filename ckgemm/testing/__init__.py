"""ckgemm.testing: a harness for checking and timing grouped-GEMM-like kernels."""
