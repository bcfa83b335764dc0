"""torch_rngx.mode: torch's own random functions, called by code you did not write, drawing from a torch_rngx
stream (docs: guide/, "Any model, unchanged"; the coverage table in docs: guarantees/).

A TorchFunctionMode sees each torch call, eager and under torch.compile (which traces it), and looks the function up
in one table built from torch itself on first use (_prepare):
- routed (routes.ROUTES): the matching torch_rngx call with generator= the mode's;
- a torch function written in Python that may draw (random_ops.may_draw: nn.MultiheadAttention's
  multi_head_attention_forward, fractional max pooling, nn.init's): run with its torch-function check compiled out
  and the mode pushed back, so the calls it makes are seen and routed, as torch wrote them;
- any other call torch tags random (random_ops.random_op_of): reported when its arguments draw, by `uncovered`;
- anything else: called as it is, one dict lookup.
Two nets catch what the table cannot see. In eager, a TorchDispatchMode pushed with the mode reports every aten op
torch tags random that reaches the dispatcher from anywhere else (inside a Python function that cannot be run
transparently, a C++ extension), naming the torch call that made it. Under torch.compile, every builtin torch tags
random is shown to the mode (torch_private.show_to_function_modes: references bound before the mode, private samplers),
and a call of a Python torch function is checked at trace time for the random ops it put in the graph. Reports
compile: under torch.compile they are made at trace time (comptime), warn or raise, with fullgraph=True.
nn.init.trunc_normal_ never reaches a mode (no torch-function check), so while a mode is active it is bound to a
wrapper that routes it; and DataLoader workers start under a mode of their own (workers).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import sys
import threading
import types
import warnings
from types import FunctionType  # __torch_function__'s argument `types` hides the module there

import torch
import torch.nn.functional as TF
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from .._engine import random_ops, torch_private
from .._engine.random_ops import drawing_from_torch, drawing_own, may_draw, random_op_of, transparent
from .._engine.router import owner_of
from .._engine.torch_private import (
    HigherOrderOperator,
    TorchDispatchMode,
    before_backends,
    builtin_namespaces,
    compiled_runtime_dirs,
    dataloader_worker_loop,
    dispatch_mode_put_back,
    dispatch_mode_set_aside,
    entry_function_modes,
    fake_mode_of,
    function_mode_base_enter,
    function_mode_base_exit,
    graph_fake_mode,
    is_numpy_wrapper,
    never_a_compiled_frame,
    set_dataloader_worker_loop,
    show_to_function_modes,
    torch_function_modes,
    traced_constant,
    traced_frames,
    traced_graph,
    traced_output,
)
from ..generator import RNG, Generator
from . import rnn, workers
from .routes import ROUTES, trunc_normal

__all__ = ["mode", "UncoveredRandomWarning", "routed_names", "transparent_names", "uncovered_names"]


class UncoveredRandomWarning(UserWarning):
    """No torch counterpart. Warns of a random call under torch_rngx.mode that stays torch's: its values are
    torch's, and compiled code may then differ from eager. Filter it like any warning.

    Args:
        message (str): names the function.

    Example::

        >>> import warnings
        >>> warnings.simplefilter("error", torch_rngx.UncoveredRandomWarning)  # make uncovered calls fail a test
        >>> warnings.resetwarnings()
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


# ---- the table: torch function -> what the mode does with it ----
# Kinds are (how, what, name, random op) tuples compared by `how` (torch.compile rebuilds tuples, so not by identity).
_PLAIN = ("plain", None, None, None)  # called as it is
_UNSEEN = ("unseen", None, None, None)  # not in the table yet
_ROUTE, _THROUGH, _RANDOM, _PYTHON = "route", "through", "random", "python"
_KIND: dict = {}  # func -> _PLAIN or (how, what, name, random op); fixed once built, as torch.compile guards on it
_LATER: dict = {}  # eager: the same for a function met later (an op of another library)
_BY_NAME: dict = {}  # "module.name" -> the kind of each Python function in _KIND (names met once)
_PLAIN_TYPES = frozenset({torch.Tensor, torch.nn.Parameter, torch.nn.Buffer})  # no __torch_function__ of their own
_prepared = threading.Lock()
_KEY_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType)
_TRUNC = "torch.nn.init.trunc_normal_"
# nn.init's own functions, taken at import: a library may rebind torch.nn.init's names to wrappers of them
# (transformers 5 does while it builds a model), and the table must hold torch's functions, not the wrappers.
_TORCH_INIT = frozenset(
    f for f in vars(torch.nn.init).values() if type(f) is types.FunctionType and f.__module__ == "torch.nn.init"
)
_BY_CODE: dict = {}  # the code of each Python torch function in _KIND -> its kind (_torch_caller_kind)
_HANDLE = torch.overrides.handle_torch_function.__code__


