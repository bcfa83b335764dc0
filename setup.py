"""Builds torch_rngx._C: C11 kernels (csrc/kernels) plus thin stable-ABI glue (csrc/*.cpp, csrc/module.c).

One abi3 build loads on every torch >= 2.10 (TORCH_TARGET_VERSION), on any CPython >= 3.9 (Py_LIMITED_API).
"""
import glob
import os
import sys

import torch
import torch.utils.cpp_extension as tce
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

TORCH_TARGET_VERSION = "0x020a000000000000"  # 2.10: the first with torch_parallel_for and torch_call_dispatcher
# Older headers lack what the glue calls: refuse with a clear message rather than fail mid-compile.
if tuple(int(p) for p in str(torch.__version__).split("+")[0].split(".")[:2]) < (2, 10):
    sys.exit(f"torch-rngx builds against torch >= 2.10 (its stable ABI); this environment has torch {torch.__version__}")
PY_LIMITED_API = "0x03090000"

C_FLAGS = ["-std=c11", "-O3", "-ffp-contract=off", "-fno-math-errno", "-Wall", "-Wextra"]
# torch's headers are system headers to us: their warnings are not ours to fix.
CXX_FLAGS = ["-std=c++17", "-O3", "-ffp-contract=off", "-Wall", "-Wextra"] + [f"-isystem{d}" for d in tce.include_paths()]
CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")


def _cuda_home():
    """The CUDA path is built when torch is a CUDA build and nvcc exists; USE_CUDA=0/1 forces the choice.
    The toolkit is the first of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and torch's guess that has both
    bin/nvcc and lib64 (torch's guess from an nvcc wrapper script on PATH can lack lib64)."""
    force = os.environ.get("USE_CUDA", "")
    if force == "0":
        return None
    homes = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", tce.CUDA_HOME)
    found = [h for h in homes if h and os.path.exists(os.path.join(h, "bin", "nvcc")) and os.path.isdir(os.path.join(h, "lib64"))]
    home = found[0] if found and torch.version.cuda else None
    if force == "1" and home is None:
        sys.exit(f"USE_CUDA=1, but torch {torch.__version__} is not a CUDA build or no CUDA toolkit (nvcc) was found")
    return home


CUDA_HOME = _cuda_home()
# sm_90 machine code (H100/H200) plus compute_80 PTX, which the driver compiles for any newer GPU.
# --fmad=false on top of __fmul_rn/__fadd_rn: no multiply-add is ever fused, as on the CPU.
NVCC_FLAGS = ["-std=c++17", "-O3", "--fmad=false", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90",
              "-gencode", "arch=compute_80,code=compute_80"]


class BuildExt(build_ext):
    """Compiles .c as C11, .cpp as C++17 and .cu with nvcc within one extension (setuptools applies one flag
    list to all)."""

    def build_extensions(self):
        compile_one = self.compiler._compile
        self.compiler.src_extensions.append(".cu")

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
            if src.endswith(".cu"):
                nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
                self.spawn([nvcc, "-c", src, "-o", obj] + pp_opts + NVCC_FLAGS)
                return
            flags = C_FLAGS if src.endswith(".c") else CXX_FLAGS
            compile_one(obj, src, ext, cc_args, extra_postargs + flags, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


# *_cuda.cpp / *.cu are the CUDA path: glue that registers the CUDA kernels (with -DUSE_CUDA, which the CUDA
# parts of the stable ABI need) and the kernels, linked against libtorch_cuda and the CUDA runtime.
cuda = CUDA_HOME is not None
ext = Extension(
    "torch_rngx._C",
    sources=sorted(glob.glob(os.path.join("csrc", "kernels", "*.c")))
    + sorted(f for f in glob.glob(os.path.join("csrc", "*.cpp")) if cuda or not f.endswith("_cuda.cpp"))
    + [os.path.join("csrc", "module.c")]
    + (sorted(glob.glob(os.path.join("csrc", "kernels", "*.cu"))) if cuda else []),
    include_dirs=[CSRC],
    library_dirs=tce.library_paths() + ([os.path.join(CUDA_HOME, "lib64")] if cuda else []),
    libraries=["c10", "torch_cpu"] + (["torch_cuda", "cudart"] if cuda else []),
    define_macros=[("Py_LIMITED_API", PY_LIMITED_API), ("TORCH_TARGET_VERSION", TORCH_TARGET_VERSION)]
    + ([("USE_CUDA", "1")] if cuda else []),
    py_limited_api=True,
)
print(f"torch-rngx: building the {'CUDA and CPU' if cuda else 'CPU-only'} extension", file=sys.stderr)

setup(
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
