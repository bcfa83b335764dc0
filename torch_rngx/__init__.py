"""torch-rngx: counter-based (Philox4x32-10) random ops for PyTorch that compile whole and give bitwise
the same values eager, compiled and exported, in any memory layout."""

import os

import torch

# First the compiled libraries: a build that is missing or does not load raises an ImportError saying what to run.
from . import _library  # noqa: F401

# isort: split
from . import _ops, _stateful, debug, functional, nn, optim, testing  # noqa: F401  (_ops: the ops' registrations)
from ._mode import UncoveredRandomWarning, mode
from ._replay import checkpoint_context
from ._spec import ops  # noqa: F401  (torch.ops.rngx)
from ._stateful import *  # noqa: F403  (the stateful functions, like torch's)
from .functional import blocks_used
from .generator import Generator

if torch.distributed.is_available():
    # DTensor's dispatch rules for the rngx ops. torch._dynamo, which the package imports, has loaded DTensor
    # already, and a compiled function could not import them on meeting its first DTensor.
    from . import distributed  # noqa: F401

__all__ = [
    "Generator",
    "UncoveredRandomWarning",
    "blocks_used",
    "checkpoint_context",
    "debug",
    "functional",
    "include_dir",
    "mode",
    "nn",
    "optim",
    "testing",
]
__all__ += _stateful.__all__
__all__.sort()  # the reference (docs/api.md) lists them in this order
__version__ = "0.3.0"


def __dir__():  # the public names; `ops` (torch.ops.rngx) and the private modules stay reachable
    return __all__ + ["__version__"]


def include_dir() -> str:
    """No torch counterpart. The folder of the C/CUDA headers (docs/device_api.md), for
    torch.utils.cpp_extension's include_dirs: `#include <torch_rngx/elements.h>` draws our stream in host or device
    code.

    Example::

        >>> from pathlib import Path
        >>> (Path(torch_rngx.include_dir()) / "torch_rngx" / "elements.h").is_file()
        True
    """
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
