"""Data loading in which sample i of epoch e always sees the same randomness, whatever the worker, the worker count, the
start method, the rank or the resume point (docs: guide/, "Data loading"; the keys: docs: stream/, "Data: keys").

DataLoader is torch's, with three parts of its own:
- the order (_Order): the epoch's permutation from our stream, keyed by (seed, epoch), cut in ranks as
  DistributedSampler cuts its own; the sampler torch iterates (_Tagged) hands out (epoch, index, position) triples, so
  each index carries its epoch (and its batch's position) to whichever worker reads it, forked, spawned or persistent;
- the dataset torch's iterators read (_Scoped): dataset[index] under the sample's scope, a torch_rngx.mode on the
  sample's key with torch's default generator, Python's random and NumPy's global generator seeded from it (restored
  afterwards in the main process); a collate_fn of the user's under its batch's scope, set up alike (_Collate);
- state_dict: the epoch and the batches delivered in it, from which the rest of the epoch follows.

torchdata's StatefulDataLoader was weighed as the base: its state holds each worker's snapshot (its dataset's and
generators' states), which ties a checkpoint to its worker count, and it keeps torch's per-worker seeds. Here the order
and every sample's randomness are functions of (seed, epoch, index), so two integers resume any worker count and
torch's own loader serves.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import itertools
import operator
import random
import struct
import sysconfig
import threading
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Optional, Sequence, Union

import torch
import torch.distributed as dist
from torch import Tensor
from torch.utils.data import (
    Dataset,
    DistributedSampler,
    IterableDataset,
    Sampler,
    default_collate,
    default_convert,
    get_worker_info,
)

from ._engine import reuse
from ._engine.library import C
from ._engine.random_ops import drawing_from_torch
from ._engine.spec import rngx
from ._engine.torch_private import batches_yielded, build_dataloader_iterator, function_modes_set_aside
from ._mode.mode import mode
from .functional import key, randperm
from .generator import Generator

try:  # torch imports NumPy where it is installed; where it is not, no dataset can draw from it
    import numpy
except ImportError:  # pragma: no cover
    numpy = None  # type: ignore[assignment]

__all__ = ["DataLoader", "SampleKeys", "sample_keys"]

_U64 = 1 << 64
_LOW32 = (1 << 32) - 1
# fold_in data below an epoch's key: its order, its samples' keys, torch's worker seeds and its batches' keys
# (docs: stream/, "Data: keys").
_ORDER, _SAMPLES, _WORKERS, _BATCHES = 0, 1, 2, 3
# the instance behind random's module functions (random.seed, random.random, ...)
_GLOBAL_RANDOM: random.Random = random.random.__self__  # type: ignore[attr-defined]


def __dir__():
    return __all__


def _data(values: Union[int, Sequence[int]]) -> Tensor:
    """Ints in [0, 2^64) as fold_in's int64 data (their bits)."""
    if isinstance(values, int):
        return torch.tensor(values - _U64 if values >= 1 << 63 else values, dtype=torch.int64)
    return torch.tensor([v - _U64 if v >= 1 << 63 else v for v in values], dtype=torch.int64)


def _epoch_child(root: Tensor, epoch: int, child: int) -> Tensor:
    """fold_in(fold_in(root, epoch), child): a child of the epoch's key."""
    return rngx.fold_in(rngx.fold_in(root, _data(epoch)), _data(child))


class SampleKeys(NamedTuple):
    """No torch counterpart. What the loader's scope around `dataset[index]` draws from (sample_keys).

    Args:
        key (Tensor): the int64 key [seed, offset] of the stream that torch's random calls draw from under the
            scope's torch_rngx.mode (torch_rngx.Generator.on(key.clone()) draws it).
        torch_seed (int): torch's default CPU generator's seed (torch.default_generator.manual_seed), for the calls
            the mode leaves to torch: 32 bits, all that generator keeps of a seed.
        python_seed (int): random.seed's, 64 bits.
        numpy_seed (int): np.random.seed's, 32 bits (its fast path).

    Example::

        >>> torch_rngx.data.sample_keys(0, 0, 0).key.dtype
        torch.int64
    """

    key: Tensor
    torch_seed: int
    python_seed: int
    numpy_seed: int


