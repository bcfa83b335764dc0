"""torch's private names, all in torch_rngx/_engine/torch_private.py (docs/deploy.md, "torch's private names"): each one resolves on
this torch and behaves as torch_rngx uses it, and no other module of torch_rngx touches a private torch name."""
import ast
import pathlib
import re

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DeviceMesh, Shard, distribute_tensor
from torch.utils.checkpoint import checkpoint

import torch_rngx
from torch_rngx._engine import torch_private as _torch

PACKAGE = pathlib.Path(torch_rngx.__file__).parent


def test_tested_versions_include_this_torch_line():
    assert torch.__version__.split("+")[0].rsplit(".", 1)[0] in {v.rsplit(".", 1)[0] for v in _torch.TESTED_ON}


def test_a_missing_name_is_an_import_error_naming_torch():
    with pytest.raises(ImportError, match=rf"torch.s private _C\._gone \(a test\).*torch {re.escape(str(torch.__version__))}"):
        _torch._resolve(torch, "_C._gone", "a test")


def test_below_autograd_is_torchs_and_makes_no_node():
    assert _torch.AutoDispatchBelowAutograd is torch._C._AutoDispatchBelowAutograd  # not the no_grad fallback
    x = torch.ones(3, requires_grad=True)
    for guard in (_torch.AutoDispatchBelowAutograd, torch.no_grad):  # the fallback: the same values, no node
        with guard():
            y = x * 2
        assert y.grad_fn is None and not y.requires_grad and y.tolist() == [2.0] * 3


def test_bare_op_is_the_overloads_callable():
    call = _torch.bare_op(torch.ops.aten.add.Tensor)
    assert call is not torch.ops.aten.add.Tensor and call(torch.ones(2), torch.ones(2)).tolist() == [2.0, 2.0]


def test_redispatch_below_autograd_is_an_autograd_kernels_way_on():
    """rngx::dropout's autograd kernel (_engine/registrations.py) takes it when no gradient flows: the op's value, and no node."""
    x = torch.ones(4, requires_grad=True)
    with torch.no_grad():
        y = torch.ops.rngx.dropout(x, torch.tensor([1, 0]), 0.0)
    assert y.grad_fn is None and not y.requires_grad and y.tolist() == [1.0] * 4


def test_any_requires_grad_looks_at_every_tensor():
    assert _torch.any_requires_grad(torch.ones(1), None, 3.0, torch.ones(1, requires_grad=True))
    assert not _torch.any_requires_grad(torch.ones(1), None, 3.0)


def test_function_apply_makes_the_functions_node():
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = torch.ones(2, requires_grad=True)
    y = _torch.function_apply(Twice)(x)
    assert type(y.grad_fn).__name__ == "TwiceBackward"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_unwrap_if_dead_unwraps_a_tensor_that_escaped_a_transform():
    escaped = []
    torch.func.grad(lambda x: escaped.append(x) or x.sum())(torch.ones(2))
    assert torch._C._functorch.is_gradtrackingtensor(escaped[0])
    plain = _torch.unwrap_if_dead(escaped[0])
    assert not torch._C._functorch.is_gradtrackingtensor(plain) and plain.tolist() == [1.0, 1.0]
    live = torch.ones(2)
    assert _torch.unwrap_if_dead(live) is live


def test_peek_interpreter_stack_sees_every_transform():
    assert _torch.peek_interpreter_stack() is None
    seen = []

    def f(x):
        seen.append(_torch.peek_interpreter_stack() is not None)
        return x.sum()

    torch.func.grad(f)(torch.ones(2))
    torch.func.vmap(f)(torch.ones(2, 2))
    torch.func.jvp(f, (torch.ones(2),), (torch.ones(2),))
    assert seen == [True, True, True]


def test_unwrap_functorch_gives_the_plain_tensor_and_vmapped_dims():
    plain = torch.arange(6).view(2, 3)
    got = []
    torch.func.vmap(lambda row: got.append(_torch.unwrap_functorch(row)) or row, in_dims=1)(plain)
    (inner, bdims), = got
    assert type(inner) is torch.Tensor and torch.equal(inner, plain) and bdims == [1]
    assert _torch.unwrap_functorch(plain) == (plain, [])