def _public_names():
    names: dict = {}
    for prefix, namespace in (
        ("torch.nn.functional", TF),
        ("torch.nn.init", torch.nn.init),
        ("torch.Tensor", torch.Tensor),
        ("torch", torch),
        ("torch.linalg", torch.linalg),
        ("torch.special", torch.special),
        ("torch.fft", torch.fft),
    ):
        for attr in dir(namespace):
            try:
                names.setdefault(getattr(namespace, attr), f"{prefix}.{attr}")
            except (AttributeError, TypeError):  # unhashable or a lazy attribute that fails
                continue
    return names


def _name(func, names):
    found = names.get(func)
    if found is not None:
        return found
    if random_ops.namespace_of(func) is not None:
        return str(func)  # aten.cauchy.default
    return f"{getattr(func, '__module__', None) or 'torch'}.{getattr(func, '__qualname__', func)}"


def _prepare():
    """Builds the table once: every torch function a mode can meet (torch.overrides' overridable ones, nn.init's,
    and the builtins torch tags random), classified from torch's own tags and code."""
    with _prepared:
        if _KIND:
            return
        # What needs torch._dynamo, done here rather than at import (torch_private.py, "torch.compile").
        never_a_compiled_frame(mode.__torch_function__.__code__)
        rnn.prepare()
        names = _public_names()
        table: dict = {}
        functions = {f for fs in torch.overrides.get_overridable_functions().values() for f in fs}
        functions |= _TORCH_INIT
        methods = (getattr(torch.Tensor, attr, None) for attr in dir(torch.Tensor))
        functions |= {f for f in methods if type(f) is types.FunctionType}  # the Python methods too
        members = (getattr(ns, attr, None) for ns in builtin_namespaces() for attr in dir(ns))
        hidden = {f for f in members if random_op_of(f) is not None}
        show_to_function_modes(hidden)
        for func in functions | hidden:
            # functions and builtins only, and no wrapper: torch.compile sees what a functools.wraps wrapper wraps
            # (Tensor.__rsub__'s) and would guard on that
            if isinstance(func, _KEY_TYPES) and not hasattr(func, "__wrapped__"):
                table[func] = _classify(func, names)
        for func, route in ROUTES.items():
            table[func] = (_ROUTE, route, _name(func, names), random_op_of(func))
        _KIND.update(table)
        before_backends(_check_graph)
        _BY_CODE.update((f.__code__, k) for f, k in table.items() if type(f) is types.FunctionType)
        keys = [(f"{f.__module__}.{f.__name__}", k) for f, k in table.items() if type(f) is types.FunctionType]
        counts = collections.Counter(key for key, _ in keys)
        _BY_NAME.update((key, k) for key, k in keys if counts[key] == 1)


# Draws nothing by its own code, but runs autograd's backward pass, and so the recomputation of checkpointed
# regions, which must draw under the mode what their forward drew.
_RUNS_FORWARD_AGAIN = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)


def _classify(func, names):
    if type(func) is types.FunctionType:
        through = transparent(func) if may_draw(func) or func in _RUNS_FORWARD_AGAIN else None
        if through is not None:
            return (_THROUGH, through, _name(func, names), None)
        # A Python Tensor method that calls its C one through super() (Tensor.unflatten) is, compiled, torch's
        # function of its name: torch.compile cannot trace that super() call under a torch function mode.
        method = None
        if func.__module__ == "torch._tensor" and "super" in func.__code__.co_names:
            method = getattr(torch, func.__name__, None)
        return (_PYTHON, method, _name(func, names), None)
    op = random_op_of(func)
    if op is not None:
        return (_RANDOM, op, _name(func, names), op)
    if random_ops.namespace_of(func) not in (None, "aten", "prims") + random_ops.OURS:
        return (_PYTHON, None, str(func), None)  # another library's op: the eager net names it if it draws inside
    return _PLAIN


