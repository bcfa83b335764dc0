"""Testing helpers for users' CI: torch.library.opcheck over every rngx op and a battery of inputs."""
from __future__ import annotations

from typing import Any, Iterator

import torch

from ._checks import FLOAT_DTYPES
from ._ops import ops

__all__ = ["layouts", "opcheck_all", "samples"]


def __dir__():
    return __all__


def layouts(dtype: torch.dtype, device: torch.device | str = "cpu") -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) pairs covering the memory layouts the ops must handle: contiguous, channels_last,
    transposed, sliced, expanded, with a storage offset, empty and 0-dim. No torch counterpart.

    Args:
        dtype (torch.dtype): the tensors' dtype.
        device (torch.device or str): where they live.

    Example::

        >>> [name for name, _ in torch_rngx.testing.layouts(torch.float32)][:3]
        ['contiguous', 'channels_last', 'transposed']
    """
    base = torch.randn(2, 3, 4, 5, dtype=torch.float32, device=device).to(dtype)
    return [
        ("contiguous", base),
        ("channels_last", base.to(memory_format=torch.channels_last)),
        ("transposed", base.transpose(1, 3)),
        ("sliced", base[:, 1:, ::2, 1:4]),
        ("expanded", torch.randn(1, 3, 1, 5, device=device).to(dtype).expand(2, 3, 4, 5)),
        ("storage_offset", base.view(-1)[7:67].view(3, 20)),
        ("empty", base[:, :0]),
        ("0-dim", base[0, 0, 0, 0]),
    ]


def samples(device: torch.device | str = "cpu") -> Iterator[tuple[Any, tuple]]:
    """No torch counterpart. (op, args) pairs: every op, every supported dtype and layout, with and without
    requires_grad.

    Args:
        device (torch.device or str): where the inputs live.

    Example::

        >>> op, args = next(iter(torch_rngx.testing.samples()))
        >>> op
        <OpOverload(op='rngx.seed_state', overload='default')>
    """
    state = torch.tensor([0x1234_5678_9ABC_DEF0, 13], dtype=torch.int64, device=device)
    batched = torch.stack([state, state + 1, state + 2]).view(3, 1, 1, 2)  # a key per slice of dim 0
    yield ops.seed_state.default, ()
    yield ops.take_.default, (state.clone(), 8)
    for dtype in FLOAT_DTYPES if torch.device(device).type == "cpu" else ():  # the CPU eager fast path's ops
        x = torch.randn(3, 5, device=device).to(dtype)
        yield ops.uniform_from_.default, (state.clone(), x, -1.5, 2.0, None)
        yield ops.quantize_noise_from_.default, (state.clone(), x, 0.5)
    for size in ([], [0], [7], [3, 5], [2, 0, 3]):
        for dtype in (torch.int32, torch.int64, torch.uint8):
            yield ops.bits.default, (size, state, dtype)
    yield ops.bits.default, ([3, 4, 5], batched, torch.int32)
    for keys in (state, batched, state.view(torch.uint64)):
        yield ops.split.default, (keys, 3)
        yield ops.fold_in.default, (keys, torch.tensor(5, device=device))
    yield ops.fold_in.default, (batched, torch.arange(3, device=device).view(3, 1, 1))
    for dtype in FLOAT_DTYPES:
        x = torch.randn(3, 4, 5, device=device).to(dtype).requires_grad_()
        yield ops.uniform.default, (x, batched, 0.0, 1.0, None)
        yield ops.quantize_noise.default, (x, batched, 0.5)
        yield ops.dropout.default, (x, batched, 0.3)
        for _, x in layouts(dtype, device):
            for requires_grad in (False, True):
                x = x.detach().requires_grad_(requires_grad)
                yield ops.uniform.default, (x, state, -1.5, 2.0, None)
                yield ops.quantize_noise.default, (x, state, 0.5)
                for p in (0.0, 0.3, 1.0):
                    yield ops.dropout.default, (x, state, p)
        yield ops.uniform.default, (torch.empty(3, 4, device=device), state, 0.0, 1.0, dtype)
        # a global view: x is the block at (1, 2, 0) of a (6, 4, 5) tensor, batched keys over the global dim 0
        view = ([6, 4, 5], [1, 2, 0])
        wide = torch.stack([state + i for i in range(6)]).view(6, 1, 1, 2)
        xs = torch.randn(3, 2, 5, device=device).to(dtype).requires_grad_()
        yield ops.uniform.default, (xs, wide, -1.0, 1.0, None, *view)
        yield ops.quantize_noise.default, (xs, state, 0.5, *view)
        yield ops.dropout.default, (xs, wide, 0.3, *view)
        yield ops.normal.default, (xs, wide, 0.5, 2.0, None, *view)
        yield ops.truncated_normal.default, (xs, state, 0.0, 1.0, -2.0, 2.0, None, *view)
        yield ops.bernoulli.default, (xs, wide, 0.3, *view)
        yield ops.bernoulli_tensor.default, (xs, state, torch.full((5,), 0.4, device=device).to(dtype).expand(3, 2, 5),
                                             *view)
        yield ops.exponential.default, (xs, wide, 1.5, None, *view)
        yield from _sampler_samples(dtype, state, batched, device)
    yield ops.bits.default, ([3, 2, 5], state, torch.int64, [6, 4, 5], [1, 2, 0])
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        for _, x in layouts(torch.float32, device):
            yield ops.randint.default, (x, state, 0, 100, dtype)
        yield ops.randint.default, (torch.empty(3, 4, 5, device=device), batched, 2, 9, dtype)
        yield ops.randint.default, (torch.empty(3, 2, 5, device=device), state, -3, 100, dtype if dtype != torch.uint8
                                    else torch.int8, [6, 4, 5], [1, 2, 0])
    # multinomial's race: one key, a key per row, with (draws > 1) and without replacement (need > 1)
    weights = torch.rand(3, 5, dtype=torch.float64, device=device) + 0.1
    for keys in (state, batched.view(3, 1, 1, 2)):
        yield ops.race.default, (weights, keys, 1, 2)
        yield ops.race.default, (weights, keys, 4, 1)
    yield ops.race.default, (weights[0], state, 2, 1)


def _sampler_samples(dtype, state, batched, device):
    """normal, truncated_normal, bernoulli and exponential on every layout of one float dtype, with one key and
    batched."""
    x = torch.randn(3, 4, 5, device=device).to(dtype)
    yield ops.normal.default, (x, batched, 0.5, 2.0, None)
    yield ops.exponential.default, (x, batched, 2.0, None)
    yield ops.truncated_normal.default, (x, batched, 0.0, 1.0, -2.0, 2.0, None)
    yield ops.bernoulli.default, (x, batched, 0.3)
    for _, x in layouts(dtype, device):
        for requires_grad in (False, True):
            x = x.detach().requires_grad_(requires_grad)
            yield ops.normal.default, (x, state, 0.0, 1.0, None)
            yield ops.truncated_normal.default, (x, state, 1.0, 0.5, 0.0, 2.5, None)
            yield ops.bernoulli.default, (x, state, 0.3)
            p = torch.rand(x.shape[-1:] if x.dim() else (), device=device).to(dtype).expand(x.shape)
            yield ops.bernoulli_tensor.default, (x, state, p)
            yield ops.exponential.default, (x, state, 1.0, None)
    yield ops.normal.default, (torch.empty(3, 4, device=device), state, 0.0, 1.0, dtype)
    yield ops.exponential.default, (torch.empty(3, 4, device=device), state, 0.5, dtype)


def opcheck_all(device: torch.device | str = "cpu") -> int:
    """Runs ``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch) on every sample.
    Raises on the first failure, naming the op and input; returns the number of samples checked (720 on the CPU:
    about two minutes of CPU time).

    Args:
        device (torch.device or str): where the inputs live ("cuda" checks the CUDA kernels).

    Example::

        >>> n = torch_rngx.testing.opcheck_all()  # doctest: +SKIP
    """
    n = 0
    for op, args in samples(device):
        try:
            torch.library.opcheck(op, args)
        except Exception as e:
            shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args]
            raise AssertionError(f"opcheck failed for {op} with args {shapes}: {e}") from e
        n += 1
    return n