def test_current_graph_task_id_tells_backward_from_forward():
    ids = []
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: ids.append(_torch.current_graph_task_id()))
    assert _torch.current_graph_task_id() == -1
    y.sum().backward()
    assert len(ids) == 1 and ids[0] != -1


def test_checkpoint_frame_is_the_same_in_forward_and_recomputation():
    seen = []

    def region(x):
        seen.append((_torch.saved_tensors_hooks_active(), *_torch.checkpoint_frame()))
        return x.sin() * 2

    assert _torch.checkpoint_frame() == (None, None) and not _torch.saved_tensors_hooks_active()
    x = torch.ones(3, requires_grad=True)
    checkpoint(region, x, use_reentrant=False).sum().backward()
    (fwd_active, fwd_frame, fwd_task), (re_active, re_frame, re_task) = seen
    assert fwd_active and re_active
    assert isinstance(fwd_frame, torch.utils.checkpoint._CheckpointFrame) and fwd_task is None
    assert re_frame is fwd_frame and re_task is not None


def test_seed_state_has_an_ordered_effect():
    from torch._higher_order_ops.effects import _get_effect

    assert _get_effect(torch.ops.rngx.seed_state.default) == torch.library.EffectType.ORDERED


def test_schema_arguments_carry_names_and_defaults():
    args = _torch.schema_arguments(torch.ops.rngx.uniform.default)
    assert [a.name for a in args][:4] == ["like", "state", "low", "high"]
    assert [a.default_value for a in args[4:]] == [None, None, None]


def test_argument_names_follow_the_schema():
    assert _torch.argument_names(torch.ops.rngx.dropout.default) == ["x", "state", "p", "global_shape",
                                                                     "global_start"]


def test_mark_static_address_marks_the_tensor():
    t = torch.zeros(2)
    _torch.mark_static_address(t)
    assert getattr(t, "_dynamo_static_input_type", None) is not None


def test_comptime_helpers_read_the_traced_frame():
    got = {}

    def note(ctx):
        got["node"] = _torch.traced_key_node(ctx, "key")
        got["none"] = _torch.traced_key_node(ctx, "label")
        got["label"] = _torch.traced_constant(ctx, "label")
        got["frames"] = list(_torch.traced_frames(ctx))

    def f(key):
        label = "draw"
        _torch.comptime(note)
        return key + len(label)

    torch._dynamo.reset()
    torch.compile(f, backend="eager", fullgraph=True)(torch.zeros(2))
    assert isinstance(got["node"], torch.fx.Node) and got["none"] is None and got["label"] == "draw"
    assert got["frames"][0] == (__file__, f.__code__.co_firstlineno + 2)


def test_never_a_compiled_frame_is_inlined_but_never_compiled_alone():
    def inner(x):
        return x + 1

    _torch.never_a_compiled_frame(inner.__code__)
    counter = torch._dynamo.testing.CompileCounter()
    torch._dynamo.reset()
    torch.compile(inner, backend=counter)(torch.zeros(2))
    assert counter.frame_count == 0
    torch.compile(lambda x: inner(x) * 2, backend=counter, fullgraph=True)(torch.zeros(2))
    assert counter.frame_count == 1 and counter.op_count == 2


def test_torch_function_modes_are_innermost_first():
    class Outer(torch.overrides.TorchFunctionMode):
        pass

    class Inner(torch.overrides.TorchFunctionMode):
        pass

    with Outer() as outer, Inner() as inner:
        assert list(_torch.torch_function_modes()) == [inner, outer]
    assert list(_torch.torch_function_modes()) == []


def test_softmax_backward_data_is_softmaxs_gradient():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    out = x.softmax(-1)
    grad = torch.randn(3, 5, dtype=torch.float64)
    (want,) = torch.autograd.grad(out, x, grad)
    assert torch.allclose(_torch.softmax_backward_data(grad, out.detach(), -1, out.dtype), want)


def test_private_samplers_are_torchs():
    assert _torch.PRIVATE_SAMPLERS == (torch._standard_gamma, torch._sample_dirichlet)


