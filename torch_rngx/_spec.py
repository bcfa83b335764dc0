"""One declaration per sampling op: everything the Python layer derives per op comes from SPECS.

An Op names an rngx op drawing elementwise for one tensor argument (the schema lives in csrc/op_table.h) and
carries its argument check, the stream words one element takes, its derivative and sample arguments for opcheck.
From it come the fake kernels and autograd kernels (_ops.py), the autograd.Functions and their vmap rule
(_functions.py), the calls' routes (_router.py), the DTensor rules (distributed.py), blocks_used and
words_per_element (functional.py) and testing.opcheck_all's samples. Every op here shares one vmap rule (a vmapped
dim is one more batch dim of the key) and one DTensor rule (this rank's block through the global view).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch

from . import (  # type: ignore[attr-defined]  # _C: the compiled library, which mypy cannot read
    _C,  # noqa: F401  (defines the ops from csrc/library.cpp's schema table and registers their kernels)
    _checks,
)
from ._torch import AutoDispatchBelowAutograd, argument_names, schema_arguments

ops: Any = torch.ops.rngx

# Stream words per element by dtype (docs/stream.md): 2 for the 64-bit types, else 1.
WORDS = {
    dtype: 2 if dtype in (torch.float64, torch.int64, torch.uint64) else 1
    for dtype in _checks.FLOAT_DTYPES + _checks.INT_DTYPES
}


@dataclass(frozen=True)
class Op:
    """One elementwise sampling op.

    name: the rngx op, and the name the Python layer calls it by.
    check: (input, key, *params, global_shape, global_start) -> the params as the kernel takes them, view last;
        shared by the public function and the fake kernel, so compile-time checks equal eager ones.
    input: the schema's name of the tensor the op draws for ("like": only its shape; "x": its values too).
    derivative: None (a sample: nothing is differentiable), "identity" (d/dx = 1) or "self" (linear in x: the
        derivative is the op itself, with the same key and params, applied to the gradient or tangent).
    words: words per element where they differ from WORDS (csrc/kernels/ops.h, docs/stream.md).
    wide: for randint, the words per element of int64 above RANDINT_NARROW (where `words` gives those up to it).
    dtypes: the output dtypes, as blocks_used takes them.
    examples: x -> param tuples (without the view) for opcheck on an input x.
    input_dtypes: the input dtypes opcheck tries (every layout of each).
    fused: the CPU small-tensor op (a Generator's step and the op in one call), if any.
    """

    name: str
    check: Callable[..., tuple]
    input: str = "like"
    derivative: Optional[str] = None
    words: dict = field(default_factory=dict)
    dtypes: Sequence[torch.dtype] = _checks.FLOAT_DTYPES
    examples: Callable[[torch.Tensor], list] = lambda x: []
    input_dtypes: Sequence[torch.dtype] = _checks.FLOAT_DTYPES
    fused: Optional[str] = None
    wide: dict = field(default_factory=dict)

    @functools.cached_property
    def kernel(self) -> Any:
        return getattr(ops, self.name)

    @functools.cached_property
    def fused_kernel(self) -> Any:
        return None if self.fused is None else getattr(ops, self.fused)

    def positional(self, args: tuple, kwargs: dict) -> list:
        return positional(self.kernel, args, kwargs)

    def out_dtype(self, args: list) -> Optional[torch.dtype]:
        return out_dtype(self.kernel, args)

    def words_per_element(self, dtype: torch.dtype, range: Optional[int] = None) -> int:
        """`range`: randint's high - low, on which its int64 words depend."""
        if dtype in self.wide and range > RANDINT_NARROW:  # type: ignore[operator]
            return self.wide[dtype]
        return self.words.get(dtype, WORDS[dtype])


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
    out_dtype, view = _checks.float_like(like, key, dtype, global_shape, global_start)
    mean, std = _checks.mean_std(mean, std, torch.float64, strict=True)  # the inverse CDF computes in double
    a, b = _checks.real(a, "a"), _checks.real(b, "b")
    if not a < b:
        raise ValueError(f"a must be < b, got a={a}, b={b}")
    if not torch.compiler.is_compiling() and not _checks.value_between(a, b, out_dtype):
        raise ValueError(f"no value of {out_dtype} lies in [a, b] = [{a}, {b}]")
    return mean, std, a, b, dtype, *view


def _probabilities_like(x: torch.Tensor) -> list:
    p = torch.rand(x.shape[-1:] if x.dim() else (), device=x.device).to(x.dtype).expand(x.shape)
    return [(p,)]


_RANDINT_DTYPES = tuple(_checks.RANDINT_DTYPES)
RANDINT_NARROW = 1 << 32  # randint takes 2 words per element up to this range, int64 4 above (csrc/kernels/ops.h)
SPECS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("uniform", _checks.like_interval, examples=lambda x: [(-1.5, 2.0, None)], fused="uniform_from_"),
        Op(
            "quantize_noise",
            _checks.x_half,
            input="x",
            derivative="identity",
            examples=lambda x: [(0.5,)],
            fused="quantize_noise_from_",
        ),
        Op("dropout", _checks.x_p, input="x", derivative="self", examples=lambda x: [(0.0,), (0.3,), (1.0,)]),
        Op("normal", _checks.like_mean_std, examples=lambda x: [(0.5, 2.0, None)], fused="normal_from_"),
        Op(
            "truncated_normal",
            _truncated_normal_check,
            words={d: 2 for d in _checks.FLOAT_DTYPES},
            examples=lambda x: [(1.0, 0.5, 0.0, 2.5, None)],
        ),
        Op("bernoulli", _checks.like_p, examples=lambda x: [(0.3,)], fused="bernoulli_from_"),
        Op("bernoulli_tensor", _checks.like_p, examples=_probabilities_like),
        Op(
            "randint",
            _checks.like_int_range,
            words={d: 2 for d in _RANDINT_DTYPES},
            wide={torch.int64: 4},
            dtypes=_RANDINT_DTYPES,
            examples=lambda x: [(0 if d == torch.uint8 else -3, 100, d) for d in _RANDINT_DTYPES],
            input_dtypes=(torch.float32,),
            fused="randint_from_",
        ),
        Op("exponential", _checks.like_rate, examples=lambda x: [(1.5, None)]),
    )
}

