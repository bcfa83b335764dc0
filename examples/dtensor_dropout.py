"""Tensor parallelism: the same dropout whatever the sharding. 4 processes, gloo on the CPU, a (2, 2) device mesh.
Run: `.venv/bin/python examples/dtensor_dropout.py` (from the repository root, after `make build`).

One activation of shape (6, 10), dropped out with one key under five layouts: DTensor Shard(0), Shard(1),
(Shard(0), Shard(1)), Replicate, and plain local blocks with global_shape/global_start. Every rank computes only
its own block, with no communication; gathered, each layout gives the single-process result bit for bit. The key is
shared by all ranks: the ranks hold pieces of one tensor, so they draw from one stream. Exit status 0 iff all match.
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

import torch_rngx.functional as rf

WORLD, SHAPE, P = 4, (6, 10), 0.5


def worker(rank, init_file, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    mesh = init_device_mesh("cpu", (2, 2))
    x = torch.ones(SHAPE)  # the same activation on every rank (a real model computes its block only)
    key = rf.key(1234)  # the same key on every rank
    results = {}
    for placements in ([Shard(0), Replicate()], [Replicate(), Shard(1)], [Shard(0), Shard(1)],
                       [Replicate(), Replicate()]):
        y = rf.dropout(distribute_tensor(x, mesh, placements), key, P)  # a DTensor with the same placements
        results[str(placements)] = y.full_tensor()
    # Plain tensors: rank r holds rows [2r, 2r + 2) of the (6, 10) tensor, so rank 3's block is empty.
    begin = min(rank * 2, SHAPE[0])
    local = x[begin:begin + 2]
    mine = rf.dropout(local, key, P, global_shape=SHAPE, global_start=(begin, 0))
    blocks = [None] * WORLD
    dist.all_gather_object(blocks, mine)
    results["plain blocks with global_shape/global_start"] = torch.cat(blocks)
    if rank == 0:
        torch.save(results, os.path.join(out_dir, "result.pt"))
    dist.destroy_process_group()


def main():
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(worker, args=(os.path.join(out_dir, "init"), out_dir), nprocs=WORLD)
        results = torch.load(os.path.join(out_dir, "result.pt"))
    single = rf.dropout(torch.ones(SHAPE), rf.key(1234), P)  # one process, the whole tensor
    ok = True
    for layout, full in results.items():
        same = torch.equal(full.view(torch.int32), single.view(torch.int32))
        ok &= same
        print(f"{layout:45s} equals the single-process dropout bit for bit: {'yes' if same else 'NO'}")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
