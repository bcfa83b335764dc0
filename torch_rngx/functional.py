"""Stateless ops: the result is a pure function of the arguments, and `state` is never modified.

`state` is a key `[seed, offset]`, an int64 or uint64 tensor of shape (2,) (both read as unsigned 64-bit; the
offset counts 128-bit Philox blocks), exactly a `torch.func._random` key. The element at logical (row-major)
index i takes words k*i ... k*i + k - 1 of the key's stream, which starts at block `offset` (k = 2 for float64,
else 1; normal, truncated_normal and randint take more: blocks_used). A batched state of shape (*B, 2) gives each
slice of the output its own key. See docs/stream.md.

Keys:
    key(seed, device=None, dtype=torch.int64) -> state
    split(state, num=2) -> states of shape (num, *B, 2)
    fold_in(state, data) -> state
    blocks_used(numel, dtype) -> int
Samplers (like: the output's shape, strides and device):
    bits(size, state, *, dtype=torch.int32), uniform(like, state, low, high, *, dtype=None),
    normal(like, state, mean, std, *, dtype=None), truncated_normal(like, state, mean, std, a, b, *, dtype=None),
    bernoulli(like, state, p), randint(like, state, low, high, *, dtype=torch.int64),
    exponential(like, state, rate=1.0, *, dtype=None),
    quantize_noise(x, state, half), dropout(x, state, p),
    feature_dropout(x, state, p), alpha_dropout(x, state, p), feature_alpha_dropout(x, state, p)
Permutations and categories (not elementwise: no global view):
    randperm(n, state, *, dtype=torch.int64, device=None), multinomial(probs, state, num_samples, replacement=False)
Every other sampler also takes keyword-only global_shape= and global_start= (both or neither): the tensor is then
the block of a global tensor that starts at global_start, and gets exactly that block of the op on the global
tensor (docs/stream.md, "Global view"; docs/distributed.md).
"""
import math
import operator

import torch

from . import _autograd, _checks
from ._ops import ops

_U64 = 1 << 64


def blocks_used(numel, dtype, op=None):
    """Philox blocks (4 words each) one call on `numel` elements of `dtype` consumes: ceil(numel * k / 4), with
    k the words per element: 2 for float64, int64 and uint64, else 1; for op="normal" 2 (float64: 4), for
    "truncated_normal" 2, for "randint" 2 (int64: 4); "exponential" takes the default words. For "randperm",
    numel is n and k is 2 for every dtype; for "multinomial", numel is the number of exponentials drawn, rows *
    categories * (num_samples with replacement, else 1), and k is 2 for every dtype (docs/stream.md). A
    Generator advances its offset by this much per call."""
    if isinstance(numel, bool) or not isinstance(numel, (int, torch.SymInt)):
        raise TypeError(f"numel must be an int, got {type(numel).__name__}")
    if isinstance(numel, int) and numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    if dtype not in _WORDS:
        raise TypeError(f"dtype must be a float or integer dtype, got {dtype}")
    if op not in _OP_DTYPES:
        raise ValueError(f"op must be None or one of {sorted(k for k in _OP_DTYPES if k)}, got {op!r}")
    if dtype not in _OP_DTYPES[op]:
        raise TypeError(f"{op} does not produce {dtype}")
    return blocks_of(numel, dtype, op)


def blocks_of(numel, dtype, op=None):
    """blocks_used without the argument checks, for callers that hold a tensor's numel and dtype. `op`: the
    sampler's kind in _autograd (None, or an op taking rngx_words_per_element, means the default words)."""
    return (numel * _OP_WORDS.get((op, dtype), _WORDS[dtype]) + 3) // 4


_WORDS = {dtype: 2 if dtype in (torch.float64, torch.int64, torch.uint64) else 1
          for dtype in _checks.FLOAT_DTYPES + _checks.INT_DTYPES}  # stream words per element
