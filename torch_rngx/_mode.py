"""torch_rngx.mode: torch's own random functions, called by code you did not write, drawing from a torch_rngx
stream (docs/guide.md, "Any model, unchanged"; the coverage table in docs/guarantees.md).

Two mechanisms, because torch.compile sees torch functions in two ways:
- a TorchFunctionMode, which Dynamo inlines, routes torch.rand, randn, randint, bernoulli, the Tensor.*_ samplers,
  the dropout family, attention's dropout_p and nn.init;
- torch.rand_like, randn_like, randint_like and normal are in torch.overrides.get_ignored_functions(): Dynamo never
  shows them to a mode. While any mode is active (in any thread) those names, and nn.init.trunc_normal_ (which never
  dispatches), are bound to wrappers that look for a mode on this thread's torch function mode stack and otherwise
  call torch's function. Dynamo traces the wrapper and guards on the binding.
Each routed call is the matching torch_rngx function with generator= the mode's, so it advances the stream by exactly
what that function consumes and gives its bits, eager and compiled alike.
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings

import torch
import torch.nn.functional as TF

from . import _stateful as rr
from ._init import trunc_normal_ as _trunc_normal_
from ._torch import PRIVATE_SAMPLERS, calculate_correct_fan, softmax_backward_data, torch_function_modes
from .generator import RNG, Generator, owner_of

__all__ = ["mode", "UncoveredRandomWarning", "ROUTED", "UNCOVERED"]


class UncoveredRandomWarning(UserWarning):
    """No torch counterpart. Warns of a random call under torch_rngx.mode that stays torch's: its values are
    torch's, and compiled code may then differ from eager. Filter it like any warning.

    Args:
        message (str): names the function.

    Example::

        >>> import warnings
        >>> warnings.simplefilter("error", torch_rngx.UncoveredRandomWarning)  # make uncovered calls fail a test
        >>> warnings.resetwarnings()
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


# ---- routes: torch's signature in, the matching torch_rngx call out; None means "not ours, stay torch's" ----


def _size(args, kwargs):
    size = kwargs.pop("size", None)
    if size is None:
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
    return tuple(size)


def _plain(kwargs):
    """Only the keywords a routed creation call understands: no generator, out=, layout or pin_memory."""
    return (
        kwargs.get("generator") is None
        and kwargs.get("out") is None
        and kwargs.get("pin_memory") in (None, False)
        and kwargs.get("layout") in (None, torch.strided)
    )


def _created(out, requires_grad):
    return out.requires_grad_() if requires_grad else out


def _new(size, kwargs):
    return torch.empty(size, dtype=kwargs.get("dtype") or torch.get_default_dtype(), device=kwargs.get("device"))


def _like(x, kwargs):
    """x, or torch.empty_like(x, ...) when the call changes the dtype, device or memory format."""
    extra = {k: kwargs[k] for k in ("dtype", "device", "memory_format") if kwargs.get(k) is not None}
    return torch.empty_like(x, **extra) if extra else x


def _creation(sampler):
    def route(g, *args, **kwargs):
        if not _plain(kwargs):
            return None
        size = _size(args, kwargs)
        return _created(sampler(_new(size, kwargs), generator=g), kwargs.get("requires_grad", False))

    return route


def _like_route(sampler):
    def route(g, input, **kwargs):
        if not _plain(kwargs):
            return None
        return _created(sampler(_like(input, kwargs), generator=g), kwargs.get("requires_grad", False))

    return route


def _randint(g, *args, **kwargs):
    if not _plain(kwargs):
        return None
    low = kwargs.pop("low", 0)
    if "high" in kwargs:
        high, size = kwargs.pop("high"), _size(args, kwargs)
    elif len(args) == 3 or (len(args) == 2 and "size" in kwargs):
        low, high, *rest = args
        size = _size(rest, kwargs)
    else:
        high, *rest = args
        size = _size(rest, kwargs)
    return _ints(
        torch.empty(size, device=kwargs.get("device")),
        low,
        high,
        kwargs.get("dtype") or torch.int64,
        g,
        kwargs.get("requires_grad", False),
    )


def _ints(like, low, high, dtype, g, requires_grad=False):
    """randint_like in an integer dtype; a float dtype (torch allows it) gets int64 draws converted."""
    if dtype.is_floating_point:
        return _created(rr.randint_like(like, low, high, generator=g).to(dtype), requires_grad)
    return rr.randint_like(like, low, high, generator=g, dtype=dtype)


def _randint_like(g, input, *args, **kwargs):
    if not _plain(kwargs):
        return None
    if "high" in kwargs:
        low, high = (args[0] if args else kwargs.pop("low", 0)), kwargs.pop("high")
    else:
        low, high = (0, args[0]) if len(args) == 1 else args
    like = _like(input, {**kwargs, "dtype": None})
    return _ints(like, low, high, kwargs.get("dtype") or input.dtype, g, kwargs.get("requires_grad", False))


