"""The tests' table of ops: one row per way of drawing that the package registers, so that the tests that treat every
op alike (compiled and exported against eager, thread counts, Philox paths, layouts, global views) name each op once,
here. Every spec of torch_rngx._engine.spec.SPECS, every composite of COMPOSITE_WORDS and the raw bits have a row under
their own name; test_ops_table.py fails when one is missing. Extra rows cover the ways one spec draws differently:
randint's 4-word int64, a dtype override, the channel forms of dropout and alpha dropout.

A row's `draw(x, key, **view)` is the stateless call; `stateful(x, generator, **view)` the stateful function that
makes the same draw from a Generator's stream (None where the op has none). `x` gives the shape, dtype and layout
and, for the ops that read it, the values (bernoulli_tensor's p and multinomial's weights come from them too); `view` is global_shape and global_start, for the rows with `view=True`.
"""
from dataclasses import dataclass
from typing import Callable, Optional

import torch

import torch_rngx
from torch_rngx import functional as F


@dataclass(frozen=True)
class Row:
    spec: str  # the registry name the row draws through
    draw: Callable[..., torch.Tensor]
    stateful: Optional[Callable[..., torch.Tensor]] = None
    view: bool = True  # takes global_shape and global_start
    differentiable: bool = False  # a gradient flows to x
    channels: bool = False  # draws per (sample, channel): x needs 2 dims, and a key may vary along them only
    stateful_view: bool = True  # the stateful function takes a global view too (where `view`)
    composite: bool = False  # torch's arithmetic around a kernel of the package (the kernels have rows of their own)


def _p(x):
    """A probability per element, from x's value (so that a block of x gives the block of p), in float64."""
    return torch.sigmoid(x.detach().double())


def _probs(x):
    """Non-negative weights from x's values: one distribution per row of its last dim."""
    return x.detach().abs().reshape(-1, x.shape[-1]) + 0.01


def _lower(x, fp8=False):
    """A target of stochastic_round below x's dtype: bfloat16 or float16, or with fp8 a float8 type."""
    if fp8:
        return torch.float8_e5m2 if x.dtype in (torch.float16, torch.float64) else torch.float8_e4m3fn
    return {torch.float16: torch.bfloat16, torch.bfloat16: torch.float8_e5m2, torch.float64: torch.float16}.get(
        x.dtype, torch.bfloat16)


def _trunc_normal_(x, generator):
    return torch_rngx.nn.init.trunc_normal_(torch.empty_like(x), 0.0, 1.0, -1.0, 2.5, generator=generator)