# Ops that take more words per element (csrc/kernels/ops.h: rngx_normal_words and the like; docs/stream.md).
_OP_WORDS = {**{("normal", d): 4 if d == torch.float64 else 2 for d in _checks.FLOAT_DTYPES},
             **{("truncated_normal", d): 2 for d in _checks.FLOAT_DTYPES},
             **{("randint", d): 4 if d == torch.int64 else 2 for d in _checks.RANDINT_DTYPES},
             **{("randperm", d): 2 for d in _checks.RANDPERM_LIMITS},
             **{("multinomial", d): 2 for d in _checks.FLOAT_DTYPES}}
_OP_DTYPES = {None: tuple(_WORDS), "uniform": _checks.FLOAT_DTYPES, "normal": _checks.FLOAT_DTYPES,
              "truncated_normal": _checks.FLOAT_DTYPES, "bernoulli": _checks.FLOAT_DTYPES,
              "randint": tuple(_checks.RANDINT_DTYPES), "exponential": _checks.FLOAT_DTYPES,
              "randperm": tuple(_checks.RANDPERM_LIMITS), "multinomial": _checks.FLOAT_DTYPES}


def key(seed, device=None, dtype=torch.int64):
    """The key [seed, 0] for an int seed in [0, 2^64): int64 (seeds >= 2^63 stored as their bits) or uint64,
    which is what torch.func._random.key returns."""
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, got bool")
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed must be an int, got {type(seed).__name__}") from None
    if not 0 <= seed < _U64:
        raise ValueError(f"seed must be in [0, 2^64), got {seed}")
    if dtype not in _checks.STATE_DTYPES:
        raise TypeError(f"dtype must be torch.int64 or torch.uint64, got {dtype}")
    bits = seed - _U64 if seed >= 1 << 63 else seed
    return torch.tensor([bits, 0], dtype=torch.int64, device=device).view(dtype)


def split(state, num=2):
    """`num` new keys from each key in `state`, shape (num, *B, 2), as torch.func._random.split: child i of
    [seed, offset] is Philox block offset + i of seed, read as two 64-bit words. Don't draw from `state` after
    deriving from it (JAX's rule): its words are the children's seeds."""
    _checks.state(state)
    return ops.split(state, _checks.num(num))


def fold_in(state, data):
    """One new key per key in `state`, as torch.func._random.fold_in: fold_in(s, d) == split(s, d + 1)[d]. `data`
    is an int in [0, 2^64) or an int64/uint64 tensor broadcastable to the batch shape (one datum per key)."""
    _checks.state(state)
    return ops.fold_in(state, _checks.fold_data(data, state))


def bits(size, state, *, dtype=torch.int32, global_shape=None, global_start=None):
    """Raw stream bits of `size`, as torch.func._random.bits (torch 2.15): integer dtypes of up to 32 bits take
    one word per element (its low bits), int64/uint64 two, first word high. The default int32 holds each
    word's 32 bits, so negative values appear."""
    size, *view = _checks.for_bits(size, state, dtype, global_shape, global_start)
    return ops.bits(size, state, dtype, *view)


def uniform(like, state, low=0.0, high=1.0, *, dtype=None, global_shape=None, global_start=None):
    """U[low, high) with the dtype (or `dtype`), device and strides of torch.empty_like(like)."""
    params = _checks.for_uniform(like, state, low, high, dtype, global_shape, global_start)
    return _autograd.sample("uniform", like, state, *params)


def quantize_noise(x, state, half=0.5, *, global_shape=None, global_start=None):
    """x + U[-half, half) in one pass; differentiable, with d/dx = 1."""
    return _autograd.sample("noise", x, state, *_checks.for_noise(x, state, half, global_shape, global_start))


def dropout(x, state, p, *, global_shape=None, global_start=None):
    """Keeps x[i] * 1/(1-p) iff u[i] >= p, else 0. Backward recomputes the mask from `state`."""
    return _autograd.sample("dropout", x, state, *_checks.for_dropout(x, state, p, global_shape, global_start))