@pytest.mark.parametrize("shape", [(4, 3), (5, 2, 3, 3), (2, 6, 1)])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "FAN_IN"])
def test_correct_fan_is_torchs_and_the_fallback_agrees(shape, mode):
    assert _torch.calculate_correct_fan is torch.nn.init._calculate_correct_fan
    assert _torch._correct_fan(torch.empty(shape), mode) == _torch.calculate_correct_fan(torch.empty(shape), mode)


@pytest.mark.parametrize("shape, mode", [((4,), "fan_in"), ((4, 3), "fan_sideways")])
def test_correct_fan_fallback_refuses_as_torch(shape, mode):
    with pytest.raises(ValueError) as torchs:
        _torch.calculate_correct_fan(torch.empty(shape), mode)
    with pytest.raises(ValueError, match=str(torchs.value)):
        _torch._correct_fan(torch.empty(shape), mode)


def test_module_hooks_are_called_by_torch():
    calls = []

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.zeros(2))

        def _get_name(self):
            return "Renamed"

        def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
            calls.append((sorted(state_dict), prefix, len(args) + len(kwargs)))
            super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    outer = torch.nn.Sequential(M())
    outer.load_state_dict({"0.b": torch.ones(2)})
    assert _torch.MODULE_HOOKS == ("_get_name", "_load_from_state_dict")
    assert repr(outer[0]) == "Renamed()" and calls == [(["0.b"], "0.", 5)] and outer[0].b.tolist() == [1.0, 1.0]


def test_dataloader_hooks_make_and_count_torchs_iterator():
    """DataLoader.__iter__ asks _get_iterator (once per iterator, _reset after for persistent workers), whose iterator
    counts the batches it delivers from 0 each epoch."""
    made = []

    class Loader(torch.utils.data.DataLoader):
        def _get_iterator(self):
            made.append(_torch.build_dataloader_iterator(self))
            return made[-1]

    assert _torch.DATALOADER_HOOKS == ("_get_iterator",)
    loader = Loader(range(5), batch_size=2)
    batches = iter(loader)
    assert batches is made[0] and _torch.batches_yielded(batches) == 0
    next(batches)
    next(batches)
    assert _torch.batches_yielded(batches) == 2 and [b.tolist() for b in batches] == [[4]]
    assert _torch.batches_yielded(batches) == 3 and len(made) == 1


