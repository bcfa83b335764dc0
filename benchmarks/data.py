"""What torch_rngx.data.DataLoader costs per sample against torch's own DataLoader (docs/performance.md, "Data
loading"): a dataset whose items are torch.randn(64), read in epochs by both loaders with shuffle=True, interleaved in
one run.

Per sample: an epoch's CPU time in the processes that read the samples (the workers, or the main process with
num_workers=0), and its wall time, divided by its samples; overhead = ours - torch's. CPU time is what the targets
are about, and what the other loads of a shared machine disturb least. Targets: <= 30 µs in workers, <= 100 µs with
num_workers=0 (where the main process's generators are saved and restored around each batch). Workers are persistent,
so that their start is not counted; each configuration reads a warm-up epoch first.

    python3 benchmarks/data.py [samples]

It ends with the pieces' costs, in one process: each generator's seeding (per sample), a routed torch.randn(64)
against torch's own, the keys, the saving and restoring of the main process's generators and a collate_fn's scope
(per batch); then the loader's reading of a batch of one timed warm and inside torch's loop, in the main process and
in a worker, and torch's own calls timed the same way in torch's own loader. pipeline() (torchvision needed, so run on
its own) times a torchvision augmentation alone, under a function mode that does nothing, and in the loader's scope.
"""
import multiprocessing
import os
import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import torch_rngx

# (num_workers, batch_size, target in µs per sample)
CONFIGS = [(0, 1, 100), (0, 4, 100), (0, 32, 100), (1, 1, 30), (1, 32, 30), (2, 32, 30)]
_TICK = os.sysconf("SC_CLK_TCK")


