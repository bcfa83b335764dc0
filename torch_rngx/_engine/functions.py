"""The sampling ops' autograd.Functions, each op's derivative (_spec.derivative) in every form autograd asks for:

    NODE[kind]    plain eager code's node, an old-style Function (the cheapest that autograd offers), which is also
                  the op's registered autograd kernel (_ops.py): calling torch.ops.rngx.<kind> with a gradient
                  flowing makes the same node
    SAMPLE[kind]  for torch.func with an explicit key: grad, vjp, jacrev (backward), jvp (forward mode) and vmap
    DRAW[kind]    for torch.func with a key drawn from a state: vmap follows torch.func's `randomness` flag
    KeyDraw       a key drawn now for calls that apply it in their own way (channel and alpha dropout, randperm, ...)

kind: an op of _spec.SPECS, and params its arguments after the key, as its check returns them. Only the
differentiable ops (derivative "identity", "self" or a factor, _spec.Scaled) have a NODE. torch.compile does not
trace a custom jvp, so compiled code calls the ops themselves (_router.py), whose registered kernels give compiled
backward the same math.
"""

from __future__ import annotations

import math

import torch

from . import reuse, step
from . import spec as _spec
from .spec import SPECS, rngx
from .torch_private import AutoDispatchBelowAutograd, bare_op


def _rows(info, x_dim, x):
    """x with its vmapped dim first (expanded when x itself is not batched)."""
    return x.movedim(x_dim, 0) if x_dim is not None else x.expand(info.batch_size, *x.shape)


def _param_rows(info, dims, params):
    """A tensor parameter (bernoulli's p, expanded to x's shape) follows x's rows: moved or expanded likewise."""
    return [_rows(info, d, v) if isinstance(v, torch.Tensor) else v for d, v in zip(dims, params)]


def _per_row(key, n, row_dims):
    """The same key for each of n rows: a batched state (docs: stream/) whose runs are the rows."""
    shape = (n, *([1] * row_dims), 2) if key.dim() == 1 else (n, *key.shape)
    return key.expand(shape).contiguous()


def numel_of(x, spec, params):
    """The elements a call of op spec draws for: the global tensor's under a global view."""
    shape = spec.global_shape_of(params)
    return x.numel() if shape is None else math.prod(shape)


def batched_view(n, global_shape, global_start):
    """A global view with a batch dim of n in front (each row is a whole batch entry)."""
    return (None, None) if global_shape is None else ([n, *global_shape], [0, *global_start])


def _batched(spec, params, n):
    """A call's params (in schema order) with the global view (if any) given a leading batch dim of n."""
    at = spec.view_at
    return (*params[:at], *batched_view(n, params[at], params[at + 1]))


def drawn_key(owner, numel, dtype, kind=None, range=None):
    """The key for a call on numel elements of dtype (kind and range: the op and randint's high - low, which set its
    words): owner's step as graphs record it, or a fresh seed for owner None, journaled inside a checkpoint
    (step.key). The key-reuse checker (if on) is told the blocks a state's step passes."""
    blocks = _spec.blocks_of(numel, dtype, kind, range)
    key = step.key(owner, blocks)
    if owner is not None and reuse.active is not None:
        reuse.active.blocks(kind, key, [(0, blocks)])
    return key


_RANDOMNESS_ERROR = (
    "vmap: a stateful torch_rngx call (generator=None, a Generator or a module's RNG state) draws random numbers, "
    "and vmap's randomness='error' forbids that. Pass randomness='same' (every row gets the same values) or "
    "'different' (the call on the whole batch), or vmap the stateless torch_rngx.functional ops with explicit keys."
)


def _keep(ctx, spec, key, params, output=None, tangents=False, x=None):
    """What the op's derivative needs later: its params and, when the derivative is the op itself or a factor of
    its key (_spec.Scaled), its key, and x where the factor reads it (for forward mode too, with tangents); a
    sample's output is not differentiable."""
    ctx.params = params
    if spec.derivative is None:
        ctx.mark_non_differentiable(output)
    elif spec.derivative != "identity":
        saved = (key, x) if isinstance(spec.derivative, _spec.Scaled) and spec.derivative.reads_x else (key,)
        ctx.save_for_backward(*saved)
        if tangents:
            ctx.save_for_forward(*saved)


