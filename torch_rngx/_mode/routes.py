"""torch_rngx.mode's routes: torch's signature in, the matching torch_rngx call on the mode's generator out; None
means "not ours, it stays torch's" (an explicit torch.Generator, out=, a layout we do not make). The table ROUTES
is the list of routed torch functions in docs: guarantees/; torch functions written in Python that draw only
through these (nn.init's, fractional max pooling, multi-head attention) are run with the mode kept on
(_random_ops.transparent) and need no route of their own."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as TF

from .. import stateful as rr
from .._engine import checks
from .._engine.router import atomic, draw, fill_checked, owner_of
from .._engine.torch_private import peek_interpreter_stack, softmax_backward_data
from .rnn import RECURRENT


def _size(args, kwargs):
    size = kwargs.pop("size", None)
    if size is None:
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
    return tuple(size)


def _number(v):
    """A number argument as torch's argument parser reads one: a 0-dim tensor that needs no gradient, or a NumPy scalar,
    stands for its Python value (torchvision's RandomResizedCrop calls uniform_ with two 0-dim tensors). Anything else
    is left as it is, for the torch_rngx function's checks to name."""
    if isinstance(v, torch.Tensor):
        return v.item() if v.dim() == 0 and not v.requires_grad else v
    return v.item() if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 else v


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


def _complex(fill, scale):
    """fill(like, generator=g) for a complex `like` as torch defines its complex draws: on the real and imaginary
    parts, the (..., 2) real view, each part's std divided by sqrt(2) for a normal draw (scale), so that the complex
    value has variance std^2. Element (..., 0) and (..., 1) of the view are one pair of the stream: a normal's r cos
    and r sin."""

    def draw(like, generator, *params):
        parts = torch.view_as_real(torch.empty_like(like))
        if scale:  # normal: (mean, std) -> (mean, std / sqrt(2)), as torch's normal_ on a complex tensor
            mean, std = params or (0.0, 1.0)
            return torch.view_as_complex(fill(parts, mean, std / math.sqrt(2), generator=generator))
        return torch.view_as_complex(fill(parts, *params, generator=generator))

    return draw


def _sampler(sampler, complex_fill):
    """sampler(like, *params, generator=g), or complex_fill's for a complex like."""

    def draw(like, *params, generator):
        if like.dtype.is_complex:
            return complex_fill(like, generator, *params)
        return sampler(like, *params, generator=generator)

    return draw


# The parameters of torch.rand's and torch.randn's draws (uniform on [0, 1), the standard normal) as the ops' checks
# give them, for the routes' direct path.
_DEFAULTS = {
    "uniform": checks.like_interval(torch.empty(0), checks.LATER, 0.0, 1.0, None),
    "normal": checks.like_mean_std(torch.empty(0), checks.LATER, 0.0, 1.0, None),
}


def _drawn(kind, sampler, like, g, requires_grad):
    """sampler(like, generator=g); a plain real tensor that needs no gradient (what torch.rand(n) and torch.randn(n)
    make, and most *_like calls) passes the public function's own check of `like` and goes to the draw itself: a
    routed call's every frame counts in a DataLoader's per-sample cost."""
    if not requires_grad and type(like) is torch.Tensor and not like.dtype.is_complex:
        checks.float_like(like, checks.LATER, name="x")
        return draw(kind, like, g, *_DEFAULTS[kind])
    return _created(sampler(like, generator=g), requires_grad)


def _creation(kind, sampler):
    params = _DEFAULTS[kind]

    def route(g, *args, **kwargs):
        if not kwargs:  # torch.rand(2, 3) or torch.rand((2, 3)): torch.empty reads both, in the default (float) dtype
            return draw(kind, torch.empty(*args), g, *params)
        if not _plain(kwargs):
            return None
        size = _size(args, kwargs)
        return _drawn(kind, sampler, _new(size, kwargs), g, kwargs.get("requires_grad", False))

    route.draws_last = True
    return route


def _like_route(kind, sampler):
    def route(g, input, **kwargs):
        if kwargs and not _plain(kwargs):
            return None
        return _drawn(kind, sampler, _like(input, kwargs), g, kwargs.get("requires_grad", False))

    route.draws_last = True
    return route


def _giving_back(route):
    """route, which may raise after it drew (torch.nn.init's fill of an expanded tensor, attention's matmul on a value
    of the wrong shape): then the mode's stream gets its blocks back, as after any call that raises."""

    def run(g, *args, **kwargs):
        return atomic(owner_of(g), 0, route, g, *args, **kwargs)

    return run


_UNIFORM = _sampler(rr.uniform_like, _complex(rr.uniform_like, scale=False))
_NORMAL = _sampler(rr.normal_like, _complex(rr.normal_like, scale=True))


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
    like = torch.empty(size, device=kwargs.get("device"))
    out = rr.randint_like(like, _number(low), _number(high), generator=g, dtype=kwargs.get("dtype") or torch.int64)
    return _created(out, kwargs.get("requires_grad", False))


def _randint_like(g, input, *args, **kwargs):
    if not _plain(kwargs):
        return None
    if "high" in kwargs:
        low, high = (args[0] if args else kwargs.pop("low", 0)), kwargs.pop("high")
    else:
        low, high = (0, args[0]) if len(args) == 1 else args
    like = _like(input, {**kwargs, "dtype": None})
    out = rr.randint_like(like, _number(low), _number(high), generator=g, dtype=kwargs.get("dtype") or input.dtype)
    return _created(out, kwargs.get("requires_grad", False))


def _normal(g, mean=0.0, std=1.0, *args, **kwargs):
    """Every overload: (Tensor, Tensor), (Tensor, float), (float, Tensor) are normal_like with that tensor mean and std
    on the broadcast shape, in the dtype of the first tensor (torch's), mean * std's arithmetic in the op (as torch,
    no gradient flows to mean or std); (float, float, size) is normal_like of that size, where torch reads a 0-dim
    tensor as its number. A complex or integer mean or std stays torch's."""
    if not _plain(kwargs):
        return None
    if args or "size" in kwargs:  # only the (float, float, size) overload takes a size
        mean, std = _number(mean), _number(std)
    if isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor):
        ref = mean if isinstance(mean, torch.Tensor) else std
        if not ref.is_floating_point():
            return None
        shape = torch.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, torch.Tensor)))
        with torch.no_grad():
            return rr.normal_like(ref.new_empty(shape), _detached(mean), _detached(std), generator=g)
    size = _size(args, kwargs)
    return _created(rr.normal_like(_new(size, kwargs), mean, std, generator=g), kwargs.get("requires_grad", False))


