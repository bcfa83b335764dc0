"""Modules: drop-in replacements for torch.nn's dropout family, RNG (a stream position held as model state), and
convert(), which swaps torch's dropout modules in a model for these."""
import torch

from . import _checks
from . import _init as init
from .functional import fold_in, key
from .generator import RNG, check_state_buffer, owner_of
from .random import dropout_from

__all__ = ["RNG", "init", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "convert",
           "fold_in_"]


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


@torch.no_grad()
def convert(model, *, seed=None, generator=None):
    """Replaces every torch.nn dropout module in `model` (Dropout, Dropout1d/2d/3d, AlphaDropout,
    FeatureAlphaDropout) by torch_rngx's, in place, keeping p, inplace, the training mode and the module names;
    returns the (name, torch class name) pairs it replaced, in model.named_modules() order.

    Streams: seed=s gives each replaced module a stream of its own, saved in state_dict as `<name>.rng_state`
    (the i-th replaced module starts at functional.fold_in(key(s), i)); generator= shares a Generator or nn.RNG;
    neither draws from torch's default generator. state_dict keys stay those of the original model, plus the
    rng_state buffers with seed=.

    Functional calls inside forward() (F.dropout, attention's dropout_p) are not modules and stay torch's."""
    if seed is not None and generator is not None:
        raise ValueError("pass seed= or generator=, not both")
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
        parent_name, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent_name), attr, new.to(_device_of(model)))
        replaced.append((name, type(module).__name__))
    return replaced


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
    return (isinstance(owner, RNG) and attr == "state") or (isinstance(owner, _DropoutNd) and attr == "rng_state")