def _normal(g, mean=0.0, std=1.0, *args, **kwargs):
    """Every overload: (Tensor, Tensor), (Tensor, float), (float, Tensor) give mean + std * randn of the broadcast
    shape (as torch, no gradient flows to mean or std); (float, float, size) is normal_like of that size."""
    if not _plain(kwargs):
        return None
    if isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor):
        ref = mean if isinstance(mean, torch.Tensor) else std
        shape = torch.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, torch.Tensor)))
        with torch.no_grad():
            return rr.randn_like(ref.new_empty(shape), generator=g) * std + mean
    size = _size(args, kwargs)
    return _created(rr.normal_like(_new(size, kwargs), mean, std, generator=g), kwargs.get("requires_grad", False))


def _bernoulli(g, input, p=None, *, generator=None, out=None):
    if generator is not None or out is not None:
        return None
    return rr.bernoulli_like(input, input if p is None else p, generator=g)


def _in_place(fill):
    """A Tensor.*_ method: self filled with the routed values, as torch does, under no_grad for a leaf."""

    def route(g, self, *args, generator=None, **kwargs):
        if generator is not None:
            return None
        values = fill(g, self, *args, **kwargs)
        if values is None:
            return None
        return self.copy_(values)

    return route


def _random_fill(g, self, *args, **kwargs):
    if not args and not kwargs:
        return None  # random_() without bounds: the dtype's whole range, not routed
    low, high = (0, args[0]) if len(args) == 1 else args if args else (kwargs.get("from", 0), kwargs["to"])
    return _ints(self, low, high, self.dtype, g)


def _dropout(fn):
    def route(g, input, p=0.5, training=True, inplace=False):
        return fn(input, p, training, inplace, generator=g)

    return route


@torch.library.custom_op("rngx_mode::softmax", mutates_args=())
def _softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """torch.softmax as one opaque op under torch.compile: Inductor runs torch's kernel instead of generating its
    own, whose sums round differently, so compiled attention weights are eager's bit for bit."""
    return torch.softmax(x, dim)


@torch.library.custom_op("rngx_mode::softmax_backward", mutates_args=())
def _softmax_backward(grad: torch.Tensor, out: torch.Tensor, dim: int) -> torch.Tensor:
    return softmax_backward_data(grad, out, dim, out.dtype)


_softmax.register_fake(lambda x, dim: torch.empty_like(x))
_softmax_backward.register_fake(lambda grad, out, dim: torch.empty_like(out))


def _softmax_setup(ctx, inputs, output):
    ctx.out, ctx.dim = output, inputs[1]


_softmax.register_autograd(
    lambda ctx, grad: (_softmax_backward(grad, ctx.out, ctx.dim), None), setup_context=_softmax_setup
)


def _softmax_of(x, dim):
    return _softmax(x, dim) if torch.compiler.is_compiling() else x.softmax(dim)


