"""Every function torch itself marks random, called under torch_rngx.mode(uncovered="error"), eager and compiled.

The functions come from torch, not from a list of ours: each Python binding (torch.X, Tensor.X, torch._C._nn.X,
torch.nn.functional.X) of each aten op torch tags nondeterministic_seeded. Their arguments are built from the op's
schema (a probability where it takes one, training on), with samples of our own only for the recurrent ops, whose
weights must fit their input. Each call is then either routed (it runs, and torch's default generator does not
move; compiled, it gives eager's values) or reported (the mode raises, naming it, before torch draws); none is
silent. An op that runs only on another device is still reported on the CPU: the mode raises before torch is
reached."""
import pytest
import torch
import torch.nn.functional as TF
import torch.utils._pytree as pytree

import torch_rngx

REPORT = "torch_rngx.mode: "  # how every report starts (torch_rngx._mode.mode._message)
NAMESPACES = (("torch", torch), ("torch.Tensor", torch.Tensor), ("torch._C._nn", torch._C._nn),
              ("torch.nn.functional", TF))


def _seeded_ops():
    """aten op name -> its packet, for every aten op with an overload torch tags nondeterministic_seeded."""
    ops = {}
    for full in torch._C._dispatch_get_all_op_names():
        namespace, _, name = full.partition("::")
        packet = getattr(torch.ops.aten, name.split(".")[0], None) if namespace == "aten" else None
        if packet is not None and any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags
                                      for o in packet.overloads()):
            ops[packet.__name__.split(".")[-1]] = packet
    return ops


def tagged_bindings():
    """'torch.X' (and the other namespaces) -> (the binding, the aten packet) for each seeded op X."""
    return {f"{prefix}.{name}": (getattr(namespace, name), packet) for name, packet in _seeded_ops().items()
            for prefix, namespace in NAMESPACES if callable(getattr(namespace, name, None))}


BINDINGS = tagged_bindings()
PROBABILITIES = {"p", "dropout_p", "dropout", "prob"}  # given 0.5 even where they default to 0, so that the op draws
TRAINING = {"train", "training"}


SKIP = object()  # leave the argument out: it has a default


def _value(argument, shape):
    """A value for one schema argument: SKIP where it has a default, None where it is optional."""
    kind, name = str(argument.type), argument.name
    if name in PROBABILITIES and kind in ("float", "Optional[float]", "Tensor"):
        return torch.full(shape, 0.5) if kind == "Tensor" else 0.5
    if name in TRAINING:
        return True
    if argument.has_default_value():
        return SKIP
    if kind.startswith("Optional["):
        return None
    if kind == "Tensor":
        return torch.full(shape, 0.5)
    if kind == "List[Tensor]":
        return [torch.full(shape, 0.5)]
    if kind in ("int", "SymInt"):
        return 3
    if kind == "List[int]":
        return [2, 3]
    if kind == "float":
        return 0.5
    if kind == "bool":
        return False
    raise AssertionError(f"no sample for {name}: {kind}")


def _schema_samples(packet):
    """(args, kwargs) from each non-out overload's schema, in three shapes (attention wants 4-d, multinomial 1-d)."""
    for overload in packet.overloads():
        schema = getattr(packet, overload)._schema
        if overload.endswith("out") or any(a.is_out for a in schema.arguments):
            continue
        for shape in ((2, 2, 4, 4), (4,), (2, 4)):
            args, kwargs = [], {}
            for argument in schema.arguments:
                value = _value(argument, shape)
                if value is SKIP:
                    continue
                if argument.kwarg_only or len(args) < schema.arguments.index(argument):  # one before it left out
                    kwargs[argument.name] = value
                else:
                    args.append(value)
            yield args, kwargs


def _recurrent(name):
    """torch.lstm / gru / rnn_* as nn.LSTM and its kin call them: 2 layers, dropout 0.5 between them, training."""
    module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN,
              "rnn_relu": lambda *a, **k: torch.nn.RNN(*a, nonlinearity="relu", **k)}[name](3, 4, num_layers=2)
    x = torch.full((5, 2, 3), 0.5)
    h = torch.zeros(2, 2, 4)
    hx = [h, h.clone()] if name == "lstm" else h
    yield [x, hx, list(module._flat_weights), True, 2, 0.5, True, False, False], {}


SAMPLES = {"lstm": _recurrent, "gru": _recurrent, "rnn_tanh": _recurrent, "rnn_relu": _recurrent}


def _fresh(value):
    return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)


def _runs_on_the_cpu(func, args, kwargs):
    try:
        func(*_fresh(args), **_fresh(kwargs))
        return True
    except (RuntimeError, NotImplementedError, ValueError, IndexError):
        return False


