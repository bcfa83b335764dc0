"""torch_rngx.data.DataLoader under Hugging Face's Trainer (docs/guide.md, "Data loading": Hugging Face's Trainer;
docs/guarantees.md): with get_train_dataloader returning the loader, the Trainer trains on the same batches for any
dataloader_num_workers and resumes exactly from a checkpoint at an epoch's end. Mid-epoch, the Trainer's own resume
skips batches through a plain torch DataLoader over the dataset, which loses the loader's scope: the guide's callback
(ignore_data_skip=True, the loader told where the checkpoint's step left its epoch) resumes exactly instead. Needs
transformers and Accelerate: `make interop` installs them in .venv-cuda and runs this file there."""
import math
import os
import random

import numpy as np
import pytest
import torch

if not os.environ.get("RNGX_REQUIRE_LIGHTNING"):  # set by `make interop`, where a missing package must fail
    pytest.importorskip("transformers", reason="transformers is not installed here; `make interop` installs it")
    pytest.importorskip("accelerate", reason="Accelerate is not installed here; `make interop` installs and runs it")
import transformers  # noqa: E402

import torch_rngx  # noqa: E402

pytestmark = [
    pytest.mark.key_reuse_ok("reads the same epochs again, each time to compare with the first"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]
STEPS = 12  # two epochs of 6 batches of 4


class Noisy(torch.utils.data.Dataset):
    """Each sample draws from torch, Python's random and NumPy."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        x = torch.randn(8) + random.random() + float(np.random.rand())
        return {"x": x, "labels": x.sum(0, keepdim=True)}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 1)

    def forward(self, x, labels):
        return {"loss": (self.lin(x) - labels).pow(2).mean()}


class Trainer(transformers.Trainer):
    def get_train_dataloader(self):
        return torch_rngx.data.DataLoader(self.train_dataset, batch_size=4, shuffle=True, seed=3,
                                          num_workers=self.args.dataloader_num_workers,
                                          collate_fn=transformers.default_data_collator)


class ResumeLoader(transformers.TrainerCallback):
    """The guide's recipe: with ignore_data_skip=True, the loader resumes where the checkpoint's step left its
    epoch, as the Trainer counts steps."""

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
        per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
        epoch, updates = divmod(state.global_step, per_epoch)
        position = updates * args.gradient_accumulation_steps
        train_dataloader.load_state_dict({**train_dataloader.state_dict(), "epoch": epoch, "position": position})


class Losses(transformers.TrainerCallback):
    def __init__(self):
        self.seen = {}

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.seen[state.global_step] = logs["loss"]


def _train(out, workers, resume=None, save_steps=None, recipe=False):
    """{step: loss} and the final parameters of STEPS steps (from the checkpoint `resume` if given)."""
    args = transformers.TrainingArguments(
        str(out), per_device_train_batch_size=4, max_steps=STEPS, logging_steps=1, learning_rate=0.05, seed=0,
        save_strategy="steps" if save_steps else "no", save_steps=save_steps or STEPS, report_to=[], use_cpu=True,
        dataloader_num_workers=workers, disable_tqdm=True, ignore_data_skip=recipe,
    )
    losses = Losses()
    torch.manual_seed(0)  # the model's initial weights
    trainer = Trainer(model=Model(), args=args, train_dataset=Noisy(),
                      callbacks=[losses] + ([ResumeLoader()] if recipe else []))
    trainer.train(resume_from_checkpoint=resume)
    return losses.seen, [p.detach().clone() for p in trainer.model.parameters()]


def _same(run, other):
    return run[0] == other[0] and all(torch.equal(a, b) for a, b in zip(run[1], other[1]))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("uninterrupted"), workers=0)


def test_the_trainer_reads_the_same_batches_for_any_workers(uninterrupted, tmp_path):
    assert len(uninterrupted[0]) == STEPS
    assert _same(_train(tmp_path, workers=2), uninterrupted)


def test_the_trainer_resumes_exactly_from_an_epochs_end(uninterrupted, tmp_path):
    _train(tmp_path, workers=0, save_steps=6)
    losses, params = _train(tmp_path, workers=2, resume=str(tmp_path / "checkpoint-6"))
    assert losses == {s: v for s, v in uninterrupted[0].items() if s > 6}
    assert all(torch.equal(a, b) for a, b in zip(params, uninterrupted[1]))


@pytest.mark.parametrize("recipe", [True, False], ids=["the-guides-callback", "the-trainers-own-skip"])
def test_a_mid_epoch_resume_is_exact_with_the_guides_callback(recipe, uninterrupted, tmp_path):
    """Checkpoint at step 8 (batch 2 of epoch 1) with 0 workers, resumed with 2. Without the callback, the Trainer's
    skip reads the rest of the epoch through a loader of its own: other batches, which the guide says."""
    _train(tmp_path, workers=0, save_steps=8, recipe=recipe)
    losses, params = _train(tmp_path, workers=2, resume=str(tmp_path / "checkpoint-8"), recipe=recipe)
    want = {s: v for s, v in uninterrupted[0].items() if s > 8}
    same = losses == want and all(torch.equal(a, b) for a, b in zip(params, uninterrupted[1]))
    assert same == recipe and sorted(losses) == sorted(want)
