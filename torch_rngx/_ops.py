"""The rngx custom ops' Python side: fake kernels, autograd formulas, vmap rules, seed_state and take_'s journal.

The schemas live in csrc/library.cpp (loading the shared library alone defines the ops); the CPU kernels are C
(csrc/kernels) behind stable-ABI glue (csrc/ops.cpp). Every op is a pure function of its inputs: the stream position
comes in as an explicit `state` tensor of [seed, offset] keys (int64 or uint64, offset in Philox blocks; shape (2,)
or batched (*B, 2)), so eager, compiled and exported code compute the same bits. The one exception is
`seed_state`, which draws a fresh seed from torch's default CPU generator; it is tagged nondeterministic_seeded so
no compiler pass deduplicates or drops it.
"""
import threading

import torch

from . import (  # type: ignore[attr-defined]  # _C: the compiled library, which mypy cannot read
    _C,  # noqa: F401  (defines the ops from csrc/library.cpp's schema table and registers their kernels)
    _checks,
    _replay,
)
from ._torch import AutoDispatchBelowAutograd, register_ordered_effect

# seed_state's tag needs the stable ABI of torch 2.12 (we target 2.10), so it is defined here.
_lib = torch.library.Library("rngx", "FRAGMENT")
_lib.define("seed_state() -> Tensor", tags=(torch.Tag.nondeterministic_seeded,))
# Compilers must neither merge two seed_state calls (AOTAutograd's CSE ignores the tag) nor reorder
# them: an ordered effect threads a token through every call, in program order.
register_ordered_effect(_lib, "rngx::seed_state")

ops = torch.ops.rngx


# ---- bits ----
@torch.library.register_fake("rngx::bits")
def _(size, state, dtype, global_shape=None, global_start=None):
    return state.new_empty(_checks.for_bits(size, state, dtype, global_shape, global_start)[0], dtype=dtype)


# ---- split / fold_in: new keys derived from old ones; not differentiable ----
@torch.library.register_fake("rngx::split")
def _(state, num):
    _checks.state(state)
    _checks.num(num)
    return state.new_empty((num, *state.shape))


@torch.library.register_fake("rngx::fold_in")
def _(state, data):
    _checks.state(state)
    if data.numel() != 1 and tuple(data.shape) != tuple(state.shape[:-1]):
        raise ValueError(f"data must hold one value or have shape {tuple(state.shape[:-1])}, got {tuple(data.shape)}")
    return torch.empty_like(state)


# ---- uniform ----
@torch.library.register_fake("rngx::uniform")
def _(like, state, low, high, dtype=None, global_shape=None, global_start=None):
    _checks.for_uniform(like, state, low, high, dtype, global_shape, global_start)
    return torch.empty_like(like, dtype=dtype)


def _uniform_setup(ctx, inputs, output):
    ctx.mark_non_differentiable(output)


def _uniform_backward(ctx, grad):
    return (None,) * 7


torch.library.register_autograd("rngx::uniform", _uniform_backward, setup_context=_uniform_setup)


# ---- normal, truncated_normal, bernoulli, randint: samples of a distribution, not differentiable (as uniform) ----
@torch.library.register_fake("rngx::normal")
def _(like, state, mean, std, dtype=None, global_shape=None, global_start=None):
    _checks.for_normal(like, state, mean, std, dtype, global_shape, global_start)
    return torch.empty_like(like, dtype=dtype)


@torch.library.register_fake("rngx::truncated_normal")
def _(like, state, mean, std, a, b, dtype=None, global_shape=None, global_start=None):
    _checks.for_truncated_normal(like, state, mean, std, a, b, dtype, global_shape, global_start)
    return torch.empty_like(like, dtype=dtype)


@torch.library.register_fake("rngx::bernoulli")
def _(like, state, p, global_shape=None, global_start=None):
    _checks.for_bernoulli(like, state, p, global_shape, global_start)
    return torch.empty_like(like)


@torch.library.register_fake("rngx::bernoulli_tensor")
def _(like, state, p, global_shape=None, global_start=None):
    _checks.for_bernoulli(like, state, p, global_shape, global_start)
    return torch.empty_like(like)


