"""torch-rngx: counter-based (Philox4x32-10) random ops for PyTorch that compile whole and give bitwise
the same values eager, compiled and exported, in any memory layout."""
from . import debug, functional, nn, testing  # noqa: F401
from ._ops import ops  # noqa: F401
from ._replay import checkpoint_context
from .functional import blocks_used
from .generator import Generator
from .random import (alpha_dropout, bernoulli_like, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
                     normal_like, quantize, rand_like, randint_like, randn_like, uniform_like)

__all__ = ["Generator", "alpha_dropout", "bernoulli_like", "blocks_used", "checkpoint_context", "debug", "dropout",
           "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout", "functional", "nn", "normal_like",
           "quantize", "rand_like", "randint_like", "randn_like", "testing", "uniform_like"]
__version__ = "0.2.0"
