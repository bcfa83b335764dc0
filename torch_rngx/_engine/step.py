"""A Generator's step: the key for one stateful call, and the state moved past the blocks that call reads.

    advance(state, blocks) -> key   the bare step: the state read and advanced at once, under its lock
    fresh_seed() -> key            a fresh key [s, o] from torch's default CPU generator (generator=None)
    mark(owner, numel) -> mark     before a call that may raise after it draws: where owner's steps stand
    give_back(mark, owner)         when it raised: owner's steps since the mark given back (docs: guarantees/)

Graphs record a draw as rngx::take_ (a Generator's) or rngx::seed_state (torch's generator), which a checkpoint
journals and replays (journal.py): the step of a CPU state is C++ (csrc/library.cpp), which asks the journal only
while one may be open (the hooks given to csrc/module.c below), so a compiled graph runs no Python per draw.

A call that raises leaves every state as it was (docs: guarantees/, "Nothing but the output is written"): it checks its
arguments before it draws, and when what follows the draw fails (an allocation, torch refusing an in-place write, an
interrupt) it gives the blocks back. Every step of a CPU state is logged per thread in C++ (csrc/steps.h; a CUDA state's
here), at no cost to a call that succeeds; give_back returns each of the call's steps, newest first, while its state
still stands where that step left it, so blocks another thread drew since are never handed out twice. torch's
generator (owner None) is saved before a call of at least TORCH_SAVED_FROM elements and restored the same way.

Threads sharing a Generator never get the same words (docs: guarantees/, "Threads"): a CPU state steps in C++
(rngx::step_) under the one mutex that the one-call ops (uniform_from_, ...) also hold. A CUDA state steps on its
device in stream order under take_lock: the C++ step would copy it to the host and wait (no CUDA graph could hold
it), so take_ has a Python kernel for CUDA.
"""

import os
import threading

import torch

from . import checks, journal, reuse
from .library import C as _C
from .random_ops import drawing_from_torch
from .spec import rngx
from .torch_private import any_python_mode, current_graph_task_id, register_ordered_effect, top_saved_tensors_hooks

# seed_state's tag needs the stable ABI of torch 2.12 (we target 2.10), so it is defined here.
_lib = torch.library.Library("rngx", "FRAGMENT")
_lib.define("seed_state() -> Tensor", tags=(torch.Tag.nondeterministic_seeded,))
# Compilers must neither merge two seed_state calls (AOTAutograd's CSE ignores the tag) nor reorder them: an
# ordered effect threads a token through every call, in program order.
register_ordered_effect(_lib, "rngx::seed_state")

take_lock = threading.Lock()


def _fresh_lock():
    """In a forked child, take_lock starts free (another thread may have held it at the fork): as the C++ step's
    lock (csrc/library.cpp)."""
    global take_lock
    take_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock)


def advance(state, blocks):
    """The key for one call, then the offset moved past its blocks: one step under the state's lock."""
    if state.is_cpu:
        return rngx.step_(state, blocks)
    with take_lock:
        taken = state.clone()
        state[1:].add_(blocks)  # int64 add wraps: the offset is unsigned, modulo 2^64
    log = _device_steps()
    log.append((state, taken, blocks))
    del log[: -_C.STEPS_KEPT]
    _device.made += 1
    return taken


_device = threading.local()  # this thread's newest steps of device states and their count (C++ logs the CPU ones)


def _device_steps():
    log = getattr(_device, "log", None)
    if log is None:
        log = _device.log = []
        _device.made = 0
    return log


# torch's generator is saved before a call with generator=None on at least this many elements: there its allocation
# may fail after the seed is drawn, and the copy (about 1.5 us) is lost in the call's time.
TORCH_SAVED_FROM = 1 << 20


def mark(owner, numel=0):
    """What give_back needs, taken before a call that may raise after it draws from owner (a state tensor, or None
    for torch's generator): where this thread's steps stand, or a copy of torch's generator for a large call. None
    under torch.compile, whose graphs step at run time."""
    if torch.compiler.is_compiling():
        return None
    if owner is None:
        return torch.default_generator.clone_state() if numel >= TORCH_SAVED_FROM else None
    if owner.is_cpu:
        return _C.steps_made()
    _device_steps()
    return _device.made


