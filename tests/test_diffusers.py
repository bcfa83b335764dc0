"""A diffusion training step we did not write: diffusers' own UNet2DModel (with dropout in its ResNet blocks) and its
DDPMScheduler, unmodified, trained under torch_rngx.mode(seed=s). The loop draws the noise (torch.randn_like) and
the timesteps (torch.randint) as diffusers' examples do, the UNet draws its dropout masks; every one is routed, so
the step compiled (aot_eager, fullgraph) gives eager's losses, gradients and weights bit for bit, and torch's default
generator never moves. diffusers needs no torchvision: the Makefile installs it with the suite's venv."""
import copy

import diffusers  # installed by the Makefile's venv rule
import pytest
import torch

import torch_rngx

pytestmark = pytest.mark.slow("trains a diffusers UNet under aot_eager")

IMAGES = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(1)) * 2 - 1


def _unet():
    torch.manual_seed(0)
    return diffusers.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                                 block_out_channels=(8, 16), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                 up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4,
                                 attention_head_dim=4, dropout=0.2).train()


SCHEDULER = diffusers.DDPMScheduler(num_train_timesteps=100)


def _loss(unet, images):
    """One DDPM training loss, as diffusers' train_unconditional example computes it."""
    noise = torch.randn_like(images)
    timesteps = torch.randint(0, SCHEDULER.config.num_train_timesteps, (images.shape[0],), device=images.device)
    noisy = SCHEDULER.add_noise(images, noise, timesteps)
    return torch.nn.functional.mse_loss(unet(noisy, timesteps).sample, noise)


def _train(unet, backend, steps=3):
    """`steps` SGD steps under mode(seed=7): the losses, each step's gradients, torch's generator untouched."""
    opt = torch.optim.SGD(unet.parameters(), lr=0.1)
    loss_of = torch.compile(_loss, fullgraph=True, backend=backend) if backend else _loss
    before, losses, grads = torch.get_rng_state(), [], []
    with torch_rngx.mode(seed=7, uncovered="error"):
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_of(unet, IMAGES)
            loss.backward()
            grads.append([p.grad.clone() for p in unet.parameters()])
            opt.step()
            losses.append(loss.detach())
    assert torch.equal(torch.get_rng_state(), before), "torch's default generator must not move"
    return torch.stack(losses), grads


def test_a_diffusion_training_step_compiles_as_eager():
    torch._dynamo.reset()
    unet = _unet()
    twin = copy.deepcopy(unet)
    eager, eager_grads = _train(unet, None)
    compiled, compiled_grads = _train(twin, "aot_eager")
    assert torch.equal(eager, compiled), (eager - compiled).abs().max()
    for want, got in zip(eager_grads, compiled_grads, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(want, got, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(unet.parameters(), twin.parameters()))
    assert len(set(eager.tolist())) == 3, "each step draws new noise, timesteps and masks"


def test_the_draws_are_the_modes_and_the_seed_moves_them():
    """The noise, timesteps and masks come from the mode's stream: the same seed gives the same losses, another seed
    others; without the mode the same loop draws torch's generator, which it moves."""
    unet = _unet()

    def first_loss(seed):
        with torch_rngx.mode(seed=seed, uncovered="error"):
            return _loss(unet, IMAGES).item()

    assert first_loss(7) == first_loss(7) != first_loss(8)
    before = torch.get_rng_state()
    _loss(unet, IMAGES)
    assert not torch.equal(torch.get_rng_state(), before)
