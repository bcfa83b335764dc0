"""The sampling ops as autograd.Functions, so torch.func works through them: grad, vjp, jacrev (backward), jvp
(forward mode) and vmap, including torch.func's `randomness` flag for stateful draws (docs/training.md).

    sample(kind, x, key, *params) -> out        the op with an explicit key, never modified
    draw(kind, x, owner, dtype, *params) -> out  the op with a key drawn now: from `owner` (a Generator's or
                                                 module's state, advanced in place by blocks_used(numel,
                                                 dtype)) or, for None, a fresh seed from torch's generator

kind: an op of _spec.SPECS, and params its arguments after the key, as its check returns them. Each op's
derivative is _spec.derivative, so backward and jvp apply the same rule to a gradient or a tangent as the op's
registered autograd formula (_ops.py) does.

The Functions are what torch.func needs; elsewhere the ops are called directly, with their registered autograd
formulas: torch.compile does not trace a custom jvp, and in plain eager code an autograd.Function costs several
op calls' worth of time.
"""

from __future__ import annotations

import math

import torch

from . import _ops, _replay, _reuse, _spec
from ._spec import SPECS, ops
from ._torch import AutoDispatchBelowAutograd, peek_interpreter_stack


def _rows(info, x_dim, x):
    """x with its vmapped dim first (expanded when x itself is not batched)."""
    return x.movedim(x_dim, 0) if x_dim is not None else x.expand(info.batch_size, *x.shape)


def _param_rows(info, dims, params):
    """A tensor parameter (bernoulli's p, expanded to x's shape) follows x's rows: moved or expanded likewise."""
    return [_rows(info, d, v) if isinstance(v, torch.Tensor) else v for d, v in zip(dims, params)]


def _per_row(key, n, row_dims):
    """The same key for each of n rows: a batched state (docs/stream.md) whose runs are the rows."""
    shape = (n, *([1] * row_dims), 2) if key.dim() == 1 else (n, *key.shape)
    return key.expand(shape).contiguous()


def _numel(x, params):
    """The elements a call draws for: the global tensor's under a global view (params end with it)."""
    return x.numel() if params[-2] is None else math.prod(params[-2])


def _batched(params, n):
    """params with the global view (if any) given a leading batch dim of n."""
    return (*params[:-2], *_ops.batched_view(n, params[-2], params[-1]))


def _record(kind, x, key, params):
    """Tells the key-reuse checker (on) the words a call with an explicit key reads: x's elements' or, under a
    global view, its block's."""
    d = params[-3] if len(params) >= 3 else None
    dtype = d if isinstance(d, torch.dtype) else x.dtype
    _reuse.active.draw(
        kind, key, x.shape, _spec.words_per_element(dtype, kind, _spec.range_of(kind, params)), *params[-2:]
    )


def _record_taken(kind, key, numel, dtype, params):
    """Tells the key-reuse checker (on) the blocks a Generator advanced past for one call."""
    _reuse.active.blocks(kind, key, [(0, _spec.blocks_of(numel, dtype, kind, _spec.range_of(kind, params)))])


def plain_tensors():
    """Not inside a torch.func transform."""
    return peek_interpreter_stack() is None


def _draw(owner, numel, dtype, kind=None, params=()):
    """A key for a call on numel elements of dtype: fresh, or the owner's, advanced past the call's blocks (params:
    the op's, as sample takes them)."""
    if owner is None:
        return ops.seed_state()
    return ops.take_(owner, _spec.blocks_of(numel, dtype, kind, _spec.range_of(kind, params)))


_RANDOMNESS_ERROR = (
    "vmap: a stateful torch_rngx call (generator=None, a Generator or a module's RNG state) draws random numbers, "
    "and vmap's randomness='error' forbids that. Pass randomness='same' (every row gets the same values) or "
    "'different' (the call on the whole batch), or vmap the stateless torch_rngx.functional ops with explicit keys."
)


