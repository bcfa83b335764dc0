"""Issue 43's ops (docs/stream.md: normal_tensor, alpha_dropout, rrelu, cauchy, log_normal, geometric) beyond their
bits (tests/test_kat.py): their gradients, eager, compiled and through torch.func; what they refuse, naming the
argument; and the distributions they draw (fixed seeds)."""
import math

import pytest
import torch

import torch_rngx
import torch_rngx.functional as rf
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("draws a key again to compare: the gradients with the mask or slopes, vmap with "
                                      "the loop")

KEY = rf.key(2024)
x = torch.linspace(-2, 2, 2 * 3 * 5).view(2, 3, 5)


def test_rrelus_gradient_is_one_or_its_slope():
    xs = x.clone().requires_grad_()
    out = rf.rrelu(xs, KEY, 0.1, 0.4)
    grad = torch.linspace(1, 3, xs.numel()).view_as(xs)
    out.backward(grad)
    r = rf.uniform(x, KEY, 0.1, 0.4)  # the slopes: uniform's values with the same key
    assert torch.equal(out.detach(), torch.where(x > 0, x, x * r))
    assert torch.equal(xs.grad, torch.where(x > 0, grad, grad * r))
    compiled = torch.func.grad(lambda t: (rf.rrelu(t, KEY, 0.1, 0.4) * grad).sum())(x)
    assert torch.equal(compiled, xs.grad)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("feature", [False, True], ids=["alpha", "feature_alpha"])
def test_alpha_dropouts_gradient_is_keep_times_a(dtype, feature):
    """grad * (keep * a) in the dtype, a = ((alpha^2 p + 1)(1 - p))^-1/2, keep from the key; compiled as eager."""
    p = 0.3
    xs = x.to(dtype).clone().requires_grad_()
    f = rf.feature_alpha_dropout if feature else rf.alpha_dropout
    out = f(xs, KEY, p)
    grad = torch.linspace(1, 3, xs.numel()).view_as(xs).to(dtype)
    (out * grad).sum().backward()
    a = 1 / math.sqrt((rf.SELU_ALPHA**2 * p + 1) * (1 - p))
    kept = (rf.feature_dropout if feature else rf.dropout)(torch.ones_like(xs), KEY, p) != 0
    assert torch.equal(xs.grad, grad * torch.where(kept, torch.tensor(a, dtype=dtype), torch.zeros((), dtype=dtype)))
    torch._dynamo.reset()
    fresh = x.to(dtype).clone().requires_grad_()
    (torch.compile(lambda t: f(t, KEY, p), fullgraph=True, backend="aot_eager")(fresh) * grad).sum().backward()
    assert torch.equal(fresh.grad, xs.grad)


def test_vmap_over_batched_keys_is_the_loop():
    keys = rf.split(KEY, 3)
    for f in (lambda t, k: rf.rrelu(t, k), lambda t, k: rf.cauchy(t, k), lambda t, k: rf.log_normal(t, k),
              lambda t, k: rf.geometric(t, k, 0.4), lambda t, k: rf.alpha_dropout(t, k, 0.3),
              lambda t, k: rf.normal(t, k, t, t.abs())):
        got = torch.func.vmap(f, in_dims=(None, 0))(x, keys)
        assert torch.equal(got, torch.stack([f(x, k) for k in keys]))


BAD = [
    (lambda: rf.cauchy(x, KEY, 0.0, 0.0), ValueError, "sigma"),
    (lambda: rf.cauchy(x, KEY, math.nan, 1.0), ValueError, "median"),
    (lambda: rf.cauchy(x, KEY, 0.0, 1e39), ValueError, "sigma"),
    (lambda: rf.log_normal(x, KEY, 0.0, -1.0), ValueError, "std"),
    (lambda: rf.log_normal(x, KEY, math.inf, 1.0), ValueError, "mean"),
    (lambda: rf.geometric(x, KEY, 1.0), ValueError, "p"),
    (lambda: rf.geometric(x, KEY, 0.0), ValueError, "p"),
    (lambda: rf.geometric(x.int(), KEY, 0.5), TypeError, "like"),
    (lambda: rf.rrelu(x, KEY, 0.5, 0.1), ValueError, "lower"),
    (lambda: rf.rrelu(x.int(), KEY), TypeError, "x"),
    (lambda: rf.alpha_dropout(x, KEY, 1.5), ValueError, "p"),
    (lambda: rf.normal(x, KEY, x, -x.abs() - 1), ValueError, "std"),
    (lambda: rf.normal(x, KEY, x, torch.ones(4)), ValueError, "std"),
    (lambda: rf.normal(x, KEY, x.to(torch.complex64), 1.0), TypeError, "mean"),
    (lambda: rf.normal(x, KEY, x, 1.0, dtype=torch.float64), ValueError, "dtype"),
    (lambda: torch_rngx.rrelu(x, 0.5, 0.1, training=True), ValueError, "lower"),
    (lambda: torch_rngx.geometric_like(x, 2.0), ValueError, "p"),
    (lambda: torch.ops.rngx.normal_tensor(x, KEY, x, -x.abs() - 1), RuntimeError, "std"),
    (lambda: torch.ops.rngx.normal_tensor(x, KEY, x, torch.ones(5)), RuntimeError, "std"),
    (lambda: torch.ops.rngx.geometric(x, KEY, 1.0), RuntimeError, "p must be in"),
    (lambda: torch.ops.rngx.cauchy(x, KEY, 0.0, -1.0), RuntimeError, "sigma"),
]