def _detached(v):
    return v.detach() if isinstance(v, torch.Tensor) else v


def _bernoulli(g, input, p=None, *, generator=None, out=None):
    if generator is not None or out is not None:
        return None
    return rr.bernoulli_like(input, input if p is None else p, generator=g)


def _in_place(fill, numbers=True):
    """A Tensor.*_ method: self filled with the routed values, as torch does, under no_grad for a leaf. numbers: its
    parameters are numbers (bernoulli_'s p may be a tensor of them)."""

    def route(g, self, *args, generator=None, **kwargs):
        if generator is not None:
            return None
        checks.writable(self, owner_of(g), "self", torch.is_grad_enabled())  # torch's refusals, before the draw
        if numbers:
            args, kwargs = [_number(v) for v in args], {k: _number(v) for k, v in kwargs.items()}
        values = fill(g, self, *args, **kwargs)
        if values is None:
            return None
        return self.copy_(values)

    return route


def _filled(kind, route):
    """uniform_ or normal_ as route (an _in_place route) does it; with number parameters only, into a plain contiguous
    float tensor whose write torch cannot refuse (no gradient recorded, not an inference tensor, no shared memory, no
    torch.func transform), straight from the route to the draw with the op's own check of the parameters, and copied
    in: nothing after the draw can raise, so no give-back wrapper. torchvision's transforms draw each parameter as
    torch.empty(1).uniform_(a, b), several a sample (RandomResizedCrop up to twenty), in a DataLoader sample's scope."""
    check = checks.like_interval if kind == "uniform" else checks.like_mean_std
    slow = _giving_back(route)

    def fast(g, self, *args, **kwargs):
        if (
            kwargs
            or len(args) > 2
            or type(self) is not torch.Tensor
            or self.dtype not in checks.FLOAT_DTYPES
            or not self.is_contiguous()
            or (self.requires_grad and torch.is_grad_enabled())
            or (not torch.compiler.is_compiling() and self.is_inference())  # which Dynamo cannot trace
            or peek_interpreter_stack() is not None  # torch.func's transforms: their writes are theirs to refuse
            or any(type(v) is not float and type(v) is not int for v in args)
        ):
            return slow(g, self, *args, **kwargs)
        checks.writable(self, owner_of(g), "self", False)  # not the stream's own state
        params = (*args, *(0.0, 1.0)[len(args) :])  # torch's defaults: from=0, to=1; mean=0, std=1
        return self.copy_(draw(kind, self, g, *check(self, checks.LATER, *params, None)))

    fast.draws_last = True
    return fast


