"""torch_rngx.mode checks each graph torch.compile captures under it (issue 43, item 1): a random op that reaches a
graph without a torch call the mode saw (Dynamo's NumPy rewrite, a function kept opaque in the graph) is named before
the backend gets the graph, as `uncovered` says: "error" raises, "warn" warns once, "ignore" stays quiet. Every aten op
torch tags random is put in a graph that way and named."""
import warnings

import numpy as np
import pytest
import torch

import torch_rngx
from test_mode_sweep import PROBABILITIES, SAMPLES, TRAINING, _schema_samples, _seeded_ops

REPORT = "torch_rngx.mode: "


def _noisy(x):
    return x + torch.from_numpy(np.random.rand(4)).float()


def _bare():
    return torch.from_numpy(np.random.rand(4))


@pytest.mark.parametrize("f,args", [(_noisy, (torch.zeros(4),)), (_bare, ())], ids=["noisy", "no_torch_call"])
def test_numpy_random_in_a_compiled_function_is_named(f, args):
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match=r"numpy\.random\.rand .*aten\.uniform_"), \
            torch_rngx.mode(seed=0, uncovered="error"):
        torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
    torch._dynamo.reset()
    torch_rngx._mode.mode._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for backend in ("aot_eager", "inductor"):  # two graphs, one warning
            with torch_rngx.mode(seed=0):
                torch.compile(f, fullgraph=True, backend=backend)(*args)
    ours = [w for w in caught if issubclass(w.category, torch_rngx.UncoveredRandomWarning)]
    assert len(ours) == 1 and "numpy.random.rand" in str(ours[0].message), [str(w.message) for w in ours]
    assert ours[0].filename == __file__, "the warning names the user's line"
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_rngx.UncoveredRandomWarning)
        with torch_rngx.mode(seed=0, uncovered="ignore"):
            torch.compile(f, fullgraph=True, backend="aot_eager")(*args)


def test_graphs_compiled_outside_a_mode_are_not_checked():
    torch._dynamo.reset()
    torch.compile(_noisy, fullgraph=True, backend="aot_eager")(torch.zeros(4))  # no mode: torch's own, no report


def test_a_mode_entered_inside_the_compiled_function_checks_its_graph():
    torch._dynamo.reset()

    def step(x):
        with torch_rngx.mode(seed=1, uncovered="error"):
            return torch.rand_like(x) + torch.from_numpy(np.random.rand(4)).float()

    with pytest.raises(RuntimeError, match=r"numpy\.random\.rand"):
        torch.compile(step, fullgraph=True, backend="aot_eager")(torch.zeros(4))


def _spied(op, args, kwargs):
    """The random aten ops (not ours) a call of op reaches on fake tensors; None where it cannot run on them (an op
    for another device, a schema the samples do not fit)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    spy = torch_rngx._mode.mode._Spy()
    try:
        with FakeTensorMode() as fake:
            fakes = [fake.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            with spy:
                op(*fakes, **kwargs)
    except Exception:  # noqa: BLE001  (this overload's schema, or this sample, does not fit)
        return None
    return spy.found


def _samples(name, packet):
    if name in SAMPLES:  # the recurrent ops: weights that fit their input (test_mode_sweep)
        yield from ((packet.default if "default" in packet.overloads() else getattr(packet, "input"), a, k)
                    for a, k in SAMPLES[name](name))
    for overload in packet.overloads():
        if overload.endswith("out"):
            continue
        try:
            for args, kwargs in _schema_samples(packet):
                yield getattr(packet, overload), args, kwargs
        except AssertionError:  # an argument type the schema samples do not make
            return


def _in_a_graph(op, args, kwargs):
    """Whether torch.compile (no mode) captures the op's call in a graph: not one returning an int, say. The graph is
    not run (an op for another device captures on the CPU and cannot run there)."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        raise NotImplementedError("captured, not run")

    torch._dynamo.reset()
    try:
        torch.compile(lambda a, k: op(*a, **k), fullgraph=True, backend=capture)(list(args), dict(kwargs))
    except Exception:  # noqa: BLE001  (Dynamo refused it, or the backend above stopped it)
        pass
    return bool(graphs)


SEEDED = _seeded_ops()


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_every_random_aten_op_in_a_graph_is_named(name):
    """Each aten op torch tags random, in a graph torch.compile captures (under mode(uncovered="error"), both called
    by a function the graph keeps opaque, so the mode sees no torch call, and called by name), raises naming it or
    the random op it decomposes into. An op that cannot run on the CPU's fake tensors (one for CUDA or MPS) cannot be
    in a CPU graph, nor one Dynamo refuses to trace (its result is an int): its node is checked in a graph built by
    hand."""
    packet = SEEDED[name]
    for op, args, kwargs in _samples(name, packet):
        reached = _spied(op, args, kwargs)
        if reached and _in_a_graph(op, args, kwargs):
            break
    else:
        op = getattr(packet, packet.overloads()[0])
        drawing = {a.name: 0.5 if a.name in PROBABILITIES else True for a in op._schema.arguments
                   if a.name in PROBABILITIES | TRAINING}  # arguments under which it draws
        graph = torch.fx.Graph()
        graph.output(graph.call_function(op, (), drawing))
        with pytest.raises(RuntimeError, match=REPORT + f".*aten.{name}"):
            torch_rngx._mode.mode.check_graph(torch.fx.GraphModule(torch.nn.Module(), graph), "error")
        return
    assert all(f"aten.{name}" in n or n.startswith("aten.bernoulli") for n in reached), reached

    @torch._dynamo.allow_in_graph
    def hidden(*a, **k):
        return op(*a, **k)

    for call in (hidden, op):
        torch._dynamo.reset()
        compiled = torch.compile(lambda a, k: call(*a, **k), fullgraph=True, backend="aot_eager")
        with pytest.raises(RuntimeError, match=REPORT) as raised, torch_rngx.mode(seed=0, uncovered="error"):
            compiled([a.clone() if isinstance(a, torch.Tensor) else a for a in args], dict(kwargs))
        assert any(n in str(raised.value) for n in reached + [f"aten.{name}"]), (reached, str(raised.value))