@functools.cache
def routed_names() -> tuple[str, ...]:
    """No torch counterpart. The names of the torch functions torch_rngx.mode routes: under the mode, a call of one
    is the matching torch_rngx call on the mode's stream (docs: guarantees/, "torch_rngx.mode").

    Example::

        >>> "torch.rand_like" in torch_rngx.routed_names()
        True
    """
    _prepare()
    return tuple(sorted({k[2] for k in _KIND.values() if k[0] == _ROUTE} | {_TRUNC}))


@functools.cache
def transparent_names() -> tuple[str, ...]:
    """No torch counterpart. The names of the torch functions written in Python that may draw, which torch_rngx.mode
    runs with itself kept on: each random call they make is routed or reported.

    Example::

        >>> "torch.nn.functional.multi_head_attention_forward" in torch_rngx.transparent_names()
        True
    """
    _prepare()
    return tuple(sorted({k[2] for k in _KIND.values() if k[0] == _THROUGH}))


@functools.cache
def uncovered_names() -> tuple[str, ...]:
    """No torch counterpart. The names of the torch functions torch tags random that stay torch's under
    torch_rngx.mode: a call of one that draws is reported, by the mode's `uncovered`.

    Example::

        >>> "torch.poisson" in torch_rngx.uncovered_names()
        True
    """
    _prepare()
    return tuple(sorted({k[2] for k in _KIND.values() if k[0] == _RANDOM}))


# ---- reports ----
_SKIP = tuple(
    os.path.dirname(str(m.__file__)) + os.sep for m in (sys.modules[__name__.partition(".")[0]], torch, contextlib)
)
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _message(name, reason):
    return (
        f"torch_rngx.mode: {name} is not routed and draws from torch's generator{reason}: its values are torch's, "
        "and compiled code may differ from eager (docs: guarantees/, 'torch_rngx.mode')"
    )


def _report_now(name, reason, uncovered, site):
    """Warns (once per function and process) or raises; in eager and at trace time alike (plain Python here)."""
    message = _message(name, reason)
    if uncovered == "error":
        raise RuntimeError(message)
    with _warned_lock:
        if name in _warned:
            return
        _warned.add(name)
    warnings.warn_explicit(message, UncoveredRandomWarning, *site)


def _eager_site():
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<unknown>", 0)


def _report_traced(ctx):
    """comptime: the report of a call torch.compile is tracing, made while it traces (fullgraph or not)."""
    site = next(((f, line) for f, line in traced_frames(ctx) if not f.startswith(_SKIP)), ("<unknown>", 0))
    uncovered = traced_constant(ctx, "uncovered")
    _report_now(traced_constant(ctx, "name"), traced_constant(ctx, "reason"), uncovered, site)


_marks: list = []  # trace time: (graph, its node count) before each Python torch function _python runs


def _mark_traced(ctx):
    graph = traced_graph(ctx)
    _marks.append((graph, len(graph.nodes)))


def _scan_traced(ctx):
    """comptime, after a Python torch function ran as it is under torch.compile: reports the random ops it put in
    the graph (the nodes since its mark), as the eager net would."""
    graph = traced_graph(ctx)
    marked, start = _marks.pop() if _marks else (None, 0)
    if marked is not graph:  # a trace restarted in between: nothing to compare against
        return
    nodes = list(graph.nodes)[start:]
    uncovered = traced_constant(ctx, "uncovered")
    for node in nodes:
        target = node.target
        op = random_ops.aten_random_op(target) if node.op == "call_method" else None
        if node.op == "call_function":
            op = random_op_of(target)
            if op is None and type(target) is types.FunctionType and may_draw(target):
                op = random_ops.RandomOp(_name(target, {}), None, None)
        if op is not None and op.draws(tuple(node.args), dict(node.kwargs)):
            site = next(((f, line) for f, line in traced_frames(ctx) if not f.startswith(_SKIP)), ("<unknown>", 0))
            _report_now(traced_constant(ctx, "name"), f" (it calls {op.name})", uncovered, site)


