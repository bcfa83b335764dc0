"""make demo: trains a tiny CompressAI-style codec for a few steps, eager and torch.compile(fullgraph=True),
from the same seed, and shows that losses, outputs and every gradient are bitwise equal.

The noise in quantize() and the dropout masks come from torch_rngx with generator=None, i.e. from seeds
drawn from torch's default generator, so torch.manual_seed alone makes both runs reproducible."""
import copy
import math
import time

import torch
from entropy_bottleneck import TinyCodec

STEPS, LMBDA = 6, 0.01

# Inductor may switch convolutions to channels_last, and the convolution library then sums gradients in
# another order than eager's: an ulp-level difference that has nothing to do with random numbers.
torch._inductor.config.layout_optimization = False


def loss_fn(x, x_hat, likelihood):
    """Rate-distortion loss, computed eagerly for both runs (it is outside the compiled model)."""
    bpp = -torch.log2(likelihood).sum() / (x.shape[0] * x.shape[2] * x.shape[3])
    return LMBDA * 255**2 * torch.mean((x - x_hat) ** 2) + bpp


def train(model, forward, images):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    torch.manual_seed(32)
    losses, outputs, grads, times = [], [], [], []
    for step in range(STEPS):
        x = images[step % len(images)]
        start = time.perf_counter()
        optimizer.zero_grad()
        x_hat, likelihood = forward(x)
        loss = loss_fn(x, x_hat, likelihood)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.detach())
        outputs.append((x_hat.detach(), likelihood.detach()))
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    return losses, outputs, grads, times


def bitwise(a, b):
    return all(torch.equal(u, v) for u, v in zip(a, b))


def main():
    torch.manual_seed(0)
    images = [torch.rand(4, 3, 64, 64) for _ in range(3)]
    eager_model = TinyCodec(n=32, p=0.1)
    compiled_model = copy.deepcopy(eager_model)
    print(f"training {STEPS} steps, eager and torch.compile(fullgraph=True), torch {torch.__version__}")
    eager = train(eager_model, eager_model, images)
    compiled = train(compiled_model, torch.compile(compiled_model, fullgraph=True), images)

    same_losses = bitwise(eager[0], compiled[0])
    same_outputs = all(bitwise(e, c) for e, c in zip(eager[1], compiled[1]))
    same_grads = all(bitwise(e, c) for e, c in zip(eager[2], compiled[2]))
    same_params = bitwise(eager_model.parameters(), compiled_model.parameters())
    for step, (le, lc) in enumerate(zip(eager[0], compiled[0])):
        print(f"step {step}: loss eager {le.item():.6f}  compiled {lc.item():.6f}  bitwise equal: {torch.equal(le, lc)}")
    print(f"losses bitwise equal:      {same_losses}")
    print(f"outputs bitwise equal:     {same_outputs}  (reconstructions and likelihoods, every step)")
    print(f"gradients bitwise equal:   {same_grads}  (all {len(eager[2][0])} trained parameters, every step)")
    print(f"parameters bitwise equal:  {same_params}  (after {STEPS} SGD steps)")
    median = lambda ts: sorted(ts)[len(ts) // 2]  # noqa: E731
    print(f"step time, median of steps 2..{STEPS}: eager {median(eager[3][1:]) * 1e3:.1f} ms, "
          f"compiled {median(compiled[3][1:]) * 1e3:.1f} ms (first compiled step, compiling: {compiled[3][0]:.1f} s)")
    if not (same_losses and same_outputs and same_grads and same_params and all(map(math.isfinite, map(float, eager[0])))):
        raise SystemExit("FAILED: eager and compiled training differ")


if __name__ == "__main__":
    main()
