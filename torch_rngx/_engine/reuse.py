"""The key-reuse checker behind torch_rngx.debug.key_reuse (docs: guide/, "Catching key reuse").

While a Checker is `active`, every keyed draw records the words it reads, as ranges of (seed, word 4 * offset + i):
with an explicit key, per key (each row of a batched key, each key of a vmapped batch) the words of the elements
it draws, k = functional.words_per_element per element, under a global view only the runs of the block; from a
Generator, the blocks it advances past; split and fold_in, the parent's blocks that become the new keys. A range
that meets one drawn before is reported with both call sites. Ranges of one seed that touch are merged, so a
Generator's stream stays one range however long it runs; memory grows with the number of distinct seeds.

Not recorded: draws during a backward pass (recomputing a dropout mask, checkpoint replay: the same words on
purpose) and generator=None draws (a fresh 126-bit key each call). manual_seed, set_state and an RNG's
load_state_dict restart a stream on purpose: they forget that seed's ranges.
"""

import bisect
import itertools
import math
import os
import sys
import warnings

import torch

from . import torch_private
from .torch_private import current_graph_task_id, traced_constant, traced_frames, traced_key_node, unwrap_functorch

active = None  # the Checker while one is on: the one flag every keyed draw tests

_U64 = (1 << 64) - 1
_SKIP = tuple(os.path.dirname(str(m.__file__)) + os.sep for m in (sys.modules[__name__.partition(".")[0]], torch, os))
RUN_LIMIT = 1 << 16  # runs of one call's block kept apart; past this, their hull is recorded


class KeyReuseError(RuntimeError):
    """No torch counterpart. Two draws read the same words of a key's stream (key_reuse(action="raise")).

    Args:
        message (str): both call sites and the key.

    Example::

        >>> issubclass(torch_rngx.debug.KeyReuseError, RuntimeError)
        True
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


class KeyReuseWarning(UserWarning):
    """No torch counterpart. Two draws read the same words of a key's stream (key_reuse(action="warn")).

    Args:
        message (str): both call sites and the key.

    Example::

        >>> issubclass(torch_rngx.debug.KeyReuseWarning, UserWarning)
        True
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