# Composites of other ops that a Generator still advances for by their own count (functional.blocks_used).
COMPOSITE_WORDS = {
    "randperm": {d: 2 for d in _checks.RANDPERM_LIMITS},
    "multinomial": {d: 2 for d in _checks.FLOAT_DTYPES},
}


def words_per_element(dtype: torch.dtype, op: Optional[str] = None, range: Optional[int] = None) -> int:
    """The stream words one element of `dtype` takes in op `op` (None: the default words; docs/stream.md);
    randint's depend on its range = high - low as well."""
    if op in SPECS:
        return SPECS[op].words_per_element(dtype, range)
    return COMPOSITE_WORDS.get(op or "", {}).get(dtype, WORDS[dtype])


def range_of(op: Optional[str], params: Sequence[Any]) -> Optional[int]:
    """randint's high - low (its params start with low, high), on which its words per element depend; else None."""
    return params[1] - params[0] if op == "randint" else None


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
) -> Optional[torch.Tensor]:
    """d out / d input applied to t (a gradient or a tangent): the one rule every autograd entry point calls.
    `again` is the differentiable form of the op, for a double backward."""
    if t is None or spec.derivative is None:
        return None
    if spec.derivative == "identity":
        return t
    if torch.is_grad_enabled():  # a double backward differentiates this too
        return again(t, key, *params)
    with AutoDispatchBelowAutograd():
        return spec.kernel(t, key, *params)


# Subclass calls under torch.compile: (tensor type, call(spec, x, key, params)). A module that gives the ops a
# tensor subclass (distributed.py: DTensor) registers how a traced call on it runs.
SUBCLASS_CALLS: list = []
