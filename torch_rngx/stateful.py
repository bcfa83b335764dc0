"""Stateful functions, like torch's: each call takes its key from a Generator or an nn.RNG module (advancing
it), or, with generator=None, draws a fresh seed from torch's default CPU generator, so torch.manual_seed
reproduces the sequence in eager and compiled code alike.

Each also takes keyword-only global_shape= and global_start= (both or neither): x is then the block of a global
tensor that starts at global_start, the call returns that block of the call on the global tensor, and the
Generator advances by the global tensor's blocks, the same on every rank (docs: distributed/).

The keyword arguments they share:
    generator (Generator or nn.RNG, optional): the stream to draw from, advanced in place by the blocks the call
        uses. None (the default): a fresh seed from torch's default CPU generator, as torch's own functions.
    global_shape, global_start (sequences of ints, optional): x is the block of a global tensor of that shape,
        starting at that index (docs: distributed/).
    layout, device, requires_grad, memory_format, pin_memory (the *_like functions): torch's keywords of the
        function each stands in for, with torch's meaning, defaults and errors: the output's layout (torch.strided),
        device (the values do not depend on it), whether it is a leaf that requires grad, memory format
        (torch.preserve_format: x's strides where x is dense) and pinned host memory.
"""

import warnings
from typing import Optional, Sequence, Union

import torch
from torch import Tensor

from ._engine import checks, composite, step
from ._engine.router import atomic, draw, key_for, owner_of
from .generator import RNG, Generator

__all__ = [
    "alpha_dropout",
    "bernoulli_like",
    "cauchy_like",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "exponential_like",
    "feature_alpha_dropout",
    "geometric_like",
    "log_normal_like",
    "multinomial",
    "normal_like",
    "quantize",
    "rand_like",
    "randint_like",
    "randn_like",
    "randperm",
    "rrelu",
    "stochastic_round",
    "uniform_like",
]


def __dir__():
    return __all__


# Real annotations (no `from __future__ import annotations`): help() then names the types themselves.


def _target(x, layout, device, pin_memory, memory_format, dtype=None):
    """What a *_like call draws like: x, or, when the call asks for another layout, device, memory format or pinned
    memory, torch.empty_like(x, ...) with them (never written: its shape, strides and device are read), so torch's
    own rules and errors for those keywords apply, as in its *_like functions. dtype: bernoulli_like's, whose op
    draws in the dtype of what it draws like."""
    asked = {"dtype": dtype, "layout": layout, "device": device, "pin_memory": pin_memory or None}
    if memory_format is not torch.preserve_format:  # torch's default, which a sparse layout refuses
        asked["memory_format"] = memory_format
    asked = {k: v for k, v in asked.items() if v is not None}
    if not asked or not isinstance(x, Tensor):
        return x  # a non-tensor x is named by the checks that follow
    return torch.empty_like(x, **asked)


def _leaf(out, requires_grad):
    """requires_grad=True: the result is a leaf that requires grad, as torch's (with torch's error for an integer
    dtype)."""
    if not isinstance(requires_grad, bool):
        raise TypeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    return out.requires_grad_() if requires_grad else out


def uniform_like(
    x: Tensor,
    low: float = 0.0,
    high: float = 1.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).uniform_(low, high)``: U[low, high) shaped, strided and placed like
    torch.empty_like(x, dtype=dtype), with the values of functional.uniform on a drawn key.

    Args:
        x (Tensor): gives the shape, strides and device (its values are not read).
        low, high (float): the interval, low < high, finite in the dtype's compute type.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> u = torch_rngx.uniform_like(torch.empty(2, 3), -1.0, 1.0, generator=torch_rngx.Generator(0))
        >>> bool(((u >= -1) & (u < 1)).all())
        True
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_interval(x, checks.LATER, low, high, dtype, global_shape, global_start, "x")
    return _leaf(draw("uniform", x, generator, *params), requires_grad)


