"""A Generator's step: the key for one stateful call, and the state moved past the blocks that call reads.

    advance(state, blocks) -> key   the bare step: the state read and advanced at once, under its lock
    fresh_seed() -> key            a fresh key [s, o] from torch's default CPU generator (generator=None)

Graphs record a draw as rngx::take_ (a Generator's) or rngx::seed_state (torch's generator), which a checkpoint
journals and replays (_replay.py): the step of a CPU state is C++ (csrc/library.cpp), which asks the journal only
while one may be open (the hooks given to csrc/module.c below), so a compiled graph runs no Python per draw.

Threads sharing a Generator never get the same words (docs: guarantees/, "Threads"): a CPU state steps in C++
(rngx::step_) under the one mutex that the one-call ops (uniform_from_, ...) also hold. A CUDA state steps on its
device in stream order under take_lock: the C++ step would copy it to the host and wait (no CUDA graph could hold
it), so take_ has a Python kernel for CUDA.
"""

import threading

import torch

from . import (  # type: ignore[attr-defined]  # _C: the compiled library, which mypy cannot read
    _C,
    _checks,
    _replay,
)
from ._random_ops import drawing_from_torch
from ._spec import ops
from ._torch import any_python_mode, current_graph_task_id, register_ordered_effect, top_saved_tensors_hooks

# seed_state's tag needs the stable ABI of torch 2.12 (we target 2.10), so it is defined here.
_lib = torch.library.Library("rngx", "FRAGMENT")
_lib.define("seed_state() -> Tensor", tags=(torch.Tag.nondeterministic_seeded,))
# Compilers must neither merge two seed_state calls (AOTAutograd's CSE ignores the tag) nor reorder them: an
# ordered effect threads a token through every call, in program order.
register_ordered_effect(_lib, "rngx::seed_state")

take_lock = threading.Lock()


def advance(state, blocks):
    """The key for one call, then the offset moved past its blocks: one step under the state's lock."""
    if state.is_cpu:
        return ops.step_(state, blocks)
    with take_lock:
        taken = state.clone()
        state[1:].add_(blocks)  # int64 add wraps: the offset is unsigned, modulo 2^64
    return taken


def fresh_seed():
    """A fresh key [s, o]: two draws of 63 random bits from torch's default CPU generator (torch.manual_seed
    reproduces them), one tensor op, past any torch_rngx.mode."""
    if not any_python_mode():  # nothing that could route or report the draw: no guard to enter
        return torch.empty(2, dtype=torch.int64).random_()
    with drawing_from_torch():
        return torch.empty(2, dtype=torch.int64).random_()


_scratch = threading.local()


def scratch_seed():
    """fresh_seed()'s values in this thread's scratch tensor, as the state of a fused op (uniform_from_, ...), which
    reads the key and moves the offset past it: a call with generator=None then makes one tensor op less. The
    tensor is made outside inference mode, so that any later call may refill it."""
    seed = getattr(_scratch, "seed", None)
    if seed is None:
        with torch.inference_mode(False):
            seed = _scratch.seed = torch.empty(2, dtype=torch.int64)
    if not any_python_mode():
        return seed.random_()
    with drawing_from_torch():
        return seed.random_()


def key(owner, blocks):
    """The key for a call that reads `blocks` blocks, as graphs record it: owner's step (rngx::take_) or, for owner
    None, a fresh seed (rngx::seed_state). Inside a checkpoint both are journaled, and a recomputation replays them."""
    return ops.seed_state() if owner is None else ops.take_(owner, blocks)


def check_take(state, blocks):
    _checks.generator_state(state)
    if isinstance(blocks, int) and blocks < 0:
        raise ValueError(f"blocks must be >= 0, got {blocks}")


# A custom op, not clone() + add_(): a compiled backward must save the key, never the mutated state (AOTAutograd
# would otherwise recompute the clone from the state after it advanced). The op is opaque to torch.compile, so no
# lock is ever traced.
@torch.library.impl(_lib, "take_", "CUDA")
def _(state, blocks):
    check_take(state, blocks)
    return _replay.draw(state, lambda: advance(state, blocks))


@torch.library.register_fake("rngx::step_")
@torch.library.register_fake("rngx::take_")
def _(state, blocks):
    check_take(state, blocks)
    return torch.empty_like(state)


@torch.library.impl(_lib, "seed_state", "CompositeExplicitAutograd")
def _(*args, **kwargs):
    return _replay.draw(None, fresh_seed)


@torch.library.register_fake("rngx::seed_state")
def _():
    return torch.empty(2, dtype=torch.int64)


def _replay_at(owner):
    """The journal's answer for the C++ step of the state at address `owner` (csrc/journal.h): the recorded key as
    (seed, offset), or None to step."""
    key = _replay.replayed(owner)
    return None if key is None else tuple(key.tolist())


def _record_at(owner, seed, offset):
    _replay.record(owner, torch.tensor([seed, offset]))


_C.set_journal(top_saved_tensors_hooks, current_graph_task_id, _replay_at, _record_at)
