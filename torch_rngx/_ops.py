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

from . import _checks, _replay, _spec
from ._random_ops import drawing_from_torch
from ._torch import register_ordered_effect

# seed_state's tag needs the stable ABI of torch 2.12 (we target 2.10), so it is defined here.
_lib = torch.library.Library("rngx", "FRAGMENT")
_lib.define("seed_state() -> Tensor", tags=(torch.Tag.nondeterministic_seeded,))
# Compilers must neither merge two seed_state calls (AOTAutograd's CSE ignores the tag) nor reorder
# them: an ordered effect threads a token through every call, in program order.
register_ordered_effect(_lib, "rngx::seed_state")

ops = _spec.ops


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


# ---- the sampling ops (_spec.SPECS): fake kernels and autograd formulas, derived from each op's declaration ----
def _fake(spec):
    def fake(*args, **kwargs):
        args = spec.positional(args, kwargs)
        spec.check(*args)
        return torch.empty_like(args[0], dtype=spec.out_dtype(args))

    return fake


def _autograd_formula(spec):
    """(backward, setup_context): the op's one derivative (_spec.derivative), the key saved when it needs it."""

    def setup(ctx, inputs, output):
        _, state, *ctx.params = inputs
        ctx.n_inputs = len(inputs)
        if spec.derivative is None:
            ctx.mark_non_differentiable(output)
        elif spec.derivative == "self":
            ctx.save_for_backward(state)

    def backward(ctx, grad):
        key = ctx.saved_tensors[0] if spec.derivative == "self" else None
        return (_spec.derivative(spec, grad, key, ctx.params, spec.kernel),) + (None,) * (ctx.n_inputs - 1)

    return backward, setup


for _spec_op in _spec.SPECS.values():
    torch.library.register_fake(f"rngx::{_spec_op.name}", _fake(_spec_op))
    _backward, _setup = _autograd_formula(_spec_op)
    torch.library.register_autograd(f"rngx::{_spec_op.name}", _backward, setup_context=_setup)


# ---- race: multinomial's E / w scores, (*R, C) -> (*R, draws, C) float64; not differentiable ----
def _check_race(weights, state, draws, need):
    _checks.tensor(weights, "weights")
    if weights.dtype != torch.float64 or weights.dim() < 1 or weights.shape[-1] < 1:
        raise ValueError(
            f"weights must be a float64 tensor (*R, C) with C >= 1, got {weights.dtype} {tuple(weights.shape)}"
        )
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


torch.library.register_autograd("rngx::race", _sample_backward, setup_context=_sample_setup)


# ---- take_: a Generator's step. Returns the state for one call and advances the offset in place ----
# A custom op, not clone() + add_(): a compiled backward must save this snapshot, never the mutated state
# (AOTAutograd would otherwise recompute the clone from the generator's state after it advanced).
# The step is one read-and-advance under a lock, so threads sharing a Generator never get the same words
# (docs/guarantees.md, "Threads"). A CPU state steps in C++ (rngx::step_) under the one mutex that the one-call ops
# (uniform_from_, ...) also hold. A CUDA state steps on its device in stream order under take_lock: the C++ step
# would copy it to the host and wait, and no C++ op of a Python process steps a CUDA state. The op is opaque to
# torch.compile, so no lock is ever traced. Inside a checkpointed region the key is journaled, and a
# recomputation replays it (_replay.py).
take_lock = threading.Lock()


def _check_take(state, blocks):
    _checks.state(state)
    if state.dtype != torch.int64 or state.shape != (2,) or not state.is_contiguous():
        raise ValueError(
            f"take_ advances a Generator's state in place: a contiguous int64 tensor of shape (2,), got "
            f"{state.dtype} {tuple(state.shape)} with strides {state.stride()}"
        )
    if isinstance(blocks, int) and blocks < 0:
        raise ValueError(f"blocks must be >= 0, got {blocks}")


def advance(state, blocks):
    """The key for one call, then the offset moved past its blocks: one step under the state's lock."""
    if state.is_cpu:
        return torch.ops.rngx.step_(state, blocks)
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


@torch.library.register_fake("rngx::step_")
@torch.library.register_fake("rngx::take_")
def _(state, blocks):
    _check_take(state, blocks)
    return torch.empty_like(state)


def _fused_fake(spec):
    """A fused op (state, input, *params without the view) checks as the op with that state as its key."""

    def fake(*args, **kwargs):
        args = _spec.positional(spec.fused_kernel, args, kwargs)
        state, x, *params = args
        _check_take(state, 0)
        spec.check(x, state, *params)
        return torch.empty_like(x, dtype=_spec.out_dtype(spec.fused_kernel, args))

    return fake


for _spec_op in _spec.SPECS.values():
    if _spec_op.fused is not None:
        torch.library.register_fake(f"rngx::{_spec_op.fused}", _fused_fake(_spec_op))


# ---- seed_state: a fresh key [seed, offset] from torch's default CPU generator ----
def fresh_seed():
    """A fresh key [s, o]: two draws of 63 random bits from torch's default CPU generator (torch.manual_seed
    reproduces them), one tensor op, past any torch_rngx.mode."""
    with drawing_from_torch():
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
