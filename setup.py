"""Builds torch_rngx's libraries against the torch of this environment (pip install: see tools/build_backend.py):

- torch_rngx._C: every op schema (csrc/library.cpp), the C11 kernels (csrc/kernels) and the CPU glue over
  PyTorch's stable C ABI (csrc/impl_cpu.cpp, csrc/module.c). It never links CUDA, so it loads under any torch build.
- torch_rngx._C_cuda, when torch is a CUDA build and a CUDA toolkit is found: the CUDA kernels (csrc/kernels/*.cu)
  and their glue (csrc/impl_cuda.cpp, csrc/module_cuda.c), linked against libtorch_cuda and the CUDA runtime.
  `import torch_rngx` loads it only under torch's CUDA build (torch_rngx/_engine/library.py).

Each is one abi3 build that loads on every torch >= 2.10 (TORCH_TARGET_VERSION) and CPython >= 3.9 (Py_LIMITED_API).
"""
import concurrent.futures
import glob
import importlib.machinery
import itertools
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    import torch
    import torch.utils.cpp_extension as tce
except ImportError:
    sys.exit("torch-rngx builds against the torch it will run with: install torch >= 2.10 first (CPU or CUDA build)")

TORCH_TARGET_VERSION = "0x020a000000000000"  # 2.10: the first with torch_parallel_for and torch_call_dispatcher
# Older headers lack what the glue calls: refuse with a clear message rather than fail mid-compile.
if tuple(int(p) for p in str(torch.__version__).split("+")[0].split(".")[:2]) < (2, 10):
    sys.exit(f"torch-rngx builds against torch >= 2.10 (its stable ABI); this environment has torch {torch.__version__}")
PY_LIMITED_API = "0x03090000"

# -fvisibility=hidden: each library exports only its PyInit_ function, so _C and _C_cuda, which both compile some
# of csrc/kernels, never bind each other's copies when a C++ program loads both with RTLD_GLOBAL.
C_FLAGS = ["-std=c11", "-O3", "-ffp-contract=off", "-fno-math-errno", "-fvisibility=hidden", "-Wall", "-Wextra"]
# torch's headers are system headers to us: their warnings are not ours to fix.
CXX_FLAGS = ["-std=c++17", "-O3", "-ffp-contract=off", "-fvisibility=hidden", "-Wall", "-Wextra"] + [
    f"-isystem{d}" for d in tce.include_paths()
]
CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")


def _cuda_home():
    """_C_cuda is built when torch is a CUDA build and nvcc exists; USE_CUDA=0/1 forces the choice.
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
# --fmad=false on top of __fmul_rn/__fadd_rn: no multiply-add is ever fused, as on the CPU. --threads 0: the two
# targets compiled side by side, one per core (ptxas for sm_90 took 148 s and the PTX 69 s one after the other on a
# 2-core Xeon, 163 s side by side).
NVCC_FLAGS = ["-std=c++17", "-O3", "--fmad=false", "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
              "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_80,code=compute_80", "--threads", "0"]


class BuildExt(build_ext):
    """Compiles .c as C11, .cpp as C++17 and .cu with nvcc (setuptools applies one flag list to all).

    Every build compiles from scratch, each library into its own temporary folder: setuptools would skip a library
    newer than its sources, and one built against another torch, or as another variant, looks just as new. Any other
    file of our libraries' names where this build puts them (_C_cuda in a CPU-only build, a _C.cpython-*.so, which
    Python would import before _C.abi3.so) is removed, so neither the package nor a wheel keeps one from an earlier
    build."""

    def run(self):
        self.force = True
        outputs = {self.get_ext_fullpath(ext.name) for ext in self.extensions}
        folder = os.path.dirname(self.get_ext_fullpath("torch_rngx._C"))
        for name, suffix in itertools.product(("_C", "_C_cuda"), importlib.machinery.EXTENSION_SUFFIXES):
            stale = os.path.join(folder, name + suffix)
            if stale not in outputs and os.path.exists(stale):
                os.remove(stale)
        super().run()

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

        def compile_all(sources, output_dir=None, macros=None, include_dirs=None, debug=0, extra_preargs=None,
                        extra_postargs=None, depends=None):
            # setuptools compiles one source after another; a build here is a handful of independent files
            macros, objects, extra_postargs, pp_opts, build = self.compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = self.compiler._get_cc_args(pp_opts, debug, extra_preargs)
            with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
                jobs = [pool.submit(_compile, obj, *build[obj], cc_args, extra_postargs, pp_opts) for obj in objects]
                for job in jobs:
                    job.result()
            return objects

        self.compiler._compile = _compile
        self.compiler.compile = compile_all
        super().build_extensions()

    def build_extension(self, ext):
        base = self.build_temp
        self.build_temp = os.path.join(base, ext.name)
        try:
            super().build_extension(ext)
        finally:
            self.build_temp = base


def sources(*patterns):
    return sorted(f for p in patterns for f in glob.glob(os.path.join("csrc", p)))


LIMITS = [("Py_LIMITED_API", PY_LIMITED_API), ("TORCH_TARGET_VERSION", TORCH_TARGET_VERSION)]
extensions = [
    Extension(
        "torch_rngx._C",
        sources=sources("kernels/*.c", "library.cpp", "impl_cpu.cpp", "module.c"),
        include_dirs=[CSRC],
        library_dirs=tce.library_paths(),
        libraries=["c10", "torch_cpu"],
        # the torch this build is made against, for `python -m torch_rngx` (_C.build())
        define_macros=LIMITS + [("RNGX_BUILT_WITH_TORCH", f'"{torch.__version__}"')],
        py_limited_api=True,
    )
]
if CUDA_HOME is not None:
    # The C code the CUDA glue and launchers call: a job's set-up (job.c); the parameters are elements.h's.
    # -DUSE_CUDA: the CUDA parts of the stable ABI need it.
    extensions.append(
        Extension(
            "torch_rngx._C_cuda",
            sources=sources("kernels/job.c", "kernels/*.cu", "impl_cuda.cpp", "module_cuda.c"),
            include_dirs=[CSRC],
            library_dirs=tce.library_paths() + [os.path.join(CUDA_HOME, "lib64")],
            libraries=["c10", "torch_cpu", "torch_cuda", "cudart"],
            define_macros=LIMITS + [("USE_CUDA", "1")],
            py_limited_api=True,
        )
    )
variant = f"_C (CPU) and _C_cuda (CUDA, nvcc in {CUDA_HOME})" if CUDA_HOME else "_C (CPU only)"
print(f"torch-rngx: building {variant} against torch {torch.__version__}", file=sys.stderr)

setup(
    ext_modules=extensions,
    cmdclass={"build_ext": BuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
