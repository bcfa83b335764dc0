"""The route of every sampling call, from the public functions to the ops:

    sample(kind, x, key, *params) -> out          the op with an explicit key, never modified
    draw(kind, x, generator, *params) -> out      the op with a key drawn now from `generator`
    key_for(x, generator, numel, dtype) -> key    a key drawn now for `numel` elements of `dtype`, for calls that
                                                  apply it in their own way (channel and alpha dropout, randperm, ...)
    atomic(owner, numel, call, *args) -> out      call(*args), whose draws are given back if it raises

kind: an op of _spec.SPECS, and params its arguments after the key, as its check returns them (ending with the
global view). generator: None (a fresh seed from torch's default CPU generator), a Generator, an nn.RNG, or an Owned
state (an nn module's own buffer): a state advances in place by blocks_used(numel, dtype) of the call.

Each call takes one of four routes:
- compiled (torch.compile traces the ops themselves: a state's step is rngx::take_, a fresh seed rngx::seed_state);
- torch.func (the autograd.Functions of functions.py, whose vmap rules follow the randomness flag);
- plain eager: the bare step and the op below autograd, with its node (functions.NODE) only when a gradient flows;
  for a small CPU tensor with no gradient, the op's fused form instead (the step and the draw in one call; for
  generator=None, on a scratch state holding a fresh seed);
- eager with a checkpoint, a backward pass or the key-reuse checker running: the step through the checkpoint journal,
  and the key-reuse checker told what the call reads.
"""

from __future__ import annotations

import math

import torch

from . import checks, functions, reuse, step
from . import spec as _spec
from .library import C as _C
from .spec import SPECS
from .torch_private import (
    AutoDispatchBelowAutograd,
    bare_op,
    current_graph_task_id,
    function_apply,
    peek_interpreter_stack,
    top_saved_tensors_hooks,
    unwrap_if_dead,
)


class Owned:
    """A state that an nn module owns (its buffer), as the generator of a call: advanced in place like a
    Generator's."""

    __slots__ = ("state",)

    def __init__(self, state):
        self.state = state


_STREAM_ERROR = "generator must be a torch_rngx.Generator, a torch_rngx.nn.RNG or None, got {}"


def full_name(cls):
    """A class as its users write it: torch.Generator (not torch._C's), torch_rngx.Generator, builtins bare."""
    module = {"torch._C": "torch", "builtins": ""}.get(cls.__module__, cls.__module__)
    name = cls.__name__ if cls.__name__.startswith(("torch.", "torch_rngx.")) else cls.__qualname__
    return f"{module}.{name}" if module and not name.startswith(module + ".") else name


def owner_of(generator):
    """The state tensor a call with this generator advances; None for generator=None. A stream's owner is anything
    whose `.state` is a [seed, offset] int64 tensor of shape (2,) (docs: stream/): a Generator, an nn.RNG, an nn
    module's Owned buffer."""
    if generator is None:
        return None
    state = getattr(generator, "state", None)
    if isinstance(state, torch.Tensor) and state.dtype == torch.int64 and state.shape == (2,):
        return state
    got = full_name(type(generator))
    if isinstance(generator, torch.Generator):
        got += " (torch's generator: torch_rngx draws from a torch_rngx.Generator(seed) or nn.RNG)"
    elif isinstance(state, torch.Tensor):
        got += f" whose state is {state.dtype} {tuple(state.shape)}, not an int64 [seed, offset]"
    raise TypeError(_STREAM_ERROR.format(got))


# Per op, without Python between the call and the C++ dispatcher: the op, its fused form, its node's apply.
_KERNEL = {kind: bare_op(op.kernel.default) for kind, op in SPECS.items()}
_FUSED = {kind: bare_op(op.fused_kernel.default) for kind, op in SPECS.items() if op.fused is not None}
_NODE = {kind: function_apply(node) for kind, node in functions.NODE.items()}
_STEP = bare_op(torch.ops.rngx.step_.default)
_STEPS_MADE = _C.steps_made
# Words per element by (op, dtype, wide): wide for a range above the narrow one of an op with wide words (randint's).
_WORDS = {
    (kind, dtype, wide): op.words_per_element(dtype, (op.narrow or 0) + wide if op.wide else None)
    for kind, op in SPECS.items()
    for dtype in op.dtypes
    for wide in ((False, True) if op.wide else (False,))
}
FUSED_MAX = 1 << 15  # up to one thread's work: beyond it the saved dispatcher call is lost in the kernel's time