class Randn(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randn(64)


def _cpu(pids):
    """CPU seconds (user + system) the processes `pids` have used; this process's own when pids is empty."""
    if not pids:
        return time.process_time()
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICK


def _warm_up(loader):
    """Reads an epoch; returns the pids of the worker processes it started (kept: persistent_workers)."""
    before = {p.pid for p in multiprocessing.active_children()}
    for _ in loader:
        pass
    return sorted({p.pid for p in multiprocessing.active_children()} - before)


def _epoch(loader, pids):
    cpu, wall = _cpu(pids), time.perf_counter()
    for _ in loader:
        pass
    return _cpu(pids) - cpu, time.perf_counter() - wall


def run(samples=16384, rounds=5):
    dataset = Randn(samples)
    rows = []
    for workers, batch, target in CONFIGS:
        extra = {"persistent_workers": True} if workers else {}
        loaders = {
            "ours": torch_rngx.data.DataLoader(dataset, batch, shuffle=True, num_workers=workers, seed=0, **extra),
            "torch": DataLoader(dataset, batch, shuffle=True, num_workers=workers, **extra),
        }
        pids = {name: _warm_up(loader) for name, loader in loaders.items()}
        cpu = {name: [] for name in loaders}
        wall = {name: [] for name in loaders}
        for _ in range(rounds):  # interleaved, so load on the machine hits both alike
            for name, loader in loaders.items():
                c, w = _epoch(loader, pids[name])
                cpu[name].append(c / samples * 1e6)
                wall[name].append(w / samples * 1e6)
        rows.append({
            "workers": workers, "batch": batch, "target_us": target,
            "ours_cpu_us": statistics.median(cpu["ours"]), "torch_cpu_us": statistics.median(cpu["torch"]),
            "ours_wall_us": min(wall["ours"]), "torch_wall_us": min(wall["torch"]),
        })
        del loaders
    return rows


def print_table(rows, samples):
    print(f"\ntorch_rngx.data.DataLoader against torch's, {samples} samples of torch.randn(64) an epoch, shuffle=True, "
          "µs per sample: CPU in the processes reading the samples (median of the rounds), wall (best)")
    print(f"{'num_workers':>11s} {'batch':>5s} {'CPU ours':>9s} {'torch':>7s} {'overhead':>9s} {'wall ours':>10s} "
          f"{'torch':>7s}  target (CPU overhead)")
    for r in rows:
        overhead = r["ours_cpu_us"] - r["torch_cpu_us"]
        met = "met" if overhead <= r["target_us"] else "MISSED"
        print(f"{r['workers']:11d} {r['batch']:5d} {r['ours_cpu_us']:9.1f} {r['torch_cpu_us']:7.1f} {overhead:9.1f} "
              f"{r['ours_wall_us']:10.1f} {r['torch_wall_us']:7.1f}  <= {r['target_us']} {met}")


def pieces(rounds=9, number=2000):
    """µs per call, the best of the rounds, of what the loader does per sample and per batch (in one process)."""
    import random

    import numpy as np

    seed_python = torch_rngx.data._PythonState.seeder
    seeds32 = [12951537266777458841 + 7919 * k for k in range(32)]
    g = torch_rngx.Generator(0)
    state = {"torch": torch.default_generator.get_state(), "python": random.getstate(), "numpy": np.random.get_state()}

    def routed():
        with torch_rngx.mode(generator=g, uncovered="ignore"):
            return torch.randn(64)

    def seed_python_batch():
        put = seed_python(seeds32)  # the batch's states, made at once
        for k in range(32):
            put(k)

    def routed_100():
        with torch_rngx.mode(generator=g, uncovered="ignore"):
            for _ in range(100):
                torch.randn(64)

    scoped = torch_rngx.data.DataLoader(range(8), seed=0)._scoped
    scoped._batch = (0, 0)  # as after reading batch 0 of epoch 0

    calls = {
        "torch.default_generator.manual_seed (per sample)": lambda: torch.default_generator.manual_seed(2132911612),
        "random.seed, 64 bits": lambda: random.seed(12951537266777458841),
        "random.seed's state written in place, alone (mt_states of one seed, mt_put)": (
            lambda: seed_python([12951537266777458841])(0)),
        "random.seed's states written in place, the loader's: a batch of 32's made at once, then each (per sample)": (
            seed_python_batch, 32),
        "np.random.seed, 32 bits (per sample)": lambda: np.random.seed(603562097),
        "torch.randn(64)": lambda: torch.randn(64),
        "torch.randn(64) routed, mode entered and left": routed,
        "torch.randn(64) routed, inside an entered mode (a sample's call in the loader)": (routed_100, 100),
        "torch_rngx.data.sample_keys(seed, epoch, index), alone": lambda: torch_rngx.data.sample_keys(0, 0, 17),
        "the loader's keys of a batch of one (one call derives a batch's)": (
            lambda: torch_rngx.data._Batch((5, 0), [17])),
        "torch's generator saved and restored (per batch, main process)": lambda: torch.default_generator.set_state(
            torch.default_generator.get_state()),
        "random's saved and restored: getstate, setstate": lambda: random.setstate(random.getstate()),
        "random's saved and restored: the loader's copy of its words (per batch, main process)": (
            lambda: torch_rngx.data._PythonState().restore()),
        "NumPy's saved and restored: get_state, set_state": lambda: np.random.set_state(np.random.get_state()),
        "NumPy's saved and restored: the loader's copy of its words (per batch, main process)": (
            lambda: torch_rngx.data._NumpyState().restore()),
        "a collate_fn of yours (here one that returns its batch) in its batch's scope (per batch, main process)": (
            lambda: scoped.collate(list, [])),
    }
    per = {name: call if isinstance(call, tuple) else (call, 1) for name, call in calls.items()}  # (f, its samples)
    best = {name: min(timeit_us(f, number) for _ in range(rounds)) / n for name, (f, n) in per.items()}
    torch.default_generator.set_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    print("\npieces, in one process (µs per call, best of the rounds)")
    for name, us in best.items():
        print(f"{us:8.2f}  {name}")


def in_the_loop(samples=4096, rounds=2000):
    """µs a call of the loader's reading of a batch of one (its scope around dataset[i]), warm and in torch's loop: in
    the main process (num_workers=0), and in a forked worker, timed there before its loop (worker_init_fn, `rounds`
    calls one after another) and in its loop (each batch as the loop reads it, after waiting on its queue)."""
    read = torch_rngx.data._Scoped.__getitems__
    found = multiprocessing.get_context("fork").SimpleQueue()
    spent = {"us": 0.0, "calls": 0}

    def timed(self, tagged):
        start = time.perf_counter()
        out = read(self, tagged)
        spent["us"] += (time.perf_counter() - start) * 1e6
        spent["calls"] += 1
        if spent["calls"] == samples:
            found.put(("worker" if torch.utils.data.get_worker_info() else "main process", "in the loop",
                       spent["us"] / samples))
        return out

    def before_the_loop(scoped):
        read(scoped, [(0, 7, 0)])  # the first also prepares the mode's table (once a process)
        return timeit_us(lambda: read(scoped, [(0, 7, 0)]), rounds)

    def warm(worker_id):
        found.put(("worker", "before the loop", before_the_loop(torch.utils.data.get_worker_info().dataset)))

    torch_rngx.data._Scoped.__getitems__ = timed
    try:
        dataset = Randn(samples)
        main = torch_rngx.data.DataLoader(dataset, 1, shuffle=True, seed=0)
        found.put(("main process", "before the loop", before_the_loop(main._scoped)))
        for _ in main:
            pass
        spent.update(us=0.0, calls=0)
        worker = torch_rngx.data.DataLoader(dataset, 1, shuffle=True, seed=0, num_workers=1, worker_init_fn=warm,
                                            multiprocessing_context="fork")
        for _ in worker:
            pass
    finally:
        torch_rngx.data._Scoped.__getitems__ = read
    print("\nthe loader's reading of a batch of one (its scope around dataset[i]), µs a call")
    for _ in range(4):
        where, when, us = found.get()
        print(f"{us:8.1f}  {where}, {when}")


def torchs_calls_in_the_loop(samples=4096, rounds=2000):
    """The same question for torch's own calls in torch's own loader: µs of four tensor calls (torch.randn(64),
    torch.empty(64), a view and an unbind), as a dataset of torch's DataLoader makes them in a forked worker: before
    its loop, in each batch of one as the loop reads it, and `rounds` times one after another from inside one batch
    halfway through the epoch. Where the last is the first's, the worker's process is not slower in its loop; each
    batch's calls are, after its wait on the queue."""
    found = multiprocessing.get_context("fork").SimpleQueue()

    def calls():
        x = torch.randn(64)
        torch.empty(64)
        x.view(8, 8).unbind()
        return x

    class Timed(Dataset):
        spent, read = 0.0, 0

        def __len__(self):
            return samples

        def __getitem__(self, i):
            self.read += 1
            if self.read == samples // 2:
                found.put(("a worker, one after another inside one batch", timeit_us(calls, rounds)))
            start = time.perf_counter()
            x = calls()
            self.spent += (time.perf_counter() - start) * 1e6
            if self.read == samples:
                found.put(("a worker, in the loop", self.spent / samples))
            return x

    def warm(worker_id):
        found.put(("a worker, before the loop", timeit_us(calls, rounds)))

    for _ in DataLoader(Timed(), 1, num_workers=1, worker_init_fn=warm, multiprocessing_context="fork"):
        pass
    print("\ntorch's own calls in torch's own loader (torch.randn(64), torch.empty(64), a view, an unbind), µs")
    for _ in range(3):
        where, us = found.get()
        print(f"{us:8.1f}  {where}")


def pipeline(rounds=7, batches=10):
    """A torchvision augmentation (RandomResizedCrop, ColorJitter, a flip, on a 3x32x32 image), per sample: alone; under
    a torch function mode that does nothing (torch calls its __torch_function__ on every torch call and attribute
    access: what any function mode costs); and read in torch_rngx.data's scope, batches of 32 in one process with the
    generators restored (the loader's own path, _Scoped); and the torch calls the mode sees a sample. Needs torchvision
    (the torch 2.14.1 venv: PYTHONPATH=. .venv-cuda/bin/python -c "import sys; sys.path.insert(0, 'benchmarks');
    import data; data.pipeline()")."""
    import collections

    import torchvision.transforms as T

    from torch_rngx import data

    augment = T.Compose([T.RandomResizedCrop(24, antialias=True), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                         T.RandomHorizontalFlip()])
    image = torch.rand(3, 32, 32, generator=torch.Generator().manual_seed(0))

    class Augmented(Dataset):
        def __len__(self):
            return 1 << 20

        def __getitem__(self, i):
            return augment(image)

    class Nothing(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Counting(Nothing):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            Counting.calls += 1
            return super().__torch_function__(func, types, args, kwargs)

    def under_nothing():
        with Nothing():
            for _ in range(32):
                augment(image)

    def random_calls():  # the augmentation's own random calls, as many as it makes a sample (RandomResizedCrop's
        # first try taken): uniform_ for the crop's area and ratio and ColorJitter's four factors, two randint for the
        # crop's place, ColorJitter's randperm, the flip's rand
        for _ in range(32):
            for low in (0.08, 0.3, 0.6, 0.6, 0.6, -0.1):
                torch.empty(1).uniform_(low, 1.0)
            torch.randint(0, 5, (1,))
            torch.randint(0, 5, (1,))
            torch.randperm(4)
            torch.rand(1)

    def routed_random_calls():
        with torch_rngx.mode(generator=torch_rngx.Generator(0), uncovered="ignore"):
            random_calls()

    scoped = data._Scoped(Augmented(), 0, 0, 1)
    batch = [(0, i, 0) for i in range(32)]
    ways = {"alone": lambda: [augment(image) for _ in range(32)], "under a function mode that does nothing":
            under_nothing, "in torch_rngx.data's scope": lambda: scoped.__getitems__(batch),
            "its 10 random calls alone, torch's": random_calls, "the same routed by torch_rngx.mode": routed_random_calls}
    times = collections.defaultdict(list)
    for _ in range(rounds):  # the ways in turns, so that the host's load moves them alike
        for name, way in ways.items():
            times[name].append(timeit_us(way, batches) / 32)
    with Counting():
        augment(image)
    print(f"a torchvision augmentation, µs a sample (best of {rounds} rounds of {batches} batches of 32; "
          f"{Counting.calls} torch calls and attribute reads a sample):")
    for name, us in times.items():
        print(f"{min(us):8.1f}  {name}")


def timeit_us(f, number):
    start = time.perf_counter()
    for _ in range(number):
        f()
    return (time.perf_counter() - start) / number * 1e6


if __name__ == "__main__":
    import machine

    print(machine.line())
    torch.set_num_threads(1)  # the work is per sample; torch's workers run one thread each too
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
    before = os.getloadavg()[0]
    rows = run(n)
    print_table(rows, n)
    print(f"load average (1 min) {before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs")
    pieces()
    in_the_loop()
    torchs_calls_in_the_loop()
