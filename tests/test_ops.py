"""One class per op: values against the independent reference, layouts, edge cases, opcheck."""
import math

import numpy as np
import pytest
import torch
from conftest import DTYPE_NAMES, FLOAT_DTYPES, from_bits, layouts, make_state, recompute
from reference import bits_ref, dropout_ref, quantize_noise_ref, uniform_ref

from torch_rngx import functional as F
from torch_rngx import ops

SEED, OFFSET = 0x9E3779B97F4A7C15, 6  # the offset counts Philox blocks


def compute_values(x):
    """x's values in logical order in the compute type: float64 for float64, float32 otherwise."""
    return x.detach().to(torch.float64 if x.dtype == torch.float64 else torch.float32).contiguous().view(-1).numpy()


def ref_uniform(shape, dtype, low, high):
    return from_bits(uniform_ref(shape, (SEED, OFFSET), DTYPE_NAMES[dtype], low, high), dtype, shape)


def ref_noise(x, half):
    bits = quantize_noise_ref(compute_values(x), (SEED, OFFSET), DTYPE_NAMES[x.dtype], half)
    return from_bits(bits, x.dtype, x.shape)


def ref_dropout(x, p):
    return from_bits(dropout_ref(compute_values(x), (SEED, OFFSET), DTYPE_NAMES[x.dtype], p), x.dtype, x.shape)


STATE = make_state(SEED, OFFSET)


class TestBits:
    def test_shape_dtype_and_range(self):
        out = F.bits((5, 0, 2), STATE)
        assert out.shape == (5, 0, 2) and out.dtype == torch.int32
        out = F.bits((64, 64), STATE, dtype=torch.uint32)
        assert out.dtype == torch.uint32
        wide = out.to(torch.int64)  # torch 2.13 has no min/max for uint32
        assert 0 <= int(wide.min()) and int(wide.max()) < 2**32 and int(wide.max()) >= 2**31

    def test_equals_reference(self):
        out = F.bits((3, 40), STATE)
        np.testing.assert_array_equal(out.numpy(), bits_ref((3, 40), (SEED, OFFSET), "int32"))

    def test_does_not_modify_state_and_is_repeatable(self):
        state = STATE.clone()
        first = F.bits([9], state)
        with recompute():
            assert torch.equal(first, F.bits([9], state)) and torch.equal(state, STATE)

    def test_opcheck(self):
        torch.library.opcheck(ops.bits.default, ([3, 5], STATE, torch.int32))
        torch.library.opcheck(ops.bits.default, ([3, 5], STATE, torch.uint64))


class TestUniform:
    @pytest.mark.parametrize("dtype", FLOAT_DTYPES)
    @pytest.mark.parametrize("low,high", [(0.0, 1.0), (-2.5, 7.25), (1e-3, 1e-3 + 1e-6), (-1e4, 1e4), (3.0, 3.0)])
    def test_equals_reference(self, dtype, low, high):
        like = torch.empty(3, 40, dtype=dtype)
        expected = ref_uniform((3, 40), dtype, low, high)
        assert torch.equal(F.uniform(like, STATE, low, high), expected)

    @pytest.mark.parametrize("dtype", FLOAT_DTYPES)
    def test_unit_interval_is_half_open_in_the_type(self, dtype):
        u = F.uniform(torch.empty(1 << 16, dtype=dtype), make_state(3, 0))
        assert float(u.min()) >= 0 and float(u.max()) < 1

    @pytest.mark.parametrize("name,like", layouts().items())
    def test_layout_invariance(self, name, like):
        out = F.uniform(like, STATE)
        assert out.stride() == torch.empty_like(like).stride()
        with recompute():
            assert torch.equal(out, F.uniform(like.contiguous(), STATE))

    def test_dtype_override(self):
        out = F.uniform(torch.empty(7, dtype=torch.float16), STATE, dtype=torch.float64)
        assert out.dtype == torch.float64 and torch.equal(out, ref_uniform((7,), torch.float64, 0.0, 1.0))

    def test_does_not_modify_state_and_is_repeatable(self):
        state = STATE.clone()
        a = F.uniform(torch.empty(9), state)
        with recompute():
            b = F.uniform(torch.empty(9), state)
        assert torch.equal(a, b) and torch.equal(state, STATE)

    def test_not_differentiable(self):
        x = torch.randn(3, requires_grad=True)
        assert not F.uniform(x, STATE).requires_grad

    def test_opcheck(self):
        torch.library.opcheck(ops.uniform.default, (torch.randn(4, 3).t(), STATE, -1.0, 1.0, None))