def sample(kind, x, key, *params, reads=None):
    """reads: (key, like, params) the key-reuse checker is told the call reads, where it is not (key, x, params):
    a call whose key repeats on purpose (channel alpha dropout's, one per spatial position) reads its words once."""
    # Keys of any strides give their contiguous copy's values; the key-reuse checker sees the caller's key.
    if torch.compiler.is_compiling():
        reuse.traced(key, kind)
        return _compiled(kind, x, key.contiguous(), params)
    if reuse.active is not None:
        _record(kind, *(reads or (x, key, params)))
    key = key.contiguous()
    if peek_interpreter_stack() is not None:  # inside a torch.func transform
        return functions.SAMPLE[kind].apply(x, key, *params)
    return _eager(kind, x, key, params)


def draw(kind, x, generator, *params):
    if generator is None:
        owner = None
    else:  # owner_of's protocol, inline for a plain tensor state (whose dtype and shape the op's C++ checks)
        try:
            owner = generator.state
        except AttributeError:
            owner = None
        if type(owner) is not torch.Tensor:
            owner = owner_of(generator)  # a DTensor state (checked), or not a stream's owner (refused)
    # The call's Params, read inline from the positions its row gives (no frame, no record on every call's path).
    spec = SPECS[kind]
    d = None if spec.dtype_at is None else params[spec.dtype_at]
    dtype = d if type(d) is torch.dtype and not spec.words_by_input else x.dtype  # Op.words_dtype's
    shape = params[spec.view_at]
    numel = x.numel() if shape is None else math.prod(shape)
    span = None if spec.range_at is None else params[spec.range_at[1]] - params[spec.range_at[0]]  # randint's
    if torch.compiler.is_compiling():
        key = step.key(owner, _spec.blocks_of(numel, dtype, kind, span))
        return _compiled(kind, x, key, params)
    if (  # a small CPU tensor with no gradient: the step (under the C++ lock) and the draw in one call, which
        # allocates before it steps, so it raises having drawn nothing
        spec.fused is not None
        and numel <= FUSED_MAX
        and shape is None
        and x.is_cpu
        and (owner is None or owner.is_cpu)
        and (spec.derivative is None or not (x.requires_grad and torch.is_grad_enabled()))
        and peek_interpreter_stack() is None
        and reuse.active is None
        and top_saved_tensors_hooks(False) is None
        and current_graph_task_id() == -1
    ):
        return _FUSED[kind](step.scratch_seed() if owner is None else owner, x, *params[: spec.view_at])
    # Where the call's steps stand, inline (no frame on the path of every call): step.mark's.
    if owner is None:
        mark = step.mark(None, x.numel()) if x.numel() >= step.TORCH_SAVED_FROM else None
    else:
        mark = _STEPS_MADE() if owner.is_cpu else step.mark(owner)
    try:
        if peek_interpreter_stack() is not None:
            return functions.DRAW[kind].apply(x, owner, dtype, *params)[0]
        if reuse.active is not None or top_saved_tensors_hooks(False) is not None or current_graph_task_id() != -1:
            # the key-reuse checker, a checkpoint's journal or a backward pass: the step as graphs record it
            return _eager(kind, x, functions.drawn_key(owner, numel, dtype, kind, span), params)
        if owner is None:
            return _eager(kind, x, step.fresh_seed(), params)
        words = _WORDS[kind, dtype, span is not None and span > spec.narrow]
        blocks = (numel * words + 3) // 4
        return _eager(kind, x, _STEP(owner, blocks) if owner.is_cpu else step.advance(owner, blocks), params)
    except BaseException:  # an allocation, autograd or an interrupt after the step: the blocks go back
        step.give_back(mark, owner)
        raise


def atomic(owner, numel, call, *args, **kwargs):
    """call(*args, **kwargs), which draws from owner (a state tensor, or None for torch's generator) and then works on
    what it drew: if it raises, what it drew is given back (step.give_back). numel: the elements it allocates."""
    mark = step.mark(owner, numel)
    try:
        return call(*args, **kwargs)
    except BaseException:
        step.give_back(mark, owner)
        raise


# Elements per call of an in-place fill's chunks: a chunk's output (1 MiB of float32) is still in cache when it is
# copied, and the allocator hands the same block back to the next chunk.
FILL_CHUNK = 1 << 18