def normal(like, state, mean=0.0, std=1.0, *, dtype=None, global_shape=None, global_start=None):
    """N(mean, std^2) shaped, strided and placed like torch.empty_like(like, dtype=dtype): Box-Muller with the
    project's own log and cos (docs/stream.md, "normal"), z * std + mean. Not differentiable."""
    params = _checks.for_normal(like, state, mean, std, dtype, global_shape, global_start)
    return _autograd.sample("normal", like, state, *params)


def truncated_normal(like, state, mean=0.0, std=1.0, a=-2.0, b=2.0, *, dtype=None, global_shape=None,
                     global_start=None):
    """N(mean, std^2) conditioned on [a, b], a and b absolute bounds (torch.nn.init.trunc_normal_'s convention),
    by the inverse CDF; every value lies in [a, b]. Not differentiable."""
    params = _checks.for_truncated_normal(like, state, mean, std, a, b, dtype, global_shape, global_start)
    return _autograd.sample("truncated_normal", like, state, *params)


def bernoulli(like, state, p=0.5, *, global_shape=None, global_start=None):
    """1 where u < p, else 0, in like's (float) dtype, with dropout's u: bernoulli(x, key, p) == (dropout(ones,
    key, p) == 0). `p` a probability or a tensor of them broadcastable to like's shape."""
    p, *view = _checks.for_bernoulli(like, state, p, global_shape, global_start)
    kind = "bernoulli_tensor" if isinstance(p, torch.Tensor) else "bernoulli"
    return _autograd.sample(kind, like, state, _checks.probabilities(p), *view)


def randint(like, state, low, high, *, dtype=torch.int64, global_shape=None, global_start=None):
    """Integers uniform on [low, high), shaped like `like`, as floor((high - low) * x / 2^bits) + low with x of
    64 bits (128 for int64): bias at most 2^-32 relative (docs/stream.md, "randint")."""
    params = _checks.for_randint(like, state, low, high, dtype, global_shape, global_start)
    return _autograd.sample("randint", like, state, *params)


def exponential(like, state, rate=1.0, *, dtype=None, global_shape=None, global_start=None):
    """Exp(rate) shaped, strided and placed like torch.empty_like(like, dtype=dtype): E / rate with E = -ln u,
    u in (0, 1) from the element's word(s) and the project's own log (docs/stream.md, "exponential"). Every value
    is positive and finite, so -log(exponential(...)) is a finite Gumbel sample (F.gumbel_softmax's noise). Not
    differentiable."""
    params = _checks.for_exponential(like, state, rate, dtype, global_shape, global_start)
    return _autograd.sample("exponential", like, state, *params)


def randperm(n, state, *, dtype=torch.int64, device=None):
    """A permutation of range(n): the indices sorted by their 64-bit keys, bits((n,), state, dtype=torch.int64)
    (as signed integers), ties by index (docs/stream.md, "randperm"). A batched state (*B, 2) gives (*B, n), row b
    the permutation of key b. Made on the state's device (`device`, if given, must be it)."""
    n = _checks.for_randperm(n, state, dtype, device)
    keys = state if state.dim() == 1 else state.view(*state.shape[:-1], 1, 2)
    words = ops.bits([*state.shape[:-1], n], keys, torch.int64)
    return torch.argsort(words, dim=-1, stable=True).to(dtype)


def multinomial(probs, state, num_samples, replacement=False):
    """torch.multinomial with a key: `num_samples` category indices per row of `probs` ((C,) or (R, C) weights
    >= 0, rows need not sum to 1), by an exponential race (docs/stream.md, "multinomial"): with the float64
    exponentials E of the stream, category argmin_i E_i / p_i; without replacement the num_samples smallest E_i / p_i
    in increasing order, with replacement fresh E per sample. Ties go to the lowest index. `state`: one key, or
    (R, 2) for one key per row. int64 output, (num_samples,) or (R, num_samples). The scores take R * C float64
    values (R * num_samples * C with replacement), then a stable sort or an argmin: comparisons only."""
    key, draws, need = _checks.for_multinomial(probs, state, num_samples, replacement)
    _checks.weights(probs, need)
    scores = ops.race(probs.detach().to(torch.float64).contiguous(), key, draws, need)
    if replacement:
        return scores.argmin(dim=-1)
    return torch.argsort(scores.squeeze(-2), dim=-1, stable=True)[..., :num_samples]


