"""Generator: an explicit stream position that advances by blocks_used per call, like torch.Generator."""
import operator

import torch

from . import _checks
from ._ops import ops
from .functional import fold_in, split

_U64 = 1 << 64


def _signed(seed):
    """A seed in [0, 2^64) as the int64 with the same bits."""
    return seed - _U64 if seed >= 1 << 63 else seed


def _fixed_address(state):
    """A CUDA state keeps one address for life, and tells torch.compile so: then CUDA graphs (mode=
    "reduce-overhead") read and advance it in place on every replay instead of skipping the graph."""
    if state.is_cuda:
        torch._dynamo.mark_static_address(state)
    return state


class Generator:
    """Owns `state`, an int64 tensor [seed, offset] (offset in Philox blocks). Each torch_rngx call with generator=g reads g.state and
    advances the offset in place, so the call sequence is the same eager, compiled and exported.

    Generator(seed=None) draws its seed from torch's default CPU generator, so torch.manual_seed makes it
    reproducible. Threads may share a Generator in eager mode: each call takes its own words (a lock in
    rngx::take_), in an order that depends on scheduling; for reproducible values, or in compiled code, give
    each thread its own (docs/guarantees.md, "Threads").
    """

    def __init__(self, seed=None, device="cpu"):
        device = torch.device(device)
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {device}")
        self.state = _fixed_address(torch.zeros(2, dtype=torch.int64, device=device))
        self.manual_seed(int(torch.empty((), dtype=torch.int64).random_()) if seed is None else seed)

    @property
    def device(self):
        return self.state.device

    def manual_seed(self, seed):
        """Restarts the stream of `seed` (an int in [0, 2^64)) at offset 0."""
        if isinstance(seed, bool):  # operator.index(True) is 1: reject bools before converting
            raise TypeError("seed must be an int, got bool")
        try:
            seed = operator.index(seed)
        except TypeError:
            raise TypeError(f"seed must be an int, got {type(seed).__name__}") from None
        if isinstance(seed, bool) or not 0 <= seed < _U64:
            raise ValueError(f"seed must be in [0, 2^64), got {seed}")
        self.state.copy_(torch.tensor([_signed(seed), 0], dtype=torch.int64))
        return self

    def initial_seed(self):
        return int(self.state[0]) % _U64

    def get_state(self):
        return self.state.clone()

    def set_state(self, new_state):
        """Continues from a key [seed, offset]: int64 or uint64 (a torch.func._random key), shape (2,)."""
        _checks.state(new_state, "new_state")
        if new_state.shape != (2,):
            raise ValueError(f"new_state must have shape (2,) = [seed, offset], got {tuple(new_state.shape)}")
        self.state.copy_(new_state.view(torch.int64))
        return self

    def clone(self):
        """An independent Generator at the same stream position."""
        return Generator._at(self.state.clone())

    def split(self, n):
        """n new Generators from the current state (functional.split); this one does not advance. As in JAX,
        don't draw from this Generator's current state after deriving from it: call manual_seed or draw first."""
        return [Generator._at(child) for child in split(self.state, _checks.num(n, "n")).unbind(0)]

    def fold_in(self, data):
        """A new Generator whose state is functional.fold_in(state, data); this one does not advance."""
        return Generator._at(fold_in(self.state, data))

    @staticmethod
    def _at(state):
        g = Generator.__new__(Generator)
        g.state = _fixed_address(state.clone())
        return g

    def _take(self, blocks):
        """The state for one call, then advances the offset past the blocks that call consumes."""
        return ops.take_(self.state, blocks)

    def __repr__(self):
        return f"torch_rngx.Generator(seed={self.initial_seed()}, offset={int(self.state[1]) % _U64})"
