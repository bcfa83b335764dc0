"""One declaration per sampling op: everything the Python layer derives per op comes from SPECS.

An Op names an rngx op drawing elementwise for one tensor argument and carries its argument check, its
derivative and sample arguments for opcheck; its schema, the stream words one element takes and its one-call form
come from its row in csrc/kernels/op_table.h (exported as _C.samplers()). From the two come the fake kernels and
autograd kernels (registrations.py), the autograd.Functions and their vmap rule (functions.py), the calls' routes
(router.py), the DTensor rules (dtensor.py), blocks_used and words_per_element (functional.py) and testing.opcheck_all's
samples. Every op here shares one vmap rule (a vmapped dim is one more batch dim of the key) and one DTensor rule
(this rank's block through the global view).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch

from . import checks
from .library import C as _C
from .torch_private import AutoDispatchBelowAutograd, argument_names, schema_arguments

rngx: Any = torch.ops.rngx

# The op table's rows (csrc/kernels/op_table.h): each sampler's words per element by output dtype, randint's narrow
# range and wide words, and its one-call form; and the other ops' words.
SAMPLERS: dict[str, dict] = {row["name"]: row for row in _C.samplers()}
_KERNEL_WORDS: dict[str, dict] = _C.kernel_words()

# Stream words per element by dtype without an op (docs/stream.md): bits' by the dtype's width.
WORDS = {dtype: _KERNEL_WORDS["bits"][dtype.itemsize * 8] for dtype in checks.FLOAT_DTYPES + checks.INT_DTYPES}


def _by_dtype(words: dict) -> dict:
    return {getattr(torch, name): k for name, k in words.items()}


def _row(name: str) -> dict:
    """An op's row: a sampler's, or the words of another elementwise kernel (bernoulli_tensor)."""
    if name in SAMPLERS:
        return SAMPLERS[name]
    return {"words": _KERNEL_WORDS[name], "narrow": None, "wide": {}, "fused": None}


@dataclass(frozen=True)
class Params:
    """A sampling call's parameters after its key, by what each is, as the op's row reads them (Op.params): the op's
    own numbers (low and high, p, mean and std, ...), the output dtype the call asks for (None: the input's, or an
    op without one), randint's range high - low (on which its int64 words depend; None for every other op) and the
    global view (global_shape, global_start: both None, or x's block of a global tensor)."""

    numbers: tuple
    dtype: Optional[torch.dtype]
    range: Optional[int]
    global_shape: Optional[Sequence[int]]
    global_start: Optional[Sequence[int]]

    @property
    def view(self) -> tuple:
        return self.global_shape, self.global_start


@dataclass(frozen=True)
class Op:
    """One elementwise sampling op.

    name: the rngx op, and the name the Python layer calls it by.
    check: (input, key, *params, global_shape, global_start) -> the params as the kernel takes them, view last;
        shared by the public function and the fake kernel, so compile-time checks equal eager ones.
    input: the schema's name of the tensor the op draws for ("like": only its shape; "x": its values too).
    derivative: None (a sample: nothing is differentiable), "identity" (d/dx = 1), "cast" (d/dx = 1 across a
        change of dtype, as x.to(dtype): the gradient or tangent converted to the other side's dtype), "self"
        (linear in x: the derivative is the op itself, with the same key and params, applied to the gradient or
        tangent) or a Scaled (t times a factor its key and params give).
    examples: x -> param tuples (without the view) for opcheck on an input x.
    input_dtypes: the input dtypes opcheck tries (every layout of each).
    From its row (csrc/kernels/op_table.h): words (per element, by output dtype, or by x's where words_by_input),
    dtypes (those, as blocks_used takes them), narrow and wide (randint's: int64 above the range `narrow` takes
    `wide` words) and fused (the CPU small-tensor op, a Generator's step and the op in one call, if any). From its
    schema: where its parameters stand after the key (dtype_at, range_at: randint's low and high, view_at), which
    Op.params reads into a Params.
    """

    name: str
    check: Callable[..., tuple]
    input: str = "like"
    derivative: Any = None  # None, "identity", "self" or a Scaled
    examples: Callable[[torch.Tensor], list] = lambda x: []
    input_dtypes: Sequence[torch.dtype] = checks.FLOAT_DTYPES

    # From the row, set once here (a cached_property would take a lock on first use, which torch.compile cannot
    # trace in a process whose first call is compiled).
    words: dict = field(init=False, repr=False)
    dtypes: tuple = field(init=False, repr=False)
    narrow: Optional[int] = field(init=False, repr=False)
    wide: dict = field(init=False, repr=False)
    fused: Optional[str] = field(init=False, repr=False)
    words_by_input: bool = field(init=False, repr=False)
    dtype_at: Optional[int] = field(init=False, repr=False)
    range_at: Optional[tuple] = field(init=False, repr=False)
    view_at: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        row = _row(self.name)
        words = _by_dtype(row["words"])
        names = argument_names(getattr(rngx, self.name).default)[2:]  # after the input and the key
        for name, value in (
            ("dtype_at", names.index("dtype") if "dtype" in names else None),
            ("range_at", (names.index("low"), names.index("high")) if row["wide"] else None),
            ("view_at", names.index("global_shape")),
            ("words", words),
            ("dtypes", tuple(words)),
            ("narrow", row["narrow"]),
            ("wide", _by_dtype(row["wide"])),
            ("fused", row["fused"]),
            ("words_by_input", row.get("dtype") == "round"),  # stochastic_round: x's dtype sets its words
        ):
            object.__setattr__(self, name, value)

    @functools.cached_property
    def kernel(self) -> Any:
        return getattr(rngx, self.name)

    @functools.cached_property
    def fused_kernel(self) -> Any:
        return None if self.fused is None else getattr(rngx, self.fused)

    def positional(self, args: tuple, kwargs: dict) -> list:
        return positional(self.kernel, args, kwargs)

    def out_dtype(self, args: list) -> Optional[torch.dtype]:
        return out_dtype(self.kernel, args)

    def words_per_element(self, dtype: torch.dtype, range: Optional[int] = None) -> int:
        """`range`: randint's high - low, on which its int64 words depend."""
        if dtype in self.wide and range > self.narrow:  # type: ignore[operator]
            return self.wide[dtype]
        return self.words[dtype]

    def params(self, values: Sequence[Any]) -> Params:
        """A call's parameters after its key (its check's result, the op's arguments in schema order) as a Params."""
        dtype = None if self.dtype_at is None else values[self.dtype_at]
        own = [i for i in range(self.view_at) if i != self.dtype_at]
        at = self.view_at
        return Params(tuple(values[i] for i in own), dtype, self.range_of(values), values[at], values[at + 1])

    def range_of(self, values: Sequence[Any]) -> Optional[int]:
        """Params.range alone, without the record (on the paths torch.compile and torch.func trace)."""
        return None if self.range_at is None else values[self.range_at[1]] - values[self.range_at[0]]

    def global_shape_of(self, values: Sequence[Any]) -> Optional[Sequence[int]]:
        """Params.global_shape alone, without the record."""
        return values[self.view_at]

    def words_dtype(self, x_dtype: torch.dtype, p: Params) -> torch.dtype:
        """The dtype a call takes its words per element by: the output's (the call's dtype, or x's when None), but
        x's for an op whose words follow its input (stochastic_round, whose dtype is its target)."""
        return p.dtype if type(p.dtype) is torch.dtype and not self.words_by_input else x_dtype

    def blocks(self, numel: Any, x_dtype: torch.dtype, p: Params) -> Any:
        """The Philox blocks a call on numel elements of input dtype x_dtype takes."""
        return (numel * self.words_per_element(self.words_dtype(x_dtype, p), p.range) + 3) // 4


def positional(op: Any, args: tuple, kwargs: dict) -> list:
    """A call's arguments to the rngx op `op` in schema order, defaults filled in."""
    out = list(args)
    for a in schema_arguments(op.default)[len(args) :]:
        out.append(kwargs[a.name] if a.name in kwargs else a.default_value)
    return out


def out_dtype(op: Any, args: list) -> Optional[torch.dtype]:
    """The output dtype a call of `op` asks for, its arguments in schema order (None: the input's)."""
    names = argument_names(op.default)
    return args[names.index("dtype")] if "dtype" in names else None


def _truncated_normal_check(
    like: torch.Tensor,
    key: torch.Tensor,
    mean: float,
    std: float,
    a: float,
    b: float,
    dtype: Optional[torch.dtype],
    global_shape: Any = None,
    global_start: Any = None,
) -> tuple:
    out_dtype, view = checks.float_like(like, key, dtype, global_shape, global_start)
    mean, std = checks.mean_std(mean, std, torch.float64, strict=True)  # the inverse CDF computes in double
    a, b = checks.real(a, "a"), checks.real(b, "b")
    if not a < b:
        raise ValueError(f"a must be < b, got a={a}, b={b}")
    if not torch.compiler.is_compiling() and not checks.value_between(a, b, out_dtype):
        raise ValueError(f"no value of {out_dtype} lies in [a, b] = [{a}, {b}]")
    return mean, std, a, b, dtype, *view


@dataclass(frozen=True)
class Scaled:
    """A derivative that scales t by a factor the call's key and params give, exact in x's dtype (0, 1 or a value
    of the dtype), so that the product is one rounding, eager and compiled alike: scale(x, key, params) -> a
    tensor broadcasting to x (no gradient through it). reads_x: the factor depends on x's values (kept for backward),
    else on its shape alone."""

    scale: Callable[[torch.Tensor, torch.Tensor, Sequence[Any]], torch.Tensor]
    reads_x: bool = False


def _alpha_scale(x: torch.Tensor, key: torch.Tensor, p: float, *view: Any) -> torch.Tensor:
    """alpha dropout's d out / d x: keep * a in x's dtype, keep from dropout's mask of the same key and p."""
    kept = rngx.dropout(torch.ones_like(x, memory_format=torch.contiguous_format), key, p, *view) != 0
    a = 0.0 if p == 1 else 1.0 / math.sqrt((SELU_ALPHA * SELU_ALPHA * p + 1) * (1 - p))
    return torch.where(kept, torch.tensor(a, dtype=torch.float64).to(x.dtype), torch.zeros((), dtype=x.dtype))


def _rrelu_slope(x: torch.Tensor, key: torch.Tensor, lower: float, upper: float, *view: Any) -> torch.Tensor:
    """rrelu's d out / d x: 1 where x > 0, else r, uniform(lower, upper)'s value in x's dtype with the same key."""
    r = rngx.uniform(x, key, lower, upper, None, *view)
    return torch.where(x > 0, torch.ones((), dtype=x.dtype), r)


SELU_ALPHA = 1.7580993408473766  # torch's alpha dropout, SELU's scale * alpha (elements.h: RNGX_SELU_ALPHA)


def _means_stds_like(x: torch.Tensor) -> list:
    """normal_tensor's opcheck examples: a mean per position of the last dim, one std for all, both broadcast."""
    last = x.shape[-1:] if x.dim() else ()
    mean = torch.linspace(-1, 1, x.shape[-1] if x.dim() else 1, device=x.device).to(x.dtype).reshape(last)
    std = torch.full((), 0.5, device=x.device, dtype=x.dtype)
    return [(mean.expand(x.shape), std.expand(x.shape))]


def _round_examples(x: torch.Tensor) -> list:
    """The widest target of x's dtype, and saturating to the narrowest (a float8 type)."""
    targets = checks.ROUND_TARGETS.get(x.dtype, ())
    return [(False, targets[0]), (True, targets[-1])] if targets else []


def _probabilities_like(x: torch.Tensor) -> list:
    p = torch.rand(x.shape[-1:] if x.dim() else (), device=x.device).to(x.dtype).expand(x.shape)
    return [(p,)]


_RANDINT_DTYPES = tuple(checks.RANDINT_DTYPES)
SPECS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("uniform", checks.like_interval, examples=lambda x: [(-1.5, 2.0, None)]),
        Op("quantize_noise", checks.x_half, input="x", derivative="identity", examples=lambda x: [(0.5,)]),
        Op("dropout", checks.x_p, input="x", derivative="self", examples=lambda x: [(0.0,), (0.3,), (1.0,)]),
        Op("normal", checks.like_mean_std, examples=lambda x: [(0.5, 2.0, None)]),
        Op("truncated_normal", _truncated_normal_check, examples=lambda x: [(1.0, 0.5, 0.0, 2.5, None)]),
        Op("bernoulli", checks.like_p, examples=lambda x: [(0.3,)]),
        Op("bernoulli_tensor", checks.like_p, examples=_probabilities_like),
        Op(
            "randint",
            checks.like_int_range,
            examples=lambda x: [(0 if d == torch.uint8 else -3, 100, d) for d in _RANDINT_DTYPES],
            input_dtypes=(torch.float32,),
        ),
        Op("exponential", checks.like_rate, examples=lambda x: [(1.5, None)]),
        Op("stochastic_round", checks.x_round, input="x", derivative="cast", examples=_round_examples),
        Op(
            "alpha_dropout",
            checks.x_p,
            input="x",
            derivative=Scaled(lambda x, key, params: _alpha_scale(x, key, *params)),
            examples=lambda x: [(0.0,), (0.3,), (1.0,)],
        ),
        Op(
            "rrelu",
            checks.x_lower_upper,
            input="x",
            derivative=Scaled(lambda x, key, params: _rrelu_slope(x, key, *params), reads_x=True),
            examples=lambda x: [(0.125, 1 / 3), (0.25, 0.25)],
        ),
        Op("cauchy", checks.like_median_sigma, examples=lambda x: [(0.5, 2.0, None)]),
        Op("log_normal", checks.like_log_normal, examples=lambda x: [(0.25, 0.5, None)]),
        Op("geometric", checks.like_open_p, examples=lambda x: [(0.3, None)]),
        Op("normal_tensor", checks.like_mean_std_tensors, examples=_means_stds_like),
    )
}

