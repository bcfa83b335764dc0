"""Modules: drop-in replacements for torch.nn's dropout family, RNG (a stream position held as model state), and
convert(), which swaps torch's dropout modules in a model for these and routes the random calls of its forward."""
import functools
from typing import NamedTuple

import torch

from . import _checks
from . import _init as init
from .functional import fold_in, key
from ._mode import ROUTED, mode
from .generator import RNG, Generator, check_state_buffer, owner_of
from .random import dropout_from

__all__ = ["RNG", "init", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
           "Converted", "convert", "fold_in_"]


class _DropoutNd(torch.nn.Module):
    """torch's constructor, (p=0.5, inplace=False), plus where the masks' randomness comes from: generator= (a
    torch_rngx.Generator or nn.RNG, shared as you like); seed= (this module owns its stream: the persistent int64
    buffer `rng_state` = [seed, offset], advanced in place on each training forward, saved in state_dict); or
    neither (torch's default generator, so torch.manual_seed reproduces it). Compiled equals eager; eval() is the
    identity and draws nothing."""

    kind = None  # the random.dropout_from kind

    def __init__(self, p=0.5, inplace=False, *, generator=None, seed=None):
        super().__init__()
        self.p = _checks.probability(p)
        if not isinstance(inplace, bool):
            raise TypeError(f"inplace must be a bool, got {type(inplace).__name__}")
        self.inplace = inplace
        owner_of(generator)  # rejects anything but a Generator, an RNG or None, now rather than at forward
        if generator is not None and seed is not None:
            raise ValueError("pass generator= or seed=, not both")
        self.generator = generator
        if seed is not None:
            self.register_buffer("rng_state", RNG(seed).state, persistent=True)

    def forward(self, input):
        owner = self.rng_state if "rng_state" in self._buffers else owner_of(self.generator)
        return dropout_from(self.kind, input, self.p, self.training, self.inplace, owner)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        check_state_buffer(state_dict, prefix + "rng_state")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """torch.nn.Dropout: each element kept (scaled by 1/(1-p)) or zeroed."""

    kind = "dropout"


class Dropout1d(_DropoutNd):
    """torch.nn.Dropout1d: whole channels of (N, C, L) or (C, L) inputs."""

    kind = "dropout1d"


class Dropout2d(_DropoutNd):
    """torch.nn.Dropout2d: whole channels of (N, C, H, W) inputs."""

    kind = "dropout2d"


class Dropout3d(_DropoutNd):
    """torch.nn.Dropout3d: whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""

    kind = "dropout3d"


class AlphaDropout(_DropoutNd):
    """torch.nn.AlphaDropout: keeps a SELU network's zero mean and unit variance."""

    kind = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    """torch.nn.FeatureAlphaDropout: alpha dropout of whole channels."""

    kind = "feature_alpha_dropout"


_REPLACEMENTS = {torch.nn.Dropout: Dropout, torch.nn.Dropout1d: Dropout1d, torch.nn.Dropout2d: Dropout2d,
                 torch.nn.Dropout3d: Dropout3d, torch.nn.AlphaDropout: AlphaDropout,
                 torch.nn.FeatureAlphaDropout: FeatureAlphaDropout}


class Converted(NamedTuple):
    """What convert did. model: the converted model (the same object, or a new module when `model` itself was a
    torch dropout module); replaced: the (name, torch class name) pairs swapped, in named_modules() order;
    routed: the torch functions that draw from the model's stream inside forward() (torch_rngx.mode's ROUTED),
    empty with functional=False."""

    model: torch.nn.Module
    replaced: list
    routed: tuple


@torch.no_grad()
def convert(model, *, seed=None, generator=None, functional=True, uncovered="warn"):
    """Replaces every torch.nn dropout module in `model` (Dropout, Dropout1d/2d/3d, AlphaDropout,
    FeatureAlphaDropout) by torch_rngx's, in place, keeping p, inplace, the training mode and the module names, and
    (functional=True) runs model.forward under torch_rngx.mode, so the random calls forward makes itself
    (F.dropout, attention's dropout_p, torch.rand, randn_like, ...) draw from torch_rngx streams too. Returns a
    Converted(model, replaced, routed). Use its .model: when `model` is itself a torch dropout module it cannot be
    replaced in place, and .model is a new torch_rngx module.

    Streams: seed=s gives each replaced module a stream of its own, saved in state_dict as `<name>.rng_state`
    (the i-th replaced module starts at functional.fold_in(key(s), i)), and forward's routed calls the stream
    `rngx_state` of the model (fold_in(key(s), 2^64 - 1)), also in state_dict; generator= shares a Generator or
    nn.RNG; neither draws from torch's default generator. Other state_dict keys stay the original model's.
    uncovered= is torch_rngx.mode's, for random calls in forward that stay torch's."""
    if seed is not None and generator is not None:
        raise ValueError("pass seed= or generator=, not both")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    owner_of(generator)
    root = key(seed) if seed is not None else None
    replaced = []
    for name, module in list(model.named_modules()):
        ours = _REPLACEMENTS.get(type(module))
        if ours is None:
            continue
        new = ours(module.p, module.inplace, generator=generator, seed=0 if root is not None else None)
        if root is not None:
            new.rng_state.copy_(fold_in(root, len(replaced)))
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
        model.register_load_state_dict_pre_hook(_check_rngx_state)
    inner = _routed(model).args[3] if _routed(model) else model.__dict__.get("forward")
    model.forward = functools.partial(routed_forward, model, None if root is not None else generator, uncovered, inner)
    return Converted(model, replaced, ROUTED)


_MODE_DATUM = (1 << 64) - 1  # fold_in datum of the model's own stream, past any replaced module's index


def _check_rngx_state(module, state_dict, prefix, *args):
    check_state_buffer(state_dict, prefix + "rngx_state")


def routed_forward(model, generator, uncovered, inner, *args, **kwargs):
    """model.forward as convert leaves it (a functools.partial of this, an instance attribute of the model, so
    pickling, deepcopy and torch.export keep it): the model's own forward under torch_rngx.mode, drawing from the
    model's `rngx_state` buffer (looked up on each call, so .to() and load_state_dict keep it), a shared generator,
    or torch's default generator."""
    state = model._buffers.get("rngx_state")
    with mode(generator=generator if state is None else Generator.on(state), uncovered=uncovered):
        if inner is not None:
            return inner(*args, **kwargs)
        return type(model).forward(model, *args, **kwargs)


def _routed(model):
    forward = model.__dict__.get("forward")
    return forward if isinstance(forward, functools.partial) and forward.func is routed_forward else None


def _device_of(model):
    tensor = next(model.parameters(), None)
    return tensor.device if tensor is not None else torch.device("cpu")


@torch.no_grad()
def fold_in_(module, data):
    """Replaces every stream position a module holds (nn.RNG states, dropout modules' seed= states) by its
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
    return ((isinstance(owner, RNG) and attr == "state") or (isinstance(owner, _DropoutNd) and attr == "rng_state")
            or (attr == "rngx_state" and _routed(owner) is not None))
