"""The references' IEEE fp32 matmuls (ckgemm/_precision.py) neither raise for, nor change, the user's TF32 setting.

torch.backends.cuda.matmul's flags exist in CPU builds too, so the save/set/restore runs here; a CUDA device
is named without being used.
"""
import pytest
import torch

import ckgemm
from ckgemm._precision import ieee_fp32_matmul

FLAGS = torch.backends.cuda.matmul
NEW_API = hasattr(FLAGS, "fp32_precision")
CUDA = torch.device("cuda")


@pytest.fixture
def restore_flags():
    saved = FLAGS.fp32_precision if NEW_API else FLAGS.allow_tf32
    yield
    if NEW_API:
        FLAGS.fp32_precision = saved
    else:
        FLAGS.allow_tf32 = saved


@pytest.mark.skipif(not NEW_API, reason="torch without fp32_precision")
@pytest.mark.parametrize("user", ["tf32", "ieee", "none"])
def test_new_api_setting_kept(restore_flags, user):
    FLAGS.fp32_precision = user
    with ieee_fp32_matmul(CUDA):
        assert FLAGS.fp32_precision == "ieee"
    assert FLAGS.fp32_precision == user


@pytest.mark.skipif(not NEW_API, reason="torch without fp32_precision")
def test_legacy_setting_kept_and_later_opt_in_works(restore_flags):
    FLAGS.allow_tf32 = True  # the user's legacy opt-in
    with ieee_fp32_matmul(CUDA):
        assert FLAGS.fp32_precision == "ieee"
    assert FLAGS.allow_tf32 is True and FLAGS.fp32_precision == "tf32"
    FLAGS.fp32_precision = "none"
    with ieee_fp32_matmul(CUDA):
        pass
    torch.backends.fp32_precision = "tf32"  # a later global opt-in still reaches cuBLAS matmuls
    try:
        assert FLAGS.fp32_precision == "tf32"
    finally:
        torch.backends.fp32_precision = "none"


@pytest.mark.skipif(not NEW_API, reason="torch without fp32_precision")
@pytest.mark.parametrize("user", ["set_float32_matmul_precision('high')", "allow_tf32 = True"])
def test_legacy_opt_in_readable_inside_and_restored(restore_flags, user):
    """A legacy opt-in stays readable inside the block (the two APIs agree there) and comes back after."""
    saved_legacy = torch.get_float32_matmul_precision()
    try:
        if user.startswith("set_"):
            torch.set_float32_matmul_precision("high")
        else:
            FLAGS.allow_tf32 = True
        before = (torch.get_float32_matmul_precision(), FLAGS.allow_tf32, FLAGS.fp32_precision)
        with ieee_fp32_matmul(CUDA):
            assert FLAGS.allow_tf32 is False and torch.get_float32_matmul_precision() == "highest"
            assert FLAGS.fp32_precision == "ieee"
        assert (torch.get_float32_matmul_precision(), FLAGS.allow_tf32, FLAGS.fp32_precision) == before
    finally:
        torch.set_float32_matmul_precision(saved_legacy)


def test_other_devices_untouched(restore_flags, monkeypatch):
    """CPU tensors on a machine with a GPU: the op's torch backend leaves the flags alone (it used to set and
    restore the legacy flag whenever CUDA was available, which raises after the new API was used)."""
    if NEW_API:
        FLAGS.fp32_precision = "tf32"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gen = torch.Generator().manual_seed(0)
    a = [torch.randn(4, 8, generator=gen, dtype=torch.bfloat16)]
    b = [torch.randn(3, 8, generator=gen, dtype=torch.bfloat16)]
    out = ckgemm.grouped_gemm(a, b, backend="torch")
    assert torch.allclose(out[0].float(), a[0].float() @ b[0].float().t(), rtol=1e-2, atol=1e-2)
    with ieee_fp32_matmul(torch.device("cpu")):
        if NEW_API:
            assert FLAGS.fp32_precision == "tf32"
    if NEW_API:
        assert FLAGS.fp32_precision == "tf32"
