"""A small learned image codec in the style of CompressAI: analysis transform, an entropy bottleneck with a
factorized density (Ballé et al. 2018), dropout, synthesis transform. Its quantize() is torch_rngx's, so
eager and torch.compile(fullgraph=True) training see the same noise and the same dropout masks."""
import torch
import torch.nn.functional as F
from torch import nn

import torch_rngx


def _softsign(v):
    return v / (1 + v.abs())


class EntropyBottleneck(nn.Module):
    """Per-channel cumulative density c(y) = (1 + softsign(f(y))) / 2, with f a small monotone MLP per
    channel; the likelihood of a quantization bin is c(y + 1/2) - c(y - 1/2). Training adds uniform noise
    instead of rounding (torch_rngx.quantize), evaluation rounds around the medians.

    CompressAI builds f from softplus/tanh/sigmoid and batched matmuls. Here the MLP layers are grouped 1x1
    convolutions with squared (non-negative) weights, and the nonlinearities are add/multiply/divide. The
    point: eager and Inductor then round every operation the same way (convolutions and their gradients run
    in the same library, while Inductor's fused transcendentals may differ from eager's in the last bit),
    so the demo can show bitwise equality of everything, not only of the random numbers."""

    def __init__(self, channels, filters=(3, 3)):
        super().__init__()
        dims = (1, *filters, 1)
        scale = 10.0 ** (1 / len(dims))
        self.channels = channels
        self.weights = nn.ParameterList(
            nn.Parameter(torch.full((channels * dims[i + 1], dims[i], 1, 1), (1 / scale / dims[i + 1]) ** 0.5))
            for i in range(len(dims) - 1))
        self.biases = nn.ParameterList(
            nn.Parameter(torch.rand(channels * dims[i + 1]) - 0.5) for i in range(len(dims) - 1))
        self.medians = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def _logits_cumulative(self, v):
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            v = F.conv2d(v, weight * weight, bias, groups=self.channels)
            if i < len(self.weights) - 1:
                v = v + 0.5 * _softsign(v)  # monotone: derivative 1 + 0.5 / (1 + |v|)^2 > 0
        return v

    def forward(self, y, generator=None):
        mode = "noise" if self.training else "dequantize"
        y_hat = torch_rngx.quantize(y, mode, self.medians, generator=generator)
        upper, lower = self._logits_cumulative(y_hat + 0.5), self._logits_cumulative(y_hat - 0.5)
        likelihood = ((_softsign(upper) - _softsign(lower)) / 2).clamp_min(1e-9)
        return y_hat, likelihood


class TinyCodec(nn.Module):
    def __init__(self, n=16, p=0.1, generator=None):
        super().__init__()
        self.g_a = nn.Sequential(nn.Conv2d(3, n, 5, 2, 2), nn.ReLU(), nn.Conv2d(n, n, 5, 2, 2))
        self.entropy_bottleneck = EntropyBottleneck(n)
        self.dropout = torch_rngx.nn.Dropout(p, generator=generator)
        self.g_s = nn.Sequential(nn.ConvTranspose2d(n, n, 5, 2, 2, 1), nn.ReLU(), nn.ConvTranspose2d(n, 3, 5, 2, 2, 1))
        self.generator = generator

    def forward(self, x):
        y_hat, likelihood = self.entropy_bottleneck(self.g_a(x), generator=self.generator)
        return self.g_s(self.dropout(y_hat)), likelihood