def _sdpa(g, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Math attention with our dropout on the probabilities: materialises the (L, S) weights, so it costs what
    torch's math backend costs. dropout_p == 0 draws nothing and stays torch's (fused kernels included)."""
    if dropout_p == 0.0:
        return TF.scaled_dot_product_attention(
            query, key, value, attn_mask, 0.0, is_causal, scale=scale, enable_gqa=enable_gqa
        )
    L, S = query.size(-2), key.size(-2)
    scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    scores = query @ key.transpose(-2, -1) * scale
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    weights = _softmax_of(scores, -1)
    return rr.dropout(weights, dropout_p, generator=g) @ value


def _init_uniform(g, tensor, a=0.0, b=1.0, generator=None):
    with torch.no_grad():
        return _ROUTES[torch.Tensor.uniform_](g, tensor, a, b, generator=generator)


def _init_normal(g, tensor, mean=0.0, std=1.0, generator=None):
    with torch.no_grad():
        return _ROUTES[torch.Tensor.normal_](g, tensor, mean, std, generator=generator)


def _init_kaiming_uniform(g, tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """torch's bound, sqrt(3) * gain / sqrt(fan), with the uniform routed."""
    if 0 in tensor.shape:
        return None  # torch's warning and no-op
    gain = torch.nn.init.calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(calculate_correct_fan(tensor, mode))
    return _init_uniform(g, tensor, -bound, bound, generator)


def _randperm(
    g, n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
):
    if not _plain(dict(generator=generator, out=out, layout=layout, pin_memory=pin_memory)):
        return None
    return _created(rr.randperm(n, generator=g, dtype=dtype or torch.int64, device=device or "cpu"), requires_grad)


def _multinomial(g, input, num_samples, replacement=False, *, generator=None, out=None):
    if generator is not None or out is not None:
        return None
    return rr.multinomial(input, num_samples, replacement, generator=g)


def _gumbel_softmax(g, logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """torch's formula with the Gumbel noise -log(E), E ~ Exp(1) from exponential_like."""
    gumbels = -rr.exponential_like(logits, generator=g).log()
    y_soft = _softmax_of((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


_ROUTES = {
    torch.rand: _creation(rr.rand_like),
    torch.randn: _creation(rr.randn_like),
    torch.randint: _randint,
    torch.rand_like: _like_route(rr.rand_like),
    torch.randn_like: _like_route(rr.randn_like),
    torch.randint_like: _randint_like,
    torch.normal: _normal,
    torch.bernoulli: _bernoulli,
    torch.Tensor.bernoulli: _bernoulli,
    torch.Tensor.uniform_: _in_place(lambda g, t, a=0.0, b=1.0: rr.uniform_like(t, a, b, generator=g)),
    torch.Tensor.normal_: _in_place(lambda g, t, mean=0.0, std=1.0: rr.normal_like(t, mean, std, generator=g)),
    torch.Tensor.bernoulli_: _in_place(lambda g, t, p=0.5: rr.bernoulli_like(t, p, generator=g)),
    torch.Tensor.random_: _in_place(_random_fill),
    torch.Tensor.exponential_: _in_place(lambda g, t, lambd=1.0: rr.exponential_like(t, lambd, generator=g)),
    torch.randperm: _randperm,
    torch.multinomial: _multinomial,
    torch.Tensor.multinomial: _multinomial,
    TF.gumbel_softmax: _gumbel_softmax,
    TF.dropout: _dropout(rr.dropout),
    TF.dropout1d: _dropout(rr.dropout1d),
    TF.dropout2d: _dropout(rr.dropout2d),
    TF.dropout3d: _dropout(rr.dropout3d),
    TF.alpha_dropout: _dropout(rr.alpha_dropout),
    TF.feature_alpha_dropout: _dropout(rr.feature_alpha_dropout),
    TF.scaled_dot_product_attention: _sdpa,
    torch.nn.init.uniform_: _init_uniform,
    torch.nn.init.normal_: _init_normal,
    torch.nn.init.kaiming_uniform_: _init_kaiming_uniform,
}


def _name(func):
    """The public name of a torch function: torch.rand, torch.Tensor.uniform_, torch.nn.functional.dropout."""
    if func in _TENSOR_METHODS:
        return f"torch.Tensor.{func.__name__}"
    module = getattr(func, "__module__", None)
    if module in (None, "torch._C._nn", "torch._C._VariableFunctions") or module.startswith("torch._C"):
        module = "torch.nn.functional" if getattr(TF, func.__name__, None) is func else "torch"
    return f"{module}.{func.__name__}"


_TENSOR_METHODS = {
    getattr(torch.Tensor, n)
    for n in (
        "bernoulli",
        "bernoulli_",
        "normal_",
        "uniform_",
        "random_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "exponential_",
        "multinomial",
    )
}
ROUTED = tuple(sorted({_name(f) for f in _ROUTES} | {"torch.nn.init.trunc_normal_"}))

# Random calls that stay torch's: never silent (uncovered=).
_UNCOVERED = {
    torch.Tensor.cauchy_,
    torch.Tensor.log_normal_,
    torch.Tensor.geometric_,
    torch.poisson,
    torch.binomial,
    torch.rrelu,
    torch.rrelu_,
    *PRIVATE_SAMPLERS,
    TF.fractional_max_pool2d,
    TF.fractional_max_pool3d,
    TF.rrelu,
    TF.rrelu_,
}
UNCOVERED = tuple(sorted({_name(f) for f in _UNCOVERED}))
_UNROUTED = object()
_WATCHED = {**dict.fromkeys(_UNCOVERED, _UNROUTED), **_ROUTES}  # what the mode looks at; any other call goes through


def _uncovered(func, args, kwargs):
    """Whether this call of an unrouted function draws: rrelu only in training, fractional pooling without
    _random_samples; any call with an explicit torch.Generator draws from it."""
    if isinstance(kwargs.get("generator"), torch.Generator):
        return True
    if func in (TF.rrelu, TF.rrelu_):
        return (args[3] if len(args) > 3 else kwargs.get("training", False)) is True
    if func in (TF.fractional_max_pool2d, TF.fractional_max_pool3d):
        return kwargs.get("_random_samples") is None and not (len(args) > 5 and args[5] is not None)
    return func in _UNCOVERED


_warned: set[str] = set()
_warned_lock = threading.Lock()


class mode(torch.overrides.TorchFunctionMode, contextlib.ContextDecorator):
    """No torch counterpart. Inside `with torch_rngx.mode(...)` (or on a function decorated with it), torch's random
    functions draw from a torch_rngx stream: each routed call is the matching torch_rngx function (torch.rand_like(x) is
    torch_rngx.rand_like(x, generator=g)), advancing the stream by what that function consumes, compiled == eager.

    Args:
        seed: an int: a fresh stream, Generator(seed)'s.
        generator: a torch_rngx.Generator or nn.RNG, shared with any other user of it.
            With neither, each call draws a seed from torch's default generator, so torch.manual_seed reproduces it.
        uncovered: what a random call that stays torch's does (Tensor.cauchy_, torch.poisson, F.rrelu in training,
            fractional max pooling, any call given an explicit torch.Generator, ... see UNCOVERED): "warn" (once per
            function and process, an UncoveredRandomWarning naming it), "error" (RuntimeError) or "ignore".

    Modes nest: the innermost active one routes. The mode is per thread, as torch's function modes are: a thread
    that has not entered it keeps torch's random functions.

    Example::

        >>> with torch_rngx.mode(seed=0):
        ...     a = torch.randn(3)
        >>> with torch_rngx.mode(seed=0):
        ...     b = torch.randn(3)
        >>> torch.equal(a, b)
        True
    """

    def __init__(
        self, *, seed: int | None = None, generator: Generator | RNG | None = None, uncovered: str = "warn"
    ) -> None:
        super().__init__()
        if seed is not None and generator is not None:
            raise ValueError("pass seed= or generator=, not both")
        if uncovered not in ("warn", "error", "ignore"):
            raise ValueError(f'uncovered must be "warn", "error" or "ignore", got {uncovered!r}')
        owner_of(generator)  # rejects anything but a Generator, an RNG or None
        self.generator = Generator(seed) if seed is not None else generator
        self.uncovered = uncovered

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Every torch call in the block comes here, random or not: the others cost one dict lookup and the call.
        route = _WATCHED.get(func)
        if route is None:
            return func(*args, **kwargs) if kwargs else func(*args)
        kwargs = kwargs or {}
        if route is not _UNROUTED:
            out = route(self.generator, *args, **dict(kwargs))
            if out is not None:
                return out
        if self.uncovered != "ignore" and _uncovered(func, args, kwargs):
            self._report(func)
        return func(*args, **kwargs)

    def _report(self, func):
        name = _name(func)
        message = (
            f"torch_rngx.mode: {name} is not routed and draws from torch's generator: its values are torch's, "
            f"and compiled code may differ from eager (docs/guarantees.md, 'torch_rngx.mode')"
        )
        if self.uncovered == "error":
            raise RuntimeError(message)
        with _warned_lock:
            if name in _warned:
                return
            _warned.add(name)
        warnings.warn(message, UncoveredRandomWarning, stacklevel=3)

    def __enter__(self):
        _bind()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _unbind()


# ---- the rebound names (torch.overrides.get_ignored_functions(), and trunc_normal_, which never dispatches) ----


def _active():
    """The innermost torch_rngx.mode on this thread's torch function mode stack, or None."""
    for m in torch_function_modes():
        if isinstance(m, mode):
            return m
    return None


def _wrapper(original, route):
    def wrapper(*args, **kwargs):
        m = _active()
        if m is not None:
            out = route(m.generator, *args, **dict(kwargs))
            if out is not None:
                return out
            if m.uncovered != "ignore":
                m._report(original)
        return original(*args, **kwargs)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = original.__name__, original.__qualname__, original.__doc__
    wrapper.__wrapped__ = original
    return wrapper


def _trunc_normal(g, tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    return None if generator is not None else _trunc_normal_(tensor, mean, std, a, b, generator=g)


_REBOUND = [
    (torch, "rand_like", _like_route(rr.rand_like)),
    (torch, "randn_like", _like_route(rr.randn_like)),
    (torch, "randint_like", _randint_like),
    (torch, "normal", _normal),
    (torch.nn.init, "trunc_normal_", _trunc_normal),
]
_ORIGINALS = {name: getattr(owner, name) for owner, name, _ in _REBOUND}
_WRAPPERS = {name: _wrapper(_ORIGINALS[name], route) for _, name, route in _REBOUND}
_entered = 0
_bind_lock = threading.Lock()


def _bind():
    """Counts active modes across threads; the first binds the wrappers."""
    global _entered
    if torch.compiler.is_compiling():  # traced as a side effect; the wrappers stay bound after the graph
        for owner, name, _ in _REBOUND:
            setattr(owner, name, _WRAPPERS[name])
        return
    with _bind_lock:
        _entered += 1
        if _entered == 1:
            for owner, name, _ in _REBOUND:
                setattr(owner, name, _WRAPPERS[name])


def _unbind():
    global _entered
    if torch.compiler.is_compiling():
        return
    with _bind_lock:
        _entered -= 1
        if _entered == 0:
            for owner, name, _ in _REBOUND:
                setattr(owner, name, _ORIGINALS[name])