def user_site():
    """file:line of the innermost frame outside torch_rngx, torch and the standard library: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP):
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _plain_rows(key):
    """A key tensor with every torch.func wrapper removed, as (R, *key.shape): one row per vmapped batch entry."""
    if hasattr(key, "to_local"):  # a DTensor key is replicated: every rank holds all of it
        key = key.to_local()
    key, bdims = unwrap_functorch(key)
    for i, bdim in enumerate(reversed(bdims)):  # the outermost vmap's dim is the plain tensor's own
        key = key.movedim(bdim + i, i)
    return key.reshape(math.prod(key.shape[: len(bdims)]), *key.shape[len(bdims) :])  # -1 fails on an empty key


def _box_runs(shape, start, size):
    """The row-major [first, end) element ranges of the block start..start+size of a tensor of `shape`."""
    if 0 in size:
        return []
    j = len(shape)
    while j > 0 and start[j - 1] == 0 and size[j - 1] == shape[j - 1]:
        j -= 1  # dims j.. are whole: each run spans them
    if j == 0:
        return [(0, math.prod(shape))]
    inner = math.prod(shape[j:])
    strides = [math.prod(shape[d + 1 :]) for d in range(j - 1)]
    outer = [range(start[d], start[d] + size[d]) for d in range(j - 1)]
    if math.prod(size[: j - 1]) > RUN_LIMIT:
        first = sum(s * st for s, st in zip(start, strides)) + start[j - 1] * inner
        last = sum((s + n - 1) * st for s, n, st in zip(start, size, strides)) + (start[j - 1] + size[j - 1]) * inner
        return [(first, last)]
    return [
        (
            sum(i * st for i, st in zip(idx, strides)) + start[j - 1] * inner,
            sum(i * st for i, st in zip(idx, strides)) + (start[j - 1] + size[j - 1]) * inner,
        )
        for idx in itertools.product(*outer)
    ]


def key_runs(key_shape, shape, start, size):
    """(flat index of the key in the batched state, first element, end element) for each run that a call on the
    block start..start+size of a tensor of `shape` draws (docs: stream/, "Batched states", "Global view"); each
    key that a broadcast dim repeats is counted once."""
    batch = list(key_shape[:-1]) or [1] * len(shape)
    e = max((d + 1 for d, b in enumerate(batch) if b != 1), default=0)
    runs = _box_runs(shape[e:], start[e:], size[e:])
    if not runs:
        return []
    strides = [math.prod(batch[d + 1 :]) for d in range(e)]
    rows = itertools.product(*[range(start[d], start[d] + size[d]) if batch[d] != 1 else (0,) for d in range(e)])
    return [(sum(i * st for i, st in zip(idx, strides)), a, b) for idx in rows for a, b in runs]


class _Ranges:
    """The disjoint, sorted word ranges drawn from one seed, each with the call sites that drew it."""

    def __init__(self):
        self.starts, self.ends, self.sites = [], [], []

    def hit(self, a, b):
        """Sites of a range meeting [a, b), or None."""
        i = bisect.bisect_right(self.starts, a) - 1
        if i >= 0 and self.ends[i] > a:
            return self.sites[i]
        if i + 1 < len(self.starts) and self.starts[i + 1] < b:
            return self.sites[i + 1]
        return None

    def add(self, a, b, site):
        """[a, b) joined with every range it meets or touches."""
        lo = bisect.bisect_left(self.ends, a)
        hi = bisect.bisect_right(self.starts, b)
        if lo < hi:
            a, b = min(a, self.starts[lo]), max(b, self.ends[hi - 1])
            site = tuple(dict.fromkeys(s for sites in self.sites[lo:hi] for s in sites + (site,)))
        else:
            site = (site,)
        self.starts[lo:hi], self.ends[lo:hi], self.sites[lo:hi] = [a], [b], [site]

    def remove(self, a, b):
        """[a, b) cut out of the ranges that meet it; what is left of each keeps its sites."""
        lo, hi = bisect.bisect_right(self.ends, a), bisect.bisect_left(self.starts, b)
        starts, ends, sites = [], [], []
        for s, e, site in zip(self.starts[lo:hi], self.ends[lo:hi], self.sites[lo:hi]):
            for x, y in ((s, min(e, a)), (max(s, b), e)):
                if x < y:
                    starts.append(x), ends.append(y), sites.append(site)
        self.starts[lo:hi], self.ends[lo:hi], self.sites[lo:hi] = starts, ends, sites


class Checker:
    def __init__(self, action):
        self.action = action
        self.seeds = {}  # seed -> _Ranges

    def draw(self, op, key, shape, words, global_shape=None, global_start=None):
        """Records a call of `op` on an output of `shape` (under a global view, the block at global_start of
        global_shape) with `key` (a state tensor, batched or vmapped), `words` per element; reports any overlap
        with an earlier draw."""
        if current_graph_task_id() != -1:  # backward recomputes masks and checkpointed regions
            return
        size = list(shape)
        shape, start = (size, [0] * len(size)) if global_shape is None else (list(global_shape), list(global_start))
        rows = _plain_rows(key)
        values = rows.detach().reshape(len(rows), -1, 2).view(torch.int64).cpu().tolist()
        runs = key_runs(tuple(rows.shape[1:]), shape, start, size)
        site = user_site()
        for row in values:
            for index, first, end in runs:
                seed, offset = row[index][0] & _U64, row[index][1] & _U64
                self._add(op, seed, offset, 4 * offset + words * first, 4 * offset + words * end, site)

    def blocks(self, op, key, blocks):
        """Records whole blocks: a stateful draw's (what its Generator advances past) or split's and fold_in's
        (a derived key is words of its parent's stream). `blocks`: (first, end) block ranges relative to each
        key's offset, one pair for all keys or one per key."""
        if current_graph_task_id() != -1:
            return
        values = _plain_rows(key).detach().reshape(-1, 2).view(torch.int64).cpu().tolist()
        site = user_site()
        for (seed, offset), (first, end) in zip(values, itertools.cycle(blocks) if len(blocks) == 1 else blocks):
            seed, offset = seed & _U64, offset & _U64
            self._add(op, seed, offset, 4 * (offset + first), 4 * (offset + end), site)

    def _add(self, op, seed, offset, a, b, site):
        if a >= b:
            return
        ranges = self.seeds.setdefault(seed, _Ranges())
        earlier = ranges.hit(a, b)
        if earlier is not None:
            message = (
                f"torch_rngx key reuse: {op} at {site} reads blocks [{a // 4}, {-(-b // 4)}) of seed {seed} "
                f"(key [{seed}, {offset}]), which {', '.join(earlier)} already drew from. Draws from the same "
                "words are correlated: derive a key per draw with split or fold_in (docs: guide/, "
                "'Catching key reuse')."
            )
            if self.action == "raise":
                raise KeyReuseError(message)
            warnings.warn(message, KeyReuseWarning, stacklevel=2)
        ranges.add(a, b, site)

    def give_back(self, seed, offset, blocks):
        """A call that raised gave back the blocks its step took (_step.give_back): they are no longer drawn."""
        ranges = self.seeds.get(seed & _U64)
        if ranges is not None:
            offset &= _U64
            ranges.remove(4 * offset, 4 * (offset + blocks))

    def forget(self, seed):
        """A stream restarted on purpose (manual_seed, set_state, load_state_dict): its earlier draws are over."""
        self.seeds.pop(int(seed) & _U64, None)


def traced(key, op):
    """Under torch.compile's trace: reports a key tensor (a graph node; its values are unknown) that feeds two
    draws of one graph. Elsewhere comptime is a no-op, and in the compiled code nothing is left of it."""
    torch_private.comptime(_note_traced)


def _note_traced(ctx):
    checker = active
    if checker is None:
        return
    node = traced_key_node(ctx, "key")
    if node is None:  # a constant or a non-tensor key: nothing in the graph to track
        return
    op = traced_constant(ctx, "op")
    site = _traced_site(ctx)
    earlier = node.meta.get("rngx_drawn_at")
    node.meta["rngx_drawn_at"] = site if earlier is None else earlier
    if earlier is not None:
        message = (
            f"torch_rngx key reuse (traced by torch.compile): {op} at {site} draws from the key tensor "
            f"{node.name!r}, which a draw at {earlier} in the same graph already drew from. Derive a key per "
            "draw with split or fold_in (docs: guide/, 'Catching key reuse')."
        )
        if checker.action == "raise":
            raise KeyReuseError(message)
        warnings.warn(message, KeyReuseWarning, stacklevel=1)  # the message names the traced call site


def _traced_site(ctx):
    """file:line of the user's frame that dynamo is inlining us from."""
    for file, line in traced_frames(ctx):
        if not file.startswith(_SKIP):
            return f"{file}:{line}"
    return "<unknown>"


def start(action):
    """Turns the checker on with an empty history (or off, for "off") and returns the one it replaces."""
    global active
    if action not in ("raise", "warn", "off"):
        raise ValueError(f'action must be "raise", "warn" or "off", got {action!r}')
    previous, active = active, (None if action == "off" else Checker(action))
    return previous


def restore(checker):
    global active
    active = checker
