"""One rank of tests/test_distributed.py's torch_rngx.data run, started as tests/distributed_worker.py is:
`python data_worker.py SUITE RANK WORLD MESH INIT_FILE` (SUITE and MESH unused). The loader takes its rank and world
size from torch.distributed (gloo), reads with two forked workers, and every sample it reads must be bitwise the
single-process loader's sample of that index; the ranks' indices, gathered, must be DistributedSampler's split of the
epoch's order. Exit status 1 on any failure."""
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from test_data import BATCH, EPOCHS, N, SEED, Augmented, _epochs
from torch_rngx.data import DataLoader


def main(rank, world, init):
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    alone = [{int(i): v for batch in epoch for i, v in zip(*batch)}
             for epoch in _epochs(DataLoader(Augmented(), BATCH, shuffle=True, seed=SEED, rank=0, world_size=1))]
    ours = _epochs(DataLoader(Augmented(), BATCH, shuffle=True, seed=SEED, num_workers=2))  # rank, world: dist's
    failures = []
    for epoch, batches in enumerate(ours):
        indices = [int(i) for i, _ in batches for i in i]
        for i, v in ((int(i), v) for i, values in batches for i, v in zip(i, values)):
            if not torch.equal(v, alone[epoch][i]):
                failures.append(f"rank {rank}, epoch {epoch}: sample {i} differs from the single-process loader's")
        gathered = [None] * world
        dist.all_gather_object(gathered, indices)
        order = DataLoader(range(N), batch_size=None, shuffle=True, seed=SEED, rank=0, world_size=1)
        order.set_epoch(epoch)
        order = [int(i) for i in order]
        for r, got in enumerate(gathered):
            want = [order[j] for j in DistributedSampler(range(N), world, r, shuffle=False)]
            if got != want:
                failures.append(f"epoch {epoch}: rank {r} read {got}, DistributedSampler's split is {want}")
    dist.destroy_process_group()
    print("\n".join(failures) or f"rank {rank} of {world}: {EPOCHS} epochs, every sample the single process's")
    return 1 if failures else 0


if __name__ == "__main__":
    code = main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[5])
    sys.stdout.flush()
    # Past this point the run is judged. The interpreter's own teardown after gloo and forked DataLoader workers
    # aborted once in about ten runs ("terminate called without an active exception", after the rank had printed its
    # result and destroyed its process group): C++ destructors of torch's, not this test's subject, so they are skipped.
    os._exit(code)