class _Batch:
    """The keys of some samples (or of one batch) below a child of an epoch's key (its two words), from one call of
    the ops' derivation, split(fold_in(child, d), 2) for each data d (docs: stream/, "Data: keys"), kept as its words:
    no tensor is made (a new tensor a batch cost 7-16 µs of a batch of one's reading in a loader's loop). seed(k)
    seeds torch's, Python's and NumPy's generators from key k's seeds; Python's states are made for all at once."""

    def __init__(self, child: tuple[int, int], data: Sequence[int]) -> None:
        n = len(data)
        self.words = C.fold_in_split(*child, data, 2)  # split's order: the n stream keys, then the n keys read as seeds
        self.address = ctypes.addressof(ctypes.c_char.from_buffer(self.words))
        ints = memoryview(self.words).cast("q").tolist()
        self.streams = ints[: 2 * n]  # key k is [seed, offset] = streams[2k], streams[2k + 1], as int64
        low, high = ints[2 * n :: 2], ints[2 * n + 1 :: 2]
        self.torch_seeds = [(h % _U64) >> 32 for h in high]
        self.python_seeds = [v % _U64 for v in low]
        self.numpy_seeds = [h & _LOW32 for h in high]
        self._python: Optional[Callable[[int], None]] = None

    def sample_keys(self, k: int) -> SampleKeys:
        key = torch.tensor(self.streams[2 * k : 2 * k + 2], dtype=torch.int64)
        return SampleKeys(key, self.torch_seeds[k], self.python_seeds[k], self.numpy_seeds[k])

    def seed(self, k: int) -> None:
        """Seeds torch's default CPU generator, Python's random and NumPy's global generator from key k, before sample
        k's read."""
        if self._python is None:
            self._python = _PythonState.seeder(self.python_seeds)
        torch.default_generator.manual_seed(self.torch_seeds[k])
        self._python(k)
        if numpy is not None:
            numpy.random.seed(self.numpy_seeds[k])


def sample_keys(seed: int, epoch: int, index: int) -> SampleKeys:
    """No torch counterpart. The keys of sample `index` of `epoch` under `seed`, as torch_rngx.data.DataLoader's
    scope uses them around dataset[index]: for a sampler, a loop or an IterableDataset of your own. Derived from stream
    1.0 by fold_in and split (docs: stream/, "Data: keys"): the sample's key
    s = fold_in(fold_in(fold_in(key(seed), epoch), 1), index); split(s, 2)[0] is the stream, and the four 32-bit words
    of split(s, 2)[1] give the seeds: Python's the first two, NumPy's the third, torch's the fourth.

    Args:
        seed (int): the loader's seed, in [0, 2^64).
        epoch (int): in [0, 2^64).
        index (int): the sample's index in the dataset, in [0, 2^64).

    Example::

        >>> import random
        >>> k = torch_rngx.data.sample_keys(seed=0, epoch=2, index=17)
        >>> random.seed(k.python_seed)   # and np.random.seed(k.numpy_seed), torch.manual_seed(k.torch_seed)
        >>> with torch_rngx.mode(generator=torch_rngx.Generator.on(k.key.clone())):
        ...     crop = torch.randint(0, 8, (2,))   # what sample 17 draws in epoch 2, in any worker
    """
    seed, epoch, index = (_int_in(v, name, 0, _U64) for v, name in ((seed, "seed"), (epoch, "epoch"), (index, "index")))
    return _Batch(_epoch_words(seed, epoch, _SAMPLES), [index]).sample_keys(0)


@functools.lru_cache(maxsize=16)
def _epoch_words(seed: int, epoch: int, child: int) -> tuple[int, int]:
    """The words of a child of the epoch's key, fold_in(fold_in(key(seed), epoch), child) (its samples', its batches'
    or its workers'): tensor ops that took most of a sample_keys call (22-40 µs), derived once an epoch in a process,
    for a loop of yours as for the loader."""
    words = _epoch_child(key(seed), epoch, child).tolist()
    return words[0], words[1]


