"""Debugging aids. key_reuse: reports two draws that read the same words of a key's stream (docs: guide/,
"Catching key reuse"); the environment variable RNGX_DEBUG_KEY_REUSE=raise|warn turns it on for a whole run."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ._engine import reuse
from ._engine.reuse import KeyReuseError, KeyReuseWarning

__all__ = ["KeyReuseError", "KeyReuseWarning", "key_reuse"]

ENV = "RNGX_DEBUG_KEY_REUSE"


def __dir__():
    return __all__


@contextlib.contextmanager
def key_reuse(action: str = "raise") -> Iterator[None]:
    """No torch counterpart (JAX's jax_debug_key_reuse is the nearest). Within the block, each keyed draw records the
    words it reads, and a draw that reads words an earlier one read raises KeyReuseError (action="raise") or warns
    KeyReuseWarning ("warn"), naming both call sites and the key. The block starts with an empty history; "off" turns
    the checker off inside it. Draws inside a graph that torch.compile traces are checked at trace time (one key tensor
    feeding two draws); compiled code is not checked when it runs.

    Args:
        action (str): "raise", "warn" or "off".

    Example::

        >>> k = rf.key(7)
        >>> with torch_rngx.debug.key_reuse("raise"):
        ...     a = rf.uniform(torch.empty(4), k)
        ...     b = rf.uniform(torch.empty(4), k)
        Traceback (most recent call last):
        ...
        torch_rngx._engine.reuse.KeyReuseError: ...
    """
    previous = reuse.start(action)
    try:
        yield
    finally:
        reuse.restore(previous)


def _from_environment():
    action = os.environ.get(ENV, "")
    if action not in ("", "raise", "warn", "off"):
        raise ValueError(f'{ENV} must be "raise", "warn" or "off" (or unset), got {action!r}')
    if action:
        reuse.start(action)


_from_environment()
