"""Helpers of op_tests/test_grouped_gemm.py: options, run plan, correctness, peers, timing, bad inputs."""