@torch.library.register_fake("rngx::randint")
def _(like, state, low, high, dtype, global_shape=None, global_start=None):
    _checks.for_randint(like, state, low, high, dtype, global_shape, global_start)
    return torch.empty_like(like, dtype=dtype)


@torch.library.register_fake("rngx::exponential")
def _(like, state, rate, dtype=None, global_shape=None, global_start=None):
    _checks.for_exponential(like, state, rate, dtype, global_shape, global_start)
    return torch.empty_like(like, dtype=dtype)


# ---- race: multinomial's E / w scores, (*R, C) -> (*R, draws, C) float64; not differentiable ----
def _check_race(weights, state, draws, need):
    _checks.tensor(weights, "weights")
    if weights.dtype != torch.float64 or weights.dim() < 1 or weights.shape[-1] < 1:
        raise ValueError(f"weights must be a float64 tensor (*R, C) with C >= 1, got {weights.dtype} "
                         f"{tuple(weights.shape)}")
    for v, name in ((draws, "draws"), (need, "need")):
        _checks.num(v, name)
    shape = (*weights.shape[:-1], draws, weights.shape[-1])
    _checks.state(state, shape=shape)
    _checks.same_device(weights, state, "weights")
    return shape


@torch.library.register_fake("rngx::race")
def _(weights, state, draws, need):
    return weights.new_empty(_check_race(weights, state, draws, need))


def _sample_backward(ctx, *grads):
    return (None,) * ctx.n_inputs


def _sample_setup(ctx, inputs, output):
    ctx.n_inputs = len(inputs)
    ctx.mark_non_differentiable(output)


for _name in ("normal", "truncated_normal", "bernoulli", "bernoulli_tensor", "randint", "exponential", "race"):
    torch.library.register_autograd(f"rngx::{_name}", _sample_backward, setup_context=_sample_setup)


# ---- quantize_noise: x + U[-half, half); d/dx = 1 ----
@torch.library.register_fake("rngx::quantize_noise")
def _(x, state, half, global_shape=None, global_start=None):
    _checks.for_noise(x, state, half, global_shape, global_start)
    return torch.empty_like(x)


def _noise_backward(ctx, grad):
    return grad, None, None, None, None


torch.library.register_autograd("rngx::quantize_noise", _noise_backward, setup_context=lambda ctx, inputs, output: None)


# ---- dropout: backward recomputes the mask from (state, p); no mask is ever stored ----
@torch.library.register_fake("rngx::dropout")
def _(x, state, p, global_shape=None, global_start=None):
    _checks.for_dropout(x, state, p, global_shape, global_start)
    return torch.empty_like(x)


def _dropout_setup(ctx, inputs, output):
    _, state, *ctx.params = inputs
    ctx.save_for_backward(state)


def _dropout_backward(ctx, grad):
    (state,) = ctx.saved_tensors
    if torch.is_grad_enabled():  # double backward: dropout's own formula again
        return ops.dropout(grad, state, *ctx.params), None, None, None, None
    with AutoDispatchBelowAutograd():
        return ops.dropout(grad, state, *ctx.params), None, None, None, None


torch.library.register_autograd("rngx::dropout", _dropout_backward, setup_context=_dropout_setup)


# ---- take_: a Generator's step. Returns the state for one call and advances the offset in place ----
# A custom op, not clone() + add_(): a compiled backward must save this snapshot, never the mutated state
# (AOTAutograd would otherwise recompute the clone from the generator's state after it advanced).
# The lock makes the read and the advance one step, so threads sharing a Generator never get the same words
# (docs/guarantees.md, "Threads"). The op is opaque to torch.compile, so the lock is never traced. Inside a
# checkpointed region the key is journaled, and a recomputation replays it (_replay.py).
take_lock = threading.Lock()


def _check_take(state, blocks):
    _checks.state(state)
    if state.dtype != torch.int64 or state.shape != (2,) or not state.is_contiguous():
        raise ValueError(f"take_ advances a Generator's state in place: a contiguous int64 tensor of shape (2,), got "
                         f"{state.dtype} {tuple(state.shape)} with strides {state.stride()}")
    if isinstance(blocks, int) and blocks < 0:
        raise ValueError(f"blocks must be >= 0, got {blocks}")


