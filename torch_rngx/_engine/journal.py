"""Activation checkpointing replays the draws of its region, so recomputation is exact (docs: training/).

torch.utils.checkpoint(use_reentrant=False), with or without a selective-checkpoint context_fn, runs a region
again during backward. Its stateful torch_rngx calls would then draw again: a Generator (or a module's state)
has moved on, so the recomputed activations, and the gradients, would silently differ from the forward's.
Instead every draw made inside a checkpointed region (rngx::take_ and rngx::seed_state) is journaled on that
region's checkpoint frame, and the recomputation takes the journaled keys back, in order, advancing nothing. A CPU
state's take_ steps in C++ and asks the journal (replayed, record) only while saved-tensor hooks are on the stack or a
backward pass runs (csrc/journal.h); every other draw asks it here.

torch has no public handle on the frame: _torch.checkpoint_frame reads it from the saved-tensor hooks the checkpoint
pushes. A draw that cannot be replayed raises instead of drawing new words: a draw from a Generator or module state
during a backward pass outside a non-reentrant recomputation (use_reentrant=True recomputes this way, and so does
torch.compile's partitioner for a plain checkpoint), or in a checkpoint nested inside a recomputation.
"""

import weakref
from typing import Any, Callable, Optional

import torch

from .torch_private import checkpoint_frame, current_graph_task_id, saved_tensors_hooks_active

# frame -> [(owner, key)]: owner is the address of the Generator's state (what the C++ step knows it by), None for
# torch's generator
_journals: weakref.WeakKeyDictionary[Any, list[tuple[Optional[int], Any]]] = weakref.WeakKeyDictionary()
# frame -> {graph task: index of the next key to replay}
_cursors: weakref.WeakKeyDictionary[Any, dict[int, int]] = weakref.WeakKeyDictionary()

_CANNOT_REPLAY = (
    "torch_rngx: a stateful draw (generator= or a module's RNG state) is being recomputed during backward, "
    "but it cannot be replayed here: {why}. Recomputing would draw new numbers and silently change the "
    "gradients. The exact recipes: eager, torch.utils.checkpoint.checkpoint(..., use_reentrant=False) without "
    "nesting; under torch.compile, checkpoint(..., use_reentrant=False, context_fn=torch_rngx.checkpoint_context), "
    "which saves the draws; or pass keys explicitly through torch_rngx.functional (docs: training/, "
    "'Activation checkpointing')."
)


def plain_eager():
    """No checkpoint is on the saved-tensor hook stack and no backward pass is running: a draw needs no journal."""
    return not saved_tensors_hooks_active() and current_graph_task_id() == -1


def replayed(owner):
    """The journaled key for a draw from `owner` (a state's address, or None for torch's generator) while a
    checkpoint recomputes; None for a draw to make now (then record it); raises for a draw that cannot be replayed."""
    frame, task = checkpoint_frame()
    if task is not None:
        return _replay(frame, task, owner)
    # A draw from torch's generator (owner None) during backward is left to torch: checkpoint restores that
    # generator (preserve_rng_state=True) before recomputing, with or without reentrancy.
    if owner is not None and current_graph_task_id() != -1:
        raise RuntimeError(
            _CANNOT_REPLAY.format(
                why="a checkpoint nested inside a recomputation"
                if frame is not None
                else "no non-reentrant checkpoint is recomputing: checkpoint(..., use_reentrant=True) recomputes "
                "this way, and so does torch.compile's partitioner for a plain checkpoint"
            )
        )
    return None


def record(owner, key):
    """Journals a key just drawn from `owner` when the draw is inside a checkpointed region."""
    frame = checkpoint_frame()[0]
    if frame is not None:
        _journals.setdefault(frame, []).append((owner, key))


def draw(state, make_key):
    """The key for one stateful call: make_key() (which may advance `state`, a state tensor or None) in a forward,
    the journaled key when a checkpoint recomputes."""
    owner = None if state is None else state.data_ptr()
    key = replayed(owner)
    if key is None:
        key = make_key()
        record(owner, key)
    return key


def _replay(frame, task, owner):
    journal = _journals.get(frame, [])
    cursor = _cursors.setdefault(frame, {})
    i = cursor.get(task, 0)
    if i >= len(journal) or journal[i][0] != owner:
        raise RuntimeError(
            _CANNOT_REPLAY.format(
                why="the recomputation draws more often, or from other generators, than the forward did"
            )
        )
    cursor[task] = i + 1
    return journal[i][1].clone()


def checkpoint_context(policy: Optional[Callable[..., Any]] = None) -> tuple[Any, Any]:
    """Stands in for ``torch.utils.checkpoint.create_selective_checkpoint_contexts(policy)`` as the context_fn of
    torch.utils.checkpoint.checkpoint(..., use_reentrant=False): saves every torch_rngx draw
    (rngx::take_, rngx::seed_state) instead of recomputing it, and applies `policy` to the other ops. Eager
    checkpointing is exact without it (draws are journaled); under torch.compile it is what makes checkpointed
    regions that draw exact (docs: training/, "Activation checkpointing").

    Args:
        policy (callable, optional): a selective-checkpoint policy, (ctx, op, *args, **kwargs) -> CheckpointPolicy;
            None recomputes everything else.

    Example::

        >>> from torch.utils.checkpoint import checkpoint
        >>> block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch_rngx.nn.Dropout(0.5, seed=0))
        >>> x = torch.ones(2, 4, requires_grad=True)
        >>> y = checkpoint(block, x, use_reentrant=False, context_fn=torch_rngx.checkpoint_context)
        >>> y.sum().backward()
    """
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    draws = (torch.ops.rngx.take_.default, torch.ops.rngx.seed_state.default)

    def save_draws(ctx, op, *args, **kwargs):
        if op in draws:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE if policy is None else policy(ctx, op, *args, **kwargs)

    return create_selective_checkpoint_contexts(save_draws)
