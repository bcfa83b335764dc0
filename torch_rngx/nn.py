"""Modules: drop-in replacements for torch.nn ones."""
import torch

from . import _checks
from .random import dropout


class Dropout(torch.nn.Module):
    """torch.nn.Dropout with a counter-based mask: compiled equals eager. eval() is the identity."""

    def __init__(self, p=0.5, *, generator=None):
        super().__init__()
        self.p = _checks.probability(p)
        self.generator = generator

    def forward(self, x):
        return dropout(x, self.p, self.training, generator=self.generator)

    def extra_repr(self):
        return f"p={self.p}"
