"""The owners of a stream position, which advances by blocks_used per call: Generator (like torch.Generator)
and RNG (an nn.Module whose position is model state: a buffer in state_dict, moved by .to(), saved by
torch.save)."""

from __future__ import annotations

import operator
import os

import torch
from torch import Tensor

from ._engine import checks, reuse
from ._engine.random_ops import drawing_from_torch
from ._engine.torch_private import mark_static_address, own_buffer
from .functional import fold_in, key, split

__all__ = ["Generator", "RNG"]
_U64 = 1 << 64


def _signed(seed):
    """A seed in [0, 2^64) as the int64 with the same bits."""
    return seed - _U64 if seed >= 1 << 63 else seed


def _fixed_address(state):
    """A CUDA state keeps one address for life, and tells torch.compile so: then CUDA graphs (mode=
    "reduce-overhead") read and advance it in place on every replay instead of skipping the graph."""
    if state.is_cuda:
        mark_static_address(state)
    return state


class Generator:
    """Stands in for ``torch.Generator``: owns `state`, an int64 tensor [seed, offset] (offset in 128-bit Philox
    blocks). Each torch_rngx call with generator=g reads g.state and advances the offset in place, so the call
    sequence is the same eager, compiled and exported.

    Threads may share a Generator in eager mode: each call takes its own words (a lock in rngx::take_), in an
    order that depends on scheduling; for reproducible values, or in compiled code, give each thread its own
    (docs: guarantees/, "Threads").

    Args:
        seed (int, optional): in [0, 2^64). None: drawn from torch's default CPU generator, so torch.manual_seed
            makes it reproducible.
        device (torch.device or str): where `state` lives, "cpu" or "cuda" (a CUDA state serves CUDA graphs).
        offset (int): the stream position to start at, in blocks.

    Example::

        >>> g = torch_rngx.Generator(1234)
        >>> u = torch_rngx.rand_like(torch.empty(8), generator=g)  # 8 words: 2 blocks
        >>> g
        torch_rngx.Generator(seed=1234, offset=2)
    """

    def __init__(self, seed: int | None = None, device: torch.device | str = "cpu", offset: int = 0):
        device = torch.device(device)
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {device}")
        self.state = _fixed_address(torch.zeros(2, dtype=torch.int64, device=device))
        if seed is None:
            with drawing_from_torch():  # torch's generator even inside a torch_rngx.mode
                seed = int(torch.empty((), dtype=torch.int64).random_())
        self.manual_seed(seed)
        self.set_offset(offset)

    @property
    def device(self) -> torch.device:
        """The device of `state`."""
        return self.state.device

    def manual_seed(self, seed: int) -> Generator:
        """Restarts the stream of `seed` (an int in [0, 2^64)) at offset 0; returns this Generator, as torch's."""
        self.state.copy_(key(seed))  # key checks the seed
        if reuse.active is not None:  # the stream restarts on purpose
            reuse.active.forget(seed)
        return self

    def seed(self) -> int:
        """Seeds this Generator from the operating system's entropy (not reproducible, as torch's
        Generator.seed) at offset 0; returns the seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed, an int in [0, 2^64)."""
        return int(self.state[0]) % _U64

    def get_offset(self) -> int:
        """The stream position, in 128-bit Philox blocks (torch's Generator counts Philox's offset in words)."""
        return int(self.state[1]) % _U64

    def set_offset(self, offset: int) -> Generator:
        """Moves to `offset` (an int in [0, 2^64), in blocks) of the same seed; returns this Generator."""
        if isinstance(offset, bool):
            raise TypeError("offset must be an int, got bool")
        try:
            offset = operator.index(offset)
        except TypeError:
            raise TypeError(f"offset must be an int, got {type(offset).__name__}") from None
        if not 0 <= offset < _U64:
            raise ValueError(f"offset must be in [0, 2^64), got {offset}")
        self.state[1] = _signed(offset)
        return self

    def get_state(self) -> Tensor:
        """A copy of `state`: the int64 key [seed, offset] (torch's get_state returns a uint8 tensor instead)."""
        return self.state.clone()

    def set_state(self, new_state: Tensor) -> Generator:
        """Continues from a key [seed, offset]: int64 or uint64 (a torch.func._random key), shape (2,)."""
        checks.state(new_state, "new_state")
        if new_state.shape != (2,):
            raise ValueError(f"new_state must have shape (2,) = [seed, offset], got {tuple(new_state.shape)}")
        self.state.copy_(new_state.view(torch.int64))
        if reuse.active is not None:  # a saved position, restored on purpose
            reuse.active.forget(self.state[0])
        return self

    def clone(self) -> Generator:
        """An independent Generator at the same stream position (torch's clone_state)."""
        return Generator._at(self.state.clone())

    def split(self, n: int) -> list[Generator]:
        """n new Generators from the current state (functional.split); this one does not advance. As in JAX,
        don't draw from this Generator's current state after deriving from it: call manual_seed or draw first."""
        return [Generator._at(child) for child in split(self.state, checks.num(n, "n")).unbind(0)]

    def fold_in(self, data: int | Tensor) -> Generator:
        """A new Generator whose state is functional.fold_in(state, data); this one does not advance."""
        return Generator._at(fold_in(self.state, data))

    @staticmethod
    def on(state: torch.Tensor) -> Generator:
        """A Generator that reads and advances `state` (an int64 [seed, offset] tensor, e.g. a module's buffer)
        itself, not a copy.

        Args:
            state (Tensor): an int64 tensor of shape (2,), advanced in place by every draw.

        Example::

            >>> buf = torch.tensor([7, 0])
            >>> _ = torch_rngx.rand_like(torch.empty(8), generator=torch_rngx.Generator.on(buf))
            >>> buf.tolist()
            [7, 2]
        """
        g = Generator.__new__(Generator)
        g.state = checks.generator_state(state)
        return g

    @staticmethod
    def _at(state):
        g = Generator.__new__(Generator)
        g.state = _fixed_address(state.clone())
        return g

    def __repr__(self):  # eval()s back to an equal Generator
        device = "" if self.device.type == "cpu" else f", device={str(self.device)!r}"
        return f"torch_rngx.Generator(seed={self.initial_seed()}{device}, offset={self.get_offset()})"


