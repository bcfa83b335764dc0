"""Testing helpers for users' CI: torch.library.opcheck over every rngx op and a battery of inputs."""

from __future__ import annotations

from typing import Any, Iterator

import torch

from ._checks import FLOAT_DTYPES
from ._spec import SPECS, ops
from ._torch import argument_names

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
    yield ops.step_.default, (state.clone(), 8)
    fused = [spec for spec in SPECS.values() if spec.fused is not None]
    for dtype in FLOAT_DTYPES if torch.device(device).type == "cpu" else ():  # the CPU eager fast path's ops
        x = torch.randn(3, 5, device=device).to(dtype)
        for spec in fused:
            yield spec.fused_kernel.default, (state.clone(), x, *spec.examples(x)[0])
    for _, x in layouts(torch.float32, device) if torch.device(device).type == "cpu" else ():
        for spec in fused:
            yield spec.fused_kernel.default, (state.clone(), x, *spec.examples(x)[0])
    for size in ([], [0], [7], [3, 5], [2, 0, 3]):
        for dtype in (torch.int32, torch.int64, torch.uint8):
            yield ops.bits.default, (size, state, dtype)
    yield ops.bits.default, ([3, 4, 5], batched, torch.int32)
    for keys in (state, batched, state.view(torch.uint64)):
        yield ops.split.default, (keys, 3)
        yield ops.fold_in.default, (keys, torch.tensor(5, device=device))
    yield ops.fold_in.default, (batched, torch.arange(3, device=device).view(3, 1, 1))
    for spec in SPECS.values():
        yield from _spec_samples(spec, state, batched, device)
    yield ops.bits.default, ([3, 2, 5], state, torch.int64, [6, 4, 5], [1, 2, 0])
    # multinomial's race: one key, a key per row, with (draws > 1) and without replacement (need > 1)
    weights = torch.rand(3, 5, dtype=torch.float64, device=device) + 0.1
    for keys in (state, batched.view(3, 1, 1, 2)):
        yield ops.race.default, (weights, keys, 1, 2)
        yield ops.race.default, (weights, keys, 4, 1)
    yield ops.race.default, (weights[0], state, 2, 1)


# opcheck's gradient check sums the outputs, and float8 tensors have no sum: ops writing float8
# (stochastic_round) are checked without a gradient there (tests/test_sround.py checks theirs).
_NO_SUM = (torch.float8_e4m3fn, torch.float8_e5m2)


def _input_for(spec, x, params):
    """x, detached where the call's output has no sum."""
    return x.detach() if spec.out_dtype([x, None, *params]) in _NO_SUM else x


def _spec_samples(spec, state, batched, device):
    """One sampling op (_spec.Op) with each of its example params: batched keys, every layout of each input dtype
    with and without requires_grad, another output dtype, and a global view."""
    op = spec.kernel.default
    for dtype in spec.input_dtypes:
        x = torch.randn(3, 4, 5, device=device).to(dtype).requires_grad_()
        for params in spec.examples(x):
            yield op, (_input_for(spec, x, params), batched, *params)
        for _, x in layouts(dtype, device):
            for requires_grad in (False, True):
                x = x.detach().requires_grad_(requires_grad)
                for params in spec.examples(x):
                    yield op, (_input_for(spec, x, params), state, *params)
        plain = torch.empty(3, 4, device=device)
        params = spec.examples(plain)[0]
        if spec.out_dtype([plain, state, *params]) is None and "dtype" in argument_names(op):
            yield op, (plain, state, *params[:-1], dtype)
        # a global view: x is the block at (1, 2, 0) of a (6, 4, 5) tensor, batched keys over the global dim 0
        xs = torch.randn(3, 2, 5, device=device).to(dtype).requires_grad_()
        wide = torch.stack([state + i for i in range(6)]).view(6, 1, 1, 2)
        params = spec.examples(xs)[0]
        yield op, (_input_for(spec, xs, params), wide, *params, [6, 4, 5], [1, 2, 0])


def opcheck_all(device: torch.device | str = "cpu") -> int:
    """Runs ``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch) on every sample.
    Raises on the first failure, naming the op and input; returns the number of samples checked, one per item of
    ``samples(device)`` (on the CPU about two minutes of CPU time).

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
