"""Stateless ops: the result is a pure function of the arguments, and `state` is never modified.

`state` is a key `[seed, offset]`, an int64 or uint64 tensor of shape (2,) (both read as unsigned 64-bit; the
offset counts 128-bit Philox blocks), exactly a `torch.func._random` key. The element at logical (row-major)
index i takes words k*i ... k*i + k - 1 of the key's stream, which starts at block `offset` (k = 2 for float64,
else 1; normal makes elements 2p and 2p + 1 from the words of both; truncated_normal and randint take more:
blocks_used). A batched state of shape (*B, 2) has one B[d] per dim of the output, each 1 (the key repeats
along d) or the output's size there (one key per index); dims after the last B[d] != 1 are each key's run, in
which the key draws as if alone. See docs: stream/, "Batched states".

Keys:
    key(seed, device=None, dtype=torch.int64) -> state
    split(state, num=2) -> states of shape (num, *B, 2)
    fold_in(state, data) -> state
    blocks_used(numel, dtype, op=None, *, range=None) -> int
Samplers (like: the output's shape, strides and device):
    bits(size, state, *, dtype=torch.int32), uniform(like, state, low, high, *, dtype=None),
    normal(like, state, mean, std, *, dtype=None), truncated_normal(like, state, mean, std, a, b, *, dtype=None),
    bernoulli(like, state, p), randint(like, state, low, high, *, dtype=torch.int64),
    exponential(like, state, rate=1.0, *, dtype=None), cauchy(like, state, median=0.0, sigma=1.0, *, dtype=None),
    log_normal(like, state, mean=1.0, std=2.0, *, dtype=None), geometric(like, state, p, *, dtype=None),
    quantize_noise(x, state, half), dropout(x, state, p), rrelu(x, state, lower=1/8, upper=1/3),
    feature_dropout(x, state, p), alpha_dropout(x, state, p), feature_alpha_dropout(x, state, p)
Stochastic rounding (x: the input, rounded to a lower-precision dtype):
    stochastic_round(x, state, dtype, saturate=False)
Permutations and categories (not elementwise: no global view):
    randperm(n, state, *, dtype=torch.int64, device=None), multinomial(probs, state, num_samples, replacement=False)
The keyword arguments every other sampler shares:
    global_shape, global_start (sequences of ints, optional; both or neither): the tensor is the block of a global
        tensor of that shape that starts at that index, and gets exactly that block of the op on the global tensor
        (docs: stream/, "Global view"; docs: distributed/).

Import it as `import torch_rngx.functional as rf` (the docs' alias; `F` reads as torch.nn.functional).
"""

import operator
from typing import Optional, Sequence, Union

import torch
from torch import Tensor

from ._engine import checks, composite, reuse, router
from ._engine import spec as _spec
from ._engine.spec import SELU_ALPHA, blocks_of, rngx, words_per_element  # noqa: F401  (SELU_ALPHA: torch's alpha)

__all__ = [
    "alpha_dropout",
    "bernoulli",
    "bits",
    "blocks_used",
    "cauchy",
    "dropout",
    "exponential",
    "feature_alpha_dropout",
    "feature_dropout",
    "fold_in",
    "geometric",
    "key",
    "log_normal",
    "multinomial",
    "normal",
    "quantize_noise",
    "randint",
    "randperm",
    "rrelu",
    "split",
    "stochastic_round",
    "truncated_normal",
    "uniform",
]
_U64 = 1 << 64


def __dir__():
    return __all__


