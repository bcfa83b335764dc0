"""Every private torch name torch_rngx uses, and only here (docs: deploy/, "torch's private names").

torch has no public API for what these do: skip autograd for one call, tell whether a torch.func transform or a
backward pass is running, find the checkpoint region of a draw, order seed draws in compiled graphs, and so on.
Each name of a torch module is resolved when torch_rngx is imported, each attribute of an object (an op's schema,
a module's buffers, a DTensor's spec) when it is used. A missing one raises an error naming the torch version, unless
a fallback is written beside it; nothing is skipped silently. tests/test_torch_private.py checks that each
one resolves and behaves as it is used, and that no other module of torch_rngx touches a private torch name.
"""

from __future__ import annotations

import importlib.util
import os
import weakref
from typing import Any, Callable, Iterator, Optional

import torch
import torch.utils._python_dispatch  # noqa: F401  (TorchDispatchMode, below)
import torch.utils.checkpoint
import torch.utils.data

# The torch versions the names below were checked on: tests/test_torch_private.py runs on 2.13.0 (make test), 2.14.1
# and 2.15.0 (make interop); 2.10.0's sources (its .pyi stubs and Python modules) define every one of them.
TESTED_ON = ("2.10.0", "2.13.0", "2.14.1", "2.15.0")


def _missing(name: str, use: str) -> ImportError:
    return ImportError(
        f"torch_rngx needs torch's private {name} ({use}), which torch {torch.__version__} does not "
        f"have; torch_rngx is tested on torch {', '.join(TESTED_ON)}"
    )


def _resolve(owner: Any, path: str, use: str) -> Any:
    """owner.path (dotted), or an ImportError naming `path` and what torch_rngx uses it for."""
    obj = owner
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise _missing(path, use)
    return obj


# ---- dispatch and transforms ----
# Runs the ops under it below autograd: no node and no registered formula, for calls no gradient flows through.
# Fallback: no_grad, which gives the same values and no node, one dispatch step slower.
AutoDispatchBelowAutograd: Callable[[], Any] = getattr(torch._C, "_AutoDispatchBelowAutograd", torch.no_grad)
_after_autograd_keyset = _resolve(torch, "_C._after_autograd_keyset", "to run an op below its autograd kernel")
# (*args) -> whether any tensor among them requires grad: what an op's autograd kernel asks first.
any_requires_grad: Callable[..., bool] = _resolve(torch, "_C._any_requires_grad", "an op's autograd kernel")


