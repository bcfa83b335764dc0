"""torch.export.export of modules using quantize and dropout reproduces eager for the same state."""
import torch

import torch_rngx
from torch_rngx import functional as F


class Explicit(torch.nn.Module):
    """The state is an input: quantize noise, then dropout at the next stream position."""

    def forward(self, x, state):
        y = F.quantize_noise(x, state)
        advanced = state + torch.tensor([0, torch_rngx.blocks_used(x.numel(), x.dtype)])
        return F.dropout(torch.relu(y), advanced, 0.25)


class DefaultGenerator(torch.nn.Module):
    """generator=None: seeds come from torch's default generator, inside the exported program too."""

    def __init__(self):
        super().__init__()
        self.drop = torch_rngx.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch_rngx.quantize(x, "noise"))


def test_export_with_explicit_state():
    x, state = torch.randn(4, 8, 6, 6), torch.tensor([123, 4])
    ep = torch.export.export(Explicit(), (x, state))
    targets = {str(n.target) for n in ep.graph.nodes}
    assert {"rngx.quantize_noise.default", "rngx.dropout.default"} <= targets
    for s in (state, torch.tensor([-5, 2**40 + 1])):
        assert torch.equal(ep.module()(x, s), Explicit()(x, s))


def test_export_channels_last_dynamic_batch():
    x = torch.randn(4, 8, 6, 6).to(memory_format=torch.channels_last)
    batch = torch.export.Dim("batch", min=2)
    ep = torch.export.export(Explicit(), (x, torch.tensor([1, 0])), dynamic_shapes=({0: batch}, None))
    x2 = torch.randn(7, 8, 6, 6).to(memory_format=torch.channels_last)
    assert torch.equal(ep.module()(x2, torch.tensor([9, 9])), Explicit()(x2, torch.tensor([9, 9])))


def test_export_with_default_generator_follows_manual_seed():
    x = torch.randn(3, 5)
    ep = torch.export.export(DefaultGenerator(), (x,))
    torch.manual_seed(32)
    eager = DefaultGenerator()(x), DefaultGenerator()(x)
    torch.manual_seed(32)
    exported = ep.module()(x), ep.module()(x)
    assert torch.equal(eager[0], exported[0]) and torch.equal(eager[1], exported[1])
    assert not torch.equal(exported[0], exported[1])
