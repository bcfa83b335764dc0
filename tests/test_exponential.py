"""Guarantee: exponential gives docs/stream.md's bits (the independent NumPy reference, tests/reference.py) for
every dtype and rate, in every layout, with batched states and under the global view, on every Philox path and
thread count; every value is positive and finite, so -log of it (a Gumbel sample, F.gumbel_softmax's noise) is
finite; vmap over keys gives eager's bits; exponential_like follows torch.manual_seed and advances a Generator by
blocks_used; the values are Exp(rate) (Kolmogorov-Smirnov). Compiled, exported, threaded, on every Philox path and in
a global view, exponential runs with every other op of tests/ops_table.py (test_compile, test_simd_paths,
test_threads, test_global_view)."""
import math

import numpy as np
import pytest
import torch
from conftest import DTYPE_NAMES, FLOAT_DTYPES, INT_VIEW, UINT, layouts, make_state, np_state
from reference import exponential_ref
from scipy import stats

import torch_rngx
from torch_rngx import functional as F

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok(
    "compares a draw with itself in other dtypes, batched and vmapped, on one key")

STATE = make_state(0x0123456789ABCDEF, 2**64 - 2)  # offsets wrap past 2^64 inside the call
RATES = [1.0, 0.25, 3e4, 1e-38, 1e44]  # the last two leave float32's range: the clamps


def bits(t):
    return t.contiguous().view(INT_VIEW[t.element_size()]).numpy().reshape(-1).view(UINT[t.element_size()])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "sliced"])
def test_equals_reference_in_every_layout(dtype, layout):
    x = layouts(dtype=dtype)[layout]
    out = F.exponential(x, STATE, 1.5)
    assert out.dtype == dtype and out.shape == x.shape and out.stride() == torch.empty_like(x).stride()
    np.testing.assert_array_equal(bits(out), exponential_ref(x.shape, np_state(STATE), DTYPE_NAMES[dtype], 1.5))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rate", RATES)
def test_every_rate_equals_reference_and_stays_positive_and_finite(dtype, rate):
    x = torch.empty(5, 2003, dtype=dtype)
    out = F.exponential(x, STATE, rate)
    np.testing.assert_array_equal(bits(out), exponential_ref(x.shape, np_state(STATE), DTYPE_NAMES[dtype], rate))
    assert bool((out > 0).all()) and bool(torch.isfinite(out).all())
    assert bool(torch.isfinite(-out.log()).all())  # a Gumbel sample


@ONE_KEY_FOR_ALL
def test_output_dtype_and_16_bit_values_are_float32s_rounded():
    x = torch.empty(4000)
    e32 = F.exponential(x, STATE)
    assert torch.equal(F.exponential(x, STATE, dtype=torch.float16), e32.half().clamp_min(2.0**-24))
    assert F.exponential(x.double(), STATE).dtype == torch.float64
    assert torch.equal(F.exponential(x, STATE, dtype=torch.float64), F.exponential(x.double(), STATE))


@ONE_KEY_FOR_ALL
def test_batched_states_and_global_view():
    keys = torch.stack([make_state(21 + i, 5 * i) for i in range(3)]).view(3, 1, 1, 2)
    x = torch.empty(3, 4, 7)
    out = F.exponential(x, keys, 2.0)
    for i in range(3):
        assert torch.equal(out[i], F.exponential(x[i], keys[i, 0, 0], 2.0))
    np.testing.assert_array_equal(bits(out), exponential_ref(x.shape, np_state(keys), "float32", 2.0))
    whole = F.exponential(torch.empty(6, 8, 7), STATE)
    block = F.exponential(torch.empty(3, 4, 7), STATE, global_shape=[6, 8, 7], global_start=[2, 3, 0])
    assert torch.equal(block, whole[2:5, 3:7])


def test_gumbel_softmax_from_exponential():
    """F.gumbel_softmax's recipe with our noise: softmax((logits - log E) / tau) is finite and sums to 1."""
    logits = torch.randn(64, 10, generator=torch.Generator().manual_seed(0))
    g = -F.exponential(logits, STATE).log()
    y = torch.softmax((logits + g) / 0.5, dim=-1)
    assert bool(torch.isfinite(y).all()) and torch.allclose(y.sum(-1), torch.ones(64))
    hard = torch.zeros_like(y).scatter_(-1, y.argmax(-1, keepdim=True), 1.0)
    assert torch.equal(hard.sum(-1), torch.ones(64))


@ONE_KEY_FOR_ALL
def test_stateful_follows_manual_seed_and_generator():
    x = torch.empty(5, 7)
    torch.manual_seed(3)
    a, b = torch_rngx.exponential_like(x), torch_rngx.exponential_like(x)
    torch.manual_seed(3)
    assert torch.equal(a, torch_rngx.exponential_like(x)) and not torch.equal(a, b)
    for dtype in (torch.float32, torch.float64):
        g = torch_rngx.Generator(17)
        first = torch_rngx.exponential_like(x, 2.0, generator=g, dtype=dtype)
        assert int(g.state[1]) == torch_rngx.blocks_used(x.numel(), dtype, "exponential")
        assert torch.equal(first, F.exponential(x, make_state(17, 0), 2.0, dtype=dtype))
        blocks = int(g.state[1])
        second = torch_rngx.exponential_like(x, 2.0, generator=g, dtype=dtype)
        assert torch.equal(second, F.exponential(x, make_state(17, blocks), 2.0, dtype=dtype))
    assert torch_rngx.blocks_used(10, torch.float32, "exponential") == 3
    assert torch_rngx.blocks_used(10, torch.float64, "exponential") == 5


def test_not_differentiable():
    x = torch.randn(4, 5, requires_grad=True)
    for out in (F.exponential(x, STATE), torch_rngx.exponential_like(x)):
        assert not out.requires_grad and out.grad_fn is None


@ONE_KEY_FOR_ALL
def test_vmap_over_keys_equals_batched_state():
    keys = F.split(STATE, 3)
    x = torch.empty(5, 4)
    out = torch.func.vmap(lambda k: F.exponential(x, k, 2.0), randomness="different")(keys)
    for i in range(3):
        assert torch.equal(out[i], F.exponential(x, keys[i], 2.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rate", [1.0, 7.5])
def test_kolmogorov_smirnov(dtype, rate):
    v = F.exponential(torch.empty(1 << 20, dtype=dtype), make_state(31, 0), rate).double().numpy()
    res = stats.kstest(v, stats.expon(scale=1 / rate).cdf)
    assert res.pvalue > 1e-6, res
    assert abs(v.mean() * rate - 1) < 6 / math.sqrt(len(v))


def test_kolmogorov_smirnov_can_fail():
    v = F.exponential(torch.empty(1 << 20), make_state(31, 0), 1.0).double().numpy()
    assert stats.kstest(v, stats.expon(scale=1 / 1.02).cdf).pvalue < 1e-6  # 2% off in rate is caught
