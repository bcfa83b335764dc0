"""Unmodified CompressAI models trained under torch_rngx.mode(seed=s): the quantization noise CompressAI draws itself
(EntropyBottleneck's torch.empty_like(x).uniform_(-0.5, 0.5)) is routed, so torch.compile'd training gives eager's
losses. Needs compressai, which `make interop` installs in .venv-cuda (torch 2.14.1, with torchvision) and runs this
file there; elsewhere it skips."""
import copy
import math
import os

import pytest
import torch

if not os.environ.get("RNGX_REQUIRE_VISION"):  # set by `make interop`, where a missing compressai must fail
    pytest.importorskip("compressai", reason="compressai is not installed here; `make interop` installs and runs it")
from compressai.models import FactorizedPrior  # noqa: E402

import torch_rngx  # noqa: E402

x = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))


def _model():
    torch.manual_seed(0)
    return FactorizedPrior(8, 12).train()


def _losses(model, backend, steps=3):
    """Rate + distortion over `steps` SGD steps, the whole loop under mode(seed=5); torch's generator untouched."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    # Not fullgraph: EntropyBottleneck.forward permutes by the values of a tensor, a graph break.
    forward = torch.compile(model, backend=backend) if backend else model
    before, losses = torch.get_rng_state(), []
    with torch_rngx.mode(seed=5, uncovered="error"):
        for _ in range(steps):
            opt.zero_grad()
            out = forward(x)
            bits = sum(p.log2().sum() for p in out["likelihoods"].values())
            loss = -bits / (x.shape[0] * x.shape[2] * x.shape[3]) + 100 * (out["x_hat"] - x).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    assert torch.equal(torch.get_rng_state(), before), "CompressAI's noise drew from torch's generator"
    return torch.stack(losses)


@pytest.mark.key_reuse_ok("trains one model from one seed twice, eager and compiled, to compare")
def test_factorized_prior_trains_bitwise_compiled_as_eager():
    """The captured graph run by eager kernels (aot_eager): the same losses bit for bit."""
    torch._dynamo.reset()
    model = _model()
    twin = copy.deepcopy(model)
    eager, compiled = _losses(model, None), _losses(twin, "aot_eager")
    assert torch.equal(eager, compiled), (eager - compiled).abs().max()
    assert len(set(eager.tolist())) == 3 and all(math.isfinite(v) for v in eager.tolist())
