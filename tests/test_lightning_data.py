"""torch_rngx.data.DataLoader in the frameworks that run training loops for their users (docs/guide.md, "Data loading";
docs/guarantees.md): Lightning trains on it unchanged with any num_workers, saves its state in a checkpoint and
resumes mid-epoch exactly, and on 2 ranks each sample is the single-process loader's, every sample read once an
epoch, whether the loader is made in a hook or before fit. Accelerate's prepare() makes a loader of its own from the
dataset, so the guide's recipe leaves ours unprepared. Needs Lightning and Accelerate: `make interop` installs them in
.venv-cuda and runs this file there."""
import glob
import logging
import os
import subprocess
import sys
import warnings

import pytest
import torch

if not os.environ.get("RNGX_REQUIRE_LIGHTNING"):  # set by `make interop`, where a missing Lightning must fail
    pytest.importorskip("lightning", reason="Lightning is not installed here; `make interop` installs and runs it")
    pytest.importorskip("accelerate", reason="Accelerate is not installed here; `make interop` installs and runs it")
import accelerate  # noqa: E402
import lightning as L  # noqa: E402

import lightning_ddp  # noqa: E402
import torch_rngx  # noqa: E402
from lightning_ddp import BATCH, EPOCHS, SAMPLES, SEED, Augmented  # noqa: E402

pytestmark = [
    pytest.mark.key_reuse_ok("reads the same epochs again, each time to compare with the first"),
    pytest.mark.filterwarnings("ignore::UserWarning"),  # Lightning's advice on workers, logging and CPUs
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
HERE = os.path.dirname(os.path.abspath(__file__))


def _single_process():
    """{(epoch, index): values} of the loader read in this process, one rank, no workers."""
    loader = torch_rngx.data.DataLoader(Augmented(), batch_size=BATCH, shuffle=True, seed=SEED)
    return {(epoch, i): v for epoch in range(EPOCHS) for indices, values in loader
            for i, v in zip(indices.tolist(), values)}


def _fit(workers, checkpoints=None, resume=None):
    """Lightning trains lightning_ddp.Model on 1 CPU device for EPOCHS epochs; returns what its steps saw and the
    final weights. checkpoints: a folder for a checkpoint every 4 steps (mid-epoch: 6 steps an epoch); resume: a
    checkpoint to resume from."""
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    torch.manual_seed(0)
    model = lightning_ddp.Model()
    callbacks = [L.pytorch.callbacks.ModelCheckpoint(dirpath=checkpoints, every_n_train_steps=4, save_top_k=-1)]
    trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=checkpoints is not None,
                        callbacks=callbacks if checkpoints is not None else None)
    loader = torch_rngx.data.DataLoader(Augmented(), batch_size=BATCH, shuffle=True, seed=SEED, num_workers=workers,
                                        persistent_workers=workers > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, loader, ckpt_path=resume)
    return model.seen, torch.cat([p.detach().flatten() for p in model.parameters()])


def _same(a, b):
    return len(a) == len(b) and all(x[0] == y[0] and torch.equal(x[1], y[1]) and torch.equal(x[2], y[2])
                                    for x, y in zip(a, b))


def test_lightning_trains_on_it_with_any_workers_and_resumes_mid_epoch_exactly(tmp_path):
    """Lightning saves the loader's state_dict in its checkpoints (a loader with state_dict and load_state_dict is
    stateful to it): resumed from a checkpoint after 4 of an epoch's 6 steps, with 2 workers where the run had none,
    the steps see the rest of the uninterrupted run's batches and end at its weights, bit for bit."""
    seen, weights = _fit(0, checkpoints=str(tmp_path))
    assert len(seen) == EPOCHS * SAMPLES // BATCH and not torch.equal(seen[0][2], seen[6][2])
    assert _same(_fit(2)[0], seen), "2 workers: the same batches"
    checkpoint = glob.glob(str(tmp_path / "epoch=0-step=4*.ckpt"))[0]
    saved = torch.load(checkpoint, weights_only=False)["loops"]["fit_loop"]["state_dict"]["combined_loader"]
    assert saved == [{"epoch": 0, "position": 4, "seed": SEED, "length": SAMPLES, "world_size": 1, "batch_size": 4}]
    rest, resumed_weights = _fit(2, resume=checkpoint)
    assert _same(rest, seen[4:]) and torch.equal(resumed_weights, weights)


@pytest.mark.parametrize("where", ["hook", "before"])
def test_on_two_ranks_each_sample_is_the_single_process_ones(where, tmp_path):
    """Lightning's DDP on 2 CPU ranks: made in train_dataloader, the loader splits the epoch's order in ranks itself
    (a DistributedSampler by type, so Lightning does not wrap it and cut each part again); made before fit, Lightning
    wraps its order in a DistributedSampler of its own (keeping the seed, an attribute of the loader). Either way every
    sample is read once an epoch, each bitwise the single-process loader's."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, os.path.join(HERE, "lightning_ddp.py"), where, str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    single = _single_process()
    ranks = [torch.load(tmp_path / f"seen_{rank}.pt", weights_only=False) for rank in (0, 1)]
    for epoch in range(EPOCHS):
        read = [[i for e, indices, _ in seen if e == epoch for i in indices.tolist()] for seen in ranks]
        assert sorted(read[0] + read[1]) == list(range(SAMPLES)), (epoch, read)
    for seen in ranks:
        for epoch, indices, values in seen:
            assert all(torch.equal(v, single[epoch, i]) for i, v in zip(indices.tolist(), values)), epoch


def test_accelerate_prepare_makes_a_loader_of_its_own_and_the_recipe_leaves_ours_unprepared():
    """Accelerate's prepare() builds its DataLoaderShard from the loader's dataset and sampler, without the scope
    around each sample: the guide's recipe prepares the model and optimizer and iterates our loader itself, which then
    reads the same batches with 0 and 2 workers."""
    loader = torch_rngx.data.DataLoader(Augmented(), batch_size=BATCH, shuffle=True, seed=SEED)
    accelerator = accelerate.Accelerator(cpu=True)
    assert not isinstance(accelerator.prepare(loader), torch_rngx.data.DataLoader)

    def train(workers):
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        model, optimizer = accelerator.prepare(model, optimizer)
        loader = torch_rngx.data.DataLoader(Augmented(), batch_size=BATCH, shuffle=True, seed=SEED,
                                            num_workers=workers, rank=accelerator.process_index,
                                            world_size=accelerator.num_processes)
        seen = []
        for _ in range(EPOCHS):
            for indices, values in loader:
                values = values.to(accelerator.device)
                loss = model(values).pow(2).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
                seen.append((0, indices, values))
        return seen

    assert _same(train(0), train(2))