def bare_op(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """The C++ callable behind an op overload: what OpOverload.__call__ calls, without its Python frame, for plain
    eager calls (torch.compile traces the OpOverload itself)."""
    return getattr(op, "_op", op)


def redispatch_below_autograd(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """(keyset, *args) -> the op's result from the dispatch keys after autograd: what an Autograd kernel calls when
    no gradient flows."""
    try:
        redispatch = op._handle.redispatch_boxed
    except AttributeError:
        raise _missing("OpOverload._handle.redispatch_boxed", "an op's kernel below its autograd kernel") from None
    return lambda keyset, *args: redispatch(keyset & _after_autograd_keyset, *args)


def function_apply(cls: type) -> Callable[..., Any]:
    """cls.apply for plain eager code (no torch.func transform running) of an autograd.Function without
    setup_context: torch's C apply, which torch.autograd.Function.apply calls after Python work that this case does
    not need. Its caller unwraps dead torch.func wrappers itself (unwrap_if_dead), as Function.apply does."""
    return super(torch.autograd.Function, cls).apply  # type: ignore[misc]


_functorch = _resolve(torch, "_C._functorch", "to see through torch.func transforms")
# None outside every torch.func transform (grad, vjp, jvp, vmap), the innermost interpreter inside one.
peek_interpreter_stack: Callable[[], Any] = _resolve(
    _functorch, "peek_interpreter_stack", "to tell whether a torch.func transform is running"
)
for _name in ("is_batchedtensor", "is_gradtrackingtensor", "maybe_get_bdim", "get_unwrapped"):
    _resolve(_functorch, _name, "the key-reuse checker's view of keys under torch.func")
# A tensor that escaped a finished torch.func transform, unwrapped (any other tensor as it is).
unwrap_if_dead: Callable[[torch.Tensor], torch.Tensor] = _resolve(
    _functorch, "unwrap_if_dead", "to hand an autograd.Function plain tensors"
)


def unwrap_functorch(t: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The plain tensor under every torch.func wrapper of t, and the vmapped dims met, outermost wrapper first."""
    bdims = []
    while _functorch.is_batchedtensor(t) or _functorch.is_gradtrackingtensor(t):
        if _functorch.is_batchedtensor(t):
            bdims.append(_functorch.maybe_get_bdim(t))
        t = _functorch.get_unwrapped(t)
    return t, bdims


# -1 outside a backward pass, the running graph task's id during one.
current_graph_task_id: Callable[[], int] = _resolve(
    torch, "_C._current_graph_task_id", "to tell a backward pass from a forward"
)


def has_kernel(op: str, dispatch_key: str) -> bool:
    """Whether the op ("rngx::uniform") has a kernel registered for the dispatch key ("CUDA")."""
    return bool(
        _resolve(torch, "_C._dispatch_has_kernel_for_dispatch_key", "to tell which devices have kernels")(
            op, dispatch_key
        )
    )


# ---- activation checkpointing (torch_rngx/_engine/journal.py) ----
# (ignore_is_tracing) -> the (pack, unpack) hooks on top of this thread's saved-tensor hook stack, or None.
top_saved_tensors_hooks: Callable[[bool], Any] = _resolve(
    torch, "_C._autograd._top_saved_tensors_default_hooks", "to find the checkpoint a draw runs in"
)
_CheckpointFrame = _resolve(torch.utils.checkpoint, "_CheckpointFrame", "to journal the draws of a checkpoint")


def saved_tensors_hooks_active() -> bool:
    """Whether any saved-tensor hooks (a checkpoint's among them) are on the stack."""
    return top_saved_tensors_hooks(False) is not None


def checkpoint_frame() -> tuple[Optional[Any], Optional[int]]:
    """(frame, graph task) of the non-reentrant checkpoint whose saved-tensor hooks are on top: graph task None
    in the forward, the recomputation's id while recomputing; (None, None) outside any checkpoint. The frame is
    a closure variable of the forward's pack hook (`frame`), and a weak reference in the recomputation's
    (`target_frame_ref`, with the graph task as `gid`)."""
    hooks = top_saved_tensors_hooks(False)
    if hooks is None:
        return None, None
    pack = hooks[0]
    while hasattr(pack, "__wrapped__"):  # the recomputation's pack hook is wrapped by dynamo's disable
        pack = pack.__wrapped__
    cells = dict(zip(getattr(pack, "__code__", None) and pack.__code__.co_freevars or (), pack.__closure__ or ()))
    frame = cells["frame"].cell_contents if "frame" in cells else None
    if isinstance(frame, _CheckpointFrame):
        return frame, None
    ref = cells["target_frame_ref"].cell_contents if "target_frame_ref" in cells else None
    frame = ref() if isinstance(ref, weakref.ref) else None
    if isinstance(frame, _CheckpointFrame) and "gid" in cells:
        return frame, cells["gid"].cell_contents
    return None, None


# ---- in-place writes ----
def view_base(t: torch.Tensor) -> Optional[torch.Tensor]:
    """The tensor autograd sees t as a view of (Tensor._base), or None: a view of a leaf that requires grad may not be
    written in place while grad mode is on."""
    return t._base


# ---- custom ops ----
_resolve(torch.library.Library, "_register_effectful_op", "to keep seed_state calls in order when compiled")


def register_ordered_effect(lib: torch.library.Library, op: str) -> None:
    """Marks `op` as having an ordered side effect: compilers neither merge, drop nor reorder its calls."""
    lib._register_effectful_op(op, torch.library.EffectType.ORDERED)


def schema_arguments(op: torch._ops.OpOverload) -> list[Any]:
    """An op overload's schema arguments, in order (each with .name and .default_value)."""
    try:
        return list(op._schema.arguments)
    except AttributeError:
        raise _missing("OpOverload._schema", "an op's arguments, for the op spec and the DTensor rules") from None


def argument_names(op: torch._ops.OpOverload) -> list[str]:
    """The names of an op overload's schema arguments, in order."""
    return [a.name for a in schema_arguments(op)]


# ---- torch.compile ----
# torch._dynamo takes seconds to import, more than torch itself: nothing imports it before a use that needs it
# (compiling, which imports it anyway; torch_rngx.mode; a CUDA Generator), so eager code never pays for it
# (tests/test_import_time.py). Its names are resolved on each such use; `import torch._dynamo` in a function is a
# dict lookup once it is loaded, and torch.compile traces it as such.


def __getattr__(name: str) -> Any:
    """_torch.comptime: torch._dynamo.comptime's, the key-reuse checker's and the mode's trace hook, imported on
    first use (a call torch.compile traces, where Dynamo is loaded). Callers write `_torch.comptime(fn)`, an
    attribute torch.compile reads as the real comptime."""
    if name == "comptime":
        from torch._dynamo.comptime import comptime

        globals()["comptime"] = comptime  # later reads find it without this function
        return comptime
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mark_static_address(t: torch.Tensor) -> None:
    """Tells torch.compile that a tensor keeps its address for life (CUDA graphs then read it in place)."""
    import torch._dynamo

    _resolve(torch._dynamo, "mark_static_address", "to keep a CUDA Generator's state in CUDA graphs")(t)


def traced_key_node(ctx: Any, name: str) -> Optional[Any]:
    """The fx node of the traced tensor local `name` of the function comptime was called from; None for a
    constant or a non-tensor."""
    var = ctx.get_local(name)
    try:
        proxy = var.as_proxy()
    except NotImplementedError:  # a value dynamo does not put in the graph
        return None
    return proxy.node if isinstance(proxy, torch.fx.Proxy) else None


def traced_constant(ctx: Any, name: str) -> Any:
    """The Python value of the constant local `name` of the function comptime was called from."""
    return ctx.get_local(name).as_python_constant()


def traced_frames(ctx: Any) -> Iterator[tuple[str, int]]:
    """(file, line) of each frame dynamo is inlining comptime's caller from, innermost first; none when dynamo's
    translator (no stable API) is out of reach."""
    try:
        tx = ctx._i_will_not_complain_if_bc_breaks_InstructionTranslator()
        while tx is not None:
            yield tx.f_code.co_filename, tx.lineno
            tx = tx.parent
    except AttributeError:
        return


# ---- torch function modes (torch_rngx/_mode/mode.py) ----
_len_stack = _resolve(torch, "_C._len_torch_function_stack", "to find torch_rngx.mode from rebound functions")
_stack_at = _resolve(torch, "_C._get_function_stack_at", "to find torch_rngx.mode from rebound functions")
_len_dispatch_stack = _resolve(torch, "_C._len_torch_dispatch_stack", "to skip the mode guard where none is pushed")


def any_python_mode() -> bool:
    """Whether this thread has a torch function mode or a Python dispatch mode pushed (torch_rngx.mode pushes one of
    each; so do torch.device and user modes)."""
    return bool(_len_stack() or _len_dispatch_stack())


def torch_function_modes() -> Iterator[Any]:
    """This thread's torch function modes, innermost first."""
    for i in range(_len_stack() - 1, -1, -1):
        yield _stack_at(i)


_ASIDE = "to read a dataset's samples under modes of their own"
_pop_stack = _resolve(torch, "_C._pop_torch_function_stack", _ASIDE)
_push_stack = _resolve(torch, "_C._push_on_torch_function_stack", _ASIDE)


class function_modes_set_aside:
    """Takes this thread's torch function modes off its stack for the block and puts them back after it, so that a
    mode entered inside is the only one the block's calls meet (and none costs them a Python call)."""

    __slots__ = ("_modes",)

    def __enter__(self) -> None:
        self._modes = [_pop_stack() for _ in range(_len_stack())]

    def __exit__(self, *exc: Any) -> None:
        for mode in reversed(self._modes):
            _push_stack(mode)


_NET = "to set torch_rngx.mode's eager net aside for backward passes and optimizer steps"
_dispatch_stack_at = _resolve(torch, "_C._get_dispatch_stack_at", _NET)
_pop_dispatch_stack = _resolve(torch, "_C._pop_torch_dispatch_stack", _NET)
_push_dispatch_stack = _resolve(torch, "_C._push_on_torch_dispatch_stack", _NET)


def dispatch_mode_set_aside(mode: Any) -> bool:
    """Takes the Python dispatch mode `mode` off this thread's stack if it is the innermost one, and says whether it
    did (a mode pushed inside it stays, and so does `mode`). dispatch_mode_put_back(mode) pushes it on again; neither
    runs the mode's __enter__ or __exit__."""
    n = _len_dispatch_stack()
    if n and _dispatch_stack_at(n - 1) is mode:
        _pop_dispatch_stack(None)
        return True
    return False


def dispatch_mode_put_back(mode: Any) -> None:
    _push_dispatch_stack(mode)


def function_mode_base_enter(mode: Any) -> None:
    """Pushes `mode` back on this thread's torch function mode stack, with none of its own __enter__'s work (the
    base TorchFunctionMode's push, which torch.compile traces)."""
    torch.overrides.TorchFunctionMode.__enter__(mode)


def function_mode_base_exit(mode: Any) -> None:
    torch.overrides.TorchFunctionMode.__exit__(mode, None, None, None)


# torch_rngx.mode's eager net (documented at this path; torch has no other name for it).
TorchDispatchMode = _resolve(torch, "utils._python_dispatch.TorchDispatchMode", "for torch_rngx.mode's eager net")


def builtin_namespaces() -> tuple:
    """The namespaces of torch's builtins (torch.X, Tensor.X, torch.nn.functional's C ones), private ones included:
    torch_rngx.mode looks there for the builtins torch tags random."""
    return (
        torch,
        torch.Tensor,
        torch._C._nn,
        torch._C._VariableFunctions,
        *(getattr(torch._C, name) for name in ("_special", "_linalg", "_fft")),
    )


# ---- what torch_rngx.mode derives from torch's ops (torch_rngx/_engine/random_ops.py) ----
OpOverload = _resolve(torch, "_ops.OpOverload", "to read the tags of an op torch_rngx.mode meets")
OpOverloadPacket = _resolve(torch, "_ops.OpOverloadPacket", "to read the tags of an op torch_rngx.mode meets")


def packet_namespace(packet: Any) -> str:
    """The namespace of an OpOverloadPacket ("aten" for torch.ops.aten.rand)."""
    return packet._qualified_op_name.split("::")[0]


def packet_name(packet: Any) -> str:
    return packet._qualified_op_name


# Runs torch calls past every torch function mode and subclass (torch_rngx's own seed draws from torch's generator).
DisableTorchFunction = _resolve(torch, "_C.DisableTorchFunction", "to draw its own seeds past torch_rngx.mode")
NO_OVERRIDE = "_rngx_no_override"  # the one name torch_rngx adds to torch's modules, below


def _no_override(*args: Any) -> bool:
    return False


def install_no_override(module_globals: dict) -> str:
    """Adds NO_OVERRIDE, an always-False stand-in for torch's has_torch_function*, to a torch module's globals
    and to torch.overrides (torch functions name the checks either way); returns the name. A Python torch function
    whose code names it in place of its check runs its body under a torch function mode (_random_ops.transparent).
    Nothing else in torch reads the name."""
    module_globals.setdefault(NO_OVERRIDE, _no_override)
    if not hasattr(torch.overrides, NO_OVERRIDE):
        setattr(torch.overrides, NO_OVERRIDE, _no_override)
    return NO_OVERRIDE


def show_to_function_modes(functions: Any) -> None:
    """Makes torch.compile dispatch these torch builtins to torch function modes, as eager does: Dynamo dispatches
    a call to a mode only if the function is in its set of overridable functions, which leaves out
    torch.overrides.get_ignored_functions() (torch.rand_like, randn_like, randint_like, normal) and private
    builtins (torch._standard_gamma, _sample_dirichlet), so a reference bound before a mode (`from torch import
    randn_like`) would reach the graph unseen. Also the Tensor subclasses' __torch_function__ then see them compiled
    as eager."""
    import torch._dynamo

    overridable = _resolve(torch, "_dynamo.variables.torch.get_overridable_functions", "to show calls to the mode")
    overridable().update(functions)


def never_a_compiled_frame(code: Any) -> None:
    """torch.compile never compiles this code object as a frame of its own, and still inlines it where a traced
    function calls it. While a compiled function runs, torch.compile looks at every Python frame that starts, and
    the parts of a graph-broken function that run eagerly call a mode's __torch_function__ from C, as a frame of its
    own: compiled there, it gave `loc.device` for `loc.dtype` inside VonMises.sample (torch 2.13)."""
    import torch._dynamo

    _resolve(torch, "_dynamo.eval_frame.skip_code", "to keep a mode's dispatch out of compiled frames")(code)


# torch.utils.data's worker entry point: a DataLoader's iterator starts each worker process with it as its target,
# looked up when the worker starts (torch_rngx/_mode/workers.py).
_data_worker = _resolve(torch, "utils.data._utils.worker", "to give each DataLoader worker its own stream")


def dataloader_worker_loop() -> Callable[..., Any]:
    return _data_worker._worker_loop


def set_dataloader_worker_loop(target: Callable[..., Any]) -> None:
    _data_worker._worker_loop = target


def optimizer_step_dtype() -> torch.dtype:
    """The dtype torch's optimizers give a parameter's step count (torch.optim.optimizer._get_scalar_dtype), which
    torch_rngx.optim's fused Adam step keeps as torch's own step does."""
    module = importlib.import_module("torch.optim.optimizer")  # not an attribute of torch.optim
    return _resolve(module, "_get_scalar_dtype", "the optimizer state's step dtype")()


# torch.utils.data.DataLoader makes each epoch's iterator with this method, which torch_rngx.data.DataLoader
# overrides to hand torch's iterator its view of the dataset; the iterator counts the batches it has delivered.
DATALOADER_HOOKS = ("_get_iterator",)


def build_dataloader_iterator(loader: torch.utils.data.DataLoader) -> Any:
    """torch's iterator for `loader` (single- or multi-process), as DataLoader.__iter__ makes it."""
    return torch.utils.data.DataLoader._get_iterator(loader)


def batches_yielded(iterator: Any) -> int:
    """The batches (or samples, without batching) a DataLoader iterator has delivered since its epoch began."""
    return iterator._num_yielded


def compiled_runtime_dirs() -> tuple[str, ...]:
    """The folders of torch.compile's runtime (AOTAutograd's, Inductor's; not Dynamo's, whose frames also run
    eager code): a frame from one of them on the stack means a compiled graph is running. Found without importing
    them: both take long to import, and code that compiles nothing has no frame there."""
    names = ("torch._functorch", "torch._inductor")
    specs = [importlib.util.find_spec(n) for n in names]
    return tuple(os.path.dirname(str(spec.origin)) + os.sep for spec in specs if spec is not None)


def traced_graph(ctx: Any) -> torch.fx.Graph:
    """The fx graph torch.compile is building, from a comptime callback."""
    return ctx.graph()


def traced_output(ctx: Any) -> Any:
    """The graph torch.compile is building (Dynamo's OutputGraph, no stable API), from a comptime callback: a key
    for what one captured graph collects while it is traced."""
    return ctx._i_will_not_complain_if_bc_breaks_InstructionTranslator().output


def before_backends(hook: Callable[[Any, torch.fx.GraphModule], None]) -> None:
    """Calls hook(output, gm) with each graph torch.compile has captured, before it hands the graph to the backend
    (aot_eager, Inductor, ...): where what the graph holds is known whatever wrote it. torch has no hook for it;
    Dynamo's OutputGraph.call_user_compiler is where every backend is called from. Installed once; Dynamo is
    resolved here, not at import (it takes seconds to import, and code that compiles nothing needs none of it)."""
    graph_class = _resolve(torch, "_dynamo.output_graph.OutputGraph", "to check each captured graph under the mode")
    original = graph_class.call_user_compiler
    if getattr(original, "_rngx_hook", None) is not None:
        return

    def call_user_compiler(self: Any, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        hook(self, gm)
        return original(self, gm, example_inputs)

    call_user_compiler._rngx_hook = hook  # type: ignore[attr-defined]
    graph_class.call_user_compiler = call_user_compiler


def entry_function_modes(output: Any) -> list:
    """The torch function modes that were active when torch.compile started tracing this graph's frame."""
    return list(getattr(output, "torch_function_mode_stack", ()))


def is_numpy_wrapper(target: Any) -> bool:
    """Whether a graph's call target is Dynamo's wrapper of a NumPy function it compiles into torch's (torch._numpy):
    its `.f` is the function it wraps. Resolved on use, from a graph being checked (Dynamo is loaded then)."""
    wrapper = _resolve(torch, "_dynamo.utils.numpy_to_tensor_wrapper", "to name a NumPy call in a graph")
    return isinstance(target, wrapper)


_FakeTensor = _resolve(torch, "_subclasses.fake_tensor.FakeTensor", "to run a graph's node on fake tensors")


def graph_fake_mode(output: Any) -> Optional[Any]:
    """The fake tensor mode torch.compile traced this graph under (Dynamo's OutputGraph)."""
    return getattr(output, "fake_mode", None)


def fake_mode_of(values: Any) -> Optional[Any]:
    """The fake tensor mode of the first fake tensor in values (a graph node's example arguments, nested), or None."""
    leaves = torch.utils._pytree.tree_leaves(values)
    return next((v.fake_mode for v in leaves if isinstance(v, _FakeTensor)), None)


HigherOrderOperator: type = _resolve(torch, "_ops.HigherOrderOperator", "to leave a graph's subgraph calls to it")


softmax_backward_data: Callable[..., torch.Tensor] = _resolve(
    torch, "_softmax_backward_data", "for softmax's backward under torch_rngx.mode"
)
# torch's random functions with private names that torch_rngx.mode reports as not routed; on a torch without
# them nothing can call them, so the list is shorter.
PRIVATE_SAMPLERS = tuple(
    f for f in (getattr(torch, "_standard_gamma", None), getattr(torch, "_sample_dirichlet", None)) if f is not None
)


def _correct_fan(tensor: torch.Tensor, mode: str) -> int:
    """nn.init's fan of a weight: fan_in (dim 1) or fan_out (dim 0), times the receptive field."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = tensor[0][0].numel() if tensor.dim() > 2 else 1
    return tensor.size(1 if mode == "fan_in" else 0) * receptive


# kaiming_uniform_'s fan; the fallback computes the same.
calculate_correct_fan: Callable[[torch.Tensor, str], int] = getattr(
    torch.nn.init, "_calculate_correct_fan", _correct_fan
)


# ---- nn.Module and DTensor internals ----
# Methods of nn.Module that torch_rngx's modules override: the name repr prints, and a check of a state dict
# before it is loaded (tests/test_torch_private.py checks that torch still calls them so).
MODULE_HOOKS = ("_get_name", "_load_from_state_dict")


def own_buffer(module: torch.nn.Module, name: str) -> Optional[torch.Tensor]:
    """module's own buffer `name`, or None: one dict lookup, as a module's forward can afford."""
    try:
        return module._buffers.get(name)
    except AttributeError:
        raise _missing("nn.Module._buffers", "a module's own stream buffer") from None


def shard_order(x: Any) -> tuple[Any, ...]:
    """The order in which each sharded dim of the DTensor x is split over mesh dims: entries with tensor_dim and
    mesh_dims (None or empty: mesh-dim order throughout)."""
    spec = x._spec
    if not hasattr(spec, "shard_order"):
        raise _missing("DTensorSpec.shard_order", "to check the order DTensor splits a dim in")
    return tuple(spec.shard_order or ())