class RNG(torch.nn.Module):
    """A stream position as model state (torch has no module for it): the persistent int64 buffer `state` =
    [seed, offset]. Hold one as a submodule and pass it as generator= to any stateful torch_rngx function; each
    call advances the buffer in place. It moves with .to(device)/.cuda(), is untouched by .half()/.to(dtype), and
    is saved and restored by state_dict(), load_state_dict(), torch.save and copy.deepcopy.

    Args:
        seed (int, optional): in [0, 2^64); None draws it like Generator(None).
        device (torch.device or str, optional): where the buffer lives; default the CPU.

    Example::

        >>> rng = torch_rngx.nn.RNG(7)
        >>> y = torch_rngx.rand_like(torch.empty(4), generator=rng)
        >>> rng
        torch_rngx.nn.RNG(seed=7, offset=1)
    """

    state: Tensor  # the buffer

    def __init__(self, seed: int | None = None, device: torch.device | str | None = None):
        super().__init__()
        self.register_buffer("state", Generator(seed).state.to(device), persistent=True)
        begin_stream(self, "state")

    def manual_seed(self, seed: int) -> RNG:
        """Restarts the stream of `seed` at offset 0; returns this module."""
        self.state.copy_(Generator(seed).state)
        begin_stream(self, "state")
        return self

    def fold_in(self, data: int | Tensor) -> RNG:
        """A new RNG whose state is functional.fold_in(state, data); this one does not advance. Under DDP the
        buffer is broadcast from rank 0, so fold in the rank for per-rank streams (docs: training/)."""
        rng = RNG.__new__(RNG)
        torch.nn.Module.__init__(rng)
        rng.register_buffer("state", fold_in(self.state, data), persistent=True)
        begin_stream(rng, "state")
        return rng

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        load_stream_buffer(self, "state", state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _get_name(self):
        return "torch_rngx.nn.RNG"

    def extra_repr(self):
        return stream_repr(self.state)


def stream_repr(state):
    """ "seed=..., offset=..." of a state tensor, for reprs."""
    return f"seed={int(state[0]) % _U64}, offset={int(state[1]) % _U64}"


def begin_stream(module, name):
    """Records the value of module's stream buffer `name` as where that stream begins (load_stream_buffer)."""
    module._stream_starts = {**getattr(module, "_stream_starts", {}), name: tuple(module.get_buffer(name).tolist())}


def load_stream_buffer(module, name, state_dict, prefix):
    """load_state_dict's part for module's stream buffer `name`. A checkpoint without it, saved before the module
    had a stream (torch's model before nn.convert, a dropout module without seed=), restarts the stream where it
    began (begin_stream), so a strict load succeeds; a present value must be a [seed, offset]."""
    key, start, buffer = prefix + name, getattr(module, "_stream_starts", {}).get(name), own_buffer(module, name)
    if key not in state_dict and start is not None and buffer is not None:
        state_dict[key] = torch.tensor(start, dtype=torch.int64, device=buffer.device)
    check_state_buffer(state_dict, key)


def check_state_buffer(state_dict, key):
    """A saved stream position must be a dense int64 [seed, offset]: anything else would be cast silently, or be
    refused by every draw after load_state_dict(assign=True) made it the buffer itself. A strided one is loaded as
    its contiguous copy, which the step advances in place. Loading one restarts its stream on purpose, which the
    key-reuse checker (if on) is told."""
    if key not in state_dict:
        return  # load_state_dict reports missing keys itself
    value = state_dict[key]
    if not isinstance(value, torch.Tensor) or value.dtype != torch.int64 or value.shape != (2,):
        got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"{key} must be an int64 tensor of shape (2,) = [seed, offset], got {got}")
    if value.layout != torch.strided:
        raise ValueError(f"{key} must be a dense (strided) tensor, got layout {value.layout}")
    if not value.is_contiguous():
        state_dict[key] = value.contiguous()
    if reuse.active is not None:
        reuse.active.forget(value[0])


# The names torch's argument parser prints for a type it refuses ("must be torch.Generator, not Generator" would name
# two classes alike): given to torch, ours are named in full. __qualname__ and __module__ stay, for pickle and repr.
Generator.__name__ = "torch_rngx.Generator"
RNG.__name__ = "torch_rngx.nn.RNG"
