"""Stateless ops: the result is a pure function of the arguments, and `state` is never modified.

`state` is an int64 tensor of shape (2,): [seed, offset], both read as unsigned 64-bit. The element at
logical (row-major) index i takes words offset + k*i ... offset + k*i + k - 1 of seed's Philox4x32-10
stream (k = 2 for float64, else 1). See docs/stream.md.
"""
import torch

from . import _checks
from ._ops import ops


def words_used(numel, dtype):
    """Stream words one call on `numel` elements of `dtype` consumes: round_up(numel * k, 4).

    A Generator advances its offset by this much per call, whatever the op's parameters."""
    if isinstance(numel, bool) or not isinstance(numel, (int, torch.SymInt)):
        raise TypeError(f"numel must be an int, got {type(numel).__name__}")
    if isinstance(numel, int) and numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    _checks.float_dtype(dtype, "dtype")
    k = 2 if dtype == torch.float64 else 1
    return (numel * k + 3) // 4 * 4


def bits(size, state):
    """An int64 tensor of `size` whose elements are consecutive stream words, each in [0, 2^32)."""
    size = _checks.size(size)
    _checks.state(state)
    return ops.bits(size, state)


def uniform(like, state, low=0.0, high=1.0, *, dtype=None):
    """U[low, high) with the dtype (or `dtype`), device and strides of torch.empty_like(like)."""
    _checks.strided(like, "like")
    _checks.state(state)
    _checks.same_device(like, state, "like")
    _checks.float_dtype(like.dtype if dtype is None else dtype, "dtype" if dtype is not None else "like's dtype")
    low, high = _checks.interval(low, high, like.dtype if dtype is None else dtype)
    return ops.uniform(like, state, low, high, dtype)


def quantize_noise(x, state, half=0.5):
    """x + U[-half, half) in one pass; differentiable, with d/dx = 1."""
    _checks.float_tensor(x)
    _checks.state(state)
    _checks.same_device(x, state)
    return ops.quantize_noise(x, state, _checks.half_width(half, dtype=x.dtype))


def dropout(x, state, p):
    """Keeps x[i] * 1/(1-p) iff u[i] >= p, else 0. Backward recomputes the mask from `state`."""
    _checks.float_tensor(x)
    _checks.state(state)
    _checks.same_device(x, state)
    return ops.dropout(x, state, _checks.probability(p))
