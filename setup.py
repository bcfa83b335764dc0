"""Builds torch_rngx._C: C11 kernels (csrc/kernels) plus thin stable-ABI glue (csrc/*.cpp, csrc/module.c).

One abi3 build loads on every torch >= 2.10 (TORCH_TARGET_VERSION), on any CPython >= 3.9 (Py_LIMITED_API).
"""
import glob
import os

import torch.utils.cpp_extension as tce
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

TORCH_TARGET_VERSION = "0x020a000000000000"  # 2.10: the first with torch_parallel_for and torch_call_dispatcher
PY_LIMITED_API = "0x03090000"

C_FLAGS = ["-std=c11", "-O3", "-ffp-contract=off", "-fno-math-errno", "-Wall", "-Wextra"]
# torch's headers are system headers to us: their warnings are not ours to fix.
CXX_FLAGS = ["-std=c++17", "-O3", "-ffp-contract=off", "-Wall", "-Wextra"] + [f"-isystem{d}" for d in tce.include_paths()]
CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")


class BuildExt(build_ext):
    """Compiles .c as C11 and .cpp as C++17 within one extension (setuptools applies one flag list to both)."""

    def build_extensions(self):
        compile_one = self.compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
            flags = C_FLAGS if src.endswith(".c") else CXX_FLAGS
            compile_one(obj, src, ext, cc_args, extra_postargs + flags, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


ext = Extension(
    "torch_rngx._C",
    sources=sorted(glob.glob(os.path.join("csrc", "kernels", "*.c")))
    + sorted(glob.glob(os.path.join("csrc", "*.cpp")))
    + [os.path.join("csrc", "module.c")],
    include_dirs=[CSRC],
    library_dirs=tce.library_paths(),
    libraries=["c10", "torch_cpu"],
    define_macros=[("Py_LIMITED_API", PY_LIMITED_API), ("TORCH_TARGET_VERSION", TORCH_TARGET_VERSION)],
    py_limited_api=True,
)

setup(
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
