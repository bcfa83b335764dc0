"""What torch_rngx.data.DataLoader costs per sample against torch's own DataLoader (docs/performance.md, "Data
loading"): a dataset whose items are torch.randn(64), read in epochs by both loaders, interleaved in one run.

Per sample = an epoch's wall time / its samples. Overhead = ours - torch's, per sample. Targets: <= 30 µs in workers
(one worker: the epoch waits on it, so its wall time per sample is the worker's cost per sample), <= 100 µs with
num_workers=0 (where the main process's generators are saved and restored around each batch). Workers are persistent,
so that their start is not counted; each configuration runs a warm-up epoch first.

    python3 benchmarks/data.py [samples]
"""
import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import torch_rngx

# (num_workers, batch_size, target in µs per sample): the targets are per sample, with or without workers.
CONFIGS = [(0, 1, 100), (0, 32, 100), (1, 1, 30), (1, 32, 30), (2, 32, 30)]


class Randn(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randn(64)


def _epoch(loader):
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def run(samples=8192, rounds=5):
    dataset = Randn(samples)
    rows = []
    for workers, batch, target in CONFIGS:
        extra = {"persistent_workers": True} if workers else {}
        loaders = {
            "ours": torch_rngx.data.DataLoader(dataset, batch, shuffle=True, num_workers=workers, seed=0, **extra),
            "torch": DataLoader(dataset, batch, shuffle=True, num_workers=workers, **extra),
        }
        times = {name: [] for name in loaders}
        for name, loader in loaders.items():
            _epoch(loader)  # warm-up: workers started, the mode's tables built
        for _ in range(rounds):  # interleaved, so load on the machine hits both alike
            for name, loader in loaders.items():
                times[name].append(_epoch(loader) / samples * 1e6)
        ours, theirs = min(times["ours"]), min(times["torch"])
        rows.append({"workers": workers, "batch": batch, "ours_us": ours, "torch_us": theirs, "overhead_us": ours - theirs,
                     "median_overhead_us": statistics.median(times["ours"]) - statistics.median(times["torch"]),
                     "target_us": target})
        del loaders
    return rows


def print_table(rows, samples):
    print(f"\ntorch_rngx.data.DataLoader against torch's, {samples} samples of torch.randn(64) an epoch, shuffle=True; "
          "µs per sample, best of the rounds (overhead of the medians beside it)")
    print(f"{'num_workers':>11s} {'batch':>5s} {'ours':>8s} {'torch':>8s} {'overhead':>9s} {'(median)':>9s}  target")
    for r in rows:
        met = "met" if r["overhead_us"] <= r["target_us"] else "MISSED"
        print(f"{r['workers']:11d} {r['batch']:5d} {r['ours_us']:8.1f} {r['torch_us']:8.1f} {r['overhead_us']:9.1f} "
              f"{r['median_overhead_us']:9.1f}  <= {r['target_us']} {met}")


if __name__ == "__main__":
    import machine

    print(machine.line())
    torch.set_num_threads(1)  # the loaders' work is per sample; workers run one thread each, as torch sets them
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    print_table(run(n), n)
