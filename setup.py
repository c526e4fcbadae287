"""Build: a CUDA torch builds the CUTLASS extension, a ROCm torch the CK-tile one, a CPU torch nothing.

CKGEMM_NATIVE=0 skips the native build; CKGEMM_NATIVE=1 makes a missing toolchain an error.
Install with `pip install --no-build-isolation -e .` so the build sees the installed torch.
"""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_support import native_extension  # noqa: E402

ext_modules, cmdclass = native_extension()
setup(ext_modules=ext_modules, cmdclass=cmdclass)
