"""The training run of tests/test_data.py's resume test: a small classifier with dropout (nn.convert's streams), SGD
with momentum, and torch_rngx.data.DataLoader over images augmented with torch (random crop), Python's random (flip)
and NumPy (noise). Run as a fresh process, it resumes from a checkpoint file:

    python data_training.py CHECKPOINT OUT NUM_WORKERS COMPILED

and saves the losses of the steps it ran and the final parameters in OUT.
"""
import random
import sys

import numpy as np
import torch
from torch.utils.data import Dataset

import torch_rngx

EPOCHS = 2


class Images(Dataset):
    def __init__(self, n=12):
        self.images = torch.rand(n, 1, 8, 8, generator=torch.Generator().manual_seed(0))
        self.labels = torch.arange(n) % 3

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        top, left = torch.randint(0, 3, (2,)).tolist()
        x = self.images[i][:, top : top + 6, left : left + 6]
        if random.random() < 0.5:
            x = x.flip(-1)
        x = x + 0.05 * torch.from_numpy(np.random.standard_normal(x.shape).astype(np.float32))
        return x.flatten(), self.labels[i]


def make(num_workers, compiled):
    """A fresh model, optimizer and loader (the same initial weights each time); the step compiled or not."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(36, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 3))
    model = torch_rngx.nn.convert(net, seed=1).model
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = torch_rngx.data.DataLoader(Images(), batch_size=4, shuffle=True, seed=2, num_workers=num_workers)
    forward = torch.compile(model, backend="aot_eager", fullgraph=True) if compiled else model
    return model, forward, opt, loader


def train(model, forward, opt, loader, stop=None):
    """Trains up to EPOCHS epochs from where the loader stands, or `stop` steps; returns the losses."""
    losses = []
    for epoch in range(loader.state_dict()["epoch"], EPOCHS):
        loader.set_epoch(epoch)  # names the epoch; a resumed one keeps its position
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
            if len(losses) == stop:
                return losses
    return losses


def save(path, model, opt, loader):
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "loader": loader.state_dict()}, path)


def resume(path, num_workers, compiled):
    """A fresh model, optimizer and loader restored from the file: the losses of the rest and the final parameters."""
    model, forward, opt, loader = make(num_workers, compiled)
    saved = torch.load(path)  # weights_only: tensors and plain containers
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    loader.load_state_dict(saved["loader"])
    return train(model, forward, opt, loader), model.state_dict()


if __name__ == "__main__":
    checkpoint, out, workers, compiled = sys.argv[1:]
    losses, state = resume(checkpoint, int(workers), compiled == "1")
    torch.save({"losses": torch.stack(losses), "state": state}, out)