def blocks_used(numel: int, dtype: torch.dtype, op: Optional[str] = None, *, range: Optional[int] = None) -> int:
    """Philox blocks (4 words each) one call on `numel` elements of `dtype` consumes: ceil(numel * k / 4), with
    k the words per element: 2 for float64, int64 and uint64, else 1 (op="normal" too: a pair of elements shares
    2k words); for "truncated_normal" 2; for "randint" 2 when range = high - low <= 2^32 (every 8-, 16- and
    32-bit range), else (int64) 4; "exponential" and "stochastic_round" (by x's dtype) take the default words.
    For "randperm",
    numel is n and k is 2 for every dtype; for "multinomial", numel is the number of exponentials drawn, rows *
    categories * (num_samples with replacement, else 1), and k is 2 for every dtype (docs: stream/). A
    Generator advances its offset by this much per call. No torch counterpart.

    Args:
        numel (int): the number of elements, >= 0.
        dtype (torch.dtype): the output's dtype; for "stochastic_round", x's (its words follow its input).
        op (str, optional): None (uniform, dropout, noise, bits), "uniform", "normal", "truncated_normal",
            "bernoulli", "randint", "exponential", "stochastic_round", "randperm" or "multinomial".

    Keyword args:
        range (int, optional): randint's high - low, which it requires (and no other op takes): 1 to 2^32 for
            the 8-, 16- and 32-bit dtypes, to 2^64 - 1 for int64.

    Example::

        >>> torch_rngx.blocks_used(10, torch.float32), torch_rngx.blocks_used(10, torch.float32, "truncated_normal")
        (3, 5)
        >>> [torch_rngx.blocks_used(10, torch.int64, "randint", range=r) for r in (1000, 2**40)]
        [5, 10]
    """
    if isinstance(numel, bool) or not isinstance(numel, (int, torch.SymInt)):
        raise TypeError(f"numel must be an int, got {type(numel).__name__}")
    if isinstance(numel, int) and numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    if dtype not in _spec.WORDS:
        raise TypeError(f"dtype must be a float or integer dtype, got {dtype}")
    dtypes = _spec.output_dtypes(op) if op is None or isinstance(op, str) else None
    if dtypes is None:
        names = sorted([*_spec.SPECS, *_spec.COMPOSITE_WORDS])
        raise ValueError(f"op must be None or one of {names}, got {op!r}")
    if dtype not in dtypes:
        by_input = op in _spec.SPECS and _spec.SPECS[op].words_by_input
        raise TypeError(f"{op} does not {'take x of' if by_input else 'produce'} {dtype}")
    _check_range(op, dtype, range)
    return blocks_of(numel, dtype, op, range)


def _check_range(op, dtype, range):
    spec = _spec.SPECS.get(op)
    if spec is None or spec.range_at is None:  # only an op whose row reads a range (randint's) takes one
        if range is not None:
            raise ValueError(f"range is randint's high - low; op {op!r} takes none, got range={range}")
        return
    if isinstance(range, bool) or not isinstance(range, (int, torch.SymInt)):
        raise TypeError(f"range (randint's high - low) must be an int, got {type(range).__name__}")
    top = _U64 - 1 if dtype in spec.wide else spec.narrow
    if isinstance(range, int) and not 1 <= range <= top:
        raise ValueError(f"range (randint's high - low) must be in [1, {top}] for {dtype}, got {range}")


def key(seed: int, device: Union[torch.device, str, None] = None, dtype: torch.dtype = torch.int64) -> Tensor:
    """Stands in for ``torch.func._random.key``: the key [seed, 0] for an int seed in [0, 2^64), int64 (seeds
    >= 2^63 stored as their bits) or uint64, which is what torch's returns.

    Args:
        seed (int): in [0, 2^64).
        device (torch.device or str, optional): where the key lives; default the CPU.
        dtype (torch.dtype): torch.int64 (the default) or torch.uint64; both give the same values.

    Example::

        >>> rf.key(1234)
        tensor([1234,    0])
    """
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, got bool")
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed must be an int, got {type(seed).__name__}") from None
    if not 0 <= seed < _U64:
        raise ValueError(f"seed must be in [0, 2^64), got {seed}")
    if dtype not in checks.STATE_DTYPES:
        raise TypeError(f"dtype must be torch.int64 or torch.uint64, got {dtype}")
    bits = seed - _U64 if seed >= 1 << 63 else seed
    return torch.tensor([bits, 0], dtype=torch.int64, device=device).view(dtype)


def split(state: Tensor, num: int = 2) -> Tensor:
    """Stands in for ``torch.func._random.split``: `num` new keys from each key in `state`, shape (num, *B, 2):
    child i of [seed, offset] is Philox block offset + i of seed, read as two 64-bit words. Don't draw from
    `state` after deriving from it (JAX's rule): its words are the children's seeds.

    Args:
        state (Tensor): a key (2,) or a batch of keys (*B, 2), int64 or uint64.
        num (int): how many keys to make, >= 1.

    Example::

        >>> k_noise, k_mask = rf.split(rf.key(1234))
        >>> k_noise.shape
        torch.Size([2])
    """
    checks.state(state)
    num = checks.num(num)
    if torch.compiler.is_compiling():
        reuse.traced(state, "split")
    elif reuse.active is not None:  # the children are blocks offset .. offset + num - 1 of each key
        reuse.active.blocks("split", state, [(0, num)])
    return rngx.split(state.contiguous(), num)


