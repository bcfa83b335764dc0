"""Stateful functions, like torch's: each call takes its key from a Generator or an nn.RNG module (advancing
it), or, with generator=None, draws a fresh seed from torch's default CPU generator, so torch.manual_seed
reproduces the sequence in eager and compiled code alike."""
import torch

from . import _checks
from ._autograd import draw
from .generator import owner_of


def uniform_like(x, low=0.0, high=1.0, *, generator=None, dtype=None):
    """U[low, high) shaped, strided and placed like torch.empty_like(x, dtype=dtype)."""
    _checks.strided(x, "x")
    _checks.float_dtype(x.dtype if dtype is None else dtype, "x's dtype" if dtype is None else "dtype")
    out_dtype = x.dtype if dtype is None else dtype
    low, high = _checks.interval(low, high, out_dtype)
    return draw("uniform", x, owner_of(generator), out_dtype, low, high, dtype)


def rand_like(x, *, generator=None, dtype=None):
    """U[0, 1), like torch.rand_like."""
    return uniform_like(x, 0.0, 1.0, generator=generator, dtype=dtype)


def quantize(x, mode="noise", means=None, *, generator=None):
    """CompressAI's EntropyModel.quantize: "noise" -> x + U[-0.5, 0.5); "dequantize" -> round(x - means) +
    means; "symbols" -> round(x - means).int(). Only "noise" draws random numbers."""
    if mode not in ("noise", "dequantize", "symbols"):
        raise ValueError(f'mode must be "noise", "dequantize" or "symbols", got {mode!r}')
    _checks.float_tensor(x)
    if mode == "noise":
        return draw("noise", x, owner_of(generator), x.dtype, 0.5)
    if means is not None:
        _checks.tensor(means, "means")
        try:
            shape = torch.broadcast_shapes(means.shape, x.shape)
        except RuntimeError:
            shape = None
        if shape != x.shape:
            raise ValueError(f"means of shape {tuple(means.shape)} does not broadcast to x's {tuple(x.shape)}")
    y = torch.round(x if means is None else x - means)
    if mode == "symbols":
        return y.int()
    return y if means is None else y + means


def dropout(x, p=0.5, training=True, *, generator=None):
    """Like torch.nn.functional.dropout; the identity (drawing nothing) when not training."""
    return dropout_from(x, p, training, owner_of(generator))


def dropout_from(x, p, training, owner):
    """dropout drawing from `owner`: a state tensor advanced in place, or None for torch's generator."""
    _checks.float_tensor(x)
    p = _checks.probability(p)
    if not training:
        return x
    return draw("dropout", x, owner, x.dtype, p)
