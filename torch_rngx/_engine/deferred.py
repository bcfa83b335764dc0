"""Work `import torch_rngx` leaves to later: run when the module it needs is first imported, by anyone.

DTensor's dispatch rules for the rngx ops (torch_rngx.distributed) need torch.distributed.tensor, which takes about
0.4 s to import. They are registered right after it is imported (or at once, if it already is), so no DTensor can
exist without them: a DTensor can only be made once its module is loaded, and torch.compile loads it too (through
torch._dynamo) before it traces anything, so a compiled function that meets its first DTensor finds the rules in
place (tests/test_dtensor_rules_at_import.py)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
from typing import Any, Callable

_lock = threading.Lock()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for `name`, the spec the other finders give, whose loader then runs `then` after the
    module's code (once; a failed import leaves the hook for the next try)."""

    def __init__(self, name: str, then: Callable[[], Any]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        with _lock:
            if self not in sys.meta_path:
                return None
            sys.meta_path.remove(self)  # the search below, and later imports, go past this finder
        spec: Any = None
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            if spec is None or not hasattr(spec.loader, "exec_module"):  # not found here, or no loader to wrap
                sys.meta_path.insert(0, self)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader: Any = spec.loader
        exec_module, then = loader.exec_module, self.then

        def exec_then(module: Any) -> None:
            try:
                exec_module(module)
            except BaseException:
                sys.meta_path.insert(0, self)
                raise
            then()

        loader.exec_module = exec_then  # this spec's loader only (each search makes its own)
        return spec


def after_import(name: str, then: Callable[[], Any]) -> None:
    """then() now if module `name` is imported, else right after its first import (by anyone)."""
    if name in sys.modules:
        then()
        return
    sys.meta_path.insert(0, _AfterImport(name, then))
