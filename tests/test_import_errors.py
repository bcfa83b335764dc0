"""`import torch_rngx` where the compiled libraries are missing or do not load raises an ImportError that says what
happened and what to run (torch_rngx/_engine/library.py): a torch_rngx folder without a build shadowing the installed
package, a source tree without a build, a CPU library linked against CUDA under a CPU torch, and CUDA kernels that
do not load under torch's CUDA build. A CPU torch never loads the CUDA library. Each case runs in a fresh process,
on a copy of the package's Python files."""
import os
import shutil
import subprocess
import sys

import pytest
import torch

import torch_rngx

INSTALLED = os.path.dirname(os.path.abspath(torch_rngx.__file__))

# Imports torch_rngx from argv[1] where no other copy is importable: the installed one (on sys.path, or behind an
# editable install's finder) is hidden first. argv[2]: a CUDA version to pretend torch was built with, or "".
ALONE = r"""
import os
import sys

import torch

here, cuda = sys.argv[1], sys.argv[2]
sys.meta_path = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path = [here] + [p for p in sys.path if not os.path.isdir(os.path.join(p or os.getcwd(), "torch_rngx"))]
if cuda:
    torch.version.cuda = cuda
import torch_rngx

print("loaded", sorted(m for m in sys.modules if m.startswith("torch_rngx._C")))
"""


def python_files(to):
    """A copy of the installed package without its compiled libraries."""
    shutil.copytree(INSTALLED, to / "torch_rngx", ignore=shutil.ignore_patterns("*.so", "__pycache__", "include"))
    return to / "torch_rngx"


def shared_library(path, tmp_path, needs=None):
    """An empty shared library at `path`; with `needs`, one that names a library `needs` that does not exist."""
    source = tmp_path / "empty.c"
    source.write_text("int rngx_placeholder;\n")
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-shared", "-fPIC", "-o", str(path), str(source)]
    if needs:
        dependency = tmp_path / needs
        subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,{needs}", "-o", str(dependency), str(source)],
                       check=True)
        cmd += ["-Wl,--no-as-needed", str(dependency)]
    subprocess.run(cmd, check=True)
    if needs:
        os.remove(dependency)


def run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ""})


def import_error(done):
    assert done.returncode != 0, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), done.stderr
    return last[len("ImportError: "):]


@pytest.mark.parametrize("clone", [True, False], ids=["source tree", "copy"])
def test_a_folder_without_a_build_names_the_install_it_hides(tmp_path, clone):
    """The issue's case: Python run in a clone's root (a source tree: it has setup.py) after `pip install .`."""
    if clone:
        (tmp_path / "setup.py").write_text("")
    here = python_files(tmp_path)
    message = import_error(run(["-c", "import torch_rngx"], cwd=tmp_path))
    fix = f"build this tree in place: `pip install -e {tmp_path}`" if clone else "take its folder off PYTHONPATH"
    assert message == (
        f"torch_rngx was imported from {here}, which has no compiled library (_C), and it hides the torch-rngx "
        f"installed in {INSTALLED}: Python looks in the current folder (or the script's) and PYTHONPATH before the "
        f"installed packages. Run Python from another folder, or {fix}."
    )


def test_a_source_tree_without_a_build_says_how_to_build_it(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "setup.py").write_text("")
    here = python_files(tmp_path / "src")
    message = import_error(run(["-c", ALONE, str(tmp_path / "src"), ""], cwd=tmp_path))
    assert message == (
        f"torch_rngx's compiled library (_C) is missing from {here}: this source tree is not built. Build it in "
        f"place with `pip install -e {tmp_path / 'src'}` (or `make build` there), or install it with `pip install "
        f"{tmp_path / 'src'}` and run Python from another folder."
    )


@pytest.mark.skipif(torch.version.cuda is not None, reason="needs torch's CPU build, which lacks libtorch_cuda.so")
def test_a_cpu_library_linked_against_cuda_says_so_under_a_cpu_torch(tmp_path):
    """What `pip install .` made before the CUDA kernels had their own library: _C linked libtorch_cuda."""
    here = python_files(tmp_path)
    shared_library(here / "_C.abi3.so", tmp_path, needs="libtorch_cuda.so")
    message = import_error(run(["-c", ALONE, str(tmp_path), ""], cwd=tmp_path))
    assert message == (
        f"{here / '_C.abi3.so'} was built with CUDA (it needs libtorch_cuda.so), which this torch "
        f"{torch.__version__}, a CPU build, does not have: it was built against torch's CUDA build. Rebuild it "
        f"against this torch: {REINSTALL}."
    )


REINSTALL = "`pip install --force-reinstall --no-deps <your torch-rngx clone>` in this environment"


def with_cuda_library(tmp_path):
    """The package with its real CPU library and a CUDA library that needs a CUDA runtime nobody has."""
    here = python_files(tmp_path)
    shutil.copy(torch_rngx._C.__file__, here / "_C.abi3.so")
    shared_library(here / "_C_cuda.abi3.so", tmp_path, needs="libcudart.so.99")
    return here


def test_cuda_kernels_that_do_not_load_say_what_to_build(tmp_path):
    here = with_cuda_library(tmp_path)
    message = import_error(run(["-c", ALONE, str(tmp_path), "13.0"], cwd=tmp_path))
    assert message.startswith(
        f"torch_rngx's CUDA kernels ({here / '_C_cuda.abi3.so'}) do not load with torch {torch.__version__} (CUDA "
        "13.0): libcudart.so.99: cannot open shared object file"
    ), message
    assert message.endswith(
        f"Rebuild them against this torch, with a CUDA 13 toolkit: {REINSTALL}; or without them: the same with "
        "USE_CUDA=0 in the environment."
    ), message


@pytest.mark.skipif(torch.version.cuda is not None, reason="needs torch's CPU build")
def test_a_cpu_torch_never_loads_the_cuda_library(tmp_path):
    """A wheel built against torch's CUDA build, over a CPU torch: _C loads alone, and the ops run."""
    with_cuda_library(tmp_path)
    script = ALONE + "print(torch_rngx.rand_like(torch.empty(3), generator=torch_rngx.Generator(1)).tolist())\n"
    done = run(["-c", script, str(tmp_path), ""], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    want = torch_rngx.rand_like(torch.empty(3), generator=torch_rngx.Generator(1)).tolist()
    assert done.stdout.split("\n")[:2] == ["loaded ['torch_rngx._C']", str(want)]
