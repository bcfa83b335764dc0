"""Samplers composed of the ops, shared by the functional and the stateful forms: channel dropout (one dropout
mask of shape (N, C) broadcast over x[n, c]), channel alpha dropout (the alpha_dropout op run once per spatial
position), randperm (indices sorted by their int64 bits) and multinomial (the race op: stream.md, "multinomial")."""

from typing import Any

import torch
from torch import Tensor

from . import router
from .spec import rngx


def permutation(n, state, dtype):
    """randperm's values from checked arguments (_checks.permutation): range(n) sorted by bits((n,), state), ties by
    index; a batched state (*B, 2) gives (*B, n)."""
    keys = state.contiguous() if state.dim() == 1 else state.reshape(*state.shape[:-1], 1, 2).contiguous()
    words = rngx.bits([*state.shape[:-1], n], keys, torch.int64)
    return torch.argsort(words, dim=-1, stable=True).to(dtype)


def race_samples(probs, key, num_samples, replacement, draws, need):
    """multinomial's samples from checked arguments (_checks.categories, weights)."""
    scores = rngx.race(probs.detach().to(torch.float64).contiguous(), key.contiguous(), draws, need)
    if replacement:
        return scores.argmin(dim=-1)
    return torch.argsort(scores.squeeze(-2), dim=-1, stable=True)[..., :num_samples]


def feature_alpha_dropout(x, key, p, view):
    """The alpha_dropout op with one decision per (n, c): run on x with its channel dims last, (*S, N, C), where each
    spatial position's run is the (N, C) tensor whose dropout mask it takes, so that (n, c) reads word n*C + c (the
    mask's) at every position. One key is repeated per position (the key-reuse checker is told of one (N, C) draw);
    a batched key (B0, B1, 1, ...) moves with x's dims, its ones broadcasting over the positions."""
    if x.dim() < 2:  # torch's message, as x_channel_p's callers give it
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    spatial = x.dim() - 2
    order = (*range(2, x.dim()), 0, 1)
    xp = x.permute(order)
    if key.dim() == 1 or all(b == 1 for b in key.shape[:-1]):
        keys = key.reshape(2).expand(*xp.shape[:spatial], 1, 1, 2).contiguous()
    else:
        keys = key.reshape(key.shape[0], key.shape[1], *([1] * spatial), 2).permute(*order, x.dim())
    if view[0] is not None:
        view = [[*xp.shape[:spatial], *view[0][:2]], [0] * spatial + list(view[1][:2])]
    n, c = x.shape[:2]
    mask = x.new_empty(()).expand(n, c)  # what the draw reads: the (N, C) mask's words
    channel_view = view if view[0] is None else [view[0][spatial:], view[1][spatial:]]
    reads = (mask, key.reshape(*key.shape[:2], 2) if key.dim() > 1 else key, (p, *channel_view))
    out = router.sample("alpha_dropout", xp, keys, p, *view, reads=reads)
    return out.permute(*(d + spatial if d < 2 else d - 2 for d in range(x.dim())))


def channel_mask(x, key, p, view):
    """m[n, c] = dropout of ones (x's dtype) with the key, shaped (N, C, 1, ...) to broadcast over x[n, c]."""
    n, c = x.shape[0], x.shape[1]
    if key.dim() > 1:  # (B0, B1, 1, ..., 2): the key of each (n, c) segment of the (N, C) mask
        key = key.reshape(key.shape[0], key.shape[1], 2)
    view = [None, None] if view[0] is None else [view[0][:2], view[1][:2]]
    m = router.sample("dropout", x.new_ones((n, c)), key, p, *view)
    return m.view(n, c, *([1] * (x.dim() - 2)))


def feature_dropout(x, key, p, view):
    if p == 1:  # as torch: x * 0 (NaN stays NaN)
        return x * 0
    if router.eager_grad(x):  # backward recomputes the (N, C) scale from the key
        return _ChannelDropout.apply(x, key, p, view)
    return x * channel_mask(x, key, p, view)


class _ChannelDropout(torch.autograd.Function):
    """x * m[n, c] (feature_dropout) keeping only the key for backward, which makes m again: N * C words, against
    the N * C values autograd would otherwise keep."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, key: Tensor, p: float, view: list) -> Tensor:
        ctx.save_for_backward(key)
        ctx.p, ctx.view, ctx.like = p, view, x.new_empty(()).expand(x.shape)  # x's shape and dtype, 1 element
        return x * channel_mask(x, key, p, view)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        (key,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # a double backward differentiates this too
            return _ChannelDropout.apply(grad, key, ctx.p, ctx.view), None, None, None
        return grad * channel_mask(ctx.like, key, ctx.p, ctx.view), None, None, None
