"""torch_rngx.nn.init: weight initialisers like torch.nn.init's, drawing from torch-rngx streams."""
import torch

from . import _checks
from ._autograd import draw
from .generator import owner_of

__all__ = ["trunc_normal_"]


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, *, generator=None):
    """torch.nn.init.trunc_normal_: fills `tensor` in place (under no_grad) with N(mean, std^2) conditioned on
    [a, b] (absolute bounds), every value in [a, b]; returns `tensor`. The values are
    functional.truncated_normal's with the key drawn from `generator` (None: torch's default generator)."""
    _checks.float_tensor(tensor, "tensor")
    params = _checks.for_truncated_normal(tensor, torch.empty(2, dtype=torch.int64, device=tensor.device), mean, std,
                                          a, b, None)
    with torch.no_grad():
        return tensor.copy_(draw("truncated_normal", tensor, owner_of(generator), tensor.dtype, *params))
