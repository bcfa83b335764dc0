"""DataLoader workers under torch_rngx.mode (docs/guide.md, "DataLoader workers").

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

from ._mode import _active, mode


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
        with mode(uncovered=uncovered):
            return self.loop(*args, **kwargs)

    def __reduce__(self):
        """Pickled in the parent as a spawned worker starts, on the thread that starts it: its mode, if any."""
        parent = _active()
        return (_spawned, (getattr(parent, "uncovered", None),))


def _spawned(uncovered: Optional[str]) -> WorkerLoop:
    from ._mode import _WORKER_LOOP

    return WorkerLoop(_WORKER_LOOP, uncovered)