class TestQuantizeNoise:
    @pytest.mark.parametrize("dtype", FLOAT_DTYPES)
    @pytest.mark.parametrize("half", [0.5, 0.0, 3.75])
    def test_equals_reference(self, dtype, half):
        x = (torch.randn(6, 50, generator=torch.Generator().manual_seed(0)) * 4).to(dtype)
        assert torch.equal(F.quantize_noise(x, STATE, half), ref_noise(x, half))

    def test_noise_is_within_half(self):
        x = torch.zeros(1 << 14)
        y = F.quantize_noise(x, STATE, 0.5)
        assert float(y.min()) >= -0.5 and float(y.max()) < 0.5

    @pytest.mark.parametrize("name,x", layouts().items())
    def test_layout_invariance(self, name, x):
        out = F.quantize_noise(x, STATE)
        assert out.stride() == torch.empty_like(x).stride()
        with recompute():
            assert torch.equal(out, F.quantize_noise(x.contiguous(), STATE))

    def test_same_noise_for_float16_and_float32(self):
        x = torch.zeros(100)
        half = F.quantize_noise(x.half(), STATE)
        with recompute():
            assert torch.equal(half, F.quantize_noise(x, STATE).half())

    def test_gradient_is_identity(self):
        x = torch.randn(4, 5, requires_grad=True)
        g = torch.randn(4, 5)
        F.quantize_noise(x, STATE).backward(g)
        assert torch.equal(x.grad, g)

    def test_nan_and_inf_propagate(self):
        y = F.quantize_noise(torch.tensor([float("nan"), float("inf"), -float("inf")]), STATE)
        assert math.isnan(y[0]) and y[1] == float("inf") and y[2] == -float("inf")

    def test_empty_and_zero_dim(self):
        assert F.quantize_noise(torch.empty(0, 3), STATE).shape == (0, 3)
        x = torch.tensor(2.0)
        y = F.quantize_noise(x, STATE)
        assert y.shape == () and torch.equal(y, ref_noise(x, 0.5))

    def test_opcheck(self):
        x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last).requires_grad_()
        torch.library.opcheck(ops.quantize_noise.default, (x, STATE, 0.5))


class TestDropout:
    @pytest.mark.parametrize("dtype", FLOAT_DTYPES)
    @pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
    def test_equals_reference(self, dtype, p):
        x = torch.randn(6, 50, generator=torch.Generator().manual_seed(1)).to(dtype)
        assert torch.equal(F.dropout(x, STATE, p), ref_dropout(x, p))

    def test_p0_is_a_copy_and_p1_gives_zeros(self):
        x = torch.randn(100)
        assert torch.equal(F.dropout(x, STATE, 0.0), x)
        with recompute():
            assert torch.equal(F.dropout(x, STATE, 1.0), torch.zeros(100))

    def test_same_mask_for_float16_and_float32(self):
        x = torch.ones(1000)
        half = F.dropout(x.half(), STATE, 0.3)
        with recompute():
            assert torch.equal(half == 0, F.dropout(x, STATE, 0.3) == 0)

    @pytest.mark.parametrize("name,x", layouts().items())
    def test_layout_invariance(self, name, x):
        out = F.dropout(x, STATE, 0.4)
        assert out.stride() == torch.empty_like(x).stride()
        with recompute():
            assert torch.equal(out, F.dropout(x.contiguous(), STATE, 0.4))

    @pytest.mark.parametrize("dtype", FLOAT_DTYPES)
    def test_backward_recomputes_the_mask(self, dtype):
        x = torch.randn(8, 33).to(dtype).requires_grad_()
        y = F.dropout(x, STATE, 0.35)
        g = torch.randn(8, 33).to(dtype)
        y.backward(g)
        assert torch.equal(x.grad, ref_dropout(g, 0.35))

    def test_backward_saves_only_the_state(self):
        x = torch.randn(1000, requires_grad=True)
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            F.dropout(x, STATE, 0.5)
        assert [tuple(t.shape) for t in saved] == [(2,)] and saved[0].dtype == torch.int64

    def test_nan_propagates_where_kept(self):
        y = F.dropout(torch.full((64,), float("nan")), STATE, 0.5)
        with recompute():
            kept = F.dropout(torch.ones(64), STATE, 0.5) != 0
        assert bool(torch.isnan(y[kept]).all()) and bool((y[~kept] == 0).all())

    def test_opcheck(self):
        x = torch.randn(5, 4).t().requires_grad_()
        torch.library.opcheck(ops.dropout.default, (x, STATE, 0.25))


class TestSeedState:
    def test_follows_torch_manual_seed(self):
        torch.manual_seed(32)
        a, b = ops.seed_state(), ops.seed_state()
        torch.manual_seed(32)
        assert torch.equal(ops.seed_state(), a) and torch.equal(ops.seed_state(), b)
        assert not torch.equal(a, b) and a.shape == (2,) and (a >= 0).all()  # [s, o], 63 random bits each

    def test_opcheck(self):
        torch.library.opcheck(ops.seed_state.default, ())
