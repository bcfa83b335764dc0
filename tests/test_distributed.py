"""Guarantee (docs/distributed.md, docs/guarantees.md "Distributed"): sharding invariance on the real engine.

Processes started here, talking over torch.distributed's gloo backend on the CPU (world sizes 2 and 4, meshes (2,),
(4,) and (2, 2)), each run tests/distributed_worker.py, which checks:
- DTensor inputs, Shard(d) on every dim, Replicate, uneven shards and empty ones: every stateless and stateful op
  returns a DTensor with the input's placements whose full_tensor() equals the op on the whole tensor in one
  process, bit for bit, and whose local block equals DTensor's own slice of that result (so replicated parts are
  identical on every rank); dropout's backward likewise; the key as a plain tensor or a replicated DTensor;
- every rank's Generator and module state ends where the single-process run's does;
- the same under torch.compile(fullgraph=True), forward and backward, also when the ranks share one compile
  cache (which does not tell ranks apart);
- plain tensors with global_shape/global_start: the blocks of all ranks, gathered, are the single-process result;
- torch's own random calls (rand_like, randn_like, uniform_, F.dropout, bernoulli) under torch_rngx.mode on a DTensor,
  eager and compiled: the whole tensor's values under the mode in one process;
- a sharded key, a DTensor key with a plain input, a Partial input, or global_shape on a DTensor raise ValueError
  naming the argument;
- torch_rngx.data.DataLoader on 1, 2 and 3 ranks (tests/data_worker.py): each rank's samples are the single process's;
- stochastic_round (1, 2 and 4 ranks; Shard(0), Shard(1), Replicate()): every (input, target) pair, a Generator's
  draws and a compiled call give the whole tensor's bits, and a bfloat16 weight sharded as a DTensor and trained with
  torch_rngx.optim.stochastic_rounding ends where the whole weight does.

Slow (each process imports torch and compiles), so `make dist` runs this file, not `make test`.
"""
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "distributed_worker.py")


def launch(suite, world, mesh, timeout=600, worker=WORKER, **env):
    """Runs `world` ranks of the worker (with `env` added to the environment); fails with every rank's report unless
    all exit 0."""
    with tempfile.TemporaryDirectory() as folder:  # not pytest's tmp_path: other pytest runs may prune its folders
        _launch(suite, world, mesh, os.path.join(folder, "init"), timeout, env, worker)


def _launch(suite, world, mesh, init, timeout, extra_env, worker):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1",
               **extra_env)
    mesh_arg = ",".join(map(str, mesh))
    ranks = [subprocess.Popen([sys.executable, worker, suite, str(rank), str(world), mesh_arg, str(init)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in range(world)]
    reports = []
    try:
        for rank, proc in enumerate(ranks):
            out, _ = proc.communicate(timeout=timeout)
            reports.append((rank, proc.returncode, out))
    finally:
        for proc in ranks:
            if proc.poll() is None:
                proc.kill()
    if any(code != 0 for _, code, _ in reports):
        pytest.fail("\n".join(f"--- rank {rank} (exit {code})\n{out[-6000:]}" for rank, code, out in reports))


TWO = pytest.param(2, (2,), id="two_ranks")
FOUR = pytest.param(4, (4,), id="four_ranks")
GRID = pytest.param(4, (2, 2), id="grid_2x2")


@pytest.mark.parametrize("world, mesh", [TWO, FOUR, GRID])
def test_eager(world, mesh):
    launch("eager", world, mesh)


@pytest.mark.parametrize("world, mesh", [pytest.param(1, (1,), id="one_rank"), TWO, FOUR])
def test_stochastic_round(world, mesh):
    """Every (input, target) pair, stateless, stateful and compiled, and a bfloat16 weight trained with
    torch_rngx.optim.stochastic_rounding, under Shard(0), Shard(1) and Replicate(): the single-process bits."""
    launch("rounding", world, mesh)


@pytest.mark.parametrize("world, mesh", [TWO, GRID])
def test_compiled(world, mesh):
    launch("compiled", world, mesh)


@pytest.mark.parametrize("world, mesh", [TWO, GRID])
def test_torch_calls_routed_by_mode(world, mesh):
    launch("mode", world, mesh)


def test_compiled_code_cache_shared_by_ranks():
    """torch.compile caches compiled code by graph and DTensor metadata, which do not name the rank. Two runs share one
    cache folder, as ranks on one machine do: the second loads what the first compiled, and each rank must still
    compute its own block (equal blocks here, so running another rank's code would go unnoticed by shape checks)."""
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(2):
            launch("even", 2, (2,), TORCHINDUCTOR_CACHE_DIR=cache)


@pytest.mark.parametrize("world", [1, 2, 3])
def test_data_loader_ranks_read_the_single_processs_samples(world):
    """torch_rngx.data.DataLoader on each rank, its rank and world size from torch.distributed, two forked workers
    each (tests/data_worker.py): every sample is bitwise the single-process loader's, and the ranks' indices are
    DistributedSampler's split of the epoch's order (10 samples: 3 ranks pad it to 12)."""
    launch("data", world, (world,), worker=os.path.join(ROOT, "tests", "data_worker.py"))