# ---- channel and alpha dropout: compositions of the dropout stream (docs/stream.md, "Channel and alpha dropout") ----

SELU_ALPHA = 1.7580993408473766  # SELU's -alpha * scale: alpha dropout drops to alpha' = -SELU_ALPHA, like torch


def feature_dropout(x, state, p, *, global_shape=None, global_start=None):
    """Channel dropout (torch's feature_dropout): one keep/drop decision per (n, c), from the dropout stream of an
    (N, C) tensor, applied to the whole x[n, c]: x * m[n, c], m = 1/(1-p) or 0. A batched state may vary along
    the first two dims only. Under a global view, the (N, C) tensor is the global one's first two dims."""
    p, *view = _checks.for_feature(x, state, p, global_shape, global_start)
    return _feature_dropout(x, state, p, view)


def alpha_dropout(x, state, p, *, global_shape=None, global_start=None):
    """torch's alpha dropout with the dropout stream's mask: kept a*x + alpha*a*p, dropped -alpha*a*(1-p),
    a = ((alpha^2 p + 1)(1 - p))^-1/2, so a SELU network keeps zero mean and unit variance."""
    p, *view = _checks.for_dropout(x, state, p, global_shape, global_start)
    return _alpha_dropout(x, _mask_of(x, state, p, view), p)


def feature_alpha_dropout(x, state, p, *, global_shape=None, global_start=None):
    """alpha_dropout with one decision per (n, c), as feature_dropout."""
    p, *view = _checks.for_feature(x, state, p, global_shape, global_start)
    return _alpha_dropout(x, _channel_mask(x, state, p, view), p)


def _channel_mask(x, key, p, view):
    """m[n, c] = dropout of ones (x's dtype) with the key, shaped (N, C, 1, ...) to broadcast over x[n, c]."""
    n, c = x.shape[0], x.shape[1]
    if key.dim() > 1:  # (B0, B1, 1, ..., 2): the key of each (n, c) segment of the (N, C) mask
        key = key.reshape(key.shape[0], key.shape[1], 2)
    view = [None, None] if view[0] is None else [view[0][:2], view[1][:2]]
    m = _autograd.sample("dropout", x.new_ones((n, c)), key, p, *view)
    return m.view(n, c, *([1] * (x.dim() - 2)))


def _mask_of(x, key, p, view):
    return _autograd.sample("dropout", torch.ones_like(x), key, p, *view)


def _feature_dropout(x, key, p, view):
    if p == 1:  # as torch: x * 0 (NaN stays NaN)
        return x * 0
    if _autograd.plain_eager_grad(x):  # backward recomputes the (N, C) scale from the key
        return _autograd.ChannelDropout.apply(x, key, p, view)
    return x * _channel_mask(x, key, p, view)


def _alpha_dropout(x, m, p):
    """m: the dropout of ones (1/(1-p) where kept, 0 where dropped), any shape broadcasting to x. The arithmetic
    is torch's, in x's dtype: b = (keep - 1) * alpha * a + alpha * a * p; x * (keep * a) + b."""
    if p == 1:
        return x * 0
    a = 1.0 / math.sqrt((SELU_ALPHA * SELU_ALPHA * p + 1) * (1 - p))
    keep = (m != 0).to(x.dtype)
    b = (keep - 1) * (SELU_ALPHA * a) + SELU_ALPHA * a * p
    return x * (keep * a) + b
