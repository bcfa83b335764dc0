"""Data-parallel training with torch_rngx randomness: 2 processes, gloo on the CPU, DistributedDataParallel, eager
and torch.compile. Run: `.venv/bin/python examples/ddp_train.py` (from the repository root, after `make build`).

Each rank is a replica of the model that trains on its own data, so each needs its own random numbers: the same
masks on every replica would make dropout correlated across the global batch. The two per-rank recipes used here:

- module state: `torch_rngx.nn.Dropout(p, seed=s)` keeps its stream in the `rng_state` buffer; after DDP has
  copied rank 0's buffers to every rank, `torch_rngx.nn.fold_in_(model, rank)` gives each rank its own stream
  (and forward_sync_buffers=False keeps DDP from copying them back before each forward);
- an explicit Generator: `torch_rngx.Generator(seed).fold_in(rank)`, here for quantize()'s noise, with a seed of
  its own: from the dropout's seed it would draw the dropout's own words.

The script trains the same model twice (two sets of processes) and checks that the final weights are identical,
bit for bit, eager and compiled; it also checks that the two ranks drew different dropout masks and that DDP kept
their weights equal. Exit status 0 iff every check holds.
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_rngx

WORLD, STEPS, BATCH, SEED = 2, 12, 16, 2024


class Model(torch.nn.Module):
    def __init__(self, noise):
        super().__init__()
        self.encode = torch.nn.Linear(8, 32)
        self.dropout = torch_rngx.nn.Dropout(0.25, seed=SEED)
        self.decode = torch.nn.Linear(32, 1)
        self.noise = noise  # a torch_rngx.Generator for quantize()'s noise

    def forward(self, x):
        h = torch_rngx.quantize(self.encode(x), "noise", generator=self.noise)
        return self.decode(self.dropout(torch.relu(h)))


def train(rank, compiled):
    """One replica's run; returns its final weights and its first dropout mask."""
    torch.manual_seed(0)  # the same initial weights on both ranks (DDP would broadcast rank 0's anyway)
    model = DDP(Model(torch_rngx.Generator(SEED + 1).fold_in(rank)), forward_sync_buffers=False)
    torch_rngx.nn.fold_in_(model, rank)  # after DDP's initial broadcast: each rank its own dropout stream
    # The mask the first step will draw on this rank: the stateless op with the module's current key. The step
    # reads these words again, on purpose: the key-reuse checker is off for this look ahead.
    with torch_rngx.debug.key_reuse("off"):
        first_mask = torch_rngx.functional.dropout(torch.ones(BATCH, 32), model.module.dropout.rng_state, 0.25) != 0
    step = torch.compile(model) if compiled else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own part of the data
    for _ in range(STEPS):
        x = torch.randn(BATCH, 8, generator=data)
        y = x.sum(1, keepdim=True)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(step(x), y).backward()
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.module.state_dict().items()}, first_mask


def worker(rank, init_file, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    results = {}
    for compiled in (False, True):
        weights, mask = train(rank, compiled)
        masks = [None] * WORLD
        dist.all_gather_object(masks, mask)
        everyone = [None] * WORLD
        params = {n: p for n, p in weights.items() if not n.endswith("rng_state")}  # the streams differ by design
        dist.all_gather_object(everyone, params)
        results[compiled] = {"weights": weights, "masks_differ": not torch.equal(masks[0], masks[1]),
                             "ranks_agree": all(_same(everyone[0], w) for w in everyone)}
    if rank == 0:
        torch.save(results, os.path.join(out_dir, "result.pt"))
    dist.destroy_process_group()


def _same(a, b):
    """Bitwise equality of two state dicts."""
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and torch.equal(a[k].view(torch.uint8),
                                                                                 b[k].view(torch.uint8)) for k in a)


def run():
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(worker, args=(os.path.join(out_dir, "init"), out_dir), nprocs=WORLD)
        return torch.load(os.path.join(out_dir, "result.pt"))


def main():
    first, second = run(), run()
    ok = True
    for compiled in (False, True):
        mode = "compiled" if compiled else "eager"
        weights = first[compiled]["weights"], second[compiled]["weights"]
        checks = {"two runs give identical final weights": _same(*weights),
                  "DDP keeps the ranks' weights equal": first[compiled]["ranks_agree"],
                  "the ranks drew different dropout masks": first[compiled]["masks_differ"]}
        for what, holds in checks.items():
            print(f"{mode:8s} {what}: {'yes' if holds else 'NO'}")
            ok &= holds
    same = _same(first[False]["weights"], first[True]["weights"])
    print(f"eager and compiled final weights bitwise equal: {'yes' if same else 'no'} (not required: inductor may "
          f"fuse the linear layers' arithmetic differently)")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
