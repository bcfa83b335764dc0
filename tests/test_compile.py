"""torch.compile(fullgraph=True) and torch.export == eager, bitwise, for every op of the table (tests/ops_table.py):
outputs, strides, gradients and the Generator's state; dynamic=False and True; contiguous, channels_last, transposed
and sliced inputs; stateless (a key), stateful (a Generator, and generator=None under torch.manual_seed)."""
import pytest
import torch
from conftest import layouts, make_state
from ops_table import ROWS, draws

import torch_rngx

KEY = make_state(0x9E3779B97F4A7C15, 2**64 - 3)  # the offset wraps past 2^64 inside each call


def stateless(x, key):
    return tuple(draws(x, key).values())


STATEFUL = [name for name, row in ROWS.items() if row.stateful is not None]


def stateful(x, g):
    """Every row's stateful function, plus quantize's modes that do not draw and a module drawing from g."""
    means = torch.linspace(-1, 1, x.shape[1]).view(1, -1, 1, 1)
    return (*(ROWS[name].stateful(x, g) for name in STATEFUL),
            torch_rngx.quantize(x, "dequantize", means, generator=g), torch_rngx.quantize(x, "symbols", means),
            torch_rngx.nn.Dropout(0.6, generator=g)(x))


def run(fn, x, arg):
    """fn's outputs and each differentiable output's gradient, taken separately with a fixed cotangent (a sum of
    several would let eager and Inductor round differently)."""
    x = x.detach().clone().requires_grad_()
    outs = fn(x, arg)
    grads = [torch.autograd.grad(o, x, torch.linspace(-1, 1, o.numel()).view(o.shape).to(o.dtype), retain_graph=True)[0]
             for o in outs if o.requires_grad]
    return outs, grads


def assert_same(got, want, where):
    (go, gg), (wo, wg) = got, want
    assert len(go) == len(wo) and len(gg) == len(wg) > 0
    for i, (g, w) in enumerate(zip(go, wo)):
        assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride(), (where, i)
        assert torch.equal(g, w), (where, i)
    for i, (g, w) in enumerate(zip(gg, wg)):  # a gradient's strides are autograd's choice
        assert torch.equal(g, w), (where, "gradient", i)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.key_reuse_ok("draws every op from one key, eager and compiled")
def test_stateless_compiled_equals_eager(dynamic):
    torch._dynamo.reset()
    compiled = torch.compile(stateless, fullgraph=True, dynamic=dynamic)
    for layout, x in layouts().items():
        for key in (KEY, make_state(3, 99)):
            assert_same(run(compiled, x, key), run(stateless, x, key), layout)


@pytest.mark.slow("four Inductor compiles of every stateful function")
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("with_generator", [True, False])
def test_stateful_compiled_equals_eager(dynamic, with_generator):
    """Two calls each (fresh values each time, the Generator moved as eager moves it); generator=None draws each
    call's seed from torch's default generator, which torch.manual_seed restarts. On one layout: the ops themselves
    are compiled in every layout above, and the state the stateful functions add does not depend on it."""
    torch._dynamo.reset()
    compiled = torch.compile(stateful, fullgraph=True, dynamic=dynamic)
    for layout, x in [("channels_last", layouts()["channels_last"])]:
        runs = []
        for fn in (compiled, stateful):
            torch.manual_seed(32)
            g = torch_rngx.Generator(2024) if with_generator else None
            runs.append((run(fn, x, g), run(fn, x, g), None if g is None else g.get_state()))
        (c1, c2, cs), (e1, e2, es) = runs
        assert_same(c1, e1, layout)
        assert_same(c2, e2, layout)
        assert cs is None or torch.equal(cs, es)
        for name, a, b in zip(STATEFUL, e1[0], e2[0]):
            assert not torch.equal(a, b), f"{name}: the second call must draw new values"


class Stateless(torch.nn.Module):
    def forward(self, x, key):
        return stateless(x, key)


@pytest.mark.key_reuse_ok("draws every op from one key, eager and exported")
def test_exported_equals_eager():
    x = torch.randn(4, 6, 5)
    ep = torch.export.export(Stateless(), (x, KEY))
    for key in (KEY, make_state(3, 99)):
        for name, got, want in zip(ROWS, ep.module()(x, key), stateless(x, key)):
            assert torch.equal(got, want), name


def test_fresh_values_in_compiled_generator_none():
    compiled = torch.compile(lambda x: torch_rngx.rand_like(x), fullgraph=True)
    x = torch.empty(100)
    assert not torch.equal(compiled(x), compiled(x))
    torch.manual_seed(5)
    a = compiled(x)
    torch.manual_seed(5)
    assert torch.equal(a, compiled(x))
