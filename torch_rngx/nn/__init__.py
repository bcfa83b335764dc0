"""Modules: drop-in replacements for torch.nn's dropout family, RNG (a stream position held as model state), and
convert(), which swaps torch's dropout modules in a model for these and routes the random calls of its forward.

The dropout modules (Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout) each take torch's
arguments, and keyword arguments that say where their masks' randomness comes from (each module's help() repeats them):

Args:
    p (float): the probability of dropping, in [0, 1]. inplace (bool): write into the input.

Keyword args:
    generator (Generator or RNG, optional): a stream to share. seed (int, optional): the module's own stream,
        saved in state_dict as `rng_state`. Neither: torch's default generator.

Example::

    >>> drop = torch_rngx.nn.Dropout2d(0.5, seed=7)
    >>> drop(torch.ones(2, 3, 4, 4)).shape
    torch.Size([2, 3, 4, 4])
"""

from __future__ import annotations

import functools
import textwrap
from typing import NamedTuple

import torch

from .._engine import checks
from .._engine.router import Owned, owner_of
from .._engine.torch_private import own_buffer
from .._mode.mode import mode, routed_names
from ..functional import fold_in, key
from ..generator import RNG, Generator, begin_stream, load_stream_buffer, stream_repr
from ..stateful import dropout_from
from . import init

__all__ = [
    "RNG",
    "init",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "Converted",
    "convert",
    "fold_in_",
]


def __dir__():
    return __all__


# The dropout modules' shared arguments, as this module's docstring states them, indented as a class docstring's
_SHARED_ARGS = (
    textwrap.indent(__doc__[__doc__.index("Args:") : __doc__.index("Example::")].rstrip(), "    ") if __doc__ else None
)