def fold_in(state: Tensor, data: Union[int, Tensor]) -> Tensor:
    """Stands in for ``torch.func._random.fold_in``: one new key per key in `state`, fold_in(s, d) ==
    split(s, d + 1)[d].

    Args:
        state (Tensor): a key (2,) or a batch of keys (*B, 2), int64 or uint64.
        data (int or Tensor): an int in [0, 2^64), or an int64/uint64 tensor broadcastable to the batch shape (one
            datum per key).

    Example::

        >>> step_key = rf.fold_in(rf.key(1234), 100)
        >>> torch.equal(step_key, rf.split(rf.key(1234), 101)[100])
        True
    """
    checks.state(state)
    data = checks.fold_data(data, state)
    if reuse.active is not None and not torch.compiler.is_compiling() and router.plain_tensors():
        # the result is block offset + data of each key
        blocks = data.view(torch.int64).expand(state.shape[:-1]).reshape(-1).tolist()
        reuse.active.blocks("fold_in", state, [(d % (1 << 64), d % (1 << 64) + 1) for d in blocks])
    return rngx.fold_in(state.contiguous(), data)


def bits(
    size: Sequence[int],
    state: Tensor,
    *,
    dtype: torch.dtype = torch.int32,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.func._random.bits`` (torch 2.15): raw stream bits of `size`. Integer dtypes of up to 32
    bits take one word per element (its low bits), int64/uint64 two, first word high. The default int32 holds
    each word's 32 bits, so negative values appear.

    Args:
        size (sequence of ints): the output's shape.
        state (Tensor): a key (2,) or a batch of keys (*B, 2), int64 or uint64.

    Keyword args:
        dtype (torch.dtype): an integer dtype; default torch.int32.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.bits((4,), rf.key(0), dtype=torch.uint8).shape
        torch.Size([4])
    """
    size, *view = checks.size_dtype(size, state, dtype, global_shape, global_start)
    if torch.compiler.is_compiling():
        reuse.traced(state, "bits")
    elif reuse.active is not None:
        reuse.active.draw("bits", state, size, words_per_element(dtype), *view)
    return rngx.bits(size, state.contiguous(), dtype, *view)


def uniform(
    like: Tensor,
    state: Tensor,
    low: float = 0.0,
    high: float = 1.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.func._random.uniform`` and ``torch.empty_like(like).uniform_(low, high)``: U[low, high)
    with the dtype (or `dtype`), device and strides of torch.empty_like(like).

    Args:
        like (Tensor): gives the shape, strides and device (its values are not read).
        state (Tensor): a key (2,) or a batch of keys (*B, 2), one B[d] per dim of like, 1 or like's size.
        low, high (float): the interval, low < high.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> u = rf.uniform(torch.empty(3), rf.key(0), -1.0, 1.0)
        >>> bool(((u >= -1) & (u < 1)).all())
        True
    """
    return router.sample(
        "uniform", like, state, *checks.like_interval(like, state, low, high, dtype, global_shape, global_start)
    )


def quantize_noise(
    x: Tensor,
    state: Tensor,
    half: float = 0.5,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).uniform_(-half, half) + x``, in one pass: x + U[-half, half);
    differentiable, with d/dx = 1.

    Args:
        x (Tensor): a float tensor.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        half (float): half the noise's width, >= 0.

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> x = torch.zeros(4)
        >>> bool((rf.quantize_noise(x, rf.key(0)).abs() <= 0.5).all())
        True
    """
    return router.sample("quantize_noise", x, state, *checks.x_half(x, state, half, global_shape, global_start))


def dropout(
    x: Tensor,
    state: Tensor,
    p: float,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """``torch.nn.functional.dropout`` with a key: keeps x[i] * 1/(1-p) iff u[i] >= p, else 0. Backward recomputes
    the mask from `state`.

    Args:
        x (Tensor): a float tensor.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        p (float): the probability of dropping, in [0, 1].

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.dropout(torch.ones(4), rf.key(0), 0.0)
        tensor([1., 1., 1., 1.])
    """
    return router.sample("dropout", x, state, *checks.x_p(x, state, p, global_shape, global_start))


def normal(
    like: Tensor,
    state: Tensor,
    mean: Union[float, Tensor] = 0.0,
    std: Union[float, Tensor] = 1.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.func._random.normal`` and ``torch.empty_like(like).normal_(mean, std)``: N(mean,
    std^2) shaped, strided and placed like torch.empty_like(like, dtype=dtype): paired Box-Muller with the
    project's own log, cos and sin (docs: stream/, "normal"), z * std + mean. With a tensor mean or std, torch's
    ``torch.normal(mean, std)`` on like's shape: normal(0, 1) times std plus mean, each rounded to like's dtype
    (docs: stream/, "normal_tensor"); a float beside a tensor is converted to like's dtype. Not differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        mean (float or Tensor): the mean, or a tensor of them broadcastable to like's shape.
        std (float or Tensor): the standard deviation, >= 0, or a tensor of them.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's (with a tensor mean or std: like's only).
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.normal(torch.empty(2, 3), rf.key(0)).shape
        torch.Size([2, 3])
    """
    kind, params = checks.normal_args(like, state, mean, std, dtype, global_shape, global_start)
    return router.sample(kind, like, state, *params)


def truncated_normal(
    like: Tensor,
    state: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.init.trunc_normal_`` with a key: N(mean, std^2) conditioned on [a, b], a and b
    absolute bounds (torch's convention), by the inverse CDF; every value lies in [a, b]. Not differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        mean, std (float): of the normal before truncation. a, b (float): the bounds, a < b.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> w = rf.truncated_normal(torch.empty(1000), rf.key(0), 0.0, 1.0, -0.5, 0.5)
        >>> bool(((w >= -0.5) & (w <= 0.5)).all())
        True
    """
    spec = _spec.SPECS["truncated_normal"]
    return router.sample(
        spec.name, like, state, *spec.check(like, state, mean, std, a, b, dtype, global_shape, global_start)
    )


def bernoulli(
    like: Tensor,
    state: Tensor,
    p: Union[float, Tensor] = 0.5,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.bernoulli(torch.full_like(like, p))``: 1 where u < p, else 0, in like's (float) dtype,
    with dropout's u: bernoulli(x, key, p) == (dropout(ones, key, p) == 0).

    Args:
        like (Tensor): a float tensor giving the shape, strides, device and dtype.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        p (float or Tensor): the probability of a 1, or a tensor of them broadcastable to like's shape.

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.bernoulli(torch.empty(3), rf.key(0), 1.0)
        tensor([1., 1., 1.])
    """
    p, *view = checks.like_p(like, state, p, global_shape, global_start)
    kind = "bernoulli_tensor" if isinstance(p, torch.Tensor) else "bernoulli"
    return router.sample(kind, like, state, checks.probabilities(p), *view)


def randint(
    like: Tensor,
    state: Tensor,
    low: int,
    high: int,
    *,
    dtype: torch.dtype = torch.int64,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.randint_like(like, low, high)`` with a key: integers uniform on [low, high), shaped
    like `like`, as floor((high - low) * x / 2^bits) + low with x of 64 bits (2 words; int64 with high - low > 2^32:
    128 bits, 4 words): bias at most 2^-32 relative (docs: stream/, "randint").

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        low, high (int): the range [low, high), low < high, within dtype.

    Keyword args:
        dtype (torch.dtype): int8, uint8, int16, int32 or int64 (the default).
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> i = rf.randint(torch.empty(100), rf.key(0), 1, 7)
        >>> int(i.min()) >= 1 and int(i.max()) <= 6
        True
    """
    return router.sample(
        "randint", like, state, *checks.like_int_range(like, state, low, high, dtype, global_shape, global_start)
    )


def exponential(
    like: Tensor,
    state: Tensor,
    rate: float = 1.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(like).exponential_(rate)``: Exp(rate) shaped, strided and placed like
    torch.empty_like(like, dtype=dtype): E / rate with E = -ln u, u in (0, 1) from the element's word(s) and the
    project's own log (docs: stream/, "exponential"). Every value is positive and finite, so -log of it is a finite
    Gumbel sample. Not differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        rate (float): the rate lambda, > 0 and finite.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> bool((rf.exponential(torch.empty(100), rf.key(0)) > 0).all())
        True
    """
    return router.sample(
        "exponential", like, state, *checks.like_rate(like, state, rate, dtype, global_shape, global_start)
    )


def cauchy(
    like: Tensor,
    state: Tensor,
    median: float = 0.0,
    sigma: float = 1.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(like).cauchy_(median, sigma)`` with a key: median + sigma * cot(theta), theta
    uniform on the circle, never on an axis (docs: stream/, "cauchy"), so every value is finite. Not
    differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        median (float): the location. sigma (float): the scale, > 0.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> bool(rf.cauchy(torch.empty(1000), rf.key(0)).isfinite().all())
        True
    """
    return router.sample(
        "cauchy", like, state, *checks.like_median_sigma(like, state, median, sigma, dtype, global_shape, global_start)
    )


def log_normal(
    like: Tensor,
    state: Tensor,
    mean: float = 1.0,
    std: float = 2.0,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(like).log_normal_(mean, std)`` with a key: exp(z * std + mean), z normal's
    value for the element (its pair's), in double, rounded once to the dtype (docs: stream/, "log_normal"). torch's
    defaults (mean 1, std 2). Not differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        mean (float), std (float): the underlying normal's, std > 0.

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> bool((rf.log_normal(torch.empty(1000), rf.key(0), 0.0, 0.5) > 0).all())
        True
    """
    return router.sample(
        "log_normal", like, state, *checks.like_log_normal(like, state, mean, std, dtype, global_shape, global_start)
    )


def geometric(
    like: Tensor,
    state: Tensor,
    p: float,
    *,
    dtype: Optional[torch.dtype] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(like).geometric_(p)`` with a key: the number of Bernoulli(p) trials up to the
    first success, ceil(E / -ln(1 - p)) with E exponential's Exp(1) (docs: stream/, "geometric"): 1, 2, 3, ...
    as floats. Not differentiable.

    Args:
        like (Tensor): gives the shape, strides and device.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        p (float): the probability of success, in (0, 1).

    Keyword args:
        dtype (torch.dtype, optional): a float dtype; default like's.
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> bool((rf.geometric(torch.empty(1000), rf.key(0), 0.5) >= 1).all())
        True
    """
    return router.sample(
        "geometric", like, state, *checks.like_open_p(like, state, p, dtype, global_shape, global_start)
    )


def rrelu(
    x: Tensor,
    state: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """``torch.nn.functional.rrelu`` in training with a key: x where x > 0, else x * r, r = uniform(lower, upper)'s
    value for the element in x's dtype (docs: stream/, "rrelu"). The gradient is 1 or r, as torch's.

    Args:
        x (Tensor): a float tensor.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        lower (float), upper (float): the slopes' range, lower <= upper.

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.rrelu(torch.tensor([2.0, 0.0]), rf.key(0))
        tensor([2., 0.])
    """
    return router.sample("rrelu", x, state, *checks.x_lower_upper(x, state, lower, upper, global_shape, global_start))


def stochastic_round(
    x: Tensor,
    state: Tensor,
    dtype: torch.dtype,
    saturate: bool = False,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stochastic rounding with a key: x rounded to `dtype`, a lower-precision float type, to the value above or
    below it with probability in proportion to its nearness, so the result is x on average. A value `dtype` holds
    comes back exactly; otherwise, with lo < x < hi its neighbours in `dtype`, the result is hi with probability
    (x - lo) / (hi - lo), decided by an exact integer comparison with the element's word(s) (docs: stream/,
    "stochastic_round"). NaN stays NaN, infinities stay infinite; a value past `dtype`'s largest finite value gives
    what x.to(dtype) gives, or with saturate=True that largest value. Shaped, strided and placed like x; the
    gradient passes straight through, as x.to(dtype)'s. No torch counterpart.

    Args:
        x (Tensor): a float16, bfloat16, float32 or float64 tensor.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        dtype (torch.dtype): torch.bfloat16, torch.float16, torch.float8_e4m3fn or torch.float8_e5m2, of lower
            precision than x's dtype (float16 to bfloat16 or float8; bfloat16 to float8 only).
        saturate (bool): values past dtype's range (infinities too) become its largest finite value.

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> y = rf.stochastic_round(torch.full((1000,), 1 + 2**-9), rf.key(0), torch.bfloat16)
        >>> sorted(set(y.float().tolist()))
        [1.0, 1.0078125]
    """
    return router.sample(
        "stochastic_round", x, state, *checks.x_round(x, state, saturate, dtype, global_shape, global_start)
    )


def randperm(
    n: int, state: Tensor, *, dtype: torch.dtype = torch.int64, device: Union[str, torch.device, None] = None
) -> Tensor:
    """Stands in for ``torch.randperm``: a permutation of range(n), the indices sorted by their 64-bit keys,
    bits((n,), state, dtype=torch.int64) (as signed integers), ties by index (docs: stream/, "randperm"). A batched
    state (*B, 2) gives (*B, n), row b the permutation of key b. Made on the state's device.

    Args:
        n (int): the length, >= 0 and representable in `dtype`.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).

    Keyword args:
        dtype (torch.dtype): the output's, int64 by default: uint8, int8, int16, int32, int64, float16,
            bfloat16, float32 or float64, one that holds every value 0 .. n - 1 exactly.
        device (str or torch.device, optional): if given, must be the state's device.

    Example::

        >>> sorted(rf.randperm(4, rf.key(0)).tolist())
        [0, 1, 2, 3]
    """
    n = checks.permutation(n, state, dtype, device)
    return composite.permutation(n, state, dtype)


def multinomial(probs: Tensor, state: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """Stands in for ``torch.multinomial``, with a key: `num_samples` category indices per row of `probs` ((C,) or (R,
    C) weights >= 0, rows need not sum to 1), by an exponential race (docs: stream/, "multinomial"): with the float64
    exponentials E of the stream, category argmin_i E_i / p_i; without replacement the num_samples smallest E_i / p_i in
    increasing order, with replacement fresh E per sample. Ties go to the lowest index. `state`: one key, or (R, 2) for
    one key per row. int64 output, (num_samples,) or (R, num_samples). The scores take R * C float64 values (R *
    num_samples * C with replacement), then a stable sort or an argmin: comparisons only.

    Args:
        probs (Tensor): (C,) or (R, C) non-negative float weights.
        state (Tensor): a key (2,), or (R, 2) for one key per row.
        num_samples (int): indices per row; at most C without replacement.
        replacement (bool): draw with replacement.

    Example::

        >>> rf.multinomial(torch.tensor([0.0, 0.0, 1.0]), rf.key(0), 1).tolist()
        [2]
    """
    key, num_samples, draws, need = checks.categories(probs, state, num_samples, replacement)
    checks.weights(probs, need)
    return composite.race_samples(probs, key, num_samples, replacement, draws, need)


# ---- channel and alpha dropout (docs: stream/, "Channel and alpha dropout", "alpha_dropout") ----


def feature_dropout(
    x: Tensor,
    state: Tensor,
    p: float,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """``torch.nn.functional.dropout2d``'s channel dropout with a key (torch's feature_dropout): one keep/drop
    decision per (n, c), from the dropout stream of an (N, C) tensor, applied to the whole x[n, c]: x * m[n, c],
    m = 1/(1-p) or 0. A batched state may vary along the first two dims only. Under a global view, the (N, C)
    tensor is the global one's first two dims.

    Args:
        x (Tensor): a float tensor of at least 2 dims (N, C, ...).
        state (Tensor): a key (2,) or a batch of keys.
        p (float): the probability of dropping a channel, in [0, 1].

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.feature_dropout(torch.ones(2, 3, 4), rf.key(0), 0.5).shape
        torch.Size([2, 3, 4])
    """
    p, *view = checks.x_channel_p(x, state, p, global_shape, global_start)
    return composite.feature_dropout(x, state, p, view)


def alpha_dropout(
    x: Tensor,
    state: Tensor,
    p: float,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """``torch.nn.functional.alpha_dropout`` with a key and the dropout stream's mask: kept a*x + alpha*a*p,
    dropped -alpha*a*(1-p), a = ((alpha^2 p + 1)(1 - p))^-1/2, so a SELU network keeps zero mean and unit
    variance.

    Args:
        x (Tensor): a float tensor.
        state (Tensor): a key (2,) or a batch of keys (*B, 2).
        p (float): the probability of dropping, in [0, 1].

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.alpha_dropout(torch.ones(3), rf.key(0), 0.0)
        tensor([1., 1., 1.])
    """
    p, *view = checks.x_p(x, state, p, global_shape, global_start)
    return router.sample("alpha_dropout", x, state, p, *view)


def feature_alpha_dropout(
    x: Tensor,
    state: Tensor,
    p: float,
    *,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """``torch.nn.functional.feature_alpha_dropout`` with a key: alpha_dropout with one decision per (n, c), as
    feature_dropout.

    Args:
        x (Tensor): a float tensor of at least 2 dims (N, C, ...).
        state (Tensor): a key (2,) or a batch of keys.
        p (float): the probability of dropping a channel, in [0, 1].

    Keyword args:
        global_shape, global_start: as every sampler (docs: api/functional/, "Shared keyword arguments").

    Example::

        >>> rf.feature_alpha_dropout(torch.ones(2, 3), rf.key(0), 0.0)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    p, *view = checks.x_channel_p(x, state, p, global_shape, global_start)
    return composite.feature_alpha_dropout(x, state, p, view)