def _functions(spec):
    """The (Sample, Draw, Eager) autograd.Functions of one op."""
    kind, kernel = spec.name, spec.kernel

    def save(ctx, key, params, output):
        ctx.params = params
        if spec.derivative is None:
            ctx.mark_non_differentiable(output)
        elif spec.derivative == "self":
            ctx.save_for_backward(key)
            ctx.save_for_forward(key)

    def derivative(ctx, t, function):
        key = ctx.saved_tensors[0] if spec.derivative == "self" else None
        return _spec.derivative(spec, t, key, ctx.params, function.apply)

    class Sample(torch.autograd.Function):
        @staticmethod
        def forward(x, key, *params):
            with AutoDispatchBelowAutograd():  # the Function is the autograd node
                return kernel(x, key, *params)

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, key, *params = inputs
            save(ctx, key, params, output)

        @staticmethod
        def backward(ctx, grad):
            return (derivative(ctx, grad, Sample), None) + (None,) * len(ctx.params)

        @staticmethod
        def jvp(ctx, x_t, key_t, *params_t):
            return derivative(ctx, x_t, Sample)

        @staticmethod
        def vmap(info, in_dims, x, key, *params):
            """Each row is the op on that row: with its own key when the key is vmapped, else the same key."""
            x = _rows(info, in_dims[0], x)
            params = _param_rows(info, in_dims[2:], params)
            if in_dims[1] is None:
                keys = _per_row(key, info.batch_size, x.dim() - 1)
            else:
                key = key.movedim(in_dims[1], 0)
                keys = key.view(info.batch_size, *([1] * (x.dim() - 1)), 2) if key.dim() == 2 else key
            return Sample.apply(x, keys, *_batched(params, info.batch_size)), 0

    class Draw(torch.autograd.Function):
        @staticmethod
        def forward(x, owner, dtype, *params):
            key = _draw(owner, _numel(x, params), dtype, kind, params)
            if _reuse.active is not None and owner is not None:
                _record_taken(kind, key, _numel(x, params), dtype, params)
            with AutoDispatchBelowAutograd():
                return kernel(x, key, *params), key

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, _, _, *params = inputs
            ctx.mark_non_differentiable(output[1])
            save(ctx, output[1], params, output[0])

        @staticmethod
        def backward(ctx, grad, _):
            return (derivative(ctx, grad, Sample), None, None) + (None,) * len(ctx.params)

        @staticmethod
        def jvp(ctx, x_t, owner_t, dtype_t, *params_t):
            return derivative(ctx, x_t, Sample), None

        @staticmethod
        def vmap(info, in_dims, x, owner, dtype, *params):
            """torch.func.vmap's randomness: "error" raises; "same" draws for one row and gives every row those
            values; "different" is the call on the whole batch (the batch dim joins the logical index), drawing
            once for all of it."""
            if info.randomness == "error":
                raise RuntimeError(_RANDOMNESS_ERROR)
            x = _rows(info, in_dims[0], x)
            params = _param_rows(info, in_dims[3:], params)
            if info.randomness == "same":  # every row reads the same words, on purpose: recorded once
                key = _draw(owner, _numel(x[0], params), dtype, kind, params)
                if _reuse.active is not None and owner is not None:
                    _record_taken(kind, key, _numel(x[0], params), dtype, params)
                out = Sample.apply(x, _per_row(key, info.batch_size, x.dim() - 1), *_batched(params, info.batch_size))
            else:
                key = _draw(owner, _numel(x[0], params) * info.batch_size, dtype, kind, params)
                if _reuse.active is not None and owner is not None:
                    _record_taken(kind, key, _numel(x[0], params) * info.batch_size, dtype, params)
                out = Sample.apply(x, key, *_batched(params, info.batch_size))
            return (out, key), (0, None)

    class Eager(torch.autograd.Function):
        """Plain eager code's node: an old-style Function costs a third of one with setup_context, jvp and vmap."""

        @staticmethod
        def forward(ctx, x, key, *params):
            ctx.params = params
            if spec.derivative == "self":
                ctx.save_for_backward(key)
            with AutoDispatchBelowAutograd():
                return kernel(x, key, *params)

        @staticmethod
        def backward(ctx, grad):
            return (derivative(ctx, grad, Eager), None) + (None,) * len(ctx.params)

    Sample.__name__, Draw.__name__, Eager.__name__ = f"Sample_{kind}", f"Draw_{kind}", f"Eager_{kind}"
    return Sample, Draw, Eager


SAMPLE, DRAW, EAGER = {}, {}, {}
for _kind, _op in SPECS.items():
    SAMPLE[_kind], DRAW[_kind], EAGER[_kind] = _functions(_op)


def _compiled(kind, x, key, params):
    if type(x) is not torch.Tensor:
        for cls, call in _spec.SUBCLASS_CALLS:
            if isinstance(x, cls):
                return call(SPECS[kind], x, key, params)
    return SPECS[kind].kernel(x, key, *params)