def _derivative(ctx, spec, t, again, below=None):
    """The op's derivative applied to t (a gradient or a tangent); `again` differentiates it for a double backward,
    `below` runs it when no gradient flows (_spec.derivative)."""
    saved = ctx.saved_tensors if spec.derivative not in (None, "identity") else ()
    key, x = (saved + (None, None))[:2]
    return _spec.derivative(spec, t, key, ctx.params, again, below, x)


def _node(spec):
    """The op's plain eager node. Its backward runs the op again below autograd (or, for a double backward, the op
    itself, whose registered kernel makes another node)."""
    kernel = bare_op(spec.kernel.default)

    def forward(ctx, x, key, *params):
        _keep(ctx, spec, key, params, x=x)
        with AutoDispatchBelowAutograd():  # the Function is the node
            return kernel(x, key, *params)

    def backward(ctx, grad):
        return (_derivative(ctx, spec, grad, spec.kernel, kernel), None) + (None,) * len(ctx.params)

    # Built with type() so that its name is the op's everywhere (grad_fn shows rngx_dropoutBackward).
    return type(
        f"rngx_{spec.name}",
        (torch.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


def _functions(spec):
    """The (Sample, Draw) autograd.Functions of one op, for torch.func."""
    kind, kernel = spec.name, spec.kernel

    class Sample(torch.autograd.Function):
        @staticmethod
        def forward(x, key, *params):
            with AutoDispatchBelowAutograd():  # the Function is the autograd node
                return kernel(x, key, *params)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, key, *params = inputs
            _keep(ctx, spec, key, params, output, tangents=True, x=x)

        @staticmethod
        def backward(ctx, grad):
            return (_derivative(ctx, spec, grad, Sample.apply), None) + (None,) * len(ctx.params)

        @staticmethod
        def jvp(ctx, x_t, key_t, *params_t):
            return _derivative(ctx, spec, x_t, Sample.apply)

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
            return Sample.apply(x, keys, *_batched(spec, params, info.batch_size)), 0

    class Draw(torch.autograd.Function):
        @staticmethod
        def forward(x, owner, dtype, *params):
            key = drawn_key(owner, numel_of(x, spec, params), dtype, kind, spec.range_of(params))
            with AutoDispatchBelowAutograd():
                return kernel(x, key, *params), key

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, _, _, *params = inputs
            ctx.mark_non_differentiable(output[1])
            _keep(ctx, spec, output[1], params, output[0], tangents=True, x=x)

        @staticmethod
        def backward(ctx, grad, _):
            return (_derivative(ctx, spec, grad, Sample.apply), None, None) + (None,) * len(ctx.params)

        @staticmethod
        def jvp(ctx, x_t, owner_t, dtype_t, *params_t):
            return _derivative(ctx, spec, x_t, Sample.apply), None

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
                key = drawn_key(owner, numel_of(x[0], spec, params), dtype, kind, spec.range_of(params))
                out = Sample.apply(
                    x, _per_row(key, info.batch_size, x.dim() - 1), *_batched(spec, params, info.batch_size)
                )
            else:
                numel = numel_of(x[0], spec, params) * info.batch_size
                key = drawn_key(owner, numel, dtype, kind, spec.range_of(params))
                out = Sample.apply(x, key, *_batched(spec, params, info.batch_size))
            return (out, key), (0, None)

    Sample.__name__, Draw.__name__ = f"Sample_{kind}", f"Draw_{kind}"
    return Sample, Draw


SAMPLE, DRAW = {}, {}
for _kind, _op in SPECS.items():
    SAMPLE[_kind], DRAW[_kind] = _functions(_op)
NODE: dict[str, type] = {kind: _node(op) for kind, op in SPECS.items() if op.derivative is not None}


class KeyDraw(torch.autograd.Function):
    """A key drawn now, for torch.func: x only tells vmap the batch. "error" raises; "same" draws once and every row
    shares the key; "different" draws once for the whole batch and row v takes split(key, batch)[v]."""

    @staticmethod
    def forward(x, owner, numel, dtype):
        return step.key(owner, _spec.blocks_of(numel, dtype))

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
            return step.key(owner, _spec.blocks_of(numel, dtype)), None
        return rngx.split(step.key(owner, _spec.blocks_of(numel * info.batch_size, dtype)), info.batch_size), 0