def advance(state, blocks):
    """The key for one call, then the offset moved past its blocks: one step under the lock."""
    with take_lock:
        taken = state.clone()
        state[1:].add_(blocks)  # int64 add wraps: the offset is unsigned, modulo 2^64
    return taken


# The CPU and CUDA kernels take precedence over the C++ one (CompositeExplicitAutograd, for processes without
# Python), so in Python every step goes through the journal.
def _take(state, blocks):
    _check_take(state, blocks)
    return _replay.draw(state, lambda: advance(state, blocks))


for _key in ("CPU", "CUDA"):
    _lib.impl("take_", _take, _key)


@torch.library.register_fake("rngx::take_")
def _(state, blocks):
    _check_take(state, blocks)
    return torch.empty_like(state)


@torch.library.register_fake("rngx::uniform_from_")
def _(state, like, low, high, dtype=None):
    _check_take(state, 0)
    _checks.for_uniform(like, state, low, high, dtype)
    return torch.empty_like(like, dtype=dtype)


@torch.library.register_fake("rngx::quantize_noise_from_")
def _(state, x, half):
    _check_take(state, 0)
    _checks.for_noise(x, state, half)
    return torch.empty_like(x)


# ---- seed_state: a fresh key [seed, offset] from torch's default CPU generator ----
def fresh_seed():
    """A fresh key [s, o]: two draws of 63 random bits from torch's default CPU generator (torch.manual_seed
    reproduces them), one tensor op."""
    return torch.empty(2, dtype=torch.int64).random_()


@torch.library.impl(_lib, "seed_state", "CompositeExplicitAutograd")
def _(*args, **kwargs):
    return _replay.draw(None, fresh_seed)


@torch.library.register_fake("rngx::seed_state")
def _():
    return torch.empty(2, dtype=torch.int64)


# ---- vmap over batched keys: the key ops take the vmapped dim as one more batch dim of the state ----
def _front(t, dim, n):
    return t.movedim(dim, 0) if dim is not None else t.expand(n, *t.shape)


def batched_view(n, global_shape, global_start):
    """A global view with a batch dim of n in front (each row is a whole batch entry)."""
    return (None, None) if global_shape is None else ([n, *global_shape], [0, *global_start])


@torch.library.register_vmap("rngx::bits")
def _(info, in_dims, size, state, dtype, global_shape=None, global_start=None):
    keys = state.movedim(in_dims[1], 0)
    if keys.dim() == 2:
        keys = keys.view(info.batch_size, *([1] * len(size)), 2)
    view = batched_view(info.batch_size, global_shape, global_start)
    return ops.bits([info.batch_size, *size], keys.contiguous(), dtype, *view), 0


@torch.library.register_vmap("rngx::split")
def _(info, in_dims, state, num):
    return ops.split(state.movedim(in_dims[0], 0).contiguous(), num), 1


@torch.library.register_vmap("rngx::fold_in")
def _(info, in_dims, state, data):
    state = _front(state, in_dims[0], info.batch_size).contiguous()
    data = _front(data, in_dims[1], info.batch_size)  # (N, *D), each row's D broadcasting to the row's batch
    data = data.reshape(info.batch_size, *([1] * (state.dim() - 1 - data.dim())), *data.shape[1:])
    return ops.fold_in(state, torch.broadcast_to(data, state.shape[:-1]).contiguous()), 0


@torch.library.register_vmap("rngx::race")
def _(info, in_dims, weights, state, draws, need):
    """Row v is the race on weights[v] with its key: the vmapped dim is one more batch dim of the output
    (N, *R, draws, C), and an unbatched key is repeated per row (each row starts its own stream)."""
    n = info.batch_size
    weights = _front(weights, in_dims[0], n).contiguous()
    dims = weights.dim() + 1  # the output's: (N, *R, draws, C)
    if in_dims[1] is None:
        keys = state.expand(n, *([1] * (dims - 1)), 2) if state.dim() == 1 else state.expand(n, *state.shape)
    else:
        keys = state.movedim(in_dims[1], 0)
        keys = keys.view(n, *([1] * (dims - 1)), 2) if keys.dim() == 2 else keys
    return ops.race(weights, keys.contiguous(), draws, need), 0
