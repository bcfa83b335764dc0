import numpy as np
import pytest
import torch

import torch_rngx  # noqa: F401  (loads the ops)

# Compiling a function per layout would hit dynamo's default recompile limit in parametrized tests.
torch._dynamo.config.cache_size_limit = 64
torch._dynamo.config.accumulated_cache_size_limit = 1024

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}


def make_state(seed, offset):
    """[seed, offset] as int64 bit patterns of the unsigned values."""
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    return torch.tensor([signed(seed), signed(offset)], dtype=torch.int64)


def layouts(shape=(2, 3, 4, 5), dtype=torch.float32):
    """name -> tensor with the same logical values in different memory layouts."""
    base = torch.randn(shape, generator=torch.Generator().manual_seed(11)).to(dtype)
    wide = torch.randn(shape[0], shape[1] + 1, shape[2] * 2, shape[3] + 2, generator=torch.Generator().manual_seed(12))
    sliced = wide[:, 1:, ::2, 1:-1].to(dtype)
    sliced.copy_(base)
    return {
        "contiguous": base,
        "channels_last": base.to(memory_format=torch.channels_last),
        "transposed": base.transpose(0, 3).contiguous().transpose(0, 3),
        "sliced": sliced,
    }


@pytest.fixture
def rng():
    return np.random.default_rng(1234)

# test_compile takes each output's gradient separately (retain_graph=True), which donated buffers forbid.
torch._functorch.config.donated_buffer = False