class _DropoutNd(torch.nn.Module):
    """torch's constructor, (p=0.5, inplace=False), plus where the masks' randomness comes from: generator= (a
    torch_rngx.Generator or nn.RNG, shared as you like); seed= (this module owns its stream: the persistent int64
    buffer `rng_state` = [seed, offset], advanced in place on each training forward, saved in state_dict); or
    neither (torch's default generator, so torch.manual_seed reproduces it). Compiled equals eager; eval() is the
    identity and draws nothing.

    Each module subclasses torch's (Dropout(_DropoutNd, torch.nn.Dropout)), so isinstance(m, torch.nn.Dropout) holds
    and code that finds dropouts by type (model surgery, model.apply, libraries' helpers that set p) finds ours;
    torch's __init__ sets p and inplace, and forward, the repr and the state-dict hook are ours."""

    kind: str | None = None  # the stateful.dropout_from kind
    rng_state: torch.Tensor  # with seed=: the module's own stream

    def __init_subclass__(cls, kind: str | None = None, example_shape: tuple[int, ...] = (), **kwargs):
        """A module of the family, declared in one line: `class Dropout2d(_DropoutNd, torch.nn.Dropout2d,
        kind="dropout2d", example_shape=(2, 3, 4, 4))` and its own docstring line (what it stands in for, what it
        drops). Its docstring then gets the arguments the family shares (written once, in this module's docstring,
        which docs/api/nn.md shows) and an example on a tensor of example_shape. A subclass of one (a user's) inherits
        its kind and keeps its own docstring."""
        super().__init_subclass__(**kwargs)
        if kind is None:
            return
        cls.kind = kind
        if cls.__doc__ is None or _SHARED_ARGS is None:  # python -OO
            return
        shape = ", ".join(map(str, example_shape))
        lines = [f">>> drop = torch_rngx.nn.{cls.__name__}(0.5, seed=7)", f">>> drop(torch.ones({shape})).shape"]
        example = "Example::\n\n" + textwrap.indent("\n".join([*lines, f"torch.Size([{shape}])"]), "    ")
        cls.__doc__ = f"{cls.__doc__}\n\n{_SHARED_ARGS}\n\n{textwrap.indent(example, '    ')}\n"

    def __init__(
        self,
        p: float = 0.5,
        inplace: bool = False,
        *,
        generator: Generator | RNG | None = None,
        seed: int | None = None,
    ):
        p = checks.dropout_probability(p)
        if not isinstance(inplace, bool):
            raise TypeError(f"inplace must be a bool, got {type(inplace).__name__}")
        super().__init__(p, inplace)  # torch's class, next in each subclass's MRO
        owner_of(generator)  # rejects anything but a Generator, an RNG or None, now rather than at forward
        if generator is not None and seed is not None:
            raise ValueError("pass generator= or seed=, not both")
        self.generator = generator
        if seed is not None:
            self.register_buffer("rng_state", RNG(seed).state, persistent=True)
            begin_stream(self, "rng_state")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        state = own_buffer(self, "rng_state")
        stream = self.generator if state is None else Owned(state)
        return dropout_from(self.kind, input, self.p, self.training, self.inplace, stream)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        load_stream_buffer(self, "rng_state", state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _get_name(self):  # the repr names the class as torch_rngx's, not torch's
        return f"torch_rngx.nn.{type(self).__name__}"

    def extra_repr(self):
        """p and inplace, then where the masks come from: the module's own stream (rng_state), a generator, or
        nothing for torch's default generator."""
        if own_buffer(self, "rng_state") is not None:
            return f"p={self.p}, inplace={self.inplace}, rng_state=({stream_repr(self.rng_state)})"
        stream = "" if self.generator is None else f", generator={self.generator!r}"
        return f"p={self.p}, inplace={self.inplace}{stream}"


class Dropout(_DropoutNd, torch.nn.Dropout, kind="dropout", example_shape=(2, 4)):
    """Stands in for ``torch.nn.Dropout``: each element kept (scaled by 1/(1-p)) or zeroed."""


class Dropout1d(_DropoutNd, torch.nn.Dropout1d, kind="dropout1d", example_shape=(2, 3, 5)):
    """Stands in for ``torch.nn.Dropout1d``: whole channels of (N, C, L) or (C, L) inputs."""


class Dropout2d(_DropoutNd, torch.nn.Dropout2d, kind="dropout2d", example_shape=(2, 3, 4, 4)):
    """Stands in for ``torch.nn.Dropout2d``: whole channels of (N, C, H, W) inputs."""


class Dropout3d(_DropoutNd, torch.nn.Dropout3d, kind="dropout3d", example_shape=(2, 3, 2, 2, 2)):
    """Stands in for ``torch.nn.Dropout3d``: whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""


class AlphaDropout(_DropoutNd, torch.nn.AlphaDropout, kind="alpha_dropout", example_shape=(2, 4)):
    """Stands in for ``torch.nn.AlphaDropout``: keeps a SELU network's zero mean and unit variance."""


class FeatureAlphaDropout(
    _DropoutNd, torch.nn.FeatureAlphaDropout, kind="feature_alpha_dropout", example_shape=(2, 3, 4)
):
    """Stands in for ``torch.nn.FeatureAlphaDropout``: alpha dropout of whole channels."""


_REPLACEMENTS = {
    torch.nn.Dropout: Dropout,
    torch.nn.Dropout1d: Dropout1d,
    torch.nn.Dropout2d: Dropout2d,
    torch.nn.Dropout3d: Dropout3d,
    torch.nn.AlphaDropout: AlphaDropout,
    torch.nn.FeatureAlphaDropout: FeatureAlphaDropout,
}


class Converted(NamedTuple):
    """No torch counterpart. What convert did: a named tuple.

    Args:
        model (Module): the converted model (the same object, or a new module when `model` itself was a torch
            dropout module).
        replaced (list): the (name, torch class name) pairs swapped, in named_modules() order.
        routed (tuple): the torch functions that draw from the model's stream inside forward():
            torch_rngx.routed_names(), empty with functional=False.

    Example::

        >>> torch_rngx.nn.convert(torch.nn.Dropout(0.1)).model
        torch_rngx.nn.Dropout(p=0.1, inplace=False)
    """

    model: torch.nn.Module
    replaced: list
    routed: tuple


@torch.no_grad()
def convert(
    model: torch.nn.Module,
    *,
    seed: int | None = None,
    generator: Generator | RNG | None = None,
    functional: bool = True,
    uncovered: str = "warn",
) -> Converted:
    """No torch counterpart. Replaces every torch.nn dropout module in `model` (Dropout, Dropout1d/2d/3d,
    AlphaDropout, FeatureAlphaDropout) by torch_rngx's, in place, keeping p, inplace, the training mode and the
    module names, and (functional=True) runs model.forward under torch_rngx.mode, so the random calls forward makes
    itself (F.dropout, attention's dropout_p, torch.rand, randn_like, ...) draw from torch_rngx streams too.
    Returns a Converted(model, replaced, routed). Use its .model: when `model` is itself a torch dropout module it
    cannot be replaced in place, and .model is a new torch_rngx module.

    Streams: seed=s gives each replaced module a stream of its own, saved in state_dict as `<name>.rng_state`
    (the i-th replaced module starts at functional.fold_in(key(s), i)), and forward's routed calls the stream
    `rngx_state` of the model (fold_in(key(s), 2^64 - 1)), also in state_dict; generator= shares a Generator or
    nn.RNG; neither draws from torch's default generator. Other state_dict keys stay the original model's, so the
    original model's checkpoints load strictly: each stream they lack starts where seed= put it (docs: guide/ §6).

    Args:
        model (Module): the model, changed in place.

    Keyword args:
        seed (int, optional): gives each replaced module, and forward's routed calls, a stream of its own.
        generator (Generator or RNG, optional): one stream shared by the replaced modules and the routed calls.
        functional (bool): route the random calls forward makes itself (default True).
        uncovered (str): torch_rngx.mode's, for random calls in forward that stay torch's.

    Example::

        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))
        >>> torch_rngx.nn.convert(model, seed=0).replaced
        [('1', 'Dropout')]
    """
    if seed is not None and generator is not None:
        raise ValueError("pass seed= or generator=, not both")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    owner_of(generator)
    root = key(seed) if seed is not None else None
    replaced: list[tuple[str, str]] = []
    for name, module in list(model.named_modules()):
        ours = _REPLACEMENTS.get(type(module))
        if ours is None:
            continue
        new = ours(module.p, module.inplace, generator=generator, seed=0 if root is not None else None)
        if root is not None:
            new.rng_state.copy_(fold_in(root, len(replaced)))
            begin_stream(new, "rng_state")
        new.train(module.training)
        new = new.to(_device_of(model))
        replaced.append((name, type(module).__name__))
        if not name:  # the root itself: a new module, which draws through its own stream (nothing to route)
            return Converted(new, replaced, ())
        parent_name, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent_name), attr, new)
    if not functional:
        return Converted(model, replaced, ())
    if root is not None:
        model.register_buffer("rngx_state", fold_in(root, _MODE_DATUM).to(_device_of(model)), persistent=True)
        begin_stream(model, "rngx_state")
        model.register_load_state_dict_pre_hook(_load_rngx_state)
    inner = _routed(model).args[3] if _routed(model) else model.__dict__.get("forward")
    model.forward = functools.partial(_routed_forward, model, None if root is not None else generator, uncovered, inner)
    return Converted(model, replaced, routed_names())