@pytest.mark.parametrize("call,error,name", BAD, ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_arguments_are_refused_naming_them_and_leave_the_stream(call, error, name):
    g_before = torch.get_rng_state()
    with pytest.raises(error, match=name):
        call()
    assert torch.equal(torch.get_rng_state(), g_before)


def test_a_refused_stateful_call_leaves_its_generator():
    g = Generator(3)
    for call in (lambda: torch_rngx.cauchy_like(x, 0.0, 0.0, generator=g),
                 lambda: torch_rngx.log_normal_like(x, 1.0, 0.0, generator=g),
                 lambda: torch_rngx.geometric_like(x, 0.0, generator=g),
                 lambda: torch_rngx.rrelu(x, 0.5, 0.1, True, generator=g),
                 lambda: torch_rngx.normal_like(x, x, -1.0, generator=g)):
        with pytest.raises(ValueError):
            call()
    assert g.get_offset() == 0


def _ks(samples, cdf):
    """The Kolmogorov-Smirnov distance of samples (float64, flat) from a continuous cdf."""
    s = samples.sort().values
    n = s.numel()
    c = cdf(s)
    return max(float((torch.arange(1, n + 1) / n - c).max()), float((c - torch.arange(n) / n).max()))


N = 200_000
BOUND = 1.63 / math.sqrt(N)  # KS at the 1% level


def test_cauchy_log_normal_and_geometric_draw_their_laws():
    like = torch.empty(N, dtype=torch.float64)
    c = rf.cauchy(like, rf.key(1), 0.5, 2.0)
    assert _ks(c, lambda v: 0.5 + torch.atan((v - 0.5) / 2.0) / math.pi) < BOUND
    ln = rf.log_normal(like, rf.key(2), 0.25, 0.5)
    assert _ks(ln, lambda v: 0.5 * (1 + torch.erf((v.log() - 0.25) / (0.5 * math.sqrt(2))))) < BOUND
    p = 0.3
    geo = rf.geometric(torch.empty(N), rf.key(3), p)
    assert bool((geo >= 1).all()) and bool((geo == geo.round()).all())
    for k in range(1, 8):  # P(X = k) = (1 - p)^(k - 1) p, within 4 standard errors
        want = (1 - p) ** (k - 1) * p
        assert abs(float((geo == k).double().mean()) - want) < 4 * math.sqrt(want * (1 - want) / N)
    assert abs(float(geo.mean()) - 1 / p) < 0.02  # mean 1 / p
    r = rf.rrelu(-torch.ones(N), rf.key(4), 0.1, 0.4)
    assert _ks(-r.double(), lambda v: ((v - 0.1) / 0.3).clamp(0, 1)) < BOUND


@pytest.mark.parametrize("op", ["rrelu", "alpha_dropout", "feature_alpha_dropout", "normal_tensor", "cauchy",
                                "log_normal", "geometric"])
def test_checkpointing_replays_the_new_ops_exactly(op):
    """Under torch.utils.checkpoint (non-reentrant) the recomputation draws what the forward drew: the same gradient
    and the same Generator state as without the checkpoint (the slopes, masks and samples are journaled)."""
    from torch.utils.checkpoint import checkpoint

    w = torch.linspace(-1, 1, 30, requires_grad=True)
    calls = {
        "rrelu": lambda h, g: torch_rngx.rrelu(h, 0.1, 0.4, training=True, generator=g),
        "alpha_dropout": lambda h, g: torch_rngx.alpha_dropout(h, 0.3, training=True, generator=g),
        "feature_alpha_dropout": lambda h, g: torch_rngx.feature_alpha_dropout(h.view(2, 3, 5), 0.3, training=True,
                                                                                generator=g).view(-1),
        "normal_tensor": lambda h, g: h * torch_rngx.normal_like(h, h.detach(), h.detach().abs(), generator=g),
        "cauchy": lambda h, g: h * torch_rngx.cauchy_like(h, 0.5, 2.0, generator=g),
        "log_normal": lambda h, g: h * torch_rngx.log_normal_like(h, 0.25, 0.5, generator=g),
        "geometric": lambda h, g: h * torch_rngx.geometric_like(h, 0.3, generator=g),
    }

    def block(x, g):
        return calls[op](x * w, g) * 2

    x = torch.linspace(0.5, 2, 30)
    results = []
    for wrap in (lambda f, *a: f(*a), lambda f, *a: checkpoint(f, *a, use_reentrant=False)):
        g = Generator(11)
        out = wrap(block, x, g)
        out.backward(torch.linspace(1, 2, 30))
        results.append((out.detach().clone(), w.grad.clone(), g.state.clone()))
        w.grad = None
    assert all(torch.equal(a, b) for a, b in zip(*results))
    assert not torch.equal(results[0][1], 2 * x)  # the draws reach the gradient
