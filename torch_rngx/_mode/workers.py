"""DataLoader workers under torch_rngx.mode (docs: guide/, "DataLoader workers").

A worker forked inside a mode would inherit it with a copy of its stream: every worker would draw the same numbers,
epoch after epoch; a spawned one would start without it. While a mode is active, the workers' entry point is
WorkerLoop: each worker runs torch's own loop under a mode of its own with no generator, so each routed call draws
its seed from the worker's torch generator, which torch seeds with base_seed + worker_id. The base seed is drawn in
the main process when the loader's iterator starts (Tensor.random_(), routed there): so the workers' streams
follow the main process's mode (its seed=, or torch.manual_seed for a mode without one), differ from worker to
worker and from epoch to epoch, and touch neither the mode's stream nor a converted model's.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

# What _mode gives at its import (bind): the active mode, a mode's constructor and torch's own worker loop. This
# module sits below _mode, which starts a WorkerLoop while a mode is active.
_active: Callable[[], Any]
_mode: Callable[..., Any]
_torch_loop: Callable[..., Any]


def bind(active: Callable[[], Any], mode: Callable[..., Any], torch_loop: Callable[..., Any]) -> None:
    global _active, _mode, _torch_loop
    _active, _mode, _torch_loop = active, mode, torch_loop


class WorkerLoop:
    """torch.utils.data's worker loop, started under a mode of the worker's own when the process that started the
    worker was inside one (forked: it finds the inherited mode; spawned: the mode's `uncovered` travels with this
    object when it is pickled in the parent)."""

    def __init__(self, loop: Callable[..., Any], uncovered: Optional[str] = None) -> None:
        self.loop = loop
        self.uncovered = uncovered

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inherited = _active()
        uncovered = self.uncovered if self.uncovered is not None else getattr(inherited, "uncovered", None)
        if uncovered is None:
            return self.loop(*args, **kwargs)
        with _mode(uncovered=uncovered):
            return self.loop(*args, **kwargs)

    def __reduce__(self):
        """Pickled in the parent as a spawned worker starts, on the thread that starts it: its mode, if any."""
        parent = _active()
        return (_spawned, (getattr(parent, "uncovered", None),))


def _spawned(uncovered: Optional[str]) -> WorkerLoop:
    return WorkerLoop(_torch_loop, uncovered)