class _Order(Sampler[int]):
    """This rank's part of an epoch's order: range(n), or with shuffle the permutation randperm(n, k) of the key
    k = fold_in(fold_in(key(seed), epoch), 0); padded by repeating its start, or cut, to world_size equal parts, and
    rank r's part its elements r, r + world_size, ..., as torch's DistributedSampler does, under its attribute names
    (num_replicas, num_samples, total_size, drop_last), which frameworks read."""

    def __init__(self, n: int, root: Tensor, shuffle: bool, rank: int, world_size: int, drop_uneven: bool) -> None:
        self.n, self.root, self.shuffle, self.rank, self.num_replicas = n, root, shuffle, rank, world_size
        self.num_samples = n // world_size if drop_uneven else -(-n // world_size)  # this rank's
        self.total_size, self.drop_last, self.epoch = self.num_samples * world_size, drop_uneven, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        order = randperm(self.n, _epoch_child(self.root, self.epoch, _ORDER)) if self.shuffle else torch.arange(self.n)
        if self.total_size > self.n:
            order = order.repeat(-(-self.total_size // self.n))
        return iter(order[self.rank : self.total_size : self.num_replicas].tolist())


class _RankOrder(_Order, DistributedSampler):
    """_Order on more than one rank, and a DistributedSampler by type: a framework that puts a DistributedSampler in
    a loader that has none (Lightning's use_distributed_sampler) leaves this one in place, where its wrapper would cut
    the rank's part in ranks again and lose the rest of the epoch."""


class _Tagged(Sampler):
    """What one of torch's iterators iterates: the items of the loader's index sampler (its indices, or batches of
    them) in epoch `epoch` from item `start` on, as (epoch, index, position) triples, position that of the item
    (the batch, or the sample where torch does not batch) in the epoch. Made with each iterator (a persistent one's
    is moved on to each new epoch); torch calls iter() on it as the iterator is made, and it takes the whole epoch's
    items then, telling `source` (ours, a DistributedSampler) the epoch first: an iterator keeps its epoch however
    many are made after it."""

    def __init__(self, items: Iterable, source: Any, batched: bool, epoch: int, start: int) -> None:
        self.items, self.source, self.batched, self.epoch, self.start = items, source, batched, epoch, start

    def __len__(self) -> int:
        return len(self.items)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator:
        epoch = self.epoch
        set_epoch = getattr(self.source, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)
        items = list(itertools.islice(self.items, self.start, None))
        if self.batched:
            return ([(epoch, i, k) for i in batch] for k, batch in enumerate(items, self.start))
        return ((epoch, i, k) for k, i in enumerate(items, self.start))


class _Scoped(Dataset):
    """The dataset torch's iterators read, in the main process and in every worker: (epoch, index, position) triples,
    each read as dataset[index] under its sample's scope. The last batch read is the one the collate function is given
    next (torch's fetchers read a batch, then collate it), and a collate function of yours runs under that batch's
    scope (collate). In a worker, get_worker_info().dataset is this view: `.dataset` is yours."""

    def __init__(self, dataset: Any, seed: int, rank: int, world_size: int) -> None:
        self.dataset, self.seed, self.rank, self.world_size = dataset, seed, rank, world_size
        self._batch: Optional[tuple[int, int]] = None  # (epoch, position) of the batch read last

    def __getitem__(self, tagged: tuple[int, int, int]) -> Any:
        return self.__getitems__([tagged])[0]

    def __getitems__(self, tagged: Sequence[tuple[int, int, int]]) -> list:
        """A batch: its keys in one derivation; in the main process, the generators saved once and restored. The
        torch function modes around the loader (a worker's, yours) are set aside meanwhile, and one mode of ours,
        pointed at each sample's stream in turn, is the only one the samples' calls meet."""
        if not tagged:
            return []
        epoch, _, position = tagged[0]
        self._batch = (epoch, position)
        with function_modes_set_aside():
            indices = [i for _, i, _ in tagged]
            keys = _Batch(_epoch_words(self.seed, epoch, _SAMPLES), indices)
            with _scope(keys) as scope:  # moved onto each sample's key in turn
                return [self._read(scope, keys, k, index) for k, index in enumerate(indices)]

    def _read(self, scope: _Scope, keys: _Batch, k: int, index: int) -> Any:
        keys.seed(k)
        scope.point(keys, k)
        return self.dataset[index]

    def collate(self, collate_fn: Callable[[list], Any], batch: list) -> Any:
        """collate_fn(batch) under the scope of the batch read last, as a sample's: the key of its position b in the
        rank's epoch, fold_in(fold_in(E, 3), b * world_size + rank) (docs: stream/, "Data: keys"), a mode on its stream,
        the three generators seeded from it and, in the main process, restored afterwards."""
        assert self._batch is not None, "torch's fetcher collates the batch it has just read"
        epoch, position = self._batch
        with function_modes_set_aside():
            keys = _Batch(_epoch_words(self.seed, epoch, _BATCHES), [position * self.world_size + self.rank])
            with _scope(keys):
                keys.seed(0)
                return collate_fn(batch)


def _scope(keys: _Batch) -> _Scope:
    """What samples and batches are read under: this thread's _Scope on keys' first key (the caller points it at the
    others in turn); a new one where this thread's is in use (a dataset that reads a loader of its own)."""
    scope = getattr(_THREAD, "scope", None)
    if scope is None:
        scope = _THREAD.scope = _Scope()
    elif scope.busy:
        scope = _Scope()
    return scope.at(keys)


class _Scope:
    """One mode of ours on a Generator, made once a thread and entered by each scope in turn (making them took 15-20 µs
    of a batch of one's 90 in a loader's loop: docs: performance/, "Data loading"); the Generator's state is its own
    tensor, into which each sample's key is written. In the main process the three generators a scope seeds are
    saved as it is entered and restored as it is left (a worker process is the loader's own)."""

    def __init__(self) -> None:
        self.state = torch.zeros(2, dtype=torch.int64)
        self.address = self.state.data_ptr()
        self.mode = mode(generator=Generator.on(self.state), uncovered="ignore")
        self.busy = False
        self.saved: Optional[_Saved] = None

    def at(self, keys: _Batch) -> _Scope:
        """On keys' first key. The same sample (or batch) read again draws the same words on purpose, so the key-reuse
        checker starts the streams of all of keys anew."""
        if reuse.active is not None:
            for seed in keys.streams[::2]:
                reuse.active.forget(seed)
        return self.point(keys, 0)

    def point(self, keys: _Batch, k: int) -> _Scope:
        """The Generator's state: key k of keys, written in place (16 bytes: seed, offset)."""
        ctypes.memmove(self.address, keys.address + 16 * k, 16)
        return self

    def __enter__(self) -> _Scope:
        saved = None if get_worker_info() is not None else _Saved()
        self.mode.__enter__()
        self.busy, self.saved = True, saved
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.mode.__exit__(*exc)
        finally:
            self.busy, saved, self.saved = False, self.saved, None
            if saved is not None:
                saved.restore()


_THREAD = threading.local()  # .scope: the thread's _Scope


# torch's own collate functions (the loader's default with and without batching): they draw nothing
_TORCH_COLLATES = (default_collate, default_convert)


class _Collate:
    """collate_fn as the loader runs it: yours under its batch's scope (_Scoped.collate), so that a batch-level
    augmentation (MixUp, CutMix) draws the same for the batch in any worker; torch's own, which draw nothing, in a
    worker with the torch function modes the worker runs under set aside, as torch's own workers run it, and in the
    main process as it is."""

    def __init__(self, collate_fn: Callable[[list], Any], scoped: _Scoped) -> None:
        self.collate_fn, self.scoped = collate_fn, scoped

    def __call__(self, batch: list) -> Any:
        if self.collate_fn not in _TORCH_COLLATES:
            return self.scoped.collate(self.collate_fn, batch)
        if get_worker_info() is None:
            return self.collate_fn(batch)
        with function_modes_set_aside():
            return self.collate_fn(batch)


def _stream(state: Tensor) -> Generator:
    """A Generator on `state`, a key of the loader's: the same epoch read again draws the same words on purpose, so
    the key-reuse checker starts its stream anew."""
    if reuse.active is not None:
        reuse.active.forget(state[0])
    return Generator.on(state)


class _NumpyState:
    """NumPy's global generator, saved and restored by copying its MT19937 words and position whole from the address its
    bit generator publishes (bit_generator.ctypes.state_address: `uint32 key[624]; int pos`), about 1 µs each way:
    np.random.get_state() copies the 624 words one at a time (90-130 µs here, most of what a batch cost the main
    process). What those bytes do not hold is the legacy normal RandomState caches between calls; drawing one normal
    reads it, since a cached one comes back without the words moving, and is then given back through set_state."""

    _BYTES = 624 * 4 + 4

    def __init__(self) -> None:
        get = getattr(numpy.random, "get_bit_generator", None)  # NumPy >= 1.25
        generator = get() if get is not None else None
        if not isinstance(generator, numpy.random.MT19937):  # older, or np.random.set_bit_generator: the general way
            self.state, self.address = numpy.random.get_state(legacy=False), None
            return
        self.address = generator.ctypes.state_address
        self.words = ctypes.string_at(self.address, self._BYTES)
        normal = float(numpy.random.standard_normal())
        self.cached_normal = normal if ctypes.string_at(self.address, self._BYTES) == self.words else None

    def restore(self) -> None:
        if self.address is None:
            numpy.random.set_state(self.state)
        elif self.cached_normal is None:
            numpy.random.seed(0)  # drops a normal cached since; the words are overwritten next
            ctypes.memmove(self.address, self.words, self._BYTES)
        else:
            key = numpy.frombuffer(self.words, numpy.uint32, 624)
            pos = int(numpy.frombuffer(self.words, numpy.int32, 1, 624 * 4)[0])
            numpy.random.set_state(("MT19937", key, pos, 1, self.cached_normal))


class _PythonState:
    """Python's global generator (the instance random's module functions are methods of), saved and restored by
    copying its Mersenne Twister position and words whole from the object (CPython's RandomObject: after the object's
    header, `int index; uint32_t state[624]`), about 1 µs each way: random.getstate() and setstate() build and read a
    tuple of 625 ints (15 µs here, most of what saving a batch's generators cost). The layout is checked against
    getstate() once per process; where it differs, or in a free-threaded build, getstate and setstate."""

    _BYTES = 4 + 624 * 4
    _address: Optional[int] = None  # of the instance's index and words, where the check found them; 0 where not

    def __init__(self) -> None:
        self.gauss_next = _GLOBAL_RANDOM.gauss_next  # type: ignore[attr-defined]  # random.gauss's cached normal
        address = self._located()
        if address:
            self.words = ctypes.string_at(address, self._BYTES)
        else:
            self.state = random.getstate()

    @classmethod
    def _located(cls) -> int:
        """The address of the instance's index and words, found and checked once a process; 0 where not found."""
        if cls._address is None:
            cls._address = cls._find()
        return cls._address

    @classmethod
    def _find(cls) -> int:
        if sysconfig.get_config_var("Py_GIL_DISABLED"):  # another thread may draw while the words are copied
            return 0
        address = id(_GLOBAL_RANDOM) + object.__basicsize__
        version, words, _ = random.getstate()
        found = struct.unpack("=i624I", ctypes.string_at(address, cls._BYTES))
        return address if version == 3 and found[0] == words[-1] and found[1:] == words[:-1] else 0

    @classmethod
    def seeder(cls, seeds: Sequence[int]) -> Callable[[int], None]:
        """put(k): random.seed(seeds[k]), for int seeds in [0, 2^64). Where the layout was found, the states random.seed
        gives are made for all the seeds in one C call (mt_states, which mixes sixteen side by side: 1.1-1.3 µs a
        seed where one alone takes 3.2-3.6) and put writes state k in place; else put calls random.seed."""
        address = cls._located()
        if not address:
            return lambda k: random.seed(seeds[k])
        states, offset = C.mt_states(seeds), address - id(_GLOBAL_RANDOM)

        def put(k: int) -> None:
            C.mt_put(_GLOBAL_RANDOM, offset, states, k)
            _GLOBAL_RANDOM.gauss_next = None  # type: ignore[attr-defined]

        return put

    def restore(self) -> None:
        if self._address:
            ctypes.memmove(self._address, self.words, self._BYTES)
            _GLOBAL_RANDOM.gauss_next = self.gauss_next  # type: ignore[attr-defined]
        else:
            random.setstate(self.state)


class _Saved:
    """The main process's generators that a scope seeds: torch's default (CPU) one, Python's and NumPy's."""

    def __init__(self) -> None:
        self.torch_state = torch.default_generator.get_state()
        self.python_state = _PythonState()
        self.numpy_state = _NumpyState() if numpy is not None else None

    def restore(self) -> None:
        torch.default_generator.set_state(self.torch_state)
        self.python_state.restore()
        if self.numpy_state is not None:
            self.numpy_state.restore()


def _int_in(value: Any, name: str, low: int, high: int) -> int:
    """value as an int in [low, high), or a TypeError/ValueError naming it."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if not low <= value < high:
        raise ValueError(f"{name} must be in [{low}, {high}), got {value}")
    return value


def _placement(rank: Optional[int], world_size: Optional[int]) -> tuple[int, int]:
    """(rank, world_size): as given, else torch.distributed's where it is initialized, else (0, 1)."""
    if rank is None or world_size is None:
        if dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
        elif rank is not None or world_size is not None:
            raise ValueError("pass rank= and world_size= together (torch.distributed is not initialized)")
        else:
            return 0, 1
    world_size = _int_in(world_size, "world_size", 1, 1 << 63)
    return _int_in(rank, f"rank (with world_size={world_size})", 0, world_size), world_size


_STATE_KEYS = ("epoch", "position", "seed", "length", "world_size", "batch_size")


class DataLoader(torch.utils.data.DataLoader):
    """Stands in for ``torch.utils.data.DataLoader``, with the same arguments, in which sample i of epoch e sees the
    same randomness whatever the worker, num_workers, start method, prefetch_factor, persistent_workers, rank,
    world_size or resume point (docs: guide/, "Data loading"):

    - shuffle=True: each epoch's order is a permutation drawn from the stream of (seed, epoch), the same for any
      num_workers; rank r of world_size reads its part of that one order, as DistributedSampler splits its own.
    - Around each dataset[i], from the key of (seed, epoch, i) (sample_keys): torch's random calls draw from our
      stream under a torch_rngx.mode of their own; torch's default CPU generator (for the calls the mode leaves to
      torch), Python's random and NumPy's global generator are seeded from it; in the main process all of them are
      restored afterwards. A generator= given to a torch call there stays yours.
    - A collate_fn of yours runs under its batch's scope, set up as a sample's from the key of (seed, epoch, b), b the
      batch's position in the rank's epoch: a batch-level augmentation there (MixUp, CutMix) draws the same for any
      num_workers. torch's own collate functions draw nothing and run as they are; worker_init_fn runs outside any
      scope.
    - Each new iteration is the next epoch; set_epoch(e) makes the next one e (DistributedSampler's convention).
    - state_dict() / load_state_dict(): the epoch and the batches delivered in it. Restored into a new loader with any
      num_workers, it yields the batches the uninterrupted loader would have yielded next.

    A map-style dataset only (with __len__); an IterableDataset decides its own order, and is refused. A dataset's own
    __getitems__ is not called: each sample is read by __getitem__ under its scope. In a worker,
    get_worker_info().dataset is the loader's view of the dataset, and its `.dataset` yours.

    torch's arguments (batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, drop_last,
    timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor, persistent_workers,
    pin_memory_device, in_order) keep torch's meaning. sampler= and batch_sampler= give the indices (told the epoch
    through set_epoch if they have it) and exclude shuffle=, rank= and world_size=. generator= (a torch.Generator,
    instead of seed=) is where the seed is drawn from, as torch's loader draws its order from it.

    Args:
        dataset (Dataset): a map-style dataset.

    Keyword args:
        seed (int, optional): in [0, 2^64). None draws one from generator= or torch's default generator, once, here
            (so torch.manual_seed reproduces the run); required when world_size > 1, where every rank must use one.
            The loader's `seed` attribute holds it.
        rank (int, optional): this process's rank, in [0, world_size); default torch.distributed's, else 0.
        world_size (int, optional): the number of ranks; default torch.distributed's, else 1.
        drop_uneven (bool): DistributedSampler's drop_last. False (the default): when len(dataset) is not a multiple
            of world_size, each epoch's order is padded with its first indices, so every rank reads
            ceil(len / world_size) samples (a repeated index gets its first reading's randomness). True: the last
            len % world_size indices of the order are left out that epoch.

    Example::

        >>> class Noisy(torch.utils.data.Dataset):
        ...     def __len__(self):
        ...         return 6
        ...     def __getitem__(self, i):
        ...         return i + torch.rand(())
        >>> loader = torch_rngx.data.DataLoader(Noisy(), batch_size=3, shuffle=True, seed=0)
        >>> first, second = [torch.cat(list(loader)) for _ in range(2)]   # epochs 0 and 1
        >>> loader.set_epoch(0)
        >>> torch.equal(torch.cat(list(loader)), first) and not torch.equal(first, second)
        True
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: Optional[int] = 1,
        shuffle: Optional[bool] = None,
        sampler: Optional[Iterable[int]] = None,
        batch_sampler: Optional[Iterable[list[int]]] = None,
        num_workers: int = 0,
        collate_fn: Optional[Callable[..., Any]] = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Optional[Callable[..., Any]] = None,
        multiprocessing_context: Any = None,
        generator: Optional[torch.Generator] = None,
        *,
        prefetch_factor: Optional[int] = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_uneven: bool = False,
    ) -> None:
        if isinstance(dataset, IterableDataset):
            raise TypeError(
                "dataset: torch_rngx.data.DataLoader reads a map-style dataset (__getitem__ and __len__); an "
                "IterableDataset decides its own order. Give each record its randomness in its __iter__ with "
                "torch_rngx.data.sample_keys(seed, epoch, index), under torch.utils.data.DataLoader"
            )
        if not hasattr(dataset, "__len__"):
            raise TypeError(f"dataset must have a __len__ (a map-style dataset), got {type(dataset).__name__}")
        given = "sampler" if sampler is not None else "batch_sampler" if batch_sampler is not None else None
        if given is not None and shuffle:
            raise ValueError(f"{given}= gives the order: pass it or shuffle=True, not both")
        if given is not None and (rank is not None or world_size is not None):
            raise ValueError(f"{given}= gives the indices: pass it or rank=/world_size=, not both")
        if not isinstance(drop_uneven, bool):
            raise TypeError(f"drop_uneven must be a bool, got {type(drop_uneven).__name__}")
        rank, world_size = _placement(rank, world_size)
        if seed is not None and generator is not None:
            raise ValueError("pass seed= or generator=, not both")
        if seed is None:
            if world_size > 1:
                raise ValueError(f"seed: pass the same int on every rank (world_size={world_size})")
            with drawing_from_torch():  # torch's generator, even inside a torch_rngx.mode
                seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator))
        root = key(seed)  # checks the seed
        # An attribute, as torch's loader keeps its arguments: a framework that makes the loader again from them
        # (Lightning, to put a DistributedSampler in) keeps the seed.
        self.seed = seed
        """The seed: the one given, or the one drawn at construction. Set once."""
        if sampler is None and batch_sampler is None:
            order = _RankOrder if world_size > 1 else _Order
            sampler = order(len(dataset), root, bool(shuffle), rank, world_size, drop_uneven)
        super().__init__(
            dataset,
            batch_size,
            None,
            sampler,
            batch_sampler,
            num_workers,
            collate_fn,
            pin_memory,
            drop_last,
            timeout,
            worker_init_fn,
            multiprocessing_context,
            None,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            pin_memory_device=pin_memory_device,
            in_order=in_order,
        )
        self._world_size, self._scoped = world_size, _Scoped(dataset, seed, rank, world_size)
        self._epoch_source = batch_sampler if batch_sampler is not None else self.sampler  # told each epoch
        self._next = (0, 0)  # (epoch, batches to skip) of the next iteration
        self._tagged: Optional[_Tagged] = None  # the last iterator's
        self._running: Optional[tuple[int, int, Any]] = None  # (epoch, batches skipped, torch's iterator)

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr == "seed" and "seed" in self.__dict__:  # as torch's loader guards its sampler and batch_size
            raise ValueError("seed attribute should not be set after DataLoader is initialized")
        super().__setattr__(attr, value)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration epoch `epoch` (an int in [0, 2^64)), as DistributedSampler.set_epoch; naming the
        epoch a load_state_dict resumes keeps its position.

        Args:
            epoch (int): the next iteration's epoch.

        Example::

            >>> loader = torch_rngx.data.DataLoader(range(4), shuffle=True, seed=0)
            >>> loader.set_epoch(3)
        """
        epoch = _int_in(epoch, "epoch", 0, _U64)
        if epoch != self._next[0]:
            self._next = (epoch, 0)

    def __iter__(self) -> Any:
        (epoch, skip), self._next = self._next, (self._next[0] + 1, 0)
        if self._tagged is not None and self.persistent_workers and self.num_workers > 0:
            self._tagged.epoch, self._tagged.start = epoch, skip  # torch resets its one iterator, which reads this
        else:
            batches, source = self.batch_sampler, self._epoch_source
            if batches is not None:  # torch iterates the batch sampler where it batches, else the sampler
                self._tagged = _Tagged(batches, source, True, epoch, skip)
            else:
                self._tagged = _Tagged(self.sampler, source, False, epoch, skip)
        iterator = super().__iter__()
        self._running = (epoch, skip, iterator)
        return iterator

    def _get_iterator(self) -> Any:
        """torch's iterator, made over a copy of this loader whose dataset is the scoped view, whose index sampler is
        this iteration's _Tagged and whose collate_fn runs as torch's workers run it, under a mode of our own: torch's
        one draw here, its workers' base seed, is routed to the epoch's key (no stream of yours moves, nothing is
        reported), and its workers start under a quiet mode (_mode_workers), which worker_init_fn meets."""
        tagged = self._tagged
        assert tagged is not None  # __iter__ made it
        view = copy.copy(self)
        view.__dict__["dataset"] = self._scoped
        view.__dict__["batch_sampler" if tagged.batched else "sampler"] = tagged
        view.__dict__["collate_fn"] = _Collate(self.collate_fn, self._scoped)
        workers = torch.tensor(_epoch_words(self.seed, tagged.epoch, _WORKERS))  # a state of its own, advanced
        with mode(generator=_stream(workers), uncovered="ignore"):
            return build_dataloader_iterator(view)

    def state_dict(self) -> dict[str, Any]:
        """Where the next batch comes from: {"epoch", "position" (the batches of that epoch delivered already),
        and, checked by load_state_dict, "seed", "length" (len(dataset)), "world_size", "batch_size"}. Plain ints
        (batch_size None without batching): torch.save and torch.load(weights_only=True) carry it.

        Example::

            >>> loader = torch_rngx.data.DataLoader(range(4), batch_size=2, seed=0)
            >>> batches = iter(loader)
            >>> _ = next(batches)
            >>> loader.state_dict()["epoch"], loader.state_dict()["position"]
            (0, 1)
        """
        if not self.in_order:
            raise RuntimeError(
                "state_dict: with in_order=False batches are delivered out of order, so their count does not say "
                "where the epoch stands; resuming needs in_order=True (the default)"
            )
        epoch, position = self._next
        if self._running is not None and self._next == (self._running[0] + 1, 0):
            running, skipped, iterator = self._running
            delivered = skipped + batches_yielded(iterator)
            if delivered < len(self):
                epoch, position = running, delivered
        return {
            "epoch": epoch,
            "position": position,
            "seed": self.seed,
            "length": len(self._scoped.dataset),
            "world_size": self._world_size,
            "batch_size": self.batch_size,
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Continues from state_dict() of a loader of the same seed, dataset length, world_size and batch_size (any
        num_workers): the next iteration yields the rest of that epoch, the one after it the next epoch.

        Args:
            state_dict (dict): what state_dict() returned.

        Example::

            >>> loader = torch_rngx.data.DataLoader(range(4), batch_size=2, seed=0)
            >>> resumed = torch_rngx.data.DataLoader(range(4), batch_size=2, seed=0)
            >>> resumed.load_state_dict({**loader.state_dict(), "position": 1})
            >>> [b.tolist() for b in resumed]
            [[2, 3]]
        """
        if not isinstance(state_dict, Mapping) or set(state_dict) != set(_STATE_KEYS):
            raise ValueError(f"state_dict must be a DataLoader's state_dict() with the keys {list(_STATE_KEYS)}")
        ours = self.state_dict()
        for name in ("seed", "length", "world_size", "batch_size"):
            if state_dict[name] != ours[name]:
                raise ValueError(
                    f"state_dict is of a loader with {name}={state_dict[name]!r}, this one has {name}={ours[name]!r}"
                )
        epoch = _int_in(state_dict["epoch"], "state_dict['epoch']", 0, _U64)
        position = _int_in(state_dict["position"], "state_dict['position']", 0, len(self) + 1)
        self._next, self._running = (epoch, position), None