def sample(kind, x, key, *params):
    # Keys of any strides give their contiguous copy's values; the key-reuse checker sees the caller's key.
    if torch.compiler.is_compiling():
        _reuse.traced(key, kind)
        return _compiled(kind, x, key.contiguous(), params)
    if _reuse.active is not None:
        _record(kind, x, key, params)
    key = key.contiguous()
    if peek_interpreter_stack() is not None:  # inside a torch.func transform
        return SAMPLE[kind].apply(x, key, *params)
    return _eager(kind, x, key, params)


FUSED_MAX = 1 << 15  # up to one thread's work: beyond it the saved dispatcher call is lost in the kernel's time


def draw(kind, x, owner, dtype, *params):
    if torch.compiler.is_compiling():
        return _compiled(kind, x, _draw(owner, _numel(x, params), dtype, kind, params), params)
    if peek_interpreter_stack() is not None:
        return DRAW[kind].apply(x, owner, dtype, *params)[0]
    if _reuse.active is not None and owner is not None:  # the fused step would advance before we read the key
        key = _eager_key(owner, _numel(x, params), dtype, kind, params)
        _record_taken(kind, key, _numel(x, params), dtype, params)
        return _eager(kind, x, key, params)
    spec = SPECS[kind]
    if (
        spec.fused is not None
        and owner is not None
        and owner.is_cpu
        and x.is_cpu
        and params[-2] is None
        and x.numel() <= FUSED_MAX
        and (spec.derivative is None or not (x.requires_grad and torch.is_grad_enabled()))
        and _replay.plain_eager()
    ):
        with AutoDispatchBelowAutograd():  # one dispatcher call, no autograd node; its step holds the C++ lock
            return spec.fused_kernel(owner, x, *params[:-2])
    return _eager(kind, x, _eager_key(owner, _numel(x, params), dtype, kind, params), params)


def key_for(x, owner, numel, dtype):
    """The key for a stateful call that draws `numel` elements of `dtype` and applies them to x in its own way
    (channel and alpha dropout); under torch.func.vmap it follows the randomness flag (KeyDraw.vmap)."""
    if torch.compiler.is_compiling():
        return _draw(owner, numel, dtype)
    if peek_interpreter_stack() is not None:
        return KeyDraw.apply(x, owner, numel, dtype)
    return _eager_key(owner, numel, dtype)


def _eager_key(owner, numel, dtype, kind=None, params=()):
    if not _replay.plain_eager():  # the ops journal the draw for a checkpoint, or refuse to draw again
        return _draw(owner, numel, dtype, kind, params)
    if owner is None:
        return _ops.fresh_seed()
    return _ops.advance(owner, _spec.blocks_of(numel, dtype, kind, _spec.range_of(kind, params)))


class KeyDraw(torch.autograd.Function):
    """A key drawn now, for torch.func: x only tells vmap the batch. "error" raises; "same" draws once and every row
    shares the key; "different" draws once for the whole batch and row v takes split(key, batch)[v]."""

    @staticmethod
    def forward(x, owner, numel, dtype):
        return _draw(owner, numel, dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def backward(ctx, _):
        return None, None, None, None

    @staticmethod
    def jvp(ctx, *tangents):
        return None

    @staticmethod
    def vmap(info, in_dims, x, owner, numel, dtype):
        if info.randomness == "error":
            raise RuntimeError(_RANDOMNESS_ERROR)
        if info.randomness == "same":
            return _draw(owner, numel, dtype), None
        return ops.split(_draw(owner, numel * info.batch_size, dtype), info.batch_size), 0


def plain_eager_grad(x):
    """Plain eager code (not compiled, not inside a torch.func transform) where a gradient can flow to x."""
    return (
        x.requires_grad
        and torch.is_grad_enabled()
        and not torch.compiler.is_compiling()
        and peek_interpreter_stack() is None
    )


def _eager(kind, x, key, params):
    """Plain eager: an autograd node only when a gradient can flow; the op below autograd, skipping the dispatch
    through its registered formula (about half an op call on a small tensor)."""
    if SPECS[kind].derivative is not None and x.requires_grad and torch.is_grad_enabled():
        return EAGER[kind].apply(x, key, *params)
    with AutoDispatchBelowAutograd():
        return SPECS[kind].kernel(x, key, *params)
