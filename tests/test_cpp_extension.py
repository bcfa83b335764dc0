"""The installed C header (torch_rngx.include_dir()) from a C++ extension built with torch.utils.cpp_extension
(examples/cpp_extension): every element it draws equals our ops, bit for bit. The build takes ~20 s of CPU."""
import os
import sys

import pytest
import torch
from conftest import FLOAT_DTYPES, make_state

import torch_rngx
import torch_rngx.functional as F
import torch_rngx.params as P

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "cpp_extension"))
import draw as example  # noqa: E402

pytestmark = [pytest.mark.slow("builds a C++ extension"), pytest.mark.key_reuse_ok("each test draws the same keys through the header and through the ops, to compare them")]

KEYS = [(0, 0), (123, 2**32 - 3), (2**64 - 1, 2**64 - 2), (0xDEADBEEF_01234567, 2**64 - 1)]


@pytest.fixture(scope="module", autouse=True)
def built():
    example.build()


def test_include_dir_holds_the_kernels_headers():
    kernels = os.path.join(os.path.dirname(__file__), "..", "csrc", "kernels")
    for name in ("philox.h", "convert.h", "convert_lanes.h", "dists.h", "elements.h"):
        with open(os.path.join(torch_rngx.include_dir(), "torch_rngx", name)) as got, \
                open(os.path.join(kernels, name)) as want:
            assert got.read() == want.read(), name


def _bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("seed,offset", KEYS)
def test_extension_equals_ops(dtype, seed, offset):
    state = make_state(seed, offset)
    x = (torch.randn(777, generator=torch.Generator().manual_seed(seed % 1000)) * 30).to(dtype)
    x[:3] = torch.tensor([float("nan"), float("inf"), -0.0])
    cases = [
        ("uniform", P.uniform_params(dtype, -3.0, 7.3), F.uniform(x, state, -3.0, 7.3)),
        ("noise", P.noise_params(dtype, 0.37), F.quantize_noise(x, state, 0.37)),
        ("dropout", P.dropout_params(dtype, 0.3), F.dropout(x, state, 0.3)),
        ("bernoulli", P.dropout_params(dtype, 0.3), F.bernoulli(x, state, 0.3)),
        ("normal", P.normal_params(dtype, 0.25, 3.0), F.normal(x, state, 0.25, 3.0)),
    ]
    for op, params, want in cases:
        assert torch.equal(_bits(example.draw(op, x, state, params)), _bits(want)), op


def test_extension_checks_its_arguments():
    with pytest.raises(RuntimeError, match="unknown op"):
        example.draw("gamma", torch.zeros(3), make_state(1, 0), P.normal_params(torch.float32))
    with pytest.raises(RuntimeError, match="state must be one int64 key"):
        example.draw("uniform", torch.zeros(3), torch.zeros(3, dtype=torch.int64), P.uniform_params(torch.float32))
