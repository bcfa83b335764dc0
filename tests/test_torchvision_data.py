"""torchvision's own transforms, v1 and v2, in torch_rngx.data.DataLoader and under torch_rngx.mode (docs/guarantees.md,
"Data loading"): each sample's augmentation is the same for 0, 2 and 3 workers, forked and spawned, every epoch draws
anew, the main process's generators do not move, and nothing is reported under uncovered="error". RandomResizedCrop
(v1) calls Tensor.uniform_ with two 0-dim tensors, which torch reads as numbers. CutMix and MixUp in collate_fn, as
torchvision's documentation places them, mix each batch the same for any workers. Needs torchvision, whose PyPI wheels
need torch's CUDA build: `make interop` installs it in .venv-cuda and runs this file there."""
import os
import random

import numpy as np
import pytest
import torch

if not os.environ.get("RNGX_REQUIRE_VISION"):  # set by `make interop`, where a missing torchvision must fail
    pytest.importorskip("torchvision", reason="torchvision is not installed here; `make interop` installs and runs it")
import torchvision.transforms as T  # noqa: E402
import torchvision.transforms.v2 as T2  # noqa: E402
from torch.utils.data import Dataset  # noqa: E402

import torch_rngx  # noqa: E402

pytestmark = [
    pytest.mark.key_reuse_ok("reads the same epochs again, each time to compare with the first"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),  # 3 workers on 2 cores, on purpose
]


class Images(Dataset):
    """Random images through torchvision's transforms as a training set writes them, v1 and v2."""

    def __init__(self):
        self.images = torch.rand(12, 3, 32, 32, generator=torch.Generator().manual_seed(0))
        self.v1 = T.Compose([T.RandomResizedCrop(20), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                             T.RandomErasing(p=0.5)])
        self.v2 = T2.Compose([T2.RandomResizedCrop(20), T2.RandomHorizontalFlip(), T2.RandomRotation(15),
                              T2.ColorJitter(0.4, 0.4, 0.4, 0.1), T2.RandomErasing(p=0.5), T2.GaussianNoise()])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.cat([self.v1(self.images[i]).flatten(), self.v2(self.images[i]).flatten()])


def _epochs(dataset, **options):
    loader = torch_rngx.data.DataLoader(dataset, batch_size=4, shuffle=True, seed=11, **options)
    return [torch.cat(list(loader)) for _ in range(2)]


def _main_generators():
    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()


@pytest.fixture(scope="module")
def reference():
    dataset = Images()
    before = _main_generators()
    epochs = _epochs(dataset)
    after = _main_generators()
    assert torch.equal(after[0], before[0]) and after[1] == before[1] and (after[2] == before[2]).all()
    assert not torch.equal(epochs[0], epochs[1]), "each epoch draws anew"
    return dataset, epochs


@pytest.mark.parametrize("options", [
    dict(num_workers=2),
    dict(num_workers=3, prefetch_factor=1, persistent_workers=True),
    dict(num_workers=2, multiprocessing_context="spawn", persistent_workers=True),
], ids=["2-forked", "3-forked-persistent", "2-spawned"])
def test_torchvision_transforms_give_each_sample_its_augmentation_in_any_worker(reference, options):
    dataset, want = reference
    before = _main_generators()
    got = _epochs(dataset, **options)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    after = _main_generators()
    assert torch.equal(after[0], before[0]) and after[1] == before[1] and (after[2] == before[2]).all()


def test_torchvision_transforms_under_a_mode_that_reports_everything(reference):
    """Inside torch_rngx.mode(uncovered="error"): nothing reported, the same batches, the mode's stream unmoved; and
    a transform called directly under the mode draws from the mode's stream, the same twice from one seed."""
    dataset, want = reference
    g = torch_rngx.Generator(3)
    with torch_rngx.mode(generator=g, uncovered="error"):
        got = _epochs(dataset, num_workers=2)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert g.get_offset() == 0
    direct = []
    for _ in range(2):
        torch.manual_seed(0)
        with torch_rngx.mode(seed=5, uncovered="error"):
            direct.append(dataset[0])
    assert torch.equal(direct[0], direct[1])


class Labelled(Dataset):
    """(image, label) pairs, for torchvision's CutMix and MixUp, which mix a batch and its labels."""

    def __init__(self):
        self.images = torch.rand(12, 3, 16, 16, generator=torch.Generator().manual_seed(1))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], i % 10


class CutMixOrMixUp:
    """collate_fn as torchvision's documentation writes it for CutMix and MixUp: default_collate, then one of the two
    chosen at random (RandomChoice: torch.randint), its lambda a Beta draw (torch._sample_dirichlet, left to torch's
    generator) and its pairing a roll of the batch; CutMix's box from torch.randint."""

    def __init__(self):
        self.choice = T2.RandomChoice([T2.CutMix(num_classes=10), T2.MixUp(num_classes=10)])

    def __call__(self, batch):
        return self.choice(*torch.utils.data.default_collate(batch))


def _mixed_epochs(**options):
    loader = torch_rngx.data.DataLoader(Labelled(), batch_size=4, shuffle=True, seed=11, collate_fn=CutMixOrMixUp(),
                                        **options)
    return [list(loader) for _ in range(3)]


def test_cutmix_and_mixup_in_collate_fn_draw_the_same_for_any_workers():
    """torchvision's CutMix and MixUp in collate_fn run under each batch's scope: the same mixed images and labels for
    0, 2 forked and 2 spawned workers, epochs that differ, and the main process's generators unmoved."""
    before = _main_generators()
    want = _mixed_epochs()
    after = _main_generators()
    assert torch.equal(after[0], before[0]) and after[1] == before[1] and (after[2] == before[2]).all()
    flat = [torch.cat([torch.cat([x.flatten(), y.flatten()]) for x, y in epoch]) for epoch in want]
    assert not torch.equal(flat[0], flat[1]) and not torch.equal(flat[1], flat[2]), "each epoch draws anew"
    for options in (dict(num_workers=2), dict(num_workers=2, multiprocessing_context="spawn")):
        got = _mixed_epochs(**options)
        pairs = [(a, b) for e, f in zip(got, want) for (x, y), (u, v) in zip(e, f) for a, b in ((x, u), (y, v))]
        assert len(pairs) == 18 and all(torch.equal(a, b) for a, b in pairs)
