"""The CompressAI scenario: an entropy bottleneck whose quantize() is torch_rngx.quantize. Under
torch.manual_seed(32), torch.compile(fullgraph=True) draws bitwise eager's noise: with the aot_eager backend (the
captured graph run by eager kernels) outputs and x.grad are bitwise equal. Inductor also generates its own code for
the deterministic arithmetic around the noise (the likelihood's sigmoids, the decoder's convolutions), whose
rounding may differ from eager's kernels by an ulp on some CPUs (AVX2 builds, for one); there the draws themselves
stay bitwise and the rest is compared within rounding. (CompressAI's own test_compiling only manages allclose,
and fails with torch's uniform_ noise.)"""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from entropy_bottleneck import EntropyBottleneck, TinyCodec  # noqa: E402

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare eager against compiled training")

pytestmark = pytest.mark.slow("trains a codec under Inductor")


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
    assert_bitwise(eager, forward_backward(torch.compile(eb, fullgraph=True, backend="aot_eager"), x))
    compiled = forward_backward(torch.compile(eb, fullgraph=True), x)
    # y_hat = x + noise and its gradient hold no Inductor arithmetic but the add: bitwise under Inductor too.
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[2][0], compiled[2][0])
    assert_within_rounding(eager, compiled)
    assert not torch.equal(eager[0], torch.round(x)), "training mode must add noise"


def assert_bitwise(eager, compiled):
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])
    assert all(torch.equal(a, b) for a, b in zip(eager[2], compiled[2]))


def assert_within_rounding(eager, compiled):
    """Other noise would move the outputs by O(1): a few float32 ulps can only come from the arithmetic."""
    for a, b in zip((eager[0], eager[1], *eager[2]), (compiled[0], compiled[1], *compiled[2])):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


@REUSES_KEYS
def test_codec_compiled_equals_eager_and_eval_is_deterministic():
    torch.manual_seed(0)
    codec = TinyCodec()
    x = torch.rand(2, 3, 32, 32)
    eager = forward_backward(codec, x)
    assert_bitwise(eager, forward_backward(torch.compile(codec, fullgraph=True, backend="aot_eager"), x))
    assert_within_rounding(eager, forward_backward(torch.compile(codec, fullgraph=True), x))
    codec.eval()
    with torch.no_grad():
        assert torch.equal(codec(x)[0], codec(x)[0])