def fill_(kind, tensor, generator, *params):
    """tensor.copy_(draw(kind, tensor, generator, *params)), the same bits and the same step. A large contiguous CPU
    tensor in plain eager code is drawn a chunk at a time, each chunk the block of the flat tensor at its offset
    (docs: stream/, "Global view"), so that no full-size output is allocated, faulted in and copied from memory."""
    owner = owner_of(generator)  # not a hot path: the large tensors' fill
    checks.writable(tensor, owner, "tensor", recorded=False)
    return atomic(owner, tensor.numel(), _fill, kind, tensor, generator, owner, params)


def fill_checked(kind, tensor, generator, *args):
    """A float tensor filled in place with op kind's values for args (its parameters before the dtype), as an
    initialiser of nn.init fills it (nn.init.trunc_normal_, and the mode's route for torch's)."""
    checks.float_tensor(tensor, "tensor")
    return fill_(kind, tensor, generator, *SPECS[kind].check(tensor, checks.LATER, *args, None))


def _fill(kind, tensor, generator, owner, params):
    numel, spec = tensor.numel(), SPECS[kind]
    p = spec.params(params)
    if (
        numel <= FILL_CHUNK
        or p.global_shape is not None
        or not (tensor.is_cpu and tensor.is_contiguous() and (owner is None or owner.is_cpu))
        or torch.compiler.is_compiling()
        or peek_interpreter_stack() is not None
        or reuse.active is not None
        or top_saved_tensors_hooks(False) is not None
        or current_graph_task_id() != -1
    ):
        with torch.no_grad():
            return tensor.copy_(draw(kind, tensor, generator, *params))
    key = functions.drawn_key(owner, numel, spec.words_dtype(tensor.dtype, p), kind, p.range)
    flat, whole = tensor.view(-1), [numel]
    with AutoDispatchBelowAutograd(), torch.no_grad():
        for start in range(0, numel, FILL_CHUNK):
            part = flat[start : start + FILL_CHUNK]
            part.copy_(_KERNEL[kind](part, key, *params[: spec.view_at], whole, [start]))
    return tensor


def key_for(x, generator, numel, dtype):
    """Under torch.func.vmap the key follows the randomness flag (functions.KeyDraw.vmap); x only gives the batch."""
    owner = owner_of(generator)
    if torch.compiler.is_compiling():
        return step.key(owner, _spec.blocks_of(numel, dtype))
    if peek_interpreter_stack() is not None:
        return functions.KeyDraw.apply(x, owner, numel, dtype)
    if top_saved_tensors_hooks(False) is not None or current_graph_task_id() != -1:
        return step.key(owner, _spec.blocks_of(numel, dtype))  # journaled in a checkpoint
    if owner is None:
        return step.fresh_seed()
    blocks = _spec.blocks_of(numel, dtype)
    return _STEP(owner, blocks) if owner.is_cpu else step.advance(owner, blocks)  # a device state: no host sync


def _eager(kind, x, key, params):
    """Plain eager: the op's node only when a gradient can flow, else the op below autograd (where its autograd
    kernel, Python for the differentiable ops, has nothing to do)."""
    if kind not in _NODE:  # not differentiable: the op falls through autograd in C++
        return _KERNEL[kind](x, key, *params)
    if x.requires_grad and torch.is_grad_enabled():
        return _NODE[kind](unwrap_if_dead(x), key, *params)
    with AutoDispatchBelowAutograd():
        return _KERNEL[kind](x, key, *params)


def _compiled(kind, x, key, params):
    if type(x) is not torch.Tensor and torch.distributed.is_available():
        # torch.compile has loaded torch.distributed.tensor before it traces, and with it our DTensor rules (_deferred)
        from . import dtensor

        if isinstance(x, dtensor.DTensor):
            return dtensor.compiled_call(SPECS[kind], x, key, params)
    return SPECS[kind].kernel(x, key, *params)


def _record(kind, x, key, params):
    """Tells the key-reuse checker (on) the words a call with an explicit key reads: x's elements' or, under a
    global view, its block's."""
    spec = SPECS[kind]
    p = spec.params(params)
    reuse.active.draw(kind, key, x.shape, spec.words_per_element(spec.words_dtype(x.dtype, p), p.range), *p.view)


def plain_tensors():
    """Not inside a torch.func transform."""
    return peek_interpreter_stack() is None


def eager_grad(x):
    """Plain eager code (not compiled, not inside a torch.func transform) where a gradient can flow to x."""
    return (
        x.requires_grad
        and torch.is_grad_enabled()
        and not torch.compiler.is_compiling()
        and peek_interpreter_stack() is None
    )