# Composites of other ops that a Generator still advances for by their own count (functional.blocks_used), by the
# dtypes they take: randperm's sort keys are int64 bits, multinomial's scores the race's.
COMPOSITE_WORDS = {
    "randperm": {d: WORDS[torch.int64] for d in checks.RANDPERM_LIMITS},
    "multinomial": {d: _KERNEL_WORDS["race"]["float64"] for d in checks.FLOAT_DTYPES},
}


def words_per_element(dtype: torch.dtype, op: Optional[str] = None, range: Optional[int] = None) -> int:
    """The stream words one element of `dtype` takes in op `op` (None: the default words; docs: stream/);
    randint's depend on its range = high - low as well."""
    if op in SPECS:
        return SPECS[op].words_per_element(dtype, range)
    return COMPOSITE_WORDS.get(op or "", {}).get(dtype, WORDS[dtype])


def blocks_of(numel: Any, dtype: torch.dtype, op: Optional[str] = None, range: Optional[int] = None) -> Any:
    """Philox blocks a call on `numel` elements of `dtype` in op `op` takes (functional.blocks_used, unchecked;
    `range`: randint's high - low)."""
    return (numel * words_per_element(dtype, op, range) + 3) // 4


def output_dtypes(op: Optional[str]) -> Optional[Sequence[torch.dtype]]:
    """The dtypes blocks_used takes for `op` (None: every dtype), or None for an unknown op."""
    if op is None:
        return tuple(WORDS)
    if op in SPECS:
        return SPECS[op].dtypes
    return tuple(COMPOSITE_WORDS[op]) if op in COMPOSITE_WORDS else None