def _uniform_fill(g, self, *args, **kwargs):
    """uniform_(from=0, to=1), positional or by torch's keyword names (any other keyword: torch's error)."""
    if kwargs.keys() - {"from", "to"}:
        return None
    bounds = [*args, *(kwargs.get(k, d) for k, d in (("from", 0.0), ("to", 1.0))[len(args) :])]
    return _UNIFORM(self, *bounds, generator=g)


def _normal_fill(g, self, mean=0.0, std=1.0):
    return _NORMAL(self, mean, std, generator=g)


def _whole_range(dtype):
    """random_()'s range without bounds, as torch defines it: [0, 2^digits] in a float dtype (every integer of it
    exact), [0, max] in an integer dtype, {False, True} for bool; None where torch has no random_ (unsigned dtypes
    past uint8)."""
    if dtype == torch.bool:
        return 0, 2
    if dtype.is_floating_point:
        return 0, (1 << (int(-math.log2(torch.finfo(dtype).eps)) + 1)) + 1
    if dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        return 0, torch.iinfo(dtype).max + 1
    return None


def _random_fill(g, self, *args, **kwargs):
    """random_(from, to), random_(to), random_(from, None) (to the dtype's top) and random_() over the dtype's range."""
    whole = _whole_range(self.dtype)
    if whole is None:
        return None
    if args or kwargs:
        low, high = (0, args[0]) if len(args) == 1 else args if args else (kwargs.get("from", 0), kwargs.get("to"))
        if high is None:
            high = whole[1]
    else:
        low, high = whole
    if self.dtype == torch.int64 and high == 1 << 63:  # int64's top as one past: draw one lower and add 1
        return rr.randint_like(self, low - 1, high - 1, generator=g) + 1
    return rr.randint_like(self, low, high, generator=g)


def _geometric_fill(g, self, p):
    """geometric_ on a float tensor, or (as torch allows) an integer one: float64 counts converted by the copy."""
    dtype = None if self.dtype.is_floating_point else torch.float64
    return rr.geometric_like(self, p, generator=g, dtype=dtype)