def _unseen_traced(ctx):
    """comptime: a torch function the table does not hold (an op of another library, say), met while tracing."""
    func = traced_constant(ctx, "func")
    op = random_op_of(func)
    if op is not None:
        site = next(((f, line) for f, line in traced_frames(ctx) if not f.startswith(_SKIP)), ("<unknown>", 0))
        _report_now(_name(func, {}), "", traced_constant(ctx, "uncovered"), site)


# ---- the graph net: what each captured graph holds, checked before its backend gets it ----
# A rewrite can put a random op in a graph without a torch call the mode sees: Dynamo compiles np.random.rand into a
# call of its own wrapper, which draws with torch's uniform_ when AOTAutograd traces it. So each graph captured under
# a mode is looked at as a whole before the backend (aot_eager, Inductor, ...) gets it: every aten op it names, every
# torch builtin and Tensor method it calls, and what each other callable in it runs on fake tensors.
_ENTERED = "_rngx_mode_uncovered"  # on Dynamo's graph: `uncovered` of a mode entered while it was traced
_BUILTIN_TYPES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)


def _graph_uncovered(output):
    """`uncovered` of the innermost torch_rngx.mode this graph was traced under, or None."""
    inside = getattr(output, _ENTERED, None)
    if inside is not None:
        return inside
    for m in reversed(entry_function_modes(output)):
        if isinstance(m, mode):
            return m.uncovered
    return None


def _check_graph(output, gm):
    """before_backends' hook: the graph's random ops reported as the mode it was traced under says."""
    uncovered = _graph_uncovered(output)
    if uncovered is not None and uncovered != "ignore":
        check_graph(gm, uncovered, graph_fake_mode(output))


def check_graph(gm, uncovered, fake=None):
    """Reports each random op in an fx graph (and its subgraphs) that is not ours, as `uncovered` says; a callable
    it holds runs on the fake values its node had, under `fake` where none of them is a fake tensor."""
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                for name, reason in _node_draws(module, node, fake):
                    _report_now(name, reason, uncovered, _node_site(node))


def _node_draws(module, node, fake):
    """(name, reason) of each random op this node runs that is not ours: the names the mode's own reports use, so
    that a call the mode reported while tracing is not reported twice."""
    target, args, kwargs = node.target, tuple(node.args), dict(node.kwargs)
    if node.op == "call_method":
        op = random_ops.aten_random_op(target)
        return [(f"torch.Tensor.{target}", "")] if op is not None and op.draws(args, kwargs) else []
    if node.op == "call_module":
        sub = module.get_submodule(target)
        return [] if isinstance(sub, torch.fx.GraphModule) else _run_on_fakes(sub, node, fake)
    if node.op != "call_function" or isinstance(target, HigherOrderOperator):  # its subgraphs are graphs of gm
        return []
    if random_ops.namespace_of(target) is not None or isinstance(target, _BUILTIN_TYPES):
        op = random_op_of(target)
        if op is None or not op.draws(args, kwargs):
            return []
        kind = _KIND.get(target)
        return [(kind[2] if kind is not None else _name(target, {}), "")]
    return _run_on_fakes(target, node, fake)


