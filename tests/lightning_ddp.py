"""One Lightning run of tests/test_lightning_data.py on 2 CPU ranks (strategy "ddp", gloo), as a user writes it:
`python lightning_ddp.py WHERE OUT`. WHERE says where the torch_rngx.data.DataLoader is made: "hook" (in the
LightningModule's train_dataloader, after the process group has started) or "before" (before Trainer.fit, passed to
it). Lightning's launcher starts rank 1 by running this file again; each rank saves what its training steps saw,
(epoch, indices, values) per batch, to OUT/seen_<rank>.pt."""
import logging
import os
import random
import sys
import warnings

import numpy as np
import torch

import torch_rngx

warnings.filterwarnings("ignore")  # Lightning's advice on workers, logging and the number of CPUs
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
import lightning as L  # noqa: E402

SAMPLES, BATCH, SEED, EPOCHS = 24, 4, 3, 2


class Augmented(torch.utils.data.Dataset):
    """(index, values): torch's, Python's and NumPy's random draws around each sample."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        return i, torch.full((4,), float(i)) + torch.randn(4) + random.random() + float(np.random.rand())


def loader():
    return torch_rngx.data.DataLoader(Augmented(), batch_size=BATCH, shuffle=True, seed=SEED, num_workers=2)


class Model(L.LightningModule):
    """A linear model; its training steps keep what they saw. The loader is given to Trainer.fit."""

    def __init__(self):
        super().__init__()
        self.linear, self.seen = torch.nn.Linear(4, 1), []

    def training_step(self, batch, index):
        indices, values = batch
        self.seen.append((self.current_epoch, indices.clone(), values.clone()))
        return self.linear(values).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class HookModel(Model):
    """The loader made in the module's hook, which Lightning calls once the process group has started."""

    def train_dataloader(self):
        return loader()


if __name__ == "__main__":
    where, out = sys.argv[1], sys.argv[2]
    model = HookModel() if where == "hook" else Model()
    trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=2, strategy="ddp", logger=False,
                        enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
    trainer.fit(model, None if where == "hook" else loader())
    torch.save(model.seen, os.path.join(out, f"seen_{trainer.global_rank}.pt"))
