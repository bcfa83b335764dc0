"""Modules: drop-in replacements for torch.nn ones, and RNG, a stream position held as model state."""
import torch

from . import _checks
from .generator import RNG, check_state_buffer, owner_of
from .random import dropout_from

__all__ = ["RNG", "Dropout"]


class Dropout(torch.nn.Module):
    """torch.nn.Dropout with a counter-based mask: compiled equals eager. eval() is the identity.

    Where the mask's randomness comes from: generator= (a torch_rngx.Generator or nn.RNG, shared as you like);
    seed= (this module owns its stream: the persistent int64 buffer `rng_state` = [seed, offset], advanced in
    place on each training forward, saved in state_dict); or neither (torch's default generator, so
    torch.manual_seed reproduces it)."""

    def __init__(self, p=0.5, *, generator=None, seed=None):
        super().__init__()
        self.p = _checks.probability(p)
        owner_of(generator)  # rejects anything but a Generator, an RNG or None, now rather than at forward
        if generator is not None and seed is not None:
            raise ValueError("pass generator= or seed=, not both")
        self.generator = generator
        if seed is not None:
            self.register_buffer("rng_state", RNG(seed).state, persistent=True)

    def forward(self, x):
        owner = self.rng_state if "rng_state" in self._buffers else owner_of(self.generator)
        return dropout_from(x, self.p, self.training, owner)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        check_state_buffer(state_dict, prefix + "rng_state")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self):
        return f"p={self.p}"
