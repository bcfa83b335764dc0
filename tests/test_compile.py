"""torch.compile(fullgraph=True) == eager, bitwise: outputs, grads and generator state, for every public
function, dynamic=False and True, on contiguous, channels_last, transposed and sliced inputs."""
import pytest
import torch
from conftest import layouts

import torch_rngx
from torch_rngx import functional as F

# _functional draws four ops from one key, twice: every other name draws from a Generator made afresh for each run.
ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("draws four ops from one key, twice, eager and compiled")

SEED = 2024


def _quantize_modes(x, g):
    means = torch.linspace(-1, 1, x.shape[1]).view(1, -1, 1, 1)
    return (torch_rngx.quantize(x, generator=g), torch_rngx.quantize(x, "dequantize", means, generator=g),
            torch_rngx.quantize(x, "symbols", means, generator=g))


# name -> fn(x, generator) returning a tuple of tensors. Each draws from the generator (or, with
# generator=None, from torch's default generator through the ops' seed_state).
PUBLIC = {
    "rand_like": lambda x, g: (torch_rngx.rand_like(x, generator=g),),
    "rand_like_float64": lambda x, g: (torch_rngx.rand_like(x, generator=g, dtype=torch.float64),),
    "uniform_like": lambda x, g: (torch_rngx.uniform_like(x, -2.0, 3.0, generator=g),),
    "quantize": _quantize_modes,
    "dropout": lambda x, g: (torch_rngx.dropout(x, 0.3, generator=g), torch_rngx.dropout(x, 0.3, False, generator=g)),
    "nn.Dropout": lambda x, g: (torch_rngx.nn.Dropout(0.6, generator=g)(x),),
    "functional": lambda x, g: _functional(x, g),
}


def _functional(x, g):
    state = g.state if g is not None else torch.tensor([7, 3])
    n = torch_rngx.blocks_used(x.numel(), x.dtype)
    return (F.bits(x.shape, state), F.uniform(x, state, -1.0, 0.5), F.quantize_noise(x, state, 0.25),
            F.dropout(x, state + torch.tensor([0, n]), 0.5))


def run(fn, x, generator_seed):
    """Calls fn twice (fresh values each time), then takes each differentiable output's gradient separately
    with a fixed cotangent: summing several contributions would let eager and Inductor round differently."""
    x = x.detach().clone().requires_grad_()
    g = torch_rngx.Generator(generator_seed) if generator_seed is not None else None
    if g is None:
        torch.manual_seed(32)
    outs = fn(x, g) + fn(x, g)
    grads = [torch.autograd.grad(o, x, torch.linspace(-1, 1, o.numel()).view(o.shape).to(o.dtype), retain_graph=True)[0]
             for o in outs if o.requires_grad]
    return outs, grads, (g.state.clone() if g is not None else None)


def assert_same(eager, compiled):
    (eo, eg, es), (co, cg, cs) = eager, compiled
    assert len(eo) == len(co)
    for e, c in zip(eo, co):
        assert e.dtype == c.dtype and e.shape == c.shape and e.stride() == c.stride()
        assert torch.equal(e, c)
    assert len(eg) == len(cg) and all(torch.equal(e, c) for e, c in zip(eg, cg))
    assert (es is None and cs is None) or torch.equal(es, cs)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", [pytest.param(n, marks=ONE_KEY_FOR_ALL) if n == "functional" else n for n in PUBLIC])
@pytest.mark.parametrize("with_generator", [True, False])
def test_compiled_equals_eager(name, dynamic, with_generator):
    fn = PUBLIC[name]
    compiled = torch.compile(fn, fullgraph=True, dynamic=dynamic)
    for layout, x in layouts().items():
        seed = SEED if with_generator else None
        eager = run(fn, x, seed)
        assert_same(eager, run(compiled, x, seed))
        if name not in ("quantize", "functional"):  # those return also non-random outputs
            n = len(eager[0]) // 2
            assert not torch.equal(eager[0][0], eager[0][n]) or eager[0][0].numel() == 0, "no fresh values"


def test_fresh_values_in_compiled_generator_none():
    compiled = torch.compile(lambda x: torch_rngx.rand_like(x), fullgraph=True)
    x = torch.empty(100)
    assert not torch.equal(compiled(x), compiled(x))
    torch.manual_seed(5)
    a = compiled(x)
    torch.manual_seed(5)
    assert torch.equal(a, compiled(x))