_MODE_DATUM = (1 << 64) - 1  # fold_in datum of the model's own stream, past any replaced module's index


def _load_rngx_state(module, state_dict, prefix, *args):
    load_stream_buffer(module, "rngx_state", state_dict, prefix)


def _routed_forward(model, generator, uncovered, inner, *args, **kwargs):
    """model.forward as convert leaves it (a functools.partial of this, an instance attribute of the model, so
    pickling, deepcopy and torch.export keep it): the model's own forward under torch_rngx.mode, drawing from the
    model's `rngx_state` buffer (looked up on each call, so .to() and load_state_dict keep it), a shared generator,
    or torch's default generator."""
    state = own_buffer(model, "rngx_state")
    with mode(generator=generator if state is None else Generator.on(state), uncovered=uncovered):
        if inner is not None:
            return inner(*args, **kwargs)
        return type(model).forward(model, *args, **kwargs)


def _routed(model):
    forward = model.__dict__.get("forward")
    return forward if isinstance(forward, functools.partial) and forward.func is _routed_forward else None


def _device_of(model):
    tensor = next(model.parameters(), None)
    return tensor.device if tensor is not None else torch.device("cpu")


@torch.no_grad()
def fold_in_(module: torch.nn.Module, data: int | torch.Tensor) -> list[str]:
    """No torch counterpart. Replaces every stream position a module holds (nn.RNG states, dropout modules'
    seed= states) by its functional.fold_in with `data`, in place; returns their state_dict names. After DDP has
    copied rank 0's buffers to every rank, fold_in_(model, rank) gives each data-parallel rank its own masks
    (docs: training/, "Data parallel").

    Args:
        module (Module): the model whose streams to change.
        data (int or Tensor): what to fold in, e.g. the data-parallel rank.

    Example::

        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch_rngx.nn.Dropout(0.1, seed=0))
        >>> torch_rngx.nn.fold_in_(model, 3)
        ['1.rng_state']
    """
    names = [name for name, buf in module.named_buffers() if _is_stream(module, name)]
    for name in names:
        buf = module.get_buffer(name)
        buf.copy_(fold_in(buf, data))
        owner_name, _, attr = name.rpartition(".")
        begin_stream(module.get_submodule(owner_name), attr)  # a checkpoint without it restarts the folded stream
    return names


def _is_stream(module, name):
    owner_name, _, attr = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    return (
        (isinstance(owner, RNG) and attr == "state")
        or (isinstance(owner, _DropoutNd) and attr == "rng_state")
        or (attr == "rngx_state" and _routed(owner) is not None)
    )