ROWS = {
    "bits": Row("bits", lambda x, k, **v: F.bits(list(x.shape), k, dtype=torch.int64, **v)),
    "uniform": Row("uniform", lambda x, k, **v: F.uniform(x, k, -1.5, 2.0, **v),
                   lambda x, g, **v: torch_rngx.uniform_like(x, -1.5, 2.0, generator=g, **v)),
    "uniform_float64": Row("uniform", lambda x, k, **v: F.uniform(x, k, dtype=torch.float64, **v),
                           lambda x, g, **v: torch_rngx.rand_like(x, dtype=torch.float64, generator=g, **v)),
    "quantize_noise": Row("quantize_noise", lambda x, k, **v: F.quantize_noise(x, k, 0.5, **v),
                          lambda x, g, **v: torch_rngx.quantize(x, generator=g, **v), differentiable=True),
    "dropout": Row("dropout", lambda x, k, **v: F.dropout(x, k, 0.3, **v),
                   lambda x, g, **v: torch_rngx.dropout(x, 0.3, generator=g, **v), differentiable=True),
    "alpha_dropout": Row("alpha_dropout", lambda x, k, **v: F.alpha_dropout(x, k, 0.3, **v),
                         lambda x, g, **v: torch_rngx.alpha_dropout(x, 0.3, True, generator=g, **v),
                         differentiable=True),
    "feature_dropout": Row("dropout", lambda x, k, **v: F.feature_dropout(x, k, 0.4, **v),
                           lambda x, g, **v: torch_rngx.dropout1d(x, 0.4, generator=g, **v) if x.dim() in (2, 3)
                           else torch_rngx.dropout2d(x, 0.4, generator=g, **v), differentiable=True, channels=True,
                           composite=True),
    "feature_alpha_dropout": Row("alpha_dropout", lambda x, k, **v: F.feature_alpha_dropout(x, k, 0.4, **v),
                                 lambda x, g, **v: torch_rngx.feature_alpha_dropout(x, 0.4, True, generator=g, **v),
                                 differentiable=True, channels=True, composite=True),
    "normal": Row("normal", lambda x, k, **v: F.normal(x, k, 0.5, 2.0, **v),
                  lambda x, g, **v: torch_rngx.normal_like(x, 0.5, 2.0, generator=g, **v)),
    "normal_float64": Row("normal", lambda x, k, **v: F.normal(x, k, dtype=torch.float64, **v),
                          lambda x, g, **v: torch_rngx.randn_like(x, dtype=torch.float64, generator=g, **v)),
    "truncated_normal": Row("truncated_normal", lambda x, k, **v: F.truncated_normal(x, k, 0.0, 1.0, -1.0, 2.5, **v),
                            _trunc_normal_, stateful_view=False),
    "bernoulli": Row("bernoulli", lambda x, k, **v: F.bernoulli(x, k, 0.3, **v),
                     lambda x, g, **v: torch_rngx.bernoulli_like(x, 0.3, generator=g, **v)),
    "bernoulli_tensor": Row("bernoulli_tensor", lambda x, k, **v: F.bernoulli(x, k, _p(x), **v),
                            lambda x, g, **v: torch_rngx.bernoulli_like(x, _p(x), generator=g, **v)),
    "randint": Row("randint", lambda x, k, **v: F.randint(x, k, -5, 1000, **v),
                   lambda x, g, **v: torch_rngx.randint_like(x, -5, 1000, generator=g, dtype=torch.int64, **v)),
    "randint_uint8": Row("randint", lambda x, k, **v: F.randint(x, k, 0, 200, dtype=torch.uint8, **v),
                         lambda x, g, **v: torch_rngx.randint_like(x, 0, 200, dtype=torch.uint8, generator=g, **v)),
    "randint_wide": Row("randint", lambda x, k, **v: F.randint(x, k, -2**40, 2**41, **v),  # 4 words per element
                        lambda x, g, **v: torch_rngx.randint_like(x, -2**40, 2**41, generator=g, dtype=torch.int64, **v)),
    "exponential": Row("exponential", lambda x, k, **v: F.exponential(x, k, 1.5, **v),
                       lambda x, g, **v: torch_rngx.exponential_like(x, 1.5, generator=g, **v)),
    "stochastic_round": Row("stochastic_round", lambda x, k, **v: F.stochastic_round(x, k, _lower(x), **v),
                            lambda x, g, **v: torch_rngx.stochastic_round(x, _lower(x), generator=g, **v),
                            differentiable=True),
    "stochastic_round_float8": Row("stochastic_round",  # x * 300: past float8_e4m3fn's 448, saturated
                                   lambda x, k, **v: F.stochastic_round(x * 300, k, _lower(x, True), True, **v),
                                   lambda x, g, **v: torch_rngx.stochastic_round(x * 300, _lower(x, True), generator=g,
                                                                                 saturate=True, **v),
                                   differentiable=True),
    # issue 43's: normal with tensor mean and std (from x's values), rrelu, cauchy, log_normal, geometric
    # mean and std exact functions of x's values (a block of x gives the block of each)
    "normal_tensor": Row("normal_tensor", lambda x, k, **v: F.normal(x, k, x.detach(), x.detach().abs(), **v),
                         lambda x, g, **v: torch_rngx.normal_like(x, x.detach(), x.detach().abs(), generator=g, **v)),
    "rrelu": Row("rrelu", lambda x, k, **v: F.rrelu(x, k, 0.125, 1 / 3, **v),
                 lambda x, g, **v: torch_rngx.rrelu(x, 0.125, 1 / 3, True, generator=g, **v), differentiable=True),
    "cauchy": Row("cauchy", lambda x, k, **v: F.cauchy(x, k, 0.5, 2.0, **v),
                  lambda x, g, **v: torch_rngx.cauchy_like(x, 0.5, 2.0, generator=g, **v)),
    "log_normal": Row("log_normal", lambda x, k, **v: F.log_normal(x, k, 0.25, 1.5, **v),
                      lambda x, g, **v: torch_rngx.log_normal_like(x, 0.25, 1.5, generator=g, **v)),
    "geometric": Row("geometric", lambda x, k, **v: F.geometric(x, k, 0.3, **v),
                     lambda x, g, **v: torch_rngx.geometric_like(x, 0.3, generator=g, **v)),
    # Not elementwise: no global view, and x gives only a size (randperm) or the weights (multinomial).
    "randperm": Row("randperm", lambda x, k: F.randperm(x.numel(), k),
                    lambda x, g: torch_rngx.randperm(x.numel(), generator=g), view=False, composite=True),
    "randperm_int32": Row("randperm", lambda x, k: F.randperm(x.shape[-1], k, dtype=torch.int32),
                          lambda x, g: torch_rngx.randperm(x.shape[-1], dtype=torch.int32, generator=g), view=False,
                          composite=True),
    "multinomial": Row("multinomial", lambda x, k: F.multinomial(_probs(x), k, 3),
                       lambda x, g: torch_rngx.multinomial(_probs(x), 3, generator=g), view=False, composite=True),
    "multinomial_replacement": Row("multinomial", lambda x, k: F.multinomial(_probs(x), k, 5, True),
                                   lambda x, g: torch_rngx.multinomial(_probs(x), 5, True, generator=g), view=False,
                                   composite=True),
}


def rows(*, view=None, channels=True, composite=None):
    """(name, row) of the table; view=True: only the rows that take a global view; channels=False: without the
    channel-wise rows; composite=False or True: only the kernels' rows, or only the composites'."""
    return [(n, r) for n, r in ROWS.items() if (view is None or r.view == view) and (channels or not r.channels)
            and (composite is None or r.composite == composite)]


def draws(x, key, view=None, channels=True, composite=None, **kwargs):
    """name -> the stateless draw on x with key of each row that rows() selects (the channel-wise ones where x has 2
    dims), given kwargs (a global view)."""
    selected = rows(view=view, channels=channels and x.dim() >= 2, composite=composite)
    return {name: row.draw(x, key, **kwargs) for name, row in selected}
