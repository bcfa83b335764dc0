"""Which torch calls draw random numbers, derived from torch itself, never from a list of ours (torch_rngx.mode's
coverage: docs: guarantees/, "torch_rngx.mode").

- torch tags each of its random aten ops `nondeterministic_seeded` (aten::rand, bernoulli_, dropout, lstm,
  _standard_gamma, scaled_dot_product_attention, ...). A torch builtin (torch.X, Tensor.X, torch._C._nn.X) is the
  Python binding of the aten op of its name, and an OpOverload carries its tags.
- Whether one call of such an op draws is read from its schema: an op with a `train`/`training` argument draws only
  when it is true and (dropout's signature) its `p` is not 0; one with a `dropout_p`/`dropout` argument only when
  that is not 0.
- A torch function written in Python (torch.nn.functional.multi_head_attention_forward, fractional_max_pool2d, ...)
  may draw if its code, or the code of the torch functions it reaches by name, names a random aten op.

Such a Python function starts with torch's `has_torch_function(...)` check, and torch pops the function mode while it
runs, so the calls it makes are hidden from the mode. `transparent(func)` is func with that check compiled out:
run with the mode pushed back, every call it makes reaches the mode, as torch wrote them.
"""

from __future__ import annotations

import functools
import threading
import types
from typing import Any, Callable, NamedTuple, Optional

import torch

from .torch_private import (
    DisableTorchFunction,
    OpOverload,
    OpOverloadPacket,
    install_no_override,
    packet_name,
    packet_namespace,
    schema_arguments,
)

SEEDED = torch.Tag.nondeterministic_seeded
OURS = ("rngx", "rngx_mode")  # our custom ops' namespaces: their own internal draws are ours to make
_BUILTINS = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)
_CHECKS = frozenset({"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"})


_own = threading.local()


class drawing_from_torch:
    """torch_rngx's own draws from torch's default generator (a fresh seed for generator=None, Generator()'s seed):
    no torch_rngx.mode routes them, and its net does not report them. A class, not a contextlib generator: a call
    with generator=None and a gradient enters it every time, and this costs half as much."""

    __slots__ = ("_depth", "_off")

    def __enter__(self) -> None:
        self._depth = getattr(_own, "depth", 0)
        _own.depth = self._depth + 1
        self._off = DisableTorchFunction()
        self._off.__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            self._off.__exit__(*exc)
        finally:
            _own.depth = self._depth


def drawing_own() -> bool:
    return getattr(_own, "depth", 0) > 0


class RandomOp(NamedTuple):
    """A random aten op as a call site meets it: its name and where its train and probability arguments sit."""

    name: str
    train: Optional[tuple[int, str, Any]]  # (position, keyword, default) of `train` / `training`
    p: Optional[tuple[int, str, Any]]  # (position, keyword, default) of the probability that 0 makes a no-op

    def draws(self, args: tuple, kwargs: dict) -> bool:
        """Whether this call draws: False only where its arguments make it a no-op (not training, p == 0)."""
        if self.train is not None:
            at, name, default = self.train
            if (args[at] if len(args) > at else kwargs.get(name, default)) is False:
                return False
        if self.p is not None:
            at, name, default = self.p
            p = args[at] if len(args) > at else kwargs.get(name, default)
            if type(p) in (int, float) and p == 0:
                return False
        return True


def _random_op(name: str, overloads: list) -> Optional[RandomOp]:
    if not any(SEEDED in op.tags for op in overloads):
        return None
    train = p = None
    for op in overloads:
        arguments = schema_arguments(op)
        for at, arg in enumerate(arguments):
            if train is None and arg.name in ("train", "training"):
                train = (at, arg.name, arg.default_value)
        for at, arg in enumerate(arguments):
            if p is None and (arg.name in ("dropout_p", "dropout") or (arg.name == "p" and train is not None)):
                p = (at, arg.name, arg.default_value)
    return RandomOp(name, train, p)


@functools.cache
def aten_random_op(name: str) -> Optional[RandomOp]:
    """aten::name, if torch tags one of its overloads nondeterministic_seeded; else None."""
    if name.startswith("__"):
        return None
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return None
    return _random_op(f"aten::{name}", [getattr(packet, o) for o in packet.overloads()])


def namespace_of(func: Callable) -> Optional[str]:
    """The op namespace of an OpOverload or OpOverloadPacket ("aten", "rngx", ...); None for anything else."""
    if isinstance(func, OpOverload):
        return func.namespace
    if isinstance(func, OpOverloadPacket):
        return packet_namespace(func)
    return None


def random_op_of(func: Callable) -> Optional[RandomOp]:
    """The random aten op behind a torch builtin or an OpOverload(Packet), or None: a call that draws nothing,
    or one of our own ops."""
    if isinstance(func, OpOverload):
        if func.namespace in OURS or SEEDED not in func.tags:
            return None
        return _random_op(func.name(), [func])
    if isinstance(func, OpOverloadPacket):
        if packet_namespace(func) in OURS:
            return None
        return _random_op(packet_name(func), [getattr(func, o) for o in func.overloads()])
    if isinstance(func, _BUILTINS):
        return aten_random_op(func.__name__)
    return None


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _is_torch_python(obj: Any) -> bool:
    return type(obj) is types.FunctionType and (getattr(obj, "__module__", None) or "").startswith("torch")


def may_draw(func: Callable, _seen: Optional[set] = None) -> bool:
    """Whether a torch function written in Python can draw: its code, or the code of a torch Python function it
    reaches through its globals or closure, names a random aten op."""
    if not _is_torch_python(func):
        return False
    seen = set() if _seen is None else _seen
    if func in seen:
        return False
    seen.add(func)
    names = _code_names(func.__code__)
    if any(aten_random_op(n) is not None for n in names):
        return True
    reached: list[Any] = [func.__globals__.get(n) for n in names]
    reached += [c.cell_contents for c in func.__closure__ or () if _filled(c)]
    return any(f is not None and _is_torch_python(f) and may_draw(f, seen) for f in reached)


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def transparent(func: Callable) -> Optional[Callable]:
    """func with torch's torch-function check compiled out (and so the torch functions its closure holds), or None
    when it has none to remove. Its code names `has_torch_function*` through its globals or torch.overrides; the
    copy names an always-False function there instead (install_no_override)."""
    if not _is_torch_python(func):
        return None
    closure = tuple(_transparent_cell(c) for c in func.__closure__ or ())
    checks = _CHECKS & set(func.__code__.co_names)
    if not checks and closure == (func.__closure__ or ()):
        return None
    name = install_no_override(func.__globals__)
    code = func.__code__.replace(co_names=tuple(name if n in _CHECKS else n for n in func.__code__.co_names))
    if not checks:  # a dispatcher over closure functions (torch's boolean_dispatch): torch.compile skips its file,
        # and must trace the copy, whose calls are the transparent ones
        code = code.replace(co_filename=f"<torch_rngx.mode: {func.__module__}.{func.__qualname__}>")
    copy = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__, closure or None)
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    return copy


def _transparent_cell(cell):
    if not _filled(cell):
        return cell
    inner = transparent(cell.cell_contents) if _is_torch_python(cell.cell_contents) else None
    return cell if inner is None else types.CellType(inner)
