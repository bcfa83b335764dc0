"""Modules: drop-in replacements for torch.nn ones, and RNG, a stream position held as model state."""
import torch

from . import _checks
from .functional import fold_in
from .generator import RNG, check_state_buffer, owner_of
from .random import dropout_from

__all__ = ["RNG", "Dropout", "fold_in_"]


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


@torch.no_grad()
def fold_in_(module, data):
    """Replaces every stream position a module holds (nn.RNG states, Dropout(seed=) states) by its
    functional.fold_in with `data`, in place; returns their state_dict names. After DDP has copied rank 0's
    buffers to every rank, fold_in_(model, rank) gives each data-parallel rank its own masks
    (docs/training.md, "Data parallel")."""
    names = [name for name, buf in module.named_buffers() if _is_stream(module, name)]
    for name in names:
        buf = module.get_buffer(name)
        buf.copy_(fold_in(buf, data))
    return names


def _is_stream(module, name):
    owner_name, _, attr = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    return (isinstance(owner, RNG) and attr == "state") or (isinstance(owner, Dropout) and attr == "rng_state")
