"""torch_rngx.nn.init: weight initialisers like torch.nn.init's, drawing from torch-rngx streams."""

from typing import Optional, Union

import torch

from .._engine.router import fill_checked
from ..generator import RNG, Generator

__all__ = ["trunc_normal_"]


def __dir__():
    return __all__


def trunc_normal_(
    tensor: torch.Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    *,
    generator: Optional[Union[Generator, RNG]] = None,
) -> torch.Tensor:
    """Stands in for ``torch.nn.init.trunc_normal_``: fills `tensor` in place (under no_grad) with N(mean, std^2)
    conditioned on [a, b] (absolute bounds), every value in [a, b]; returns `tensor`. The values are
    functional.truncated_normal's with the key drawn from `generator`.

    Args:
        tensor (Tensor): a float tensor, filled in place.
        mean, std (float): of the normal before truncation. a, b (float): the bounds, a < b.

    Keyword args:
        generator (Generator or nn.RNG, optional): the stream to draw from; None: torch's default generator.

    Example::

        >>> w = torch_rngx.nn.init.trunc_normal_(torch.empty(100, 100), std=0.02, a=-0.04, b=0.04)
        >>> bool(((w >= -0.04) & (w <= 0.04)).all())
        True
    """
    return fill_checked("truncated_normal", tensor, generator, mean, std, a, b)
