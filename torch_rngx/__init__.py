"""torch-rngx: counter-based (Philox4x32-10) random ops for PyTorch that compile whole and give bitwise
the same values eager, compiled and exported, in any memory layout."""

import importlib
import os

import torch

# First the compiled libraries: a build that is missing or does not load raises an ImportError saying what to run.
from ._engine import library as _library  # noqa: F401

# isort: split
from . import data, debug, functional, nn, optim, stateful, testing  # noqa: F401
from ._engine import deferred as _deferred
from ._engine import registrations as _registrations  # noqa: F401  (the ops' fake, autograd and vmap kernels)
from ._engine.journal import checkpoint_context
from ._engine.spec import rngx as ops  # noqa: F401  (torch.ops.rngx)
from ._mode.mode import UncoveredRandomWarning, mode, routed_names, transparent_names, uncovered_names
from ._version import __version__ as __version__
from .functional import blocks_used
from .generator import Generator
from .stateful import *  # noqa: F403  (the stateful functions, like torch's)

if torch.distributed.is_available():
    # DTensor's dispatch rules for the rngx ops, registered as soon as DTensor exists (now, or right after anyone
    # imports torch.distributed.tensor, as torch.compile does before it traces): a compiled function could not
    # import them on meeting its first DTensor, and eager code without DTensors does not pay for DTensor's import.
    _deferred.after_import("torch.distributed.tensor", lambda: importlib.import_module("torch_rngx.distributed"))

__all__ = [
    "Generator",
    "UncoveredRandomWarning",
    "blocks_used",
    "checkpoint_context",
    "data",
    "debug",
    "functional",
    "include_dir",
    "mode",
    "nn",
    "optim",
    "routed_names",
    "testing",
    "transparent_names",
    "uncovered_names",
]
__all__ += stateful.__all__
__all__.sort()  # the API reference lists them in this order


def __dir__():  # the public names; `ops` (torch.ops.rngx) and the private modules stay reachable
    return __all__ + ["__version__"]


def include_dir() -> str:
    """No torch counterpart. The folder of the C/CUDA headers (docs: device_api/), for
    torch.utils.cpp_extension's include_dirs: `#include <torch_rngx/elements.h>` draws our stream in host or device
    code.

    Example::

        >>> from pathlib import Path
        >>> (Path(torch_rngx.include_dir()) / "torch_rngx" / "elements.h").is_file()
        True
    """
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