def _rrelu(inplace):
    """torch.rrelu / rrelu_ (input, lower, upper, training, generator): F.rrelu's C++ op, which its Python wrapper
    calls (run with the mode kept on, so this route is what F.rrelu draws with)."""

    def route(g, input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
        if generator is not None:
            return None
        return rr.rrelu(input, _number(lower), _number(upper), training, inplace, generator=g)

    return route


def _dropout(fn):
    """F.<fn>'s arguments as given: fn has torch's signature and defaults (alpha_dropout's training=False), which
    torch.compile does not fill in when it hands the mode a call."""

    def route(g, input, *args, **kwargs):
        if args:
            args = (_number(args[0]), *args[1:])
        if "p" in kwargs:
            kwargs["p"] = _number(kwargs["p"])
        return fn(input, *args, generator=g, **kwargs)

    return route


def _torch_dropout(inplace):
    """torch.dropout / dropout_ (input, p, train): F.dropout's C++ op, called directly."""

    def route(g, input, p, train):
        return rr.dropout(input, _number(p), train, inplace, generator=g)

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
    dropout_p = _number(dropout_p)
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
    weights[..., :0, :] @ value  # value's shape, dtype and device refused (torch's matmul error) before the draw
    return rr.dropout(weights, dropout_p, generator=g) @ value


def _randperm(
    g, n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
):
    if not _plain(dict(generator=generator, out=out, layout=layout, pin_memory=pin_memory)):
        return None
    n = _number(n)
    return _created(rr.randperm(n, generator=g, dtype=dtype or torch.int64, device=device or "cpu"), requires_grad)


def _multinomial(g, input, num_samples, replacement=False, *, generator=None, out=None):
    if generator is not None or out is not None:
        return None
    return rr.multinomial(input, _number(num_samples), replacement, generator=g)


def _gumbel_softmax(g, logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """torch's formula with the Gumbel noise -log(E), E ~ Exp(1) from exponential_like; the softmax is
    _softmax_of's, so compiled equals eager bit for bit."""
    gumbels = -rr.exponential_like(logits, generator=g).log()
    y_soft = _softmax_of((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def trunc_normal(g, tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """nn.init.trunc_normal_ (which has no torch-function check, so the mode rebinds it): every value in [a, b]."""
    return None if generator is not None else fill_checked("truncated_normal", tensor, g, mean, std, a, b)


# What the mode calls for each routed torch function: the route itself where its one draw is its last step (draws_last:
# nothing after the draw can raise, and a DataLoader sample's routed torch.randn pays every frame), else _giving_back's.
_ROUTES = {
    torch.rand: _creation("uniform", _UNIFORM),
    torch.randn: _creation("normal", _NORMAL),
    torch.randint: _randint,
    torch.rand_like: _like_route("uniform", _UNIFORM),
    torch.randn_like: _like_route("normal", _NORMAL),
    torch.randint_like: _randint_like,
    torch.normal: _normal,
    torch.bernoulli: _bernoulli,
    torch.Tensor.bernoulli: _bernoulli,
    torch.Tensor.uniform_: _filled("uniform", _in_place(_uniform_fill)),
    torch.Tensor.normal_: _filled("normal", _in_place(_normal_fill)),
    torch.Tensor.bernoulli_: _in_place(lambda g, t, p=0.5: rr.bernoulli_like(t, p, generator=g), numbers=False),
    torch.Tensor.random_: _in_place(_random_fill),
    torch.Tensor.exponential_: _in_place(lambda g, t, lambd=1.0: rr.exponential_like(t, lambd, generator=g)),
    torch.Tensor.cauchy_: _in_place(lambda g, t, median=0.0, sigma=1.0: rr.cauchy_like(t, median, sigma, generator=g)),
    torch.Tensor.log_normal_: _in_place(lambda g, t, mean=1.0, std=2.0: rr.log_normal_like(t, mean, std, generator=g)),
    torch.Tensor.geometric_: _in_place(_geometric_fill),
    torch.rrelu: _rrelu(False),
    torch.rrelu_: _rrelu(True),
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
    torch.dropout: _torch_dropout(False),
    torch.dropout_: _torch_dropout(True),
    TF.scaled_dot_product_attention: _sdpa,
    **RECURRENT,
}
ROUTES = {f: route if getattr(route, "draws_last", False) else _giving_back(route) for f, route in _ROUTES.items()}