def derivative(
    spec: Op,
    t: Optional[torch.Tensor],
    key: Optional[torch.Tensor],
    params: Sequence[Any],
    again: Callable[..., torch.Tensor],
    below: Optional[Callable[..., torch.Tensor]] = None,
    x: Optional[torch.Tensor] = None,
) -> Optional[torch.Tensor]:
    """d out / d input applied to t (a gradient or a tangent): the one rule every autograd entry point calls.
    `again` is the differentiable form of the op, for a double backward; `below` the op's callable when no
    gradient flows (default the op itself; plain eager nodes pass its bare C++ callable); x the op's input, for a
    Scaled derivative that reads it."""
    if t is None or spec.derivative is None:
        return None
    if spec.derivative == "identity":
        return t
    if isinstance(spec.derivative, Scaled):  # x: the input when the factor reads it, else a like of its shape
        assert key is not None  # saved with the node (_functions._keep)
        with torch.no_grad():
            factor = spec.derivative.scale(x if x is not None else t, key, params)
        return t * factor
    if spec.derivative == "cast":  # a tangent takes the output's dtype; autograd converts a gradient to x's
        return t.to(spec.out_dtype([None, None, *params]))
    if torch.is_grad_enabled():  # a double backward differentiates this too
        return again(t, key, *params)
    with AutoDispatchBelowAutograd():
        return (spec.kernel if below is None else below)(t, key, *params)
