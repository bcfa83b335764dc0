"""Testing helpers for users' CI: torch.library.opcheck over every rngx op and a battery of inputs, as one call
(opcheck_all) or one pytest case each (opcheck_cases)."""

from __future__ import annotations

from typing import Any, Iterator

import torch

from ._engine.checks import FLOAT_DTYPES
from ._engine.spec import SPECS, rngx
from ._engine.torch_private import argument_names

__all__ = ["OpcheckCase", "layouts", "opcheck_all", "opcheck_cases", "samples"]


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


class OpcheckCase:
    """No torch counterpart. One op and one input for ``torch.library.opcheck``, with a readable id
    (``dropout-float32-channels_last-grad-p=0.3``): what testing.opcheck_cases gives pytest, one test each.

    Args:
        id (str): names the op, the input's dtype and layout and the parameters that vary.
        op (OpOverload): the rngx op.
        args (tuple): its arguments.

    Example::

        >>> case = torch_rngx.testing.OpcheckCase("seed_state", torch.ops.rngx.seed_state.default, ())
        >>> case.check()
    """

    def __init__(self, id: str, op: Any, args: tuple) -> None:
        self.id, self.op, self.args = id, op, args

    def check(self) -> None:
        """Runs ``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch); raises an
        AssertionError naming the op, this case's id and the inputs' shapes if it fails."""
        try:
            torch.library.opcheck(self.op, self.args)
        except Exception as e:
            shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in self.args]
            raise AssertionError(f"opcheck failed for {self.op} [{self.id}] with args {shapes}: {e}") from e

    def __repr__(self) -> str:
        return self.id


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
    for _, _, op, args in _labeled(device):
        yield op, args


def opcheck_cases(device: torch.device | str = "cpu", *, quick: bool = False) -> list:
    """No torch counterpart. One pytest case per op and sample (``samples(device)``), each a
    ``pytest.param(OpcheckCase, id=...)`` with a readable id such as ``dropout-float32-channels_last``, for
    ``pytest.mark.parametrize``: pytest then runs, reports and reruns each on its own (``-k dropout``). Needs pytest.

    Args:
        device (torch.device or str): where the inputs live ("cuda" checks the CUDA kernels).

    Keyword args:
        quick (bool): a subset of about a tenth (every op on every input dtype, one contiguous input each, plus
            channels_last and a global view in float32): seconds, for every commit; the whole set for nightly runs.

    Example::

        >>> cases = torch_rngx.testing.opcheck_cases(quick=True)
        >>> cases[0].id, cases[0].values[0].id
        ('seed_state', 'seed_state')
    """
    import pytest

    cases, seen = [], set()
    for parts, is_quick, op, args in _labeled(device):
        if quick and not is_quick:
            continue
        name = "-".join(parts)
        unique, n = name, 2
        while unique in seen:  # a sample the labels do not tell apart
            unique, n = f"{name}-{n}", n + 1
        seen.add(unique)
        cases.append(pytest.param(OpcheckCase(unique, op, args), id=unique))
    return cases


def _short(dtype: torch.dtype) -> str:
    return str(dtype).split(".")[-1]


def _labeled(device):
    """(id parts, in the quick subset, op, args) of every sample."""
    cpu = torch.device(device).type == "cpu"
    state = torch.tensor([0x1234_5678_9ABC_DEF0, 13], dtype=torch.int64, device=device)
    batched = torch.stack([state, state + 1, state + 2]).view(3, 1, 1, 2)  # a key per slice of dim 0
    yield ["seed_state"], True, rngx.seed_state.default, ()
    yield ["take_", "8_blocks"], True, rngx.take_.default, (state.clone(), 8)
    yield ["step_", "8_blocks"], True, rngx.step_.default, (state.clone(), 8)
    fused = [spec for spec in SPECS.values() if spec.fused is not None]
    for dtype in FLOAT_DTYPES if cpu else ():  # the CPU eager fast path's ops
        x = torch.randn(3, 5, device=device).to(dtype)
        for spec in fused:
            yield (
                [spec.fused, _short(dtype), "3x5"],
                dtype == torch.float32,
                spec.fused_kernel.default,
                (state.clone(), x, *spec.examples(x)[0]),
            )
    for layout, x in layouts(torch.float32, device) if cpu else ():
        for spec in fused:
            yield (
                [spec.fused, "float32", layout],
                layout == "channels_last",
                spec.fused_kernel.default,
                (state.clone(), x, *spec.examples(x)[0]),
            )
    for size in ([], [0], [7], [3, 5], [2, 0, 3]):
        for dtype in (torch.int32, torch.int64, torch.uint8):
            shape = "x".join(map(str, size)) or "scalar"
            yield ["bits", _short(dtype), shape], size == [3, 5], rngx.bits.default, (size, state, dtype)
    yield ["bits", "int32", "batched_keys"], True, rngx.bits.default, ([3, 4, 5], batched, torch.int32)
    for name, keys in (("key", state), ("batched_keys", batched), ("uint64_key", state.view(torch.uint64))):
        yield ["split", name], name != "uint64_key", rngx.split.default, (keys, 3)
        yield ["fold_in", name], name != "uint64_key", rngx.fold_in.default, (keys, torch.tensor(5, device=device))
    data = torch.arange(3, device=device).view(3, 1, 1)
    yield ["fold_in", "batched_keys", "batched_data"], False, rngx.fold_in.default, (batched, data)
    for spec in SPECS.values():
        yield from _spec_samples(spec, state, batched, device)
    yield (
        ["bits", "int64", "global_view"],
        True,
        rngx.bits.default,
        ([3, 2, 5], state, torch.int64, [6, 4, 5], [1, 2, 0]),
    )
    # multinomial's race: one key, a key per row, with (draws > 1) and without replacement (need > 1)
    weights = torch.rand(3, 5, dtype=torch.float64, device=device) + 0.1
    for name, keys in (("key", state), ("batched_keys", batched.view(3, 1, 1, 2))):
        yield ["race", "float64", name, "4_draws"], name == "key", rngx.race.default, (weights, keys, 1, 2)
        yield ["race", "float64", name, "4_needed"], False, rngx.race.default, (weights, keys, 4, 1)
    yield ["race", "float64", "one_row"], False, rngx.race.default, (weights[0], state, 2, 1)
    # the optimizer's fused Adam step (torch_rngx.optim): AdamW and Adam with maximize, one key, a key per row and a
    # global view
    for dtype in (torch.bfloat16, torch.float16):
        for name, keys, view in (
            ("key", state, ()),
            ("batched_keys", batched.view(3, 1, 2), ()),
            ("global_view", state, ([6, 5], [2, 0])),
        ):
            param, grad = (torch.randn(3, 5, device=device).to(dtype) for _ in range(2))
            moments = torch.randn(3, 5, device=device), torch.rand(3, 5, device=device)
            hyper = (
                (1e-2, 0.9, 0.999, 1e-8, 0.1, True, False, 3)
                if name != "key"
                else (1e-3, 0.3, 0.99, 1e-6, 0.05, False, True, 1)
            )
            yield (
                ["adam_sround_", _short(dtype), name],
                name == "key" and dtype == torch.bfloat16,
                rngx.adam_sround_.default,
                (param, grad, *moments, keys, *hyper, *view),
            )