def give_back(mark, owner):
    """Gives back what a call that raised drew from owner since mark: each of its steps, newest first, while the
    state stands where that step left it (the key-reuse checker, if on, forgets those blocks); for owner None,
    torch's generator, back where it was if only this call drew from it since."""
    if mark is None:
        return
    if owner is None:
        _restore_torch_generator(mark)
        return
    local = owner.to_local() if hasattr(owner, "to_local") else owner  # a DTensor state steps its local tensor
    if local.is_cpu:
        given = _C.give_back(mark, local.data_ptr())
    else:
        given = _give_back_on_device(mark, local)
    if reuse.active is not None:
        for seed, offset, blocks in given:
            reuse.active.give_back(seed, offset, blocks)


def _give_back_on_device(mark, state):
    """A device state's steps since mark, newest first, each undone where the state still stands past it: as a
    select in stream order (no host sync), or, for the key-reuse checker, on the host, returning those given back."""
    log, given = _device_steps(), []
    with take_lock:
        for i in reversed(range(max(0, len(log) - (_device.made - mark)), len(log))):
            stepped, key, blocks = log[i]
            if stepped is None or stepped.data_ptr() != state.data_ptr():
                continue
            log[i] = (None, key, blocks)
            past = key.clone()
            past[1:].add_(blocks)
            if reuse.active is None:
                state[1:] = torch.where((state == past).all(), key[1:], state[1:])
            elif torch.equal(state, past):
                state[1:] = key[1:]
                given.append((*key.tolist(), blocks))
            else:
                break
    return given


_SEED_DRAWS = 64  # the most fresh seeds one call draws (a recurrent layer's dropouts under the mode, one per layer)


def _restore_torch_generator(saved):
    """torch's default generator set back to `saved` (a copy from before the call) if it stands where this call's
    fresh seeds left it: each is one draw of two int64s, replayed on the copy until it reaches the generator's state.
    Otherwise another thread drew from it too, and restoring would hand its numbers out again. (A draw by another
    thread between the comparison and the restore is not seen: torch's generator has no compare-and-set.)"""
    now = torch.default_generator.get_state()
    probe = saved.clone_state()
    with drawing_from_torch():
        for _ in range(_SEED_DRAWS + 1):
            if torch.equal(probe.get_state(), now):
                torch.default_generator.set_state(saved.get_state())
                return
            torch.empty(2, dtype=torch.int64).random_(generator=probe)


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
    return rngx.seed_state() if owner is None else rngx.take_(owner, blocks)


def check_take(state, blocks):
    checks.generator_state(state)
    if isinstance(blocks, int) and blocks < 0:
        raise ValueError(f"blocks must be >= 0, got {blocks}")


# A custom op, not clone() + add_(): a compiled backward must save the key, never the mutated state (AOTAutograd
# would otherwise recompute the clone from the state after it advanced). The op is opaque to torch.compile, so no
# lock is ever traced.
@torch.library.impl(_lib, "take_", "CUDA")
def _(state, blocks):
    check_take(state, blocks)
    return journal.draw(state, lambda: advance(state, blocks))


@torch.library.register_fake("rngx::step_")
@torch.library.register_fake("rngx::take_")
def _(state, blocks):
    check_take(state, blocks)
    return torch.empty_like(state)


@torch.library.impl(_lib, "seed_state", "CompositeExplicitAutograd")
def _(*args, **kwargs):
    return journal.draw(None, fresh_seed)


@torch.library.register_fake("rngx::seed_state")
def _():
    return torch.empty(2, dtype=torch.int64)


def _replay_at(owner):
    """The journal's answer for the C++ step of the state at address `owner` (csrc/journal.h): the recorded key as
    (seed, offset), or None to step."""
    key = journal.replayed(owner)
    return None if key is None else tuple(key.tolist())


def _record_at(owner, seed, offset):
    journal.record(owner, torch.tensor([seed, offset]))


_C.set_journal(top_saved_tensors_hooks, current_graph_task_id, _replay_at, _record_at)
