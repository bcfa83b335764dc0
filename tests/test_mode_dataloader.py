"""DataLoader workers under torch_rngx.mode (docs/guide.md, "DataLoader workers"; torch_rngx/_mode/workers.py): a
Dataset whose __getitem__ calls torch.rand, torch.randn and F.dropout, read by two worker processes, forked and
spawned. Each worker draws under a mode of its own from its torch generator, which torch seeds with base_seed +
worker_id; the base seed is the loader's random_() in the main process, routed to the main mode's stream. So: the
workers' values are a function of the main mode's stream alone, the same forked and spawned, different from worker to
worker and epoch to epoch; torch's default generator in the main process and a converted model used in the loop are
untouched."""
import pytest
import torch
import torch.nn.functional as TF
from torch.utils.data import DataLoader, Dataset, get_worker_info

import torch_rngx
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("reruns epochs on one seed and recomputes the workers' draws to compare")

ITEMS = 4  # batch_size 1 and 2 workers: worker w reads items w and w + 2 (torch's round robin)


class Augmented(Dataset):
    """Random augmentations as a Dataset writes them: torch's functions, called as they are."""

    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        info = get_worker_info()
        values = torch.cat([torch.rand(2), torch.randn(2), TF.dropout(torch.ones(4), 0.5)])
        return values, -1 if info is None else info.id


def _loader(context):
    return DataLoader(Augmented(), batch_size=1, num_workers=2, multiprocessing_context=context)


def _probe():
    torch.manual_seed(0)
    return torch_rngx.nn.convert(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)), seed=7).model


def _epochs(context, epochs=2, seed=0):
    """Runs `epochs` epochs under mode(seed=seed); in the loop a converted model runs a training forward per batch.
    Returns each epoch's (values, worker ids), the mode's stream state, the model's outputs and stream state, and
    whether torch's default generator in this process was left as it was."""
    loader, model, before = _loader(context), _probe(), torch.get_rng_state()
    runs, outputs = [], []
    with torch_rngx.mode(seed=seed, uncovered="error") as m:
        for _ in range(epochs):
            batches = list(loader)
            runs.append((torch.cat([v for v, _ in batches]), [int(w) for _, w in batches]))
            outputs += [model(v) for v, _ in batches]
    untouched = torch.equal(torch.get_rng_state(), before)
    return runs, m.generator.state.clone(), torch.stack(outputs), model.rngx_state.clone(), untouched


def _expected(bases):
    """What torch's worker loop makes of each base seed: worker w seeded base + w by torch.manual_seed, each routed
    call under a mode without a generator drawing its seed from it; items in the loader's order."""
    epochs = []
    with torch.random.fork_rng():
        for base in bases:
            by_worker = {}
            for w in (0, 1):
                torch.manual_seed(base + w)
                with torch_rngx.mode(uncovered="error"):
                    by_worker[w] = [Augmented()[i][0] for i in range(w, ITEMS, 2)]
            epochs.append(torch.stack([by_worker[i % 2][i // 2] for i in range(ITEMS)]))
    return epochs


def _bases(epochs=2, seed=0):
    """The loader's base seeds: one random_() of an int64 scalar per epoch, routed to mode(seed=seed)'s stream."""
    with torch_rngx.mode(seed=seed) as m:
        bases = [int(torch.empty((), dtype=torch.int64).random_()) for _ in range(epochs)]
    return bases, m.generator.state.clone()


@pytest.fixture(scope="module")
def forked():
    return _epochs("fork")


def _check_streams(run):
    runs, mode_state, outputs, model_state, untouched = run
    bases, want_state = _bases()
    for (values, workers), want in zip(runs, _expected(bases)):
        assert workers == [0, 1, 0, 1]
        assert torch.equal(values, want), "each worker's stream is torch's base_seed + worker_id's"
    (first, _), (second, _) = runs
    assert not torch.equal(first[0::2], first[1::2]), "workers 0 and 1 must draw different values"
    assert not torch.equal(first, second), "epoch 2 must differ from epoch 1"
    assert torch.equal(mode_state, want_state), "the main mode's stream moves by the base seeds alone"
    assert untouched, "torch's default generator in the main process must not move under mode(seed=)"
    model = _probe()  # the converted model, the same forwards without a loader: the loader does not touch its stream
    want_outputs = torch.stack([model(v) for v in torch.cat([values for values, _ in runs]).split(1)])
    assert torch.equal(outputs, want_outputs) and torch.equal(model_state, model.rngx_state)


def test_forked_workers_draw_their_own_streams(forked):
    _check_streams(forked)


def test_the_epoch_follows_the_modes_seed(forked):
    (first, _), _ = forked[0]
    again = _epochs("fork", epochs=1)[0][0][0]
    other = _epochs("fork", epochs=1, seed=1)[0][0][0]
    assert torch.equal(again, first) and not torch.equal(other, first)


def test_without_a_seed_the_epoch_follows_torch_manual_seed():
    loader = _loader("fork")

    def epoch(s):
        torch.manual_seed(s)
        with torch_rngx.mode(uncovered="error"):
            return torch.cat([v for v, _ in loader])

    first = epoch(3)
    assert torch.equal(epoch(3), first), "torch.manual_seed(s) before the loop reproduces the epoch"
    assert not torch.equal(epoch(4), first), "another seed changes it"
    torch.manual_seed(3)
    with torch_rngx.mode():
        base = int(torch.empty((), dtype=torch.int64).random_())
    assert torch.equal(first, _expected([base])[0])


@pytest.mark.slow("spawns 4 worker processes, each importing torch and torch_rngx: ~10 s of CPU")
def test_spawned_workers_draw_what_forked_ones_do(forked):
    spawned = _epochs("spawn")
    _check_streams(spawned)
    for (got, _), (want, _) in zip(spawned[0], forked[0]):
        assert torch.equal(got, want)


def test_no_mode_no_change():
    """Outside a mode the loader is torch's own: the workers' draws are torch's, each worker its own."""
    torch.manual_seed(5)
    values = torch.cat([v for v, _ in _loader("fork")])
    with torch.random.fork_rng():
        torch.manual_seed(5)
        base = int(torch.empty((), dtype=torch.int64).random_())
        torch.manual_seed(base)
        want = Augmented()[0][0]
    assert torch.equal(values[0], want)