def test_function_modes_set_aside_and_put_back():
    seen = []

    class Watch(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Watch() as outer, Watch():
        with _torch.function_modes_set_aside():
            torch.ones(1)
            assert list(_torch.torch_function_modes()) == []
        assert seen == [] and len(list(_torch.torch_function_modes())) == 2
        assert list(_torch.torch_function_modes())[1] is outer
        torch.ones(1)
    assert seen == [torch.ones, torch.ones]  # the inner mode, then the outer one


def test_a_dispatch_mode_set_aside_only_when_innermost_and_put_back():
    seen = []

    class Watch(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Watch() as outer:
        with Watch():
            assert not _torch.dispatch_mode_set_aside(outer)  # not the innermost: both stay
            assert torch._C._len_torch_dispatch_stack() == 2
        assert _torch.dispatch_mode_set_aside(outer)
        torch.ones(1).add(1)
        assert seen == [] and torch._C._len_torch_dispatch_stack() == 0
        _torch.dispatch_mode_put_back(outer)
        torch.ones(1).add(1)
    assert torch.ops.aten.add.Tensor in seen and torch._C._len_torch_dispatch_stack() == 0


def test_own_buffer():
    m = torch.nn.Linear(2, 2)
    m.register_buffer("state", torch.zeros(2))
    assert _torch.own_buffer(m, "state") is m.state
    assert _torch.own_buffer(m, "weight") is None and _torch.own_buffer(m, "missing") is None
    with pytest.raises(ImportError, match=r"private nn\.Module\._buffers"):  # what a torch without it gives
        _torch.own_buffer(object(), "state")


def test_argument_names_without_a_schema_name_it():
    with pytest.raises(ImportError, match=r"private OpOverload\._schema"):
        _torch.argument_names(object())


@pytest.fixture
def one_rank_mesh():
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        yield DeviceMesh("cpu", [[0]])
    finally:
        dist.destroy_process_group()


def test_shard_order_names_the_mesh_dims_in_order(one_rank_mesh):
    x = distribute_tensor(torch.ones(4, 4), one_rank_mesh, [Shard(0), Shard(1)])
    y = distribute_tensor(torch.ones(4, 4), one_rank_mesh, [Shard(0), Shard(0)])
    assert [(e.tensor_dim, tuple(e.mesh_dims)) for e in _torch.shard_order(x)] == [(0, (0,)), (1, (1,))]
    assert [(e.tensor_dim, tuple(e.mesh_dims)) for e in _torch.shard_order(y)] == [(0, (0, 1))]


# ---- no private torch name outside _engine/torch_private.py ----

def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours():
    """Private names torch_rngx itself defines outside _engine/torch_private.py: functions, classes, methods, names and
    attributes it assigns, and the nn.Module hooks it overrides (checked above)."""
    names = set(_torch.MODULE_HOOKS)
    for path in PACKAGE.rglob("*.py"):
        if path.name == "torch_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return {n for n in names if _private(n)}


def private_torch_uses(source, ours):
    """(line, what) of each private torch name in `source`: an import of a private torch module or name, an
    attribute chain from torch with a private part, a private attribute torch_rngx does not define, and a
    getattr/hasattr of one by its string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "torch":
            parts = node.module.split(".") + [a.name for a in node.names]
            if any(map(_private, parts)):
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if a.name.split(".")[0] == "torch" and any(map(_private, a.name.split(".")))]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in ours:
            if not (isinstance(node.value, ast.Name) and node.value.id == "sys"):  # sys._getframe is Python's
                found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value)
              and node.args[1].value not in ours):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_scan_finds_each_kind_of_private_use():
    source = ("import torch._dynamo\nfrom torch._C import _functorch\nfrom torch.utils.checkpoint import "
              "_CheckpointFrame\ntorch._C._current_graph_task_id()\nx._spec.shard_order\n"
              "getattr(torch.utils.checkpoint, '_CheckpointFrame', None)\nsys._getframe(1)\nself._report()\n")
    assert sorted(line for line, _ in private_torch_uses(source, {"_report"})) == [1, 2, 3, 4, 4, 5, 6]


def test_graph_helpers_read_what_torch_compile_captured():
    """The mode's check of each captured graph (_mode._check_graph) reads Dynamo's graph through these: the modes
    active when tracing began, its fake mode, the fake mode of a node's example arguments; it leaves higher-order ops
    to their subgraphs and names Dynamo's NumPy wrappers by what they wrap; before_backends installed its hook."""
    import numpy as np

    got = {}

    def probe(ctx):
        out = _torch.traced_output(ctx)
        got["modes"], got["fake"] = _torch.entry_function_modes(out), _torch.graph_fake_mode(out)

    def f(x):
        _torch.comptime(probe)
        return x + 1

    torch._dynamo.reset()
    mode = torch_rngx.mode(seed=0)
    with mode:
        torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert mode in got["modes"] and got["fake"] is not None
    fake = got["fake"].from_tensor(torch.ones(2))
    assert _torch.fake_mode_of(([fake], {"k": 1})) is got["fake"] and _torch.fake_mode_of((torch.ones(2),)) is None
    assert isinstance(torch.ops.higher_order.cond, _torch.HigherOrderOperator)
    assert _torch.is_numpy_wrapper(torch._dynamo.utils.numpy_to_tensor_wrapper(np.sin)) and not _torch.is_numpy_wrapper(np.sin)
    assert torch._dynamo.output_graph.OutputGraph.call_user_compiler._rngx_hook is torch_rngx._mode.mode._check_graph


def test_no_other_module_touches_a_private_torch_name():
    ours = _ours()
    found = [f"{path.name}:{line}: {what}" for path in sorted(PACKAGE.rglob("*.py")) if path.name != "torch_private.py"
             for line, what in private_torch_uses(path.read_text(), ours)]
    assert found == []
