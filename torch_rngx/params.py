"""The numbers that the device functions for users' own kernels take (docs: device_api/), computed on the host
once per call: torch_rngx.triton's `@triton.jit` functions and the C/CUDA header (torch_rngx.include_dir()) read
them. Each returns a small tensor on `device` (int64 for `view`, float64 else), checked as our ops check their
arguments."""

import math

import torch

from ._engine import checks


def _params(values, device):
    return torch.tensor(values, dtype=torch.float64, device=device)


def uniform_params(dtype, low=0.0, high=1.0, device="cpu"):
    """[lo, width] for `uniform`: the bounds rounded to dtype and their float32 difference rounded again
    (docs: stream/, "uniform"); float64 takes [low, high - low]."""
    checks.float_dtype(dtype, "dtype")
    low, high = checks.interval(low, high, dtype)
    if dtype == torch.float64:
        return _params([low, high - low], device)
    lo, hi = checks.round_to(low, dtype), checks.round_to(high, dtype)
    return _params([lo, checks.round_to(checks.round_to(hi - lo, torch.float32), dtype)], device)


def noise_params(dtype, half=0.5, device="cpu"):
    """[-half, 2 * half] for `quantize_noise`, in float32 for the <= 32-bit types."""
    checks.float_dtype(dtype, "dtype")
    half = checks.half_width(half, dtype=dtype)
    fl = (lambda v: v) if dtype == torch.float64 else (lambda v: checks.round_to(v, torch.float32))
    return _params([fl(-half), fl(2 * half)], device)


def dropout_params(dtype, p, device="cpu"):
    """[keep, scale] for `dropout_kept`, `dropout` and `bernoulli`: kept iff the integer behind u is >= keep =
    ceil(p * 2^24) (2^53 for float64), scale = 1 / (1 - p) (rounded to float32 for the <= 32-bit types)."""
    checks.float_dtype(dtype, "dtype")
    p = checks.probability(p)
    bits = 53 if dtype == torch.float64 else 24
    scale = math.inf if p == 1.0 else 1.0 / (1.0 - p)
    return _params([math.ceil(p * 2.0**bits), scale if bits == 53 else checks.round_to(scale, torch.float32)], device)


def normal_params(dtype, mean=0.0, std=1.0, device="cpu"):
    """[mean, std] for `normal`, rounded to float32 for the <= 32-bit types."""
    checks.float_dtype(dtype, "dtype")
    mean, std = checks.mean_std(mean, std, dtype)
    fl = (lambda v: v) if dtype == torch.float64 else (lambda v: checks.round_to(v, torch.float32))
    return _params([fl(mean), fl(std)], device)


def view(shape, state, global_shape=None, global_start=None):
    """Where each element of an output of `shape` draws (docs: stream/, "Batched states" and "Global view"), as
    an int64 tensor (ndim, 4) on state's device for `locate`: per dim its size, its start in the global tensor,
    the stream positions between neighbours and the int64 elements between keys in `state`."""
    shape = checks.size(shape, "shape")
    gshape, gstart = checks.global_view(shape, global_shape, global_start)
    gshape, gstart = (shape, [0] * len(shape)) if gshape is None else (gshape, gstart)
    checks.state(state, shape=gshape)
    if state.stride(-1) != 1:  # any other strides are the key strides below
        raise ValueError(
            f"state's [seed, offset] pairs must be adjacent (stride 1 in the last dim), got strides "
            f"{state.stride()}: the device functions read a key's offset right after its seed"
        )
    batch = list(state.shape[:-1]) if state.dim() > 1 else [1] * len(shape)
    e = max((d + 1 for d, b in enumerate(batch) if b != 1), default=0)  # dims < e pick the key
    rows, pos = [], 1
    for d in reversed(range(len(shape))):
        key_stride = state.stride(d) if d < e and batch[d] != 1 else 0
        rows.append([shape[d], gstart[d], 0 if d < e else pos, key_stride])
        pos *= 1 if d < e else gshape[d]
    return torch.tensor(rows[::-1], dtype=torch.int64, device=state.device).reshape(len(shape), 4)
