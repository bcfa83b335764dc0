"""The rngx ops' Python registrations: fake kernels, autograd kernels and vmap rules.

The schemas live in csrc/kernels/op_table.h (loading the shared library alone defines the ops); the CPU kernels are C
(csrc/kernels) behind stable-ABI glue (csrc/impl_cpu.cpp). Every op is a pure function of its inputs: the stream
position comes in as an explicit `state` tensor of [seed, offset] keys (int64 or uint64, offset in Philox blocks; shape
(2,) or batched (*B, 2)), so eager, compiled and exported code compute the same bits. A Generator's step (take_, step_)
and seed_state, the one op that draws from torch's generator, are registered in step.py.

Autograd: the two differentiable samplers (derivative "identity" or "self") have a Python kernel that makes their
node (_functions.NODE) when a gradient flows and otherwise goes straight on below autograd; every other op falls
through autograd in C++, so that a compiled graph calls no Python for it.
"""

import torch

from . import checks, step
from . import spec as _spec
from .functions import NODE, batched_view
from .spec import rngx
from .torch_private import any_requires_grad, redispatch_below_autograd

_lib = torch.library.Library("rngx", "IMPL")


# ---- bits ----
@torch.library.register_fake("rngx::bits")
def _(size, state, dtype, global_shape=None, global_start=None):
    return state.new_empty(checks.size_dtype(size, state, dtype, global_shape, global_start)[0], dtype=dtype)


# ---- split / fold_in: new keys derived from old ones; not differentiable ----
@torch.library.register_fake("rngx::split")
def _(state, num):
    checks.state(state)
    checks.num(num)
    return state.new_empty((num, *state.shape))


@torch.library.register_fake("rngx::fold_in")
def _(state, data):
    checks.state(state)
    if data.numel() != 1 and tuple(data.shape) != tuple(state.shape[:-1]):
        raise ValueError(f"data must hold one value or have shape {tuple(state.shape[:-1])}, got {tuple(data.shape)}")
    return torch.empty_like(state)


# ---- the sampling ops (_spec.SPECS): fake kernels and autograd kernels, derived from each op's declaration ----
def _fake(spec):
    def fake(*args, **kwargs):
        args = spec.positional(args, kwargs)
        spec.check(*args)
        return torch.empty_like(args[0], dtype=spec.out_dtype(args))

    return fake


def _autograd_kernel(spec):
    """The op's node when a gradient can flow to its input, else the op below autograd (torch.library's
    register_autograd does the same with more Python around it; this one runs for every call of a compiled graph)."""
    make_node, below = NODE[spec.name].apply, redispatch_below_autograd(spec.kernel.default)

    def kernel(keyset, *args):
        if torch.is_grad_enabled() and any_requires_grad(*args):
            return make_node(*args)
        return below(keyset, *args)

    return kernel


for _spec_op in _spec.SPECS.values():
    torch.library.register_fake(f"rngx::{_spec_op.name}", _fake(_spec_op))
    if _spec_op.derivative is None:
        _lib.impl(_spec_op.name, torch.library.fallthrough_kernel, "Autograd")
    else:
        _lib.impl(_spec_op.name, _autograd_kernel(_spec_op), "Autograd", with_keyset=True)


# ---- race: multinomial's E / w scores, (*R, C) -> (*R, draws, C) float64; not differentiable ----
def _check_race(weights, state, draws, need):
    checks.tensor(weights, "weights")
    if weights.dtype != torch.float64 or weights.dim() < 1 or weights.shape[-1] < 1:
        raise ValueError(
            f"weights must be a float64 tensor (*R, C) with C >= 1, got {weights.dtype} {tuple(weights.shape)}"
        )
    for v, name in ((draws, "draws"), (need, "need")):
        checks.num(v, name)
    shape = (*weights.shape[:-1], draws, weights.shape[-1])
    checks.state(state, shape=shape)
    checks.same_device(weights, state, "weights")
    return shape


# ---- adam_sround_: the optimizer's fused step (torch_rngx/optim.py); it writes its inputs and returns nothing ----
@torch.library.register_fake("rngx::adam_sround_")
def _(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    state,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    decoupled,
    maximize,
    step,
    global_shape=None,
    global_start=None,
):
    checks.state(state)
    checks.adam_operands(param, grad, exp_avg, exp_avg_sq, step)
    return None


_adam_below = redispatch_below_autograd(rngx.adam_sround_.default)


def _adam_autograd(keyset, param, grad, exp_avg, *args):
    """No derivative: an in-place update, refused where a gradient could flow (as torch refuses an in-place op on a
    leaf that requires grad); an optimizer step runs under no_grad."""
    if torch.is_grad_enabled() and any_requires_grad(param, grad, exp_avg, args[0]):
        raise RuntimeError(
            "rngx.adam_sround_ updates param and the moments in place and has no derivative: call it under "
            "torch.no_grad(), as an optimizer step does"
        )
    return _adam_below(keyset, param, grad, exp_avg, *args)


_lib.impl("adam_sround_", _adam_autograd, "Autograd", with_keyset=True)


@torch.library.register_fake("rngx::race")
def _(weights, state, draws, need):
    return weights.new_empty(_check_race(weights, state, draws, need))


_lib.impl("race", torch.library.fallthrough_kernel, "Autograd")  # not differentiable


def _fused_fake(spec):
    """A fused op (state, input, *params without the view) checks as the op with that state as its key."""

    def fake(*args, **kwargs):
        args = _spec.positional(spec.fused_kernel, args, kwargs)
        state, x, *params = args
        step.check_take(state, 0)
        spec.check(x, state, *params)
        return torch.empty_like(x, dtype=_spec.out_dtype(spec.fused_kernel, args))

    return fake


for _spec_op in _spec.SPECS.values():
    if _spec_op.fused is not None:  # a Generator's step and the op in one call, never differentiable
        torch.library.register_fake(f"rngx::{_spec_op.fused}", _fused_fake(_spec_op))
        _lib.impl(_spec_op.fused, torch.library.fallthrough_kernel, "Autograd")


# ---- vmap over batched keys: the key ops take the vmapped dim as one more batch dim of the state ----
def _front(t, dim, n):
    return t.movedim(dim, 0) if dim is not None else t.expand(n, *t.shape)


@torch.library.register_vmap("rngx::bits")
def _(info, in_dims, size, state, dtype, global_shape=None, global_start=None):
    keys = state.movedim(in_dims[1], 0)
    if keys.dim() == 2:
        keys = keys.view(info.batch_size, *([1] * len(size)), 2)
    view = batched_view(info.batch_size, global_shape, global_start)
    return rngx.bits([info.batch_size, *size], keys.contiguous(), dtype, *view), 0


@torch.library.register_vmap("rngx::split")
def _(info, in_dims, state, num):
    return rngx.split(state.movedim(in_dims[0], 0).contiguous(), num), 1


@torch.library.register_vmap("rngx::fold_in")
def _(info, in_dims, state, data):
    state = _front(state, in_dims[0], info.batch_size).contiguous()
    data = _front(data, in_dims[1], info.batch_size)  # (N, *D), each row's D broadcasting to the row's batch
    data = data.reshape(info.batch_size, *([1] * (state.dim() - 1 - data.dim())), *data.shape[1:])
    return rngx.fold_in(state, torch.broadcast_to(data, state.shape[:-1]).contiguous()), 0


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
    return rngx.race(weights, keys.contiguous(), draws, need), 0