def rand_like(
    x: Tensor,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.rand_like``: U[0, 1) shaped, strided and placed like x.

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> torch_rngx.rand_like(torch.empty(2, 3), generator=torch_rngx.Generator(0)).shape
        torch.Size([2, 3])
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_interval(x, checks.LATER, 0.0, 1.0, dtype, global_shape, global_start, "x")
    return _leaf(draw("uniform", x, generator, *params), requires_grad)


def normal_like(
    x: Tensor,
    mean: Union[float, Tensor] = 0.0,
    std: Union[float, Tensor] = 1.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).normal_(mean, std)``: N(mean, std^2) shaped, strided and placed like
    torch.empty_like(x, dtype=dtype), functional.normal's values on a drawn key; with a tensor mean or std,
    ``torch.normal(mean, std)`` on x's shape and dtype (functional.normal's). Not differentiable.

    Args:
        x (Tensor): gives the shape, strides and device.
        mean (float or Tensor): the mean, or a tensor of them broadcastable to x's shape.
        std (float or Tensor): the standard deviation, >= 0, or a tensor of them.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> z = torch_rngx.normal_like(torch.empty(1000), 5.0, 0.1, generator=torch_rngx.Generator(0))
        >>> abs(float(z.mean()) - 5.0) < 0.05
        True
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    kind, params = checks.normal_args(x, checks.LATER, mean, std, dtype, global_shape, global_start, "x")
    return _leaf(draw(kind, x, generator, *params), requires_grad)