class _Spy(TorchDispatchMode):
    """The random aten ops (not ours) that a call makes, as it runs on fake tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op = random_op_of(func)
        if op is not None and op.draws(args, kwargs) and str(func) not in self.found:
            self.found.append(str(func))
        return func(*args, **kwargs)


def _run_on_fakes(target, node, fake):
    """Runs a callable the graph holds (another library's function, Dynamo's NumPy wrapper, a module) on the fake
    values its node's arguments had while tracing, and names the random aten ops it reaches. Where it cannot run
    there, its code is read instead (random_ops.may_draw)."""
    name = _callable_name(target)
    try:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta["example_value"])
        fake = fake_mode_of((args, kwargs)) or fake
        if fake is None:
            raise LookupError("no fake tensor mode to run it under")
        spy = _Spy()
        with drawing_from_torch(), fake, spy:  # past every torch function mode, the eager net quiet
            target(*args, **kwargs)
        return [(name, f" (it calls {op}, in a graph torch.compile captured)") for op in spy.found]
    except Exception:  # noqa: BLE001  (any failure to run it: read its code)
        inner = _unwrapped(target)
        return [(name, " (in a graph torch.compile captured)")] if may_draw(inner) else []


def _unwrapped(target):
    """What a wrapper (functools.wraps, a partial, Dynamo's NumPy wrapper) wraps, innermost."""
    while True:
        if is_numpy_wrapper(target):
            inner = target.f
        else:
            inner = getattr(target, "__wrapped__", None) or getattr(target, "func", None)
        if inner is None or not callable(inner):
            return target
        target = inner


def _callable_name(target):
    inner = _unwrapped(target)
    if isinstance(inner, (types.FunctionType, type)):
        name = f"{inner.__module__}.{inner.__qualname__}"
        if name.startswith("torch._numpy."):  # Dynamo's NumPy on torch: name the NumPy call the user wrote
            return f"numpy.{name[len('torch._numpy.') :]} (run by torch.compile as {name})"
        return name
    if isinstance(inner, torch.nn.Module):
        return f"{type(inner).__module__}.{type(inner).__qualname__}"
    return repr(inner)


def _node_site(node):
    """(file, line) of the user's code that put this node in the graph (its stack trace's last frame)."""
    site = ("<unknown>", 0)
    for line in (node.meta.get("stack_trace") or "").splitlines():
        line = line.strip()
        if line.startswith('File "'):
            file, _, rest = line[6:].partition('", line ')
            site = (file, int(rest.split(",")[0]) if rest.split(",")[0].isdigit() else 0)
    return site


def _prepare_table_traced(ctx):
    _prepare()


def _prepare_traced(ctx):
    """comptime, a mode entered inside a compiled function: its table, and its graph checked before the backend."""
    _prepare()
    setattr(traced_output(ctx), _ENTERED, traced_constant(ctx, "uncovered"))


def _torch_caller_kind():
    """The kind of the torch function whose torch-function check called the mode, where torch named another one: a
    torch function's check hands torch.overrides the function its module's name is bound to now, which a library
    may have rebound to a wrapper of torch's (transformers' nn.init guards), while the call comes from torch's own
    function, two frames up (__torch_function__ <- handle_torch_function <- the torch function). None otherwise."""
    handler = sys._getframe(2)
    if handler.f_code is not _HANDLE:
        return None
    return _BY_CODE.get(handler.f_back.f_code)


# eager: .call = (mode, name, quiet) of the torch call a mode is running; .net, the thread's eager net; .aside, the net
# while set aside (_without_net); .step_net, the net while an optimizer step has it set aside (_step_begins)
_here = threading.local()


class mode(torch.overrides.TorchFunctionMode, contextlib.ContextDecorator):
    """No torch counterpart. Inside `with torch_rngx.mode(...)` (or on a function decorated with it), torch's random
    functions draw from a torch_rngx stream: each routed call is the matching torch_rngx function (torch.rand_like(x) is
    torch_rngx.rand_like(x, generator=g)), advancing the stream by what that function consumes, compiled == eager.

    Args:
        seed: an int: a fresh stream, Generator(seed)'s.
        generator: a torch_rngx.Generator or nn.RNG, shared with any other user of it.
            With neither, each call draws a seed from torch's default generator, so torch.manual_seed reproduces it.
        uncovered: what a random call that stays torch's does (Tensor.cauchy_, torch.poisson, F.rrelu in training,
            any call given an explicit torch.Generator, a random op inside a C++ extension, ...;
            torch_rngx.uncovered_names() lists torch's functions): "warn" (once per function and process, an
            UncoveredRandomWarning naming it; at trace time under torch.compile), "error" (RuntimeError) or "ignore".
            Under "warn" and "error" every aten op in eager passes a net that names unrouted draws, but for those of
            backward passes and optimizer steps, which draw nothing (docs: guarantees/, "torch_rngx.mode: torch's
            random functions, routed"); "ignore" saves that cost.

    Modes nest: the innermost active one routes. The mode is per thread, as torch's function modes are: a thread
    that has not entered it keeps torch's random functions. DataLoader workers started inside it draw streams of
    their own (docs: guide/, "DataLoader workers").

    Example::

        >>> with torch_rngx.mode(seed=0):
        ...     a = torch.randn(3)
        >>> with torch_rngx.mode(seed=0):
        ...     b = torch.randn(3)
        >>> torch.equal(a, b)
        True
    """

    def __init__(
        self, *, seed: int | None = None, generator: Generator | RNG | None = None, uncovered: str = "warn"
    ) -> None:
        super().__init__()
        if seed is not None and generator is not None:
            raise ValueError("pass seed= or generator=, not both")
        if uncovered not in ("warn", "error", "ignore"):
            raise ValueError(f'uncovered must be "warn", "error" or "ignore", got {uncovered!r}')
        owner_of(generator)  # rejects anything but a Generator, an RNG or None
        self.generator = Generator(seed) if seed is not None else generator
        self.uncovered = uncovered
        self._net = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Every torch call in the block comes here, random or not: the others cost one dict lookup and the call.
        if type(func) is FunctionType and torch.compiler.is_compiling():
            # torch.compile looks some Python function keys up wrong (met inside a transparent function), and then
            # guards on that; it reads their __module__ and __name__ right
            kind = _BY_NAME.get(f"{func.__module__}.{func.__name__}", _UNSEEN)
        else:
            kind = _KIND.get(func, _UNSEEN)
        how = kind[0]
        if how == "plain":
            return func(*args, **kwargs) if kwargs else func(*args)
        kwargs = kwargs or {}
        if how == "unseen":
            if torch.compiler.is_compiling():
                uncovered = self.uncovered
                if uncovered != "ignore":
                    torch_private.comptime(_unseen_traced)  # reads func and uncovered
                return func(*args, **kwargs)
            kind = _LATER.get(func)
            if kind is None:
                kind = _torch_caller_kind()
                if kind is None:
                    kind = _LATER[func] = _classify(func, {})
            if kind[0] == "plain":
                return func(*args, **kwargs)
        how, what, name, op = kind
        if how == _ROUTE:
            given = kwargs.get("generator")
            # None first: isinstance against torch.Generator runs its metaclass's Python check (0.4 µs a call)
            if given is None or not isinstance(given, torch.Generator):
                out = what(self.generator, *args, **kwargs)  # routes.ROUTES: one that raises gives its blocks back
                if out is not None:
                    return out
            return self._unrouted(func, name, op, args, kwargs)
        if how == _THROUGH and all(t in _PLAIN_TYPES for t in types):
            function_mode_base_enter(self)
            try:
                if func in _RUNS_FORWARD_AGAIN:
                    return _without_net(what, args, kwargs)
                return what(*args, **kwargs)
            finally:
                function_mode_base_exit(self)
        if how == _RANDOM:
            return self._unrouted(func, name, op, args, kwargs)
        return self._python(func, name, what if how == _PYTHON else None, args, kwargs)

    def _unrouted(self, func, name, op, args, kwargs):
        """A call that stays torch's: reported if it draws (with an explicit torch.Generator it always may)."""
        given = kwargs.get("generator")
        explicit = given is not None and isinstance(given, torch.Generator)
        if self.uncovered != "ignore" and (explicit or op is None or op.draws(args, kwargs)):
            self._report(name, " (given a torch.Generator)" if explicit else "")
        if torch.compiler.is_compiling():
            return func(*args, **kwargs)
        return self._watched(func, name, True, args, kwargs)

    def _python(self, func, name, method, args, kwargs):
        """A torch function written in Python run as it is (torch popped the mode for it): in eager under the net,
        compiled with its graph checked at trace time."""
        if not torch.compiler.is_compiling():
            return self._watched(func, name, False, args, kwargs)
        uncovered = self.uncovered
        if uncovered != "ignore":
            torch_private.comptime(_mark_traced)
        if method is not None:
            out = method(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        if uncovered != "ignore":
            torch_private.comptime(_scan_traced)
        return out

    def _watched(self, func, name, quiet, args, kwargs):
        """func(*args) in eager, named for the net: a random aten op it reaches is reported as this call's (unless
        the call itself was reported: quiet)."""
        outer = getattr(_here, "call", None)
        _here.call = (self, name, quiet)
        aside = getattr(_here, "aside", None)  # the net, set aside for a backward pass or an optimizer step
        if aside is not None:
            dispatch_mode_put_back(aside)
            _here.aside = None
        try:
            return func(*args, **kwargs)
        finally:
            _here.call = outer
            if aside is not None and dispatch_mode_set_aside(aside):
                _here.aside = aside

    def _report(self, name, reason):
        uncovered = self.uncovered
        if uncovered == "ignore":
            return
        if torch.compiler.is_compiling():
            torch_private.comptime(_report_traced)  # reads name, reason and uncovered
            return
        if not _compiled_code_running():  # a compiled graph's ops pass the mode too: reported when it was traced
            _report_now(name, reason, uncovered, _eager_site())

    def __enter__(self):
        if torch.compiler.is_compiling():
            uncovered = self.uncovered
            if uncovered != "ignore":  # its graph is checked (_check_graph); and the table, as always
                torch_private.comptime(_prepare_traced)  # reads uncovered
            else:
                torch_private.comptime(_prepare_table_traced)
        else:
            _prepare()
            # no net under "ignore", which reports nothing: it would cost every aten op inside a Python call
            if self.uncovered != "ignore" and getattr(_here, "net", None) is None:
                self._net = _here.net = _Net(self).__enter__()
                _count_net(1)
        _bind()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _unbind()
            if self._net is not None:
                net, self._net, _here.net = self._net, None, None
                _here.step_net = None
                _put_back(net)  # if an optimizer step that raised left it aside
                net.__exit__(None, None, None)
                _count_net(-1)


# ---- the eager net ----
_NET_OPS: dict = {}  # OpOverload -> RandomOp or None


class _Net(TorchDispatchMode):
    """Under a mode in eager: an aten op torch tags random that reaches the dispatcher, and whose call the mode did
    not route, is reported as `uncovered` says, naming the torch call that made it. Our own ops' draws are not its
    concern (random_op_of leaves them out; what they run inside is below this mode while they run). torch.compile
    ignores it (ignore_compile_internals): compiled code is checked at trace time. Higher-order ops (a compiled
    graph's auto_functionalized, say) pass through it as any op does."""

    supports_higher_order_operators = True

    def __init__(self, owner):
        super().__init__()
        self.owner = owner

    @classmethod
    def ignore_compile_internals(cls):
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = _NET_OPS.get(func, _UNSEEN)
        if op is _UNSEEN:
            op = _NET_OPS[func] = random_op_of(func)
        kwargs = kwargs or {}
        if op is not None and op.draws(args, kwargs) and not drawing_own():
            call = getattr(_here, "call", None)
            if call is None:
                owner = _active() or self.owner
                owner._report(str(func), " (an aten op reached from no torch call the mode saw)")
            elif not call[2]:
                call[0]._report(call[1], f" (it calls {func})")
        return func(*args, **kwargs)


_COMPILED = compiled_runtime_dirs()  # found, not imported


def _compiled_code_running():
    """Whether a compiled graph is running (its draws were reported when it was traced): a frame of AOTAutograd's or
    Inductor's runtime, or of a graph's generated code, is on the stack."""
    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        if file.startswith(_COMPILED) or file.startswith("<eval_with_key>") or "torchinductor" in file:
            return True
        frame = frame.f_back
    return False


# A backward pass and an optimizer step draw nothing of their own: torch's derivative formulas and optimizers never
# draw, and a checkpointed region's recomputation draws what its forward drew, which the net saw then. Yet they make
# most of a small model's aten ops, each a Python call of the net's (a 3-layer MLP's eager step took 2.1x its time
# without the mode, 1.5-1.6x with the net set aside there: docs: performance/, "torch_rngx.mode"). So the net is set
# aside for them, the mode staying on; a call there that the mode watches (another library's op, a Python function,
# a random op) runs under the net again (_watched).
def _without_net(call, args, kwargs):
    """call(*args, **kwargs) with this thread's net set aside (a backward pass)."""
    net = None if torch.compiler.is_compiling() else getattr(_here, "net", None)
    if net is None or not dispatch_mode_set_aside(net):
        return call(*args, **kwargs)
    outer, _here.aside = getattr(_here, "aside", None), net
    try:
        return call(*args, **kwargs)
    finally:
        _put_back(net, outer)


def _step_begins(optimizer, args, kwargs):
    """An optimizer step runs with the net set aside, but for one given a closure (which runs the forward again);
    _step_ends puts it back, and a step that raised leaves it to its mode's exit or the next step's end."""
    if torch.compiler.is_compiling() or len(args) > 1 or kwargs.get("closure") is not None:  # args[0]: optimizer
        return
    net = getattr(_here, "net", None)
    if net is not None and getattr(_here, "aside", None) is None and dispatch_mode_set_aside(net):
        _here.aside = _here.step_net = net


def _step_ends(optimizer, args, kwargs):
    net = getattr(_here, "step_net", None)
    if net is not None:
        _here.step_net = None
        _put_back(net)


def _put_back(net, outer=None):
    """The net on its stack again, unless a call the mode watched found it could not set it aside after it (a dispatch
    mode left pushed inside): then it is there already."""
    aside, _here.aside = getattr(_here, "aside", None), outer
    if aside is net:
        dispatch_mode_put_back(net)


# ---- bindings while any mode is active: nn.init.trunc_normal_ and the DataLoader workers' entry point ----


def _active():
    """The innermost torch_rngx.mode on this thread's torch function mode stack, or None."""
    for m in torch_function_modes():
        if isinstance(m, mode):
            return m
    return None


def _wrapper(original, route):
    def wrapper(*args, **kwargs):
        m = _active()
        if m is not None:
            out = route(m.generator, *args, **dict(kwargs))
            if out is not None:
                return out
            m._report(_TRUNC, " (given a torch.Generator)")
        return original(*args, **kwargs)

    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = original.__name__, original.__qualname__, original.__doc__
    wrapper.__wrapped__ = original
    return wrapper


_TRUNC_NORMAL = torch.nn.init.trunc_normal_
_TRUNC_WRAPPER = _wrapper(_TRUNC_NORMAL, trunc_normal)
_WORKER_LOOP = dataloader_worker_loop()
workers.bind(_active, mode, _WORKER_LOOP)
_entered = 0
_bind_lock = threading.Lock()


def _set_bindings(on):
    torch.nn.init.trunc_normal_ = _TRUNC_WRAPPER if on else _TRUNC_NORMAL
    if not torch.compiler.is_compiling():  # a DataLoader never starts in compiled code
        set_dataloader_worker_loop(workers.WorkerLoop(_WORKER_LOOP) if on else _WORKER_LOOP)


def _bind():
    """Counts active modes across threads; the first binds the wrappers."""
    global _entered
    if torch.compiler.is_compiling():  # traced as a side effect; the wrapper stays bound after the graph
        torch.nn.init.trunc_normal_ = _TRUNC_WRAPPER
        return
    with _bind_lock:
        _entered += 1
        if _entered == 1:
            _set_bindings(True)


_nets = 0  # eager nets on any thread
_step_hooks: list = []  # the optimizer step hooks' handles, registered while there is a net (not for "ignore")


def _count_net(change):
    global _nets
    with _bind_lock:
        _nets += change
        if _nets == 1 and change == 1:
            _step_hooks[:] = [
                register_optimizer_step_pre_hook(_step_begins),
                register_optimizer_step_post_hook(_step_ends),
            ]
        elif _nets == 0:
            while _step_hooks:
                _step_hooks.pop().remove()


def _unbind():
    global _entered
    if torch.compiler.is_compiling():
        return
    with _bind_lock:
        _entered -= 1
        if _entered == 0:
            _set_bindings(False)


def _fresh_locks():
    """In a forked child: a lock another thread of the parent held at the fork would stay held, with no thread to
    release it. Each starts free (docs: guarantees/, "Threads")."""
    global _prepared, _warned_lock, _bind_lock
    _prepared, _warned_lock, _bind_lock = threading.Lock(), threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks)