def _varying(spec, x):
    """Each example's label: the parameters (by schema name) that differ between its examples, as name=value."""
    examples = spec.examples(x)
    names = argument_names(spec.kernel.default)[2:]
    differ = [i for i in range(len(examples[0])) if len({repr(e[i]) for e in examples}) > 1]
    show = lambda v: _short(v) if isinstance(v, torch.dtype) else v  # noqa: E731
    return [[f"{names[i]}={show(e[i])}" for i in differ] for e in examples]


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
        d = _short(dtype)
        x = torch.randn(3, 4, 5, device=device).to(dtype).requires_grad_()
        for label, params in zip(_varying(spec, x), spec.examples(x)):
            yield [spec.name, d, "batched_keys", *label], False, op, (_input_for(spec, x, params), batched, *params)
        for layout, x in layouts(dtype, device):
            for requires_grad in (False, True):
                x = x.detach().requires_grad_(requires_grad)
                for i, (label, params) in enumerate(zip(_varying(spec, x), spec.examples(x))):
                    quick = (layout == "contiguous" or (layout == "channels_last" and dtype == torch.float32)) and (
                        not requires_grad and i == 0
                    )
                    yield (
                        [spec.name, d, layout, *(["grad"] if requires_grad else []), *label],
                        quick,
                        op,
                        (_input_for(spec, x, params), state, *params),
                    )
        plain = torch.empty(3, 4, device=device)
        params = spec.examples(plain)[0]
        if spec.out_dtype([plain, state, *params]) is None and "dtype" in argument_names(op):
            yield [spec.name, "float32", "to", d], False, op, (plain, state, *params[:-1], dtype)
        # a global view: x is the block at (1, 2, 0) of a (6, 4, 5) tensor, batched keys over the global dim 0
        xs = torch.randn(3, 2, 5, device=device).to(dtype).requires_grad_()
        wide = torch.stack([state + i for i in range(6)]).view(6, 1, 1, 2)
        params = spec.examples(xs)[0]
        yield (
            [spec.name, d, "global_view"],
            dtype == torch.float32,
            op,
            (_input_for(spec, xs, params), wide, *params, [6, 4, 5], [1, 2, 0]),
        )


def opcheck_all(device: torch.device | str = "cpu") -> int:
    """Runs ``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT dispatch) on every sample,
    all of them, then raises one AssertionError listing every failure (the op, the case's id, the inputs' shapes);
    returns the number of samples checked, one per item of ``samples(device)`` (on the CPU about two minutes of CPU
    time). In pytest, ``opcheck_cases`` makes each sample a test of its own.

    Args:
        device (torch.device or str): where the inputs live ("cuda" checks the CUDA kernels).

    Example::

        >>> n = torch_rngx.testing.opcheck_all()  # doctest: +SKIP
    """
    n, failures = 0, []
    for parts, _, op, args in _labeled(device):
        try:
            OpcheckCase("-".join(parts), op, args).check()
        except AssertionError as e:
            failures.append(str(e))
        n += 1
    if failures:
        raise AssertionError(f"{len(failures)} of {n} samples failed:\n" + "\n".join(failures))
    return n