def randn_like(
    x: Tensor,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.randn_like``: N(0, 1) shaped, strided and placed like x (normal_like(x, 0, 1)).

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> torch_rngx.randn_like(torch.empty(2, 3, dtype=torch.float64)).dtype
        torch.float64
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_mean_std(x, checks.LATER, 0.0, 1.0, dtype, global_shape, global_start, "x")
    return _leaf(draw("normal", x, generator, *params), requires_grad)


def bernoulli_like(
    x: Tensor,
    p: Union[float, Tensor] = 0.5,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.bernoulli(torch.full_like(x, p))``: 1 where u < p, else 0, shaped like x in x's
    (float) dtype. With a float p the mask is dropout's: bernoulli_like(x, p) == (dropout(ones_like(x), p) == 0)
    with the same key.

    Args:
        x (Tensor): a float tensor giving the shape, strides, device and dtype.
        p (float or Tensor): the probability of a 1, in [0, 1], or a tensor of them broadcastable to x.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> torch_rngx.bernoulli_like(torch.empty(4), 1.0)
        tensor([1., 1., 1., 1.])
    """
    if dtype is not None:
        checks.float_dtype(dtype, "dtype")
    x = _target(x, layout, device, pin_memory, memory_format, dtype)
    p, *view = checks.like_p(x, checks.LATER, p, global_shape, global_start, "x")
    kind = "bernoulli_tensor" if isinstance(p, Tensor) else "bernoulli"
    return _leaf(draw(kind, x, generator, checks.probabilities(p), *view), requires_grad)


def randint_like(
    x: Tensor,
    low: int,
    high: Optional[int] = None,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.randint_like``: integers uniform on [low, high) shaped like x, in `dtype`, x's by
    default, as torch (functional.randint's values on a drawn key). As torch, ``randint_like(x, high)`` means
    low = 0. In a float or bool dtype the values are int64 draws converted, as torch allows; a float dtype holds every
    integer of [-(2^digits), 2^digits] exactly, and outside it torch's warning is given.

    Args:
        x (Tensor): gives the shape, strides, device and (by default) the dtype.
        low (int): the lowest value (or, without `high`, the bound: values in [0, low)).
        high (int, optional): one above the highest value.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): uint8, int8, int16, int32, int64, bool (high <= 2) or a float dtype;
            default x's.

    Example::

        >>> i = torch_rngx.randint_like(torch.empty(100, dtype=torch.int32), 10)
        >>> i.dtype, bool(((i >= 0) & (i < 10)).all())
        (torch.int32, True)
    """
    low, high = (0, low) if high is None else (low, high)  # torch's one-bound form
    if not isinstance(x, Tensor):
        checks.strided(x, "x")  # names the argument
    x = _target(x, layout, device, pin_memory, memory_format)
    dtype = x.dtype if dtype is None else dtype
    drawn = checks.randint_draw_dtype(dtype, low, high)
    params = checks.like_int_range(x, checks.LATER, low, high, drawn, global_shape, global_start, "x")
    if drawn == dtype:
        return _leaf(draw("randint", x, generator, *params), requires_grad)
    out = atomic(owner_of(generator), x.numel(), lambda: draw("randint", x, generator, *params).to(dtype))
    return _leaf(out, requires_grad)


def exponential_like(
    x: Tensor,
    rate: float = 1.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).exponential_(rate)``: Exp(rate) shaped, strided and placed like
    torch.empty_like(x, dtype=dtype) (functional.exponential's values with a drawn key). Every value is positive
    and finite. Not differentiable.

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.
        rate (float): the rate lambda, > 0 and finite; the mean is 1 / rate.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> bool((torch_rngx.exponential_like(torch.empty(1000), 2.0) > 0).all())
        True
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_rate(x, checks.LATER, rate, dtype, global_shape, global_start, "x")
    return _leaf(draw("exponential", x, generator, *params), requires_grad)


def stochastic_round(
    x: Tensor,
    dtype: torch.dtype,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    saturate: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stochastic rounding: x rounded to `dtype`, a lower-precision float type, up or down at random with
    probability in proportion to nearness, so the result is x on average (functional.stochastic_round's values on a
    drawn key). Where x.to(dtype) loses an update smaller than half a step, this keeps it in expectation: the rounding
    bf16 weights and float8 casts rely on. Each element's rounding depends only on the key and its index, so the
    values are the same eager and compiled, on CPU and CUDA, in any layout, thread count and shard layout.
    No torch counterpart.

    Args:
        x (Tensor): a float16, bfloat16, float32 or float64 tensor.
        dtype (torch.dtype): torch.bfloat16, torch.float16, torch.float8_e4m3fn or torch.float8_e5m2, of lower
            precision than x's dtype.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").
        saturate (bool): values past dtype's range (infinities too) become its largest finite value, where
            x.to(dtype) would give infinity.

    Example::

        >>> w = torch.full((10000,), 1.0 + 2**-10)  # between two bfloat16 values, 1/8 of the way up
        >>> abs(float(torch_rngx.stochastic_round(w, torch.bfloat16).double().mean()) - (1 + 2**-10)) < 1e-4
        True
    """
    return draw(
        "stochastic_round",
        x,
        generator,
        *checks.x_round(x, checks.LATER, saturate, dtype, global_shape, global_start),
    )


def cauchy_like(
    x: Tensor,
    median: float = 0.0,
    sigma: float = 1.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).cauchy_(median, sigma)``: Cauchy(median, sigma) shaped, strided and placed
    like torch.empty_like(x, dtype=dtype) (functional.cauchy's values with a drawn key), every value finite. Not
    differentiable.

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.
        median (float): the location. sigma (float): the scale, > 0.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> torch_rngx.cauchy_like(torch.empty(2, 3), generator=torch_rngx.Generator(0)).shape
        torch.Size([2, 3])
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_median_sigma(x, checks.LATER, median, sigma, dtype, global_shape, global_start, "x")
    return _leaf(draw("cauchy", x, generator, *params), requires_grad)


def log_normal_like(
    x: Tensor,
    mean: float = 1.0,
    std: float = 2.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).log_normal_(mean, std)``: exp(N(mean, std^2)) shaped, strided and placed
    like torch.empty_like(x, dtype=dtype) (functional.log_normal's values with a drawn key). Not differentiable.

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.
        mean (float), std (float): the underlying normal's (torch's defaults 1 and 2), std > 0.

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> bool((torch_rngx.log_normal_like(torch.empty(1000), 0.0, 0.5) > 0).all())
        True
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_log_normal(x, checks.LATER, mean, std, dtype, global_shape, global_start, "x")
    return _leaf(draw("log_normal", x, generator, *params), requires_grad)


def geometric_like(
    x: Tensor,
    p: float,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: Optional[torch.dtype] = None,
    layout: Optional[torch.layout] = None,
    device: Optional[Union[str, torch.device]] = None,
    requires_grad: bool = False,
    memory_format: torch.memory_format = torch.preserve_format,
    pin_memory: bool = False,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.empty_like(x).geometric_(p)``: the trials up to the first success, 1, 2, 3, ..., shaped,
    strided and placed like torch.empty_like(x, dtype=dtype) (functional.geometric's values with a drawn key). Not
    differentiable.

    Args:
        x (Tensor): gives the shape, strides, device and (float) dtype.
        p (float): the probability of success, in (0, 1).

    Keyword args:
        generator, global_shape, global_start, layout, device, requires_grad, memory_format, pin_memory: as every
            stateful function (docs: api/torch_rngx/, "Shared keyword arguments").
        dtype (torch.dtype, optional): a float dtype; default x's.

    Example::

        >>> bool((torch_rngx.geometric_like(torch.empty(1000), 0.5) >= 1).all())
        True
    """
    x = _target(x, layout, device, pin_memory, memory_format)
    params = checks.like_open_p(x, checks.LATER, p, dtype, global_shape, global_start, "x")
    return _leaf(draw("geometric", x, generator, *params), requires_grad)


def randperm(
    n: int,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    dtype: torch.dtype = torch.int64,
    device: Union[str, torch.device] = "cpu",
) -> Tensor:
    """Stands in for ``torch.randperm``: a permutation of range(n) on `device` (functional.randperm's with a drawn
    key); advances the Generator by blocks_used(n, dtype, "randperm").

    Args:
        n (int): the length, >= 0 and representable in `dtype`.

    Keyword args:
        generator (Generator or RNG, optional): the stream; None draws a fresh seed from torch's generator.
        dtype (torch.dtype): the output's, int64 by default: uint8, int8, int16, int32, int64, float16,
            bfloat16, float32 or float64, one that holds every value 0 .. n - 1 exactly.
        device (str or torch.device): "cpu" or a CUDA device.

    Example::

        >>> sorted(torch_rngx.randperm(5).tolist())
        [0, 1, 2, 3, 4]
    """
    device = torch.device(device)
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be a CPU or CUDA device, got {device}")
    n = checks.permutation(n, checks.LATER, dtype)
    like = torch.empty(0, device=device)
    return atomic(
        owner_of(generator),
        n,
        lambda: composite.permutation(n, key_for(like, generator, n, torch.int64).to(device), dtype),
    )


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator: Optional[Union[Generator, RNG]] = None
) -> Tensor:
    """Stands in for ``torch.multinomial`` (functional.multinomial's values with a drawn key); advances the
    Generator by blocks_used(rows * categories * (num_samples if replacement else 1), input.dtype, "multinomial").

    Args:
        input (Tensor): (C,) or (R, C) non-negative float weights; rows need not sum to 1.
        num_samples (int): indices per row; at most C without replacement.
        replacement (bool): draw with replacement.

    Keyword args:
        generator (Generator or RNG, optional): the stream; None draws a fresh seed from torch's generator.

    Example::

        >>> torch_rngx.multinomial(torch.tensor([0.0, 1.0, 0.0]), 1).tolist()
        [1]
    """
    _, num_samples, draws, need = checks.categories(input, checks.LATER, num_samples, replacement)
    checks.weights(input, need)  # its values too, before the key is drawn
    numel = input.numel() * draws
    return atomic(
        owner_of(generator),
        numel,
        lambda: composite.race_samples(
            input, key_for(input, generator, numel, torch.float64), num_samples, replacement, draws, need
        ),
    )


def quantize(
    x: Tensor,
    mode: str = "noise",
    means: Optional[Tensor] = None,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``CompressAI's EntropyModel.quantize``: "noise" -> x + U[-0.5, 0.5) in one pass (gradient 1);
    "dequantize" -> round(x - means) + means; "symbols" -> round(x - means).int(). Only "noise" draws.

    Args:
        x (Tensor): a float tensor.
        mode (str): "noise", "dequantize" or "symbols".
        means (Tensor, optional): subtracted before rounding, broadcastable to x (not used by "noise").

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> x = torch.tensor([0.2, 1.7])
        >>> torch_rngx.quantize(x, "symbols")
        tensor([0, 2], dtype=torch.int32)
        >>> bool(((torch_rngx.quantize(x, "noise") - x).abs() <= 0.5).all())
        True
    """
    if mode == "noise":
        return draw("quantize_noise", x, generator, *checks.x_half(x, checks.LATER, 0.5, global_shape, global_start))
    if mode not in ("dequantize", "symbols"):
        raise ValueError(f'mode must be "noise", "dequantize" or "symbols", got {mode!r}')
    checks.float_x(x, checks.LATER, global_shape, global_start)
    if means is not None:
        checks.tensor(means, "means")
        checks.broadcasts(means, x.shape, "means", "x's")
    y = torch.round(x if means is None else x - means)
    if mode == "symbols":
        return y.int()
    return y if means is None else y + means


# ---- the dropout family, with torch.nn.functional's signatures (plus keyword-only generator=) ----


def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.dropout``: each element kept, scaled by 1/(1-p), iff its u >= p, else
    zeroed; the identity, drawing nothing, when not training. Backward recomputes the mask from the 16-byte key.

    Args:
        input (Tensor): a float tensor.
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.dropout(torch.ones(4), 1.0)
        tensor([0., 0., 0., 0.])
    """
    if inplace:
        return dropout_from("dropout", input, p, training, inplace, generator, global_shape, global_start)
    # dropout_from's path for a plain dropout, in the fewest frames (dropout_args checks input when it draws)
    p, *view = checks.dropout_args(input, p, training, inplace, global_shape, global_start, input_too=True)
    return draw("dropout", input, generator, p, *view) if training and p != 0 else input


def dropout1d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.dropout1d``: one keep/drop decision per (n, c) of an (N, C, L) input, or per
    channel of a (C, L) one, applied to the whole channel.

    Args:
        input (Tensor): a float (N, C, L) or (C, L) tensor.
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.dropout1d(torch.ones(2, 3, 5), 0.5).shape
        torch.Size([2, 3, 5])
    """
    return dropout_from("dropout1d", input, p, training, inplace, generator, global_shape, global_start)


def dropout2d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.dropout2d``: one decision per (n, c) of an (N, C, H, W) input, with torch's
    warnings for other ranks (a 3D input is taken as (N, C, L), as torch does).

    Args:
        input (Tensor): a float (N, C, H, W) tensor.
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.dropout2d(torch.ones(2, 3, 4, 4), 0.5).shape
        torch.Size([2, 3, 4, 4])
    """
    return dropout_from("dropout2d", input, p, training, inplace, generator, global_shape, global_start)


def dropout3d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.dropout3d``: one decision per (n, c) of an (N, C, D, H, W) input, or per
    channel of a (C, D, H, W) one.

    Args:
        input (Tensor): a float (N, C, D, H, W) or (C, D, H, W) tensor.
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.dropout3d(torch.ones(2, 3, 2, 2, 2), 0.5).shape
        torch.Size([2, 3, 2, 2, 2])
    """
    return dropout_from("dropout3d", input, p, training, inplace, generator, global_shape, global_start)


def alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.alpha_dropout``: dropout that keeps a SELU network's zero mean and unit
    variance (dropped units take SELU's negative saturation value, then an affine map). As in torch, training
    defaults to False.

    Args:
        input (Tensor): a float tensor.
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.alpha_dropout(torch.ones(3), 0.5)
        tensor([1., 1., 1.])
    """
    return dropout_from("alpha_dropout", input, p, training, inplace, generator, global_shape, global_start)


def feature_alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.feature_alpha_dropout``: alpha dropout with one decision per (n, c).
    As in torch, training defaults to False.

    Args:
        input (Tensor): a float tensor of at least 2 dims (N, C, ...).
        p (float): the probability of dropping, in [0, 1].
        training (bool): apply it (else return input, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function
            (docs: api/torch_rngx/, "Shared keyword arguments").

    Example::

        >>> torch_rngx.feature_alpha_dropout(torch.ones(2, 3, 4), 0.5, training=True).shape
        torch.Size([2, 3, 4])
    """
    return dropout_from("feature_alpha_dropout", input, p, training, inplace, generator, global_shape, global_start)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
    global_shape: Optional[Sequence[int]] = None,
    global_start: Optional[Sequence[int]] = None,
) -> Tensor:
    """Stands in for ``torch.nn.functional.rrelu``: in training, x where x > 0, else x * r with r uniform on
    [lower, upper) per element (functional.rrelu's values with a drawn key; the gradient 1 or r); not in training,
    torch's leaky_relu with slope (lower + upper) / 2, drawing nothing. As in torch, training defaults to False.

    Args:
        input (Tensor): a float tensor.
        lower (float), upper (float): the slopes' range, lower <= upper.
        training (bool): draw the slopes (else the mean slope, drawing nothing).
        inplace (bool): write the result into input and return input.

    Keyword args:
        generator, global_shape, global_start: as every stateful function (docs: api/torch_rngx/, "Shared keyword
            arguments").

    Example::

        >>> torch_rngx.rrelu(torch.tensor([1.0, -4.0]), 0.25, 0.25, training=True)
        tensor([ 1., -1.])
    """
    if not training:
        return torch.nn.functional.leaky_relu(input, (lower + upper) / 2, inplace)
    out = draw(
        "rrelu",
        input,
        generator,
        *checks.x_lower_upper(input, checks.LATER, lower, upper, global_shape, global_start, "input"),
    )
    return input.copy_(out) if inplace else out


def dropout_from(kind, x, p, training, inplace, generator, global_shape=None, global_start=None):
    """The dropout family drawing from `generator` (as draw takes it: None for torch's generator, a Generator, an
    nn.RNG or an nn module's Owned state), under the global view (global_shape, global_start) if given. As torch,
    when not training or at p = 0 it returns x itself, of any dtype, drawing nothing; draws nothing when x is
    empty."""
    p, *view = checks.dropout_args(x, p, training, inplace, global_shape, global_start)
    batched = _channel_rank(kind, x.dim()) if kind in _CHANNEL_RANKS else True  # torch's rank checks come first
    if not training or p == 0:
        return x
    checks.dropout_input(x)
    if kind == "dropout" and not inplace:
        return draw("dropout", x, generator, p, *view)
    owner = owner_of(generator)
    if inplace:
        checks.writable(x, owner, "input", torch.is_grad_enabled())
    if kind == "dropout":  # in place: the draw, then the copy, its blocks given back if torch refuses the copy
        mark = step.mark(owner, x.numel())
        out = draw("dropout", x, generator, p, *view)
        try:
            return x.copy_(out)
        except BaseException:
            step.give_back(mark, owner)
            raise
    return atomic(owner, x.numel(), _dropout, kind, x, p, inplace, generator, view, batched)


def _dropout(kind, x, p, inplace, generator, view, batched):
    """The dropout family but dropout itself: a key drawn once, then the mask applied (in place: copied in)."""
    if kind in _CHANNEL_RANKS:
        if not batched and view[0] is not None:
            view = [[1, *view[0]], [0, *view[1]]]
        out = _channel(kind, x if batched else x.unsqueeze(0), p, generator, view)
        out = out if batched else out.squeeze(0)
    else:  # alpha_dropout
        out = draw("alpha_dropout", x, generator, p, *view)
    if inplace and out is not x:
        return x.copy_(out)
    return out


def _channel(kind, x, p, generator, view):
    if x.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")  # torch's message
    n, c = x.shape[:2] if view[0] is None else view[0][:2]
    key = key_for(x, generator, n * c, x.dtype)
    if kind == "feature_alpha_dropout":
        return composite.feature_alpha_dropout(x, key, p, view)
    return composite.feature_dropout(x, key, p, view)


# The channel dropouts' batched rank (torch: dropout1d (N, C, L), dropout2d (N, C, H, W), dropout3d (N, C, D, H, W));
# feature_alpha_dropout takes any rank >= 2 as batched.
_CHANNEL_RANKS = {"dropout1d": 3, "dropout2d": 4, "dropout3d": 5, "feature_alpha_dropout": None}


def _channel_rank(kind, dim):
    """Whether x is batched (else it gets a batch dim of 1), after torch's checks and warnings for this rank."""
    batched = _CHANNEL_RANKS[kind]
    if batched is None:
        return True
    if kind == "dropout1d" and dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {dim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an "
            "optional batch dimension (i.e. 2D or 3D inputs)."
        )
    if kind != "dropout1d" and dim not in (batched - 1, batched):
        warnings.warn(
            f"{kind}: Received a {dim}-D input to {kind}, which is deprecated and will result in an error in a "
            f"future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            f"that {kind} exists to provide channel-wise dropout on inputs with {batched - 2} spatial dimensions, "
            f"a channel dimension, and an optional batch dimension (i.e. {batched - 1}D or {batched}D inputs).",
            stacklevel=4,
        )
    if kind == "dropout2d":  # torch never adds a batch dim here; a 3D input is (N, C, L), with a warning
        if dim == 3:
            warnings.warn(
                "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
                "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
                "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
                "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
                "instead.",
                stacklevel=4,
            )
        return True
    return dim == batched  # dropout1d and dropout3d add a batch dim to anything but the batched rank
