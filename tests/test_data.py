"""torch_rngx.data (docs/guide.md, "Data loading"; docs/guarantees.md, "Data loading"): sample i of epoch e sees the
same randomness whatever the worker, num_workers, start method, prefetch_factor, persistent_workers, rank or resume
point, for a dataset that draws from torch (rand, randn, randint, a torchvision-style random crop and flip), Python's
random and NumPy's global generator; the generators of the main process do not move; the keys are sample_keys' and
its derivation from stream 1.0 (with known answers); bad input raises naming the argument."""
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset, DistributedSampler, IterableDataset, SequentialSampler

import data_training
import reference as ref
import torch_rngx
import torch_rngx.functional as rf
from torch_rngx.data import DataLoader, sample_keys

pytestmark = [
    pytest.mark.key_reuse_ok("reads the same epochs again and again, each time to compare with the first"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),  # 3 workers on 2 cores, on purpose
]

N, BATCH, SEED, EPOCHS = 10, 3, 7, 3  # 4 batches an epoch, the last of one sample


class Augmented(Dataset):
    """Augmentations as datasets write them: torchvision's RandomCrop (torch.randint for the corner) and
    RandomHorizontalFlip (torch.rand), noise from torch.randn and torch.rand, Python's random, NumPy's global
    generator. Returns (index, values)."""

    def __init__(self, n=N):
        self.images = torch.arange(n * 3 * 8 * 8, dtype=torch.float32).view(n, 3, 8, 8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        top = torch.randint(0, 8 - 5 + 1, size=(1,)).item()
        left = torch.randint(0, 8 - 5 + 1, size=(1,)).item()
        crop = self.images[i][:, top : top + 5, left : left + 5]
        if torch.rand(1) < 0.5:
            crop = crop.flip(-1)
        others = [random.random(), random.randint(0, 1000), np.random.rand(), float(np.random.randint(1000))]
        return i, torch.cat([crop.flatten(), torch.randn(4), torch.rand(2), torch.tensor(others)])


def _epochs(loader, epochs=EPOCHS):
    return [list(loader) for _ in range(epochs)]


def _same(a, b):
    """Two runs' batches (lists of (indices, values)), bit for bit."""
    return len(a) == len(b) and all(
        len(x) == len(y) and all(torch.equal(i, j) and torch.equal(u, v) for (i, u), (j, v) in zip(x, y))
        for x, y in zip(a, b)
    )


def _generators():
    return torch.get_rng_state(), random.getstate(), np.random.get_state()


def _unmoved(before):
    torch_state, python_state, numpy_state = before
    now = _generators()
    return (torch.equal(now[0], torch_state) and now[1] == python_state
            and all(np.array_equal(a, b) for a, b in zip(now[2], numpy_state)))


def _loader(seed=SEED, batch_size=BATCH, **kwargs):
    return DataLoader(Augmented(), batch_size=batch_size, shuffle=True, seed=seed, **kwargs)


@pytest.fixture(scope="module")
def reference():
    """3 epochs with num_workers=0; the main process's generators checked around them."""
    before = _generators()
    run = _epochs(_loader())
    assert _unmoved(before), "torch's, Python's and NumPy's generators in the main process must not move"
    return run


def test_epochs_differ_and_another_seed_changes_them(reference):
    values = [torch.cat([v for _, v in epoch]) for epoch in reference]
    assert not torch.equal(values[0], values[1]) and not torch.equal(values[1], values[2])
    orders = [torch.cat([i for i, _ in epoch]).tolist() for epoch in reference]
    assert orders[0] != orders[1] and sorted(orders[0]) == list(range(N))
    assert _same(_epochs(_loader()), reference), "a new loader with the seed repeats the run"
    other = _epochs(_loader(seed=SEED + 1))
    assert all(not torch.equal(a[0][1], b[0][1]) for a, b in zip(other, reference))


def test_each_sample_is_its_keys_function(reference):
    """Sample i of epoch e is dataset[i] under the scope sample_keys(seed, e, i) describes, wherever it sits in the
    epoch's order."""
    dataset = Augmented()
    for epoch, batches in enumerate(reference):
        for indices, values in batches:
            for i, got in zip(indices.tolist(), values):
                keys = sample_keys(SEED, epoch, i)
                with torch.random.fork_rng():
                    python_state, numpy_state = random.getstate(), np.random.get_state()
                    torch.manual_seed(keys.torch_seed)
                    random.seed(keys.python_seed)
                    np.random.seed(keys.numpy_seed)
                    with torch_rngx.mode(generator=torch_rngx.Generator.on(keys.key.clone())):
                        want = dataset[i][1]
                    random.setstate(python_state)
                    np.random.set_state(numpy_state)
                assert torch.equal(got, want), (epoch, i)


def _equal_states(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal_states(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


@pytest.mark.parametrize("before", ["nothing cached", "a normal cached", "another bit generator"])
def test_the_main_processs_numpy_state_is_restored_whole(before):
    """The loader copies NumPy's MT19937 words whole instead of np.random.get_state(); the legacy normal that
    RandomState caches between calls, and a bit generator of another kind, come back too."""
    original = np.random.get_bit_generator()
    try:
        if before == "another bit generator":
            np.random.set_bit_generator(np.random.PCG64(3))
        np.random.seed(5)
        if before == "a normal cached":
            np.random.standard_normal()  # draws two, keeps one
        state = np.random.get_state(legacy=False)
        list(_loader(batch_size=1))
        now = np.random.get_state(legacy=False)
        assert _equal_states(now, state)
    finally:
        np.random.set_bit_generator(original)


@pytest.mark.parametrize("before", ["nothing cached", "a gauss cached", "the layout check failed"])
def test_the_main_processs_python_state_is_restored_whole(before, monkeypatch):
    """The loader copies the Mersenne Twister of Python's random whole instead of random.getstate(); the normal that
    random.gauss caches comes back too, and where the object's layout is not CPython's (the check found nothing), the
    loader falls back to getstate and setstate."""
    if before == "the layout check failed":
        monkeypatch.setattr(torch_rngx.data._PythonState, "_address", 0)
    else:
        assert torch_rngx.data._PythonState()._address, "the layout check found CPython's RandomObject"
    random.seed(5)
    if before == "a gauss cached":
        random.gauss(0.0, 1.0)  # draws two, keeps one
    state = random.getstate()
    list(_loader(batch_size=1))
    assert random.getstate() == state
    assert random.random() == (random.setstate(state), random.random())[1]


@pytest.mark.parametrize("layout", ["found", "the layout check failed"])
@pytest.mark.parametrize("batch", [1, 5, 6, 16, 21, 22, 29])
def test_python_is_seeded_as_random_seed_seeds_it(layout, batch, monkeypatch):
    """The loader seeds Python's random by writing random.seed's Mersenne Twister state in place (_C.mt_states makes a
    batch's states, sixteen side by side and a rest of under six one by one; _C.mt_put writes one): the state, the
    next draws and the dropped gauss cache are random.seed's, for seeds of one and two 32-bit words and at the ends of
    [0, 2^64), in every lane; where the layout check found nothing, it calls random.seed."""
    if layout == "found":
        assert torch_rngx.data._PythonState._find(), "the layout check found CPython's RandomObject"
    else:
        monkeypatch.setattr(torch_rngx.data._PythonState, "_address", 0)
    seeds = [0, 1, 5, (1 << 31), (1 << 32) - 1, 1 << 32, (1 << 33) + 7, 1 << 63, (1 << 64) - 1]
    seeds += [random.Random(i).getrandbits(64 if i % 2 else 32) for i in range(20)]
    seeds = seeds[-batch:] if batch % 2 else seeds[:batch]
    put = torch_rngx.data._PythonState.seeder(seeds)
    for k in reversed(range(batch)):
        random.seed(seeds[k])
        want = random.getstate(), random.random(), random.gauss(0.0, 1.0)
        while random.random.__self__.gauss_next is None:  # a normal cached, which seeding drops
            random.gauss(0.0, 1.0)
        put(k)
        assert (random.getstate(), random.random(), random.gauss(0.0, 1.0)) == want, seeds[k]


def test_a_python_state_out_of_range_is_refused():
    """mt_put checks k against the states it is given, as nothing else would stop a write from past their end."""
    states = torch_rngx._C.mt_states([1, 2])
    address = torch_rngx.data._PythonState._located()
    for k in (2, -1, 2**62):  # past the end, before it, and far enough that k times a state's size overflows
        with pytest.raises(IndexError, match="k is not a state"):
            torch_rngx._C.mt_put(random.Random(), address - id(random.random.__self__), states, k)


def test_the_loaders_keys_are_the_ops_keys():
    """The loader derives a batch's keys in one C call (fold_in_split): the same words as rf.fold_in and rf.split,
    for indices up to 2^64 - 1."""
    root = rf.key(11)
    indices = [0, 1, 17, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    got = torch_rngx.data._Batch(tuple(root.tolist()), indices)
    data = torch.tensor([i - (1 << 64) if i >= 1 << 63 else i for i in indices])
    stream, seeds = rf.split(rf.fold_in(root.expand(len(indices), 2).contiguous(), data), 2)
    for i in range(len(indices)):
        keys = got.sample_keys(i)
        assert torch.equal(keys.key, stream[i])
        low, high = (w % (1 << 64) for w in seeds[i].tolist())
        assert (keys.python_seed, keys.numpy_seed, keys.torch_seed) == (low, high & 0xFFFFFFFF, high >> 32)


FORKED = [
    pytest.param(dict(num_workers=1, prefetch_factor=1), id="1-worker-prefetch-1"),
    pytest.param(dict(num_workers=2, persistent_workers=True), id="2-workers-persistent"),
    pytest.param(dict(num_workers=2, prefetch_factor=3), id="2-workers-prefetch-3"),
    pytest.param(dict(num_workers=3, prefetch_factor=4, persistent_workers=True), id="3-workers-persistent"),
]


@pytest.mark.parametrize("options", FORKED)
def test_forked_workers_give_the_same_batches(reference, options):
    before = _generators()
    assert _same(_epochs(_loader(multiprocessing_context="fork", **options)), reference)
    assert _unmoved(before)


@pytest.mark.slow("spawns 4 worker processes, each importing torch and torch_rngx: 3-5 s of CPU each")
@pytest.mark.parametrize("options, epochs", [(dict(num_workers=2, persistent_workers=True), 3), (dict(num_workers=1), 2)],
                         ids=["2-workers-persistent", "1-worker-per-epoch"])
def test_spawned_workers_give_the_same_batches(reference, options, epochs):
    assert _same(_epochs(_loader(multiprocessing_context="spawn", **options), epochs), reference[:epochs])


def test_inside_a_mode_the_loader_is_the_same_and_the_modes_stream_does_not_move(reference):
    """Iterated inside torch_rngx.mode (uncovered="error": nothing of the loader's is reported), in the main process
    and in workers; a converted model in the loop draws from its own stream as it would without the loader."""
    def probe():
        torch.manual_seed(0)
        return torch_rngx.nn.convert(torch.nn.Sequential(torch.nn.Linear(85, 4), torch.nn.Dropout(0.5)), seed=3).model

    for workers in (0, 2):
        model, outputs = probe(), []
        with torch_rngx.mode(seed=5, uncovered="error") as m:
            loader = _loader(num_workers=workers)
            run = []
            for _ in range(EPOCHS):
                epoch = list(loader)
                outputs += [model(v) for _, v in epoch]
                run.append(epoch)
        assert _same(run, reference) and m.generator.get_offset() == 0
        alone = probe()
        assert all(torch.equal(out, alone(v)) for out, (_, v) in zip(outputs, [b for e in reference for b in e]))


class Albumented(Dataset):
    """albumentations' Compose (RandomCrop, HorizontalFlip, GaussNoise), which draws from generators of its own,
    seeded when it is made; with reseed, each sample reseeds it from the scope's Python random first."""

    def __init__(self, reseed):
        import albumentations

        self.reseed = reseed
        self.images = np.random.default_rng(0).random((N, 8, 8, 3), dtype=np.float32)
        self.transform = albumentations.Compose([
            albumentations.RandomCrop(6, 6),
            albumentations.HorizontalFlip(p=0.5),
            albumentations.GaussNoise(std_range=(0.05, 0.1), p=1.0),
        ])

    def __len__(self):
        return N

    def __getitem__(self, i):
        if self.reseed:
            self.transform.set_random_seed(random.getrandbits(32))
        return i, torch.from_numpy(self.transform(image=self.images[i])["image"])


def test_albumentations_reseeded_in_the_scope_gives_each_sample_its_numbers():
    """albumentations >= 1.4.21 keeps generators of its own (docs/guide.md, "Data loading"): left alone they are copied
    into each worker, so the batches depend on the workers; reseeded from the scope's random, they do not."""
    def run(reseed, workers):
        loader = DataLoader(Albumented(reseed), batch_size=BATCH, shuffle=True, seed=SEED, num_workers=workers)
        return _epochs(loader, 2)

    reseeded = run(True, 0)
    assert _same(run(True, 2), reseeded) and _same(run(True, 0), reseeded)
    assert not _same(run(False, 2), run(False, 0))


def _mixup(batch):
    """A batch-level augmentation as torchvision's docs put one in collate_fn (MixUp): a Beta draw (torch's
    _sample_dirichlet, which the mode leaves to torch's default generator), a routed torch.randperm, Python's random
    and NumPy's global generator."""
    indices = torch.tensor([i for i, _ in batch])
    values = torch.stack([v for _, v in batch])
    lam = torch.distributions.Beta(torch.tensor(0.4), torch.tensor(0.4)).sample()
    mixed = lam * values + (1 - lam) * values[torch.randperm(len(values))]
    return indices, torch.cat([mixed.flatten(), torch.tensor([random.random(), np.random.rand()])])


@pytest.fixture(scope="module")
def mixed():
    """3 epochs through a collate_fn that draws, with num_workers=0; the main process's generators checked."""
    before = _generators()
    epochs = _epochs(_loader(collate_fn=_mixup))
    assert _unmoved(before)
    return epochs


@pytest.mark.parametrize("options", [dict(multiprocessing_context="fork", **o.values[0]) for o in FORKED]
                         + [dict(multiprocessing_context="spawn", num_workers=2, persistent_workers=True)],
                         ids=[o.id for o in FORKED] + ["2-spawned-persistent"])
def test_a_collate_fn_of_yours_draws_the_same_for_any_workers(mixed, options):
    """Batch b of epoch e is collated under the scope of its own key, wherever it is read: a MixUp in collate_fn gives
    the same batches for any num_workers, start method or persistence, each epoch anew."""
    before = _generators()
    assert _same(_epochs(_loader(collate_fn=_mixup, **options)), mixed)
    assert _unmoved(before)
    assert not _same(mixed[:1], mixed[1:2]) and not _same(mixed[:1], _epochs(_loader(SEED + 1, collate_fn=_mixup), 1))


@pytest.mark.parametrize("workers, resumed_workers", [(0, 2), (2, 1)])
def test_a_resumed_loader_collates_the_rest_as_the_uninterrupted_one(mixed, workers, resumed_workers):
    loader = _loader(collate_fn=_mixup, num_workers=workers)
    batches = iter(loader)
    next(batches)
    resumed = _loader(collate_fn=_mixup, num_workers=resumed_workers)
    resumed.load_state_dict(loader.state_dict())
    assert _same([list(resumed), list(resumed)], [mixed[0][1:], mixed[1]])


def _batch_seeds(batch):
    """What a collate_fn sees of its scope: a routed draw, and the seeds of torch's, Python's and NumPy's generators."""
    return (torch.rand(3), torch.initial_seed(), random.getstate(), int(np.random.get_state()[1][0]))


# (seed, epoch, b * world_size + rank) -> the batch's keys as KNOWN's (docs/stream.md, "Data"), from the reference
KNOWN_BATCHES = {
    (0, 0, 0): ([5387206194562525731, 989240033734709750], 2322359807, 5729972786311973647, 3466755076),
    (7, 2, 5): ([5812039071763380064, 2068133289991572534], 3686620782, 14270967971310527182, 707881841),
}


@pytest.mark.parametrize("seed, epoch, batch", list(KNOWN_BATCHES))
def test_batch_keys_have_known_answers(seed, epoch, batch):
    """The loader's collate scope of batch `batch` (batches of one, one rank) against the known answers, which the
    reference gives too."""
    stream, torch_seed, python_seed, numpy_seed = KNOWN_BATCHES[seed, epoch, batch]
    assert _reference_keys(seed, epoch, batch, child=3) == KNOWN_BATCHES[seed, epoch, batch]
    loader = DataLoader(range(N), batch_size=1, seed=seed, collate_fn=_batch_seeds)
    loader.set_epoch(epoch)
    drawn, got_torch, python_state, got_numpy = list(loader)[batch]
    assert torch.equal(drawn, rf.uniform(torch.empty(3), torch.tensor(stream), 0.0, 1.0))
    assert (got_torch, got_numpy) == (torch_seed, numpy_seed) and python_state == random.Random(python_seed).getstate()


@pytest.mark.parametrize("world_size, rank", [(1, 0), (3, 2)])
def test_a_batchs_keys_are_derived_from_the_stream_as_documented(world_size, rank):
    """Batch b of a rank's epoch e: S = fold_in(fold_in(fold_in(key(seed), e), 3), b * world_size + rank), then split
    as a sample's key (docs/stream.md, "Data: keys"); the routed draw is functional.uniform's on split(S, 2)[0]."""
    loader = DataLoader(range(N), batch_size=BATCH, shuffle=True, seed=SEED, rank=rank, world_size=world_size,
                        collate_fn=_batch_seeds)
    for epoch in range(2):
        for b, (drawn, torch_seed, python_state, numpy_seed) in enumerate(loader):
            _, want_torch, want_python, want_numpy = _reference_keys(SEED, epoch, b * world_size + rank, child=3)
            stream = torch.tensor(_reference_keys(SEED, epoch, b * world_size + rank, child=3)[0])
            assert torch.equal(drawn, rf.uniform(torch.empty(3), stream, 0.0, 1.0)), (epoch, b)
            assert (torch_seed, numpy_seed) == (want_torch, want_numpy)
            assert python_state == random.Random(want_python).getstate()


def test_torchs_own_collate_runs_outside_any_scope():
    """torch's default collate functions draw nothing: the loader runs them as they are, no scope set up."""
    calls = []
    scoped = torch_rngx.data._Scoped.collate
    try:
        torch_rngx.data._Scoped.collate = lambda self, *args: calls.append(args) or scoped(self, *args)
        batches = list(_loader())
        list(DataLoader(range(N), batch_size=None, seed=SEED))
    finally:
        torch_rngx.data._Scoped.collate = scoped
    assert len(batches) == 4 and calls == []


def test_a_generator_given_to_a_torch_call_stays_the_users():
    class Given(Dataset):
        def __init__(self):
            self.generator = torch.Generator().manual_seed(11)

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.rand(3, generator=self.generator)

    with torch_rngx.mode(uncovered="error"):  # not reported either: the scope's mode leaves it to torch, quietly
        got = torch.cat(list(DataLoader(Given(), batch_size=None, seed=0)))
    assert torch.equal(got, torch.rand(6, generator=torch.Generator().manual_seed(11)))


def test_reading_a_sample_again_is_not_key_reuse():
    """Each sample's stream starts anew, on purpose, wherever the sample is read again (a repeated epoch, another
    loader, a rank's padding): the key-reuse checker, on in the main process and the workers, does not report it."""
    with torch_rngx.debug.key_reuse("raise"):
        for workers in (0, 2):
            loader = _loader(num_workers=workers, world_size=2, rank=1)  # N = 10 over 2 ranks of 5: no padding
            for epoch in (0, 1, 0):
                loader.set_epoch(epoch)
                list(loader)
            list(DataLoader(Augmented(), batch_size=4, seed=SEED, rank=0, world_size=3, num_workers=workers))


class ReadsALoader(Dataset):
    """Draws, reads a loader of its own (Augmented's epoch 0, batches of 2) in the middle, and draws again: the inner
    loader's scopes are inside the outer sample's."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return 4

    def __getitem__(self, i):
        before = torch.rand(2)
        read = []
        if self.inner is not None:
            self.inner.set_epoch(0)
            read = [values for _, values in self.inner]
        return torch.cat([before, torch.rand(2)]), read


@pytest.mark.parametrize("workers", [0, 2])
def test_a_loader_read_inside_a_sample_leaves_the_samples_stream_alone(workers):
    """A dataset that reads a loader of its own: its samples draw what they draw without that read, and the inner
    loader's batches are what it gives on its own."""
    inner = DataLoader(Augmented(), batch_size=2, seed=3)
    inner.set_epoch(0)
    alone = [values for _, values in inner]
    with_inner = list(DataLoader(ReadsALoader(inner), batch_size=None, seed=SEED, num_workers=workers))
    without = list(DataLoader(ReadsALoader(None), batch_size=None, seed=SEED, num_workers=workers))
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(with_inner, without)) and len(with_inner) == 4
    assert all(len(read) == len(alone) and all(map(torch.equal, read, alone)) for _, read in with_inner)


# ---- the keys ----

# (seed, epoch, index) -> (key as int64 bits, torch_seed, python_seed, numpy_seed): known answers of sample_keys under
# stream 1.0 (docs/stream.md, "Data"), from the NumPy reference's fold_in and split
KNOWN = {
    (0, 0, 0): ([-2704085205565137355, -234231080514328860], 2132911612, 12951537266777458841, 603562097),
    (7, 2, 17): ([2793659183760003304, -5685705106155917125], 1039935522, 3718322908408721651, 804639391),
    ((1 << 64) - 1, (1 << 64) - 1, (1 << 63) + 5): (
        [1733372688277088723, -6033977549429100125], 2619298643, 2221798859870638192, 3281884516),
}


def _reference_keys(seed, epoch, index, child=1):
    """The keys of sample `index` (child 1 of the epoch's key), or of batch `index` (child 3), from the reference."""
    root = np.array([seed, 0], dtype=np.uint64)
    sample = ref.fold_in_ref(ref.fold_in_ref(ref.fold_in_ref(root, epoch), child), index)
    stream, seeds = ref.split_ref(sample, 2)
    low, high = (int(w) for w in seeds)
    signed = [int(v) - (1 << 64) if int(v) >= 1 << 63 else int(v) for v in stream]
    return signed, high >> 32, low, high & 0xFFFFFFFF


@pytest.mark.parametrize("seed, epoch, index", list(KNOWN))
def test_sample_keys_are_derived_from_the_stream_as_documented(seed, epoch, index):
    keys = sample_keys(seed, epoch, index)
    got = (keys.key.tolist(), keys.torch_seed, keys.python_seed, keys.numpy_seed)
    assert got == KNOWN[seed, epoch, index] == _reference_keys(seed, epoch, index)
    assert keys.key.dtype == torch.int64 and keys.key.shape == (2,) and keys.key.is_contiguous()


KNOWN_ORDERS = [[8, 6, 2, 4, 0, 7, 9, 3, 1, 5], [5, 6, 1, 9, 3, 4, 8, 2, 7, 0]]  # seed 7, 10 indices, epochs 0, 1


def test_shuffled_order_is_randperm_of_the_epochs_key():
    for epoch in range(3):
        loader = DataLoader(range(N), batch_size=None, shuffle=True, seed=SEED)
        loader.set_epoch(epoch)
        key = ref.fold_in_ref(ref.fold_in_ref(np.array([SEED, 0], dtype=np.uint64), epoch), 0)
        order = [int(i) for i in loader]
        assert order == ref.randperm_ref(N, key).tolist() and order == (KNOWN_ORDERS + [order])[epoch]


# ---- epochs ----

def test_set_epoch_pins_the_next_epoch(reference):
    loader = _loader()
    loader.set_epoch(2)
    assert _same([list(loader)], reference[2:]), "set_epoch(2): epoch 2"
    loader.set_epoch(0)
    assert _same(_epochs(loader, 2), reference[:2]), "then each iteration the next epoch"


@pytest.mark.parametrize("workers", [0, 2])
def test_iterators_made_together_keep_their_epochs(reference, workers):
    loader = _loader(num_workers=workers)
    first, second = iter(loader), iter(loader)
    assert _same([list(second), list(first)], reference[1::-1])


# ---- world sizes ----

@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("drop_uneven", [False, True])
def test_each_rank_reads_its_part_and_each_sample_is_the_single_process_ones(world_size, drop_uneven):
    """Rank r's samples are bitwise the single-process loader's samples of the same indices, and its indices are
    DistributedSampler's split of the epoch's order (padded with its start, or cut)."""
    whole = [{int(i): v for batch in epoch for i, v in zip(*batch)} for epoch in _epochs(_loader())]
    for rank in range(world_size):
        loader = DataLoader(Augmented(), batch_size=2, shuffle=True, seed=SEED, rank=rank, world_size=world_size,
                            drop_uneven=drop_uneven)
        torch_split = DistributedSampler(range(N), world_size, rank, shuffle=False, drop_last=drop_uneven)
        for epoch, batches in enumerate(_epochs(loader)):
            order = DataLoader(range(N), batch_size=None, shuffle=True, seed=SEED)
            order.set_epoch(epoch)
            order = [int(i) for i in order]
            indices = [int(i) for i, _ in batches for i in i]
            assert indices == [order[j] for j in torch_split], (rank, epoch)
            for i, v in ((int(i), v) for i, vs in batches for i, v in zip(i, vs)):
                assert torch.equal(v, whole[epoch][i]), (rank, epoch, i)


# ---- resuming ----

@pytest.mark.parametrize("workers, resumed_workers", [(0, 0), (0, 2), (2, 1)])
@pytest.mark.parametrize("after", [0, 1, 3, 4], ids=lambda k: f"after-{k}")
def test_resumes_the_rest_of_the_epoch_and_the_next(reference, workers, resumed_workers, after, tmp_path):
    """state_dict() after `after` batches of epoch 1 (of 4 batches: 4 ends it), through a file, into a fresh loader
    with another num_workers: the rest of epoch 1, then epoch 2."""
    loader = _loader(num_workers=workers)
    list(loader)  # epoch 0
    batches = iter(loader)
    for _ in range(after):
        next(batches)
    torch.save(loader.state_dict(), tmp_path / "loader.pt")
    del batches
    resumed = _loader(num_workers=resumed_workers)
    resumed.load_state_dict(torch.load(tmp_path / "loader.pt"))
    rest = _epochs(resumed, 1 if after == 4 else 2)
    want = [reference[1][after:], reference[2]] if after < 4 else [reference[2]]
    assert _same(rest, want)


@pytest.mark.slow("trains twice in this process and once in each of two fresh ones, importing torch: ~20 s of CPU")
def test_a_training_run_resumed_in_a_fresh_process_is_the_uninterrupted_one(tmp_path):
    """2 epochs of 3 steps; stopped after step 4 (epoch 1, one batch in), saved to one file, resumed by a fresh process
    with the other num_workers: the losses and final parameters of the uninterrupted run, eager and compiled
    (aot_eager, fullgraph=True)."""
    model, forward, opt, loader = data_training.make(num_workers=0, compiled=False)
    losses = data_training.train(model, forward, opt, loader)
    want = torch.stack(losses), model.state_dict()
    for compiled, workers, resumed_workers in ((False, 0, 2), (True, 2, 0)):
        model, forward, opt, loader = data_training.make(workers, compiled)
        first = data_training.train(model, forward, opt, loader, stop=4)
        assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["position"] == 1
        data_training.save(tmp_path / "checkpoint.pt", model, opt, loader)
        out = tmp_path / "resumed.pt"
        subprocess.run([sys.executable, data_training.__file__, str(tmp_path / "checkpoint.pt"), str(out),
                        str(resumed_workers), str(int(compiled))], check=True, timeout=600)
        resumed = torch.load(out)
        assert torch.equal(torch.cat([torch.stack(first), resumed["losses"]]), want[0]), compiled
        assert all(torch.equal(resumed["state"][k], v) for k, v in want[1].items()), compiled


def test_state_dict_and_set_epoch_agree():
    loader = _loader()
    assert loader.state_dict()["epoch"] == 0 and loader.state_dict()["position"] == 0
    batches = iter(loader)
    next(batches)
    assert (loader.state_dict()["epoch"], loader.state_dict()["position"]) == (0, 1)
    list(batches)
    assert (loader.state_dict()["epoch"], loader.state_dict()["position"]) == (1, 0), "an epoch read to its end"
    state = {**loader.state_dict(), "epoch": 2, "position": 3}
    loader.load_state_dict(state)
    loader.set_epoch(2)  # a loop that names its epochs keeps the resumed position
    assert len(list(loader)) == 1


# ---- what the loader is to torch ----

def test_it_is_torchs_dataloader_with_the_users_dataset():
    dataset = Augmented()
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, drop_last=True, seed=0)
    assert isinstance(loader, torch.utils.data.DataLoader) and loader.dataset is dataset
    assert (loader.batch_size, loader.drop_last, len(loader), loader.seed) == (BATCH, True, N // BATCH, 0)


def test_without_a_seed_torch_manual_seed_reproduces_the_run():
    torch.manual_seed(3)
    first = _epochs(_loader(seed=None), 1)
    torch.manual_seed(3)
    assert _same(_epochs(_loader(seed=None), 1), first)
    assert not _same(_epochs(_loader(seed=None), 1), first), "the next draw of torch's generator: another seed"


def test_a_sampler_gives_the_indices_and_hears_the_epoch():
    sampler = DistributedSampler(range(N), num_replicas=2, rank=1, shuffle=True, seed=4)
    loader = DataLoader(Augmented(), batch_size=2, sampler=sampler, seed=SEED)
    for epoch in range(2):
        indices = [int(i) for i, _ in list(loader) for i in i]
        sampler.set_epoch(epoch)
        assert indices == list(sampler), "the loader told the sampler its epoch"


# ---- bad input ----

class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(3))


BAD = [
    (dict(seed=-1), ValueError, "seed must be in"),
    (dict(seed=1 << 64), ValueError, "seed must be in"),
    (dict(seed=1.5), TypeError, "seed must be an int"),
    (dict(rank=2, world_size=2), ValueError, r"rank \(with world_size=2\) must be in \[0, 2\)"),
    (dict(rank=0, world_size=0), ValueError, "world_size must be in"),
    (dict(rank=1), ValueError, "pass rank= and world_size= together"),
    (dict(rank=0, world_size=2, seed=None), ValueError, "seed: pass the same int on every rank"),
    (dict(sampler=SequentialSampler(range(N)), shuffle=True), ValueError, "sampler= gives the order"),
    (dict(batch_sampler=[[0, 1]], shuffle=True, batch_size=1), ValueError, "batch_sampler= gives the order"),
    (dict(sampler=SequentialSampler(range(N)), rank=0, world_size=1), ValueError, "sampler= gives the indices"),
    (dict(seed=1, generator=torch.Generator()), ValueError, "pass seed= or generator="),
    (dict(drop_uneven=1), TypeError, "drop_uneven must be a bool"),
]


@pytest.mark.parametrize("options, error, message", BAD)
def test_bad_arguments_raise_naming_them(options, error, message):
    kwargs = {"seed": 0, **options}
    with pytest.raises(error, match=message):
        DataLoader(Augmented(), **kwargs)


def test_an_iterable_dataset_is_refused_naming_what_to_use():
    with pytest.raises(TypeError, match=r"dataset: .*IterableDataset.*torch_rngx\.data\.sample_keys"):
        DataLoader(Stream(), seed=0)


@pytest.mark.parametrize("change, message", [
    (dict(length=N + 1), "length=11, this one has length=10"),
    (dict(seed=SEED + 1), "seed=8, this one has seed=7"),
    (dict(world_size=2), "world_size=2, this one has world_size=1"),
    (dict(batch_size=2), "batch_size=2, this one has batch_size=3"),
    (dict(position=5), r"state_dict\['position'\] must be in \[0, 5\)"),
    (dict(epoch=-1), r"state_dict\['epoch'\] must be in"),
])
def test_a_state_dict_of_another_loader_is_refused(change, message):
    loader = _loader()
    with pytest.raises(ValueError, match=message):
        loader.load_state_dict({**loader.state_dict(), **change})
    assert loader.state_dict()["position"] == 0


def test_out_of_order_batches_have_no_state_dict():
    with pytest.raises(RuntimeError, match="in_order=False"):
        _loader(num_workers=1, in_order=False).state_dict()


def test_a_state_dict_of_another_dataset_length_is_refused():
    with pytest.raises(ValueError, match="length=9, this one has length=10"):
        _loader().load_state_dict(DataLoader(Augmented(9), batch_size=BATCH, seed=SEED).state_dict())


@pytest.mark.parametrize("args, error, message", [
    ((-1, 0, 0), ValueError, "seed must be in"),
    ((0, 1 << 64, 0), ValueError, "epoch must be in"),
    ((0, 0, -1), ValueError, "index must be in"),
    ((0, 0.5, 0), TypeError, "epoch must be an int"),
    ((0, True, 0), TypeError, "epoch must be an int, got bool"),
    ((0, 0, [3]), TypeError, "index must be an int, got list"),
    ((0, torch.tensor([1, 2]), 0), TypeError, "epoch must be an int, got Tensor"),
])
def test_sample_keys_checks_its_arguments(args, error, message):
    with pytest.raises(error, match=message):
        sample_keys(*args)


@pytest.mark.key_reuse_ok("derives the same sample's keys again, each time to compare with the first")
def test_sample_keys_takes_numpy_integers_and_caches_nothing_that_shows():
    """A NumPy integer (or a 0-dim integer tensor) stands for its int, as the loader's own arguments do; the epoch's
    words are cached by (seed, epoch), and 40 epochs in turn (past the cache) give the keys they gave the first time."""
    first = {e: sample_keys(7, e, 3) for e in range(40)}
    for e in reversed(range(40)):
        for seed, epoch, index in [(7, e, 3), (np.uint64(7), np.int64(e), np.int32(3)), (7, torch.tensor(e), 3)]:
            got = sample_keys(seed, epoch, index)
            assert torch.equal(got.key, first[e].key) and got[1:] == first[e][1:]
