"""The CompressAI scenario: an entropy bottleneck whose quantize() is torch_rngx.quantize. Under
torch.manual_seed(32), eager and torch.compile(fullgraph=True) give bitwise equal outputs and x.grad
(CompressAI's own test_compiling only manages allclose, and fails with torch's uniform_ noise)."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from entropy_bottleneck import EntropyBottleneck, TinyCodec  # noqa: E402

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare eager against compiled training")


def forward_backward(module, x):
    x = x.detach().clone().requires_grad_()
    torch.manual_seed(32)
    y_hat, likelihood = module(x)
    grads = [torch.autograd.grad(out, x, torch.linspace(-1, 1, out.numel()).view(out.shape), retain_graph=True)[0]
             for out in (y_hat, likelihood)]
    return y_hat, likelihood, grads


@pytest.mark.parametrize("channels_last", [False, True])
@REUSES_KEYS
def test_entropy_bottleneck_compiled_equals_eager(channels_last):
    torch.manual_seed(0)
    eb = EntropyBottleneck(32)
    x = torch.rand(2, 32, 16, 16) * 8 - 4
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    eager = forward_backward(eb, x)
    compiled = forward_backward(torch.compile(eb, fullgraph=True), x)
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])
    assert all(torch.equal(a, b) for a, b in zip(eager[2], compiled[2]))
    assert not torch.equal(eager[0], torch.round(x)), "training mode must add noise"


@REUSES_KEYS
def test_codec_compiled_equals_eager_and_eval_is_deterministic():
    torch.manual_seed(0)
    codec = TinyCodec()
    x = torch.rand(2, 3, 32, 32)
    eager = forward_backward(codec, x)
    compiled_codec = torch.compile(codec, fullgraph=True)
    compiled = forward_backward(compiled_codec, x)
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])
    assert all(torch.equal(a, b) for a, b in zip(eager[2], compiled[2]))
    codec.eval()
    with torch.no_grad():
        assert torch.equal(codec(x)[0], codec(x)[0])
