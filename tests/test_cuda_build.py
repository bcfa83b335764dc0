"""The CUDA build (`make cuda-build-check`), imported on a machine that may have no GPU: it loads against torch's
CUDA build, registers the CUDA kernels, and its CPU ops still give the stream's values. The CUDA kernels live in
their own library, torch_rngx._C_cuda: the CPU library _C links no CUDA, so the same wheel loads over a CPU torch.

Skipped unless RNGX_CUDA_BUILD names the folder holding that build's torch_rngx (make sets it)."""
import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("RNGX_CUDA_BUILD")
pytestmark = pytest.mark.skipif(not BUILD, reason="RNGX_CUDA_BUILD is not set (make cuda-build-check sets it)")

if BUILD:
    import torch

    import torch_rngx
    from torch_rngx import functional as F

OPS = ("bits", "uniform", "quantize_noise", "dropout")
# Random123's known answer for philox4x32-10 at counter 0, key 0: block 0 of seed 0's stream.
KAT = [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_imports_the_cuda_build():
    here = os.path.realpath(torch_rngx.__file__)
    assert here.startswith(os.path.realpath(BUILD) + os.sep), f"imported {here}, not the build in {BUILD}"
    assert torch.version.cuda is not None, "expected torch's CUDA build"
    assert "torch_rngx._C_cuda" in sys.modules


def needed(library):
    """The shared libraries a library names (its ELF NEEDED entries)."""
    out = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_only_the_cuda_library_links_cuda():
    from torch_rngx import _C, _C_cuda

    assert not [n for n in needed(_C.__file__) if "cuda" in n], needed(_C.__file__)
    assert {"libtorch_cuda.so"} <= set(needed(_C_cuda.__file__))
    assert any(n.startswith("libcudart.so") for n in needed(_C_cuda.__file__)), needed(_C_cuda.__file__)


LIBRARIES_ALONE = r"""
import sys
import torch
has = lambda key: torch._C._dispatch_has_kernel_for_dispatch_key("rngx::uniform", key)
torch.ops.load_library(sys.argv[1])
print(has("CPU"), has("CUDA"))
torch.ops.load_library(sys.argv[2])
print(has("CPU"), has("CUDA"))
"""


def test_cuda_kernels_come_with_the_cuda_library():
    """A process without torch_rngx (a C++ program, torch.ops.load_library) loads _C for the ops and their CPU
    kernels, then _C_cuda for the CUDA kernels."""
    from torch_rngx import _C, _C_cuda

    run = subprocess.run([sys.executable, "-c", LIBRARIES_ALONE, _C.__file__, _C_cuda.__file__], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "False", "True", "True"]


@pytest.mark.parametrize("op", OPS)
def test_kernels_registered(op):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"rngx::{op}", "CPU")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"rngx::{op}", "CUDA")


def test_cpu_bits_match_known_answer():
    assert (F.bits([4], torch.tensor([0, 0])).to(torch.int64) & 0xFFFFFFFF).tolist() == KAT


def test_cpu_ops_follow_the_stream():
    state = torch.tensor([0x1234_5678_9ABC_DEF0, 8])
    x = torch.randn(2, 3, 4, 5)
    u = (F.bits(x.shape, state) & 0xFFFFFF).to(torch.float32) * 2.0**-24
    assert torch.equal(F.uniform(x, state), u)
    assert torch.equal(F.quantize_noise(x, state, 0.5), x + (-0.5 + u * 1.0))
    assert torch.equal(F.dropout(x, state, 0.25), torch.where(u >= 0.25, x * (1 / 0.75), 0.0))
    # Layout does not change the values, only where they live.
    xc = x.to(memory_format=torch.channels_last)
    assert torch.equal(F.quantize_noise(xc, state, 0.5), F.quantize_noise(x, state, 0.5))


def test_generator_and_errors():
    g = torch_rngx.Generator(7)
    a, b = torch_rngx.rand_like(torch.empty(10), generator=g), torch_rngx.rand_like(torch.empty(10), generator=g)
    assert not torch.equal(a, b) and int(g.state[1]) == 2 * torch_rngx.blocks_used(10, torch.float32) == 6
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        torch_rngx.dropout(torch.ones(3), 1.5)
    with pytest.raises(ValueError, match="device must be"):
        torch_rngx.Generator(0, device="meta")
