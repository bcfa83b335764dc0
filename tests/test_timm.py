"""timm models, unmodified, after one nn.convert(model, seed=s): a ViT with stochastic depth, attention, projection and
head dropout (its fused SDPA attention and its eager attention) and a ConvNeXt with stochastic depth, from small
configs with random weights. timm draws its masks itself (DropPath's x.new_empty(shape).bernoulli_(keep), nn.Dropout,
SDPA's dropout_p); every one is routed, so 3 training steps compiled (aot_eager, fullgraph) give eager's losses,
gradients and weights bit for bit, and torch's default generator never moves. Needs timm, whose torchvision needs
torch's CUDA build: `make interop` installs both in .venv-cuda and runs this file there; elsewhere it skips."""
import copy
import os

import pytest
import torch

if not os.environ.get("RNGX_REQUIRE_VISION"):  # set by `make interop`, where a missing timm must fail
    pytest.importorskip("timm", reason="timm is not installed here; `make interop` installs and runs it")
import timm.models  # noqa: E402

import torch_rngx  # noqa: E402

IMAGES = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
LABELS = torch.tensor([0, 1, 2, 3])


def _vit(fused_attention):
    model = timm.models.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=5,
                                          drop_rate=0.1, proj_drop_rate=0.1, attn_drop_rate=0.2, drop_path_rate=0.3)
    for block in model.blocks:
        block.attn.fused_attn = fused_attention  # SDPA with dropout_p, or softmax then nn.Dropout
    return model


def _convnext():
    return timm.models.ConvNeXt(in_chans=3, num_classes=5, depths=(1, 1, 1, 1), dims=(8, 8, 16, 16), drop_path_rate=0.3,
                                ls_init_value=1.0, drop_rate=0.1)


MODELS = {"vit_fused_attention": lambda: _vit(True), "vit_eager_attention": lambda: _vit(False),
          "convnext_drop_path": _convnext}


def _train(model, backend, steps=3):
    """`steps` SGD steps: the losses and each step's gradients."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    forward = torch.compile(model, fullgraph=True, backend=backend) if backend else model
    losses, grads = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(forward(IMAGES), LABELS)
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), grads


@pytest.mark.parametrize("name", MODELS)
def test_a_converted_timm_model_trains_compiled_as_eager(name):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = MODELS[name]().train()
    torch_rngx.nn.convert(model, seed=1234)
    twin, start = copy.deepcopy(model), model.rngx_state.clone()
    before = torch.get_rng_state()
    eager, eager_grads = _train(model, None)
    compiled, compiled_grads = _train(twin, "aot_eager")
    assert torch.equal(torch.get_rng_state(), before), "torch's default generator must not move"
    assert torch.equal(eager, compiled), (eager - compiled).abs().max()
    for want, got in zip(eager_grads, compiled_grads, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(want, got, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))
    assert torch.equal(model.rngx_state, twin.rngx_state)
    assert not torch.equal(model.rngx_state, start), "the masks must come from the model's stream"
    assert len(set(eager.tolist())) == 3