def _sample(name):
    """The first sample that parses, and whether torch runs it here: (args, kwargs, runs)."""
    func, packet = BINDINGS[name]
    op = name.rsplit(".", 1)[1]
    parsed = None
    for args, kwargs in (SAMPLES[op](op) if op in SAMPLES else _schema_samples(packet)):
        try:
            runs = _runs_on_the_cpu(func, args, kwargs)
        except TypeError:  # this overload's arguments do not parse for this binding
            continue
        if runs:
            return args, kwargs, True
        parsed = parsed or (args, kwargs, False)
    if parsed is None:
        pytest.fail(f"{name}: no sample parses")
    return parsed


def _under_mode(call, seed=3):
    """call() under mode(seed, uncovered="error"): ("reported", message) or ("ran", its tensors, torch moved)."""
    before = torch.get_rng_state()
    try:
        with torch_rngx.mode(seed=seed, uncovered="error"):
            out = call()
    except RuntimeError as error:
        if REPORT not in str(error):
            raise
        return "reported", str(error), False
    leaves = [leaf for leaf in pytree.tree_leaves(out) if isinstance(leaf, torch.Tensor)]
    return "ran", leaves, not torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_every_tagged_function_is_routed_or_reported_eager_and_compiled(name):
    func, _ = BINDINGS[name]
    args, kwargs, runs = _sample(name)

    def eager():
        return func(*_fresh(args), **_fresh(kwargs))

    # The recurrent routes run their layers eagerly inside a compiled function, a graph break (_mode_rnn.py says why).
    fullgraph = name.rsplit(".", 1)[1] not in SAMPLES
    compiled_fn = torch.compile(lambda a, k: func(*a, **k), fullgraph=fullgraph, backend="aot_eager")

    def compiled():
        torch._dynamo.reset()
        return compiled_fn(_fresh(args), _fresh(kwargs))

    outcome, eager_out, moved = _under_mode(eager)
    assert not moved, f"{name} ran under the mode and drew from torch's generator: silent"
    # as the mode's table says: a route runs; a call that stays torch's is reported; a Python function run as it is
    # ("through": F.rrelu) is whatever the calls it makes are
    kind = torch_rngx._mode.mode._KIND[func][0]
    assert {"route": outcome == "ran", "random": outcome == "reported", "through": True}[kind], (kind, outcome)
    if outcome == "reported":
        assert name.rsplit(".", 1)[1] in eager_out, eager_out
        try:
            with torch_rngx.mode(seed=3, uncovered="error"):
                compiled()
        except torch._dynamo.exc.Unsupported:  # loud too, where Dynamo cannot trace the op at all
            with pytest.raises(torch._dynamo.exc.Unsupported):
                compiled()
        except RuntimeError as error:
            assert REPORT in str(error), error
        else:
            pytest.fail(f"{name} compiled under the mode was not reported")
        return
    assert runs, f"{name} ran under the mode but not without it"
    again, repeat, _ = _under_mode(eager)
    assert again == "ran" and all(torch.equal(a, b) for a, b in zip(eager_out, repeat, strict=True))
    other, compiled_out, moved = _under_mode(compiled)
    assert other == "ran" and not moved, f"{name} compiled under the mode drew from torch's generator"
    assert all(torch.equal(a, b) for a, b in zip(eager_out, compiled_out, strict=True)), f"{name}: compiled != eager"


def test_the_sweep_covers_torchs_random_functions():
    """Torch's tags give the sweep its functions, and the mode's table holds each: routed, run through (a Python
    function whose calls reach the mode) or reported when it draws."""
    torch_rngx._mode.mode._prepare()
    assert len(BINDINGS) > 60
    kinds = {name: torch_rngx._mode.mode._KIND.get(func, ("missing",))[0] for name, (func, _) in BINDINGS.items()}
    assert not {name: kind for name, kind in kinds.items() if kind not in ("route", "through", "random")}
    routed = {name for name, kind in kinds.items() if kind == "route"}
    reported = {name for name, kind in kinds.items() if kind == "random"}
    assert {"torch.rand", "torch.Tensor.random_", "torch.nn.functional.dropout", "torch.lstm", "torch.Tensor.cauchy_",
            "torch.Tensor.log_normal_", "torch.Tensor.geometric_", "torch.rrelu", "torch.rrelu_"} <= routed
    assert {"torch._standard_gamma", "torch.poisson", "torch.binomial",
            "torch._scaled_dot_product_flash_attention"} <= reported


def test_the_public_lists_name_each_function_by_what_the_mode_does():
    """torch_rngx.routed_names(), transparent_names() and uncovered_names() (guarantees.md and mode's docstring name
    the last) are public, disjoint, and hold each function the sweep finds under the name the mode gives it."""
    lists = {"route": torch_rngx.routed_names(), "through": torch_rngx.transparent_names(),
             "random": torch_rngx.uncovered_names()}
    routed, through, uncovered = (set(v) for v in lists.values())
    assert not (routed & through or routed & uncovered or through & uncovered)
    for name, (func, _) in BINDINGS.items():
        kind, _, table_name, _ = torch_rngx._mode.mode._KIND[func]
        assert table_name in lists[kind], name
    assert {"torch.rand_like", "torch.nn.init.trunc_normal_"} <= routed and "torch.poisson" in uncovered
