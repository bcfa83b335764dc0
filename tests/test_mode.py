"""torch_rngx.mode: each routed torch call equals the matching torch_rngx call on a copy of the stream and advances
it as much, eager and compiled (fullgraph, no recompile per call, mode entered outside or inside), in any layout and
dtype, leaving torch's default generator alone; unrouted random calls warn, raise or stay quiet; threads and
nesting."""
import math
import threading
import warnings

import pytest
import torch
import torch._dynamo.testing
import torch.nn.functional as TF

import torch_rngx
from torch_rngx import Generator

x35 = torch.linspace(-2, 2, 15).view(3, 5)
q = torch.linspace(-1, 1, 2 * 2 * 4 * 8).view(2, 2, 4, 8)


def _attention(g, p, causal=False):
    scores = q @ q.transpose(-2, -1) * (1 / math.sqrt(8))
    if causal:
        scores = scores.masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), float("-inf"))
    return torch_rngx.dropout(scores.softmax(-1), p, generator=g) @ q


def _orthogonal(g):
    """torch's orthogonal_ of a (3, 5) tensor: QR of the transposed normal draws, signs fixed by R's diagonal."""
    q, r = torch.linalg.qr(torch_rngx.randn_like(torch.empty(3, 5), generator=g).t())
    return (q * r.diagonal().sign()).t()


# (name, the call under the mode, the matching torch_rngx call on generator g)
CASES = [
    ("rand", lambda x: torch.rand(3, 5), lambda g, x: torch_rngx.rand_like(torch.empty(3, 5), generator=g)),
    ("rand_size_dtype", lambda x: torch.rand((3, 5), dtype=torch.float64),
     lambda g, x: torch_rngx.rand_like(torch.empty(3, 5, dtype=torch.float64), generator=g)),
    ("randn", lambda x: torch.randn(3, 5), lambda g, x: torch_rngx.randn_like(torch.empty(3, 5), generator=g)),
    ("randn_size_tuple", lambda x: torch.randn((3, 5)), lambda g, x: torch_rngx.randn_like(torch.empty(3, 5), generator=g)),
    ("rand_size_list", lambda x: torch.rand([3, 5]), lambda g, x: torch_rngx.rand_like(torch.empty(3, 5), generator=g)),
    ("rand_Size", lambda x: torch.rand(torch.Size([3, 5])),
     lambda g, x: torch_rngx.rand_like(torch.empty(3, 5), generator=g)),
    ("randn_0_dim", lambda x: torch.randn(()), lambda g, x: torch_rngx.randn_like(torch.empty(()), generator=g)),
    ("randint_low_high", lambda x: torch.randint(3, 10, (3, 5)),
     lambda g, x: torch_rngx.randint_like(torch.empty(3, 5), 3, 10, dtype=torch.int64, generator=g)),
    ("randint_high", lambda x: torch.randint(10, (3, 5), dtype=torch.int32),
     lambda g, x: torch_rngx.randint_like(torch.empty(3, 5), 0, 10, dtype=torch.int32, generator=g)),
    ("rand_like", lambda x: torch.rand_like(x), lambda g, x: torch_rngx.rand_like(x, generator=g)),
    ("randn_like_dtype", lambda x: torch.randn_like(x, dtype=torch.float64),
     lambda g, x: torch_rngx.randn_like(x, dtype=torch.float64, generator=g)),
    ("randint_like", lambda x: torch.randint_like(x, 2, 10),
     lambda g, x: torch_rngx.randint_like(x, 2, 10, generator=g)),
    ("normal_tensor_tensor", lambda x: torch.normal(x, x.abs()),
     lambda g, x: torch_rngx.normal_like(x, x, x.abs(), generator=g)),
    ("normal_tensor_float", lambda x: torch.normal(x, 2.0),
     lambda g, x: torch_rngx.normal_like(x, x, 2.0, generator=g)),
    ("normal_float_tensor", lambda x: torch.normal(1.0, x.abs()),
     lambda g, x: torch_rngx.normal_like(x, 1.0, x.abs(), generator=g)),
    ("normal_float_float", lambda x: torch.normal(1.0, 2.0, (3, 5)),
     lambda g, x: torch_rngx.normal_like(torch.empty(3, 5), 1.0, 2.0, generator=g)),
    ("bernoulli_tensor", lambda x: torch.bernoulli(x.sigmoid()),
     lambda g, x: torch_rngx.bernoulli_like(x.sigmoid(), x.sigmoid(), generator=g)),
    ("bernoulli_float", lambda x: torch.bernoulli(x, 0.3), lambda g, x: torch_rngx.bernoulli_like(x, 0.3, generator=g)),
    ("uniform_", lambda x: torch.empty_like(x).uniform_(-0.5, 0.5),
     lambda g, x: torch_rngx.uniform_like(x, -0.5, 0.5, generator=g)),
    ("normal_", lambda x: torch.empty_like(x).normal_(1, 3), lambda g, x: torch_rngx.normal_like(x, 1, 3, generator=g)),
    ("bernoulli_", lambda x: torch.empty_like(x).bernoulli_(0.2),
     lambda g, x: torch_rngx.bernoulli_like(x, 0.2, generator=g)),
    ("random_", lambda x: torch.empty(3, 5, dtype=torch.int32).random_(2, 9),
     lambda g, x: torch_rngx.randint_like(x, 2, 9, dtype=torch.int32, generator=g)),
    ("exponential_", lambda x: torch.empty_like(x).exponential_(2.0),
     lambda g, x: torch_rngx.exponential_like(x, 2.0, generator=g)),
    ("cauchy_", lambda x: torch.empty_like(x).cauchy_(0.5, 2.0), lambda g, x: torch_rngx.cauchy_like(x, 0.5, 2.0, generator=g)),
    ("log_normal_", lambda x: torch.empty_like(x).log_normal_(0.25, 0.5),
     lambda g, x: torch_rngx.log_normal_like(x, 0.25, 0.5, generator=g)),
    ("geometric_", lambda x: torch.empty_like(x).geometric_(0.3), lambda g, x: torch_rngx.geometric_like(x, 0.3, generator=g)),
    ("geometric_int", lambda x: torch.empty(3, 5, dtype=torch.int32).geometric_(0.3),
     lambda g, x: torch_rngx.geometric_like(x, 0.3, dtype=torch.float64, generator=g).int()),
    ("rrelu", lambda x: TF.rrelu(x, training=True), lambda g, x: torch_rngx.rrelu(x, training=True, generator=g)),
    ("nn.RReLU", lambda x: torch.nn.RReLU(0.1, 0.4)(x), lambda g, x: torch_rngx.rrelu(x, 0.1, 0.4, True, generator=g)),
    ("randperm", lambda x: torch.randperm(20), lambda g, x: torch_rngx.randperm(20, generator=g)),
    ("multinomial", lambda x: torch.multinomial(x.softmax(1), 3),
     lambda g, x: torch_rngx.multinomial(x.softmax(1), 3, generator=g)),
    ("multinomial_replacement", lambda x: x.softmax(1).multinomial(7, True),
     lambda g, x: torch_rngx.multinomial(x.softmax(1), 7, True, generator=g)),
    ("gumbel_softmax", lambda x: TF.gumbel_softmax(x, 0.5),
     lambda g, x: ((x - torch_rngx.exponential_like(x, generator=g).log()) / 0.5).softmax(-1)),
    ("gumbel_softmax_hard", lambda x: TF.gumbel_softmax(x, hard=True),
     lambda g, x: TF.one_hot((x - torch_rngx.exponential_like(x, generator=g).log()).argmax(-1), 5).float()),
    ("dropout", lambda x: TF.dropout(x, 0.3), lambda g, x: torch_rngx.dropout(x, 0.3, generator=g)),
    ("nn.Dropout", lambda x: torch.nn.Dropout(0.3)(x), lambda g, x: torch_rngx.dropout(x, 0.3, generator=g)),
    ("dropout1d", lambda x: TF.dropout1d(x.view(3, 5, 1), 0.3),
     lambda g, x: torch_rngx.dropout1d(x.view(3, 5, 1), 0.3, generator=g)),
    ("dropout2d", lambda x: TF.dropout2d(x.view(3, 5, 1, 1), 0.3),
     lambda g, x: torch_rngx.dropout2d(x.view(3, 5, 1, 1), 0.3, generator=g)),
    ("dropout3d", lambda x: TF.dropout3d(x.view(3, 5, 1, 1, 1), 0.3),
     lambda g, x: torch_rngx.dropout3d(x.view(3, 5, 1, 1, 1), 0.3, generator=g)),
    ("alpha_dropout", lambda x: TF.alpha_dropout(x, 0.3, True),
     lambda g, x: torch_rngx.alpha_dropout(x, 0.3, True, generator=g)),
    ("feature_alpha_dropout", lambda x: TF.feature_alpha_dropout(x, 0.3, True),
     lambda g, x: torch_rngx.feature_alpha_dropout(x, 0.3, True, generator=g)),
    ("sdpa", lambda x: TF.scaled_dot_product_attention(q, q, q, dropout_p=0.2), lambda g, x: _attention(g, 0.2)),
    ("sdpa_causal", lambda x: TF.scaled_dot_product_attention(q, q, q, dropout_p=0.2, is_causal=True),
     lambda g, x: _attention(g, 0.2, causal=True)),
]
# torch's kaiming_uniform_ bound for a = sqrt(5), fan_in 5, in torch's order of operations: sqrt(3) * (gain / sqrt(fan))
_KAIMING = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + 5)) / math.sqrt(5))
INIT_CASES = [
    ("init.uniform_", lambda x: torch.nn.init.uniform_(torch.empty(3, 5), -1, 1),
     lambda g, x: torch_rngx.uniform_like(x, -1, 1, generator=g)),
    ("init.normal_", lambda x: torch.nn.init.normal_(torch.empty(3, 5), 0, 0.02),
     lambda g, x: torch_rngx.normal_like(x, 0, 0.02, generator=g)),
    ("init.xavier_normal_", lambda x: torch.nn.init.xavier_normal_(torch.empty(3, 5)),
     lambda g, x: torch_rngx.normal_like(x, 0, math.sqrt(2 / 8), generator=g)),
    ("init.kaiming_uniform_", lambda x: torch.nn.init.kaiming_uniform_(torch.empty(3, 5), a=math.sqrt(5)),
     lambda g, x: torch_rngx.uniform_like(x, -_KAIMING, _KAIMING, generator=g)),
    ("init.orthogonal_", lambda x: torch.nn.init.orthogonal_(torch.empty(3, 5)), lambda g, x: _orthogonal(g)),
    ("init.trunc_normal_", lambda x: torch.nn.init.trunc_normal_(torch.empty(3, 5), 0, 1, -0.5, 0.5),
     lambda g, x: torch_rngx.nn.init.trunc_normal_(torch.empty(3, 5), 0, 1, -0.5, 0.5, generator=g)),
]


def _under(call, x, seed=7):
    g = Generator(seed)
    with torch_rngx.mode(generator=g):
        out = call(x)
    return out, g.state


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_a_routed_creation_call_takes_the_default_dtype(dtype):
    """torch.rand(3, 5) and torch.randn((3, 5)) make torch's default dtype, whatever it is set to."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        for call, ours in [(torch.rand, torch_rngx.rand_like), (torch.randn, torch_rngx.randn_like)]:
            out, state = _under(lambda x: call((3, 5)), x35)
            g = Generator(7)
            want = ours(torch.empty(3, 5, dtype=dtype), generator=g)
            assert out.dtype == dtype and torch.equal(out, want) and torch.equal(state, g.state)
    finally:
        torch.set_default_dtype(previous)


@pytest.mark.parametrize("name", ["uniform_", "normal_"])
def test_an_in_place_fill_goes_to_the_draw_with_the_routes_values_errors_and_steps(name, monkeypatch):
    """x.uniform_(a, b) and x.normal_(m, s) into a plain contiguous float tensor, with number parameters, go from the
    route to the draw (routes._filled), without the give-back wrapper: the same values, errors and stream state as
    the general in-place route, bad parameters and empty tensors included; anything else takes the general route."""
    from torch_rngx._mode import routes

    fast = routes.ROUTES[getattr(torch.Tensor, name)]
    general = routes._giving_back(routes._in_place(routes._uniform_fill if name == "uniform_" else routes._normal_fill))
    wrapped = []
    monkeypatch.setattr(routes, "atomic", lambda owner, *a, atomic=routes.atomic: wrapped.append(1) or atomic(owner, *a))

    def outcome(route, x, args):
        g = Generator(3)
        try:
            out = route(g, x, *args)
            return out is x, x.clone(), g.get_state()
        except (ValueError, TypeError, RuntimeError) as error:
            return type(error), str(error), g.get_state()

    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for shape in ((1,), (7, 5), (0,), ()):
            for args in ((), (0.5, 2), (-3,), (1.0, 0.0), (0.0, math.inf), (2.0, -1.0)):
                wrapped.clear()
                got = outcome(fast, torch.zeros(shape, dtype=dtype), args)
                assert not wrapped, "the direct path takes no give-back wrapper"
                want = outcome(general, torch.zeros(shape, dtype=dtype), args)
                assert got[0] == want[0] and torch.equal(got[2], want[2]), (dtype, shape, args, got, want)
                assert torch.equal(got[1], want[1]) if got[0] is True else got[1] == want[1]
    # (x, args, grad mode, whether the general route takes it)
    others = [(torch.zeros(4, 6).t(), (), True, True), (torch.zeros(3, dtype=torch.complex64), (), True, True),
              (torch.zeros(3), (torch.tensor(0.5),), True, True), (torch.zeros(3, requires_grad=True), (), False, False)]
    for x, args, grad, general_route in others:
        wrapped.clear()
        with torch.set_grad_enabled(grad):
            assert outcome(fast, x, args)[0] is True
        assert bool(wrapped) == general_route, (x.shape, x.dtype, args)
    wrapped.clear()
    leaf = torch.zeros(3, requires_grad=True)
    assert outcome(fast, leaf, ())[0] is RuntimeError and wrapped, "a leaf that requires grad: torch's refusal"
    wrapped.clear()
    torch.vmap(lambda x: fast(Generator(3), torch.zeros(3)) + x, randomness="same")(torch.zeros(2, 3))
    assert wrapped, "under a torch.func transform, whose writes are its own to refuse: the general route"


@pytest.mark.parametrize("name,call,ours", CASES + INIT_CASES, ids=[c[0] for c in CASES + INIT_CASES])
def test_routed_call_is_the_torch_rngx_call_and_leaves_torch_alone(name, call, ours):
    before = torch.get_rng_state()
    out, state = _under(call, x35)
    assert torch.equal(torch.get_rng_state(), before), "a routed call drew from torch's default generator"
    g = Generator(7)
    want = ours(g, x35)
    assert out.dtype == want.dtype and torch.equal(out, want)
    assert torch.equal(state, g.state) and state[1] > 0
    assert not torch.equal(out, _under(call, x35, seed=8)[0]), "another seed must give other values"


@pytest.mark.parametrize("name,call,ours", CASES, ids=[c[0] for c in CASES])
def test_routed_call_compiled_equals_eager(name, call, ours):
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(call, fullgraph=True, backend=counter)
    g_eager, g_compiled = Generator(3), Generator(3)
    for _ in range(3):
        with torch_rngx.mode(generator=g_eager):
            want = call(x35)
        with torch_rngx.mode(generator=g_compiled):
            got = compiled(x35)
        assert torch.equal(want, got)
    assert torch.equal(g_eager.state, g_compiled.state)
    assert counter.frame_count == 1, "recompiled"


def test_mode_entered_inside_the_compiled_function():
    torch._dynamo.reset()

    def step(x, g):
        with torch_rngx.mode(generator=g):
            return torch.rand(2, 5) + torch.randn_like(x) + torch.normal(x, 1.0) + torch.rand_like(x)

    compiled = torch.compile(step, fullgraph=True)
    g_eager, g_compiled = Generator(4), Generator(4)
    for _ in range(2):
        assert torch.equal(step(torch.zeros(2, 5), g_eager), compiled(torch.zeros(2, 5), g_compiled))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_like_calls_in_every_layout_and_dtype(layout, dtype):
    x = torch.zeros(2, 3, 4, 5, dtype=dtype)
    x = {"contiguous": x, "channels_last": x.to(memory_format=torch.channels_last),
         "transposed": x.transpose(1, 3)}[layout]
    for call, ours in ((torch.rand_like, torch_rngx.rand_like), (torch.randn_like, torch_rngx.randn_like)):
        out, _ = _under(call, x)
        assert out.stride() == torch.empty_like(x).stride()
        assert torch.equal(out, ours(x, generator=Generator(7)))
    out, _ = _under(lambda t: t.clone().uniform_(), x)
    assert torch.equal(out, torch_rngx.uniform_like(x, generator=Generator(7)))


def test_no_seed_follows_manual_seed_compiled_equals_eager():
    torch._dynamo.reset()

    class Noise(torch.nn.Module):
        def forward(self, x):
            return torch.randn_like(x)

    model, x = Noise(), torch.zeros(4, 6)
    compiled = torch.compile(model, fullgraph=True)
    runs = []
    for f in (model, compiled):
        torch.manual_seed(11)
        with torch_rngx.mode():
            runs.append([f(x) for _ in range(3)])
    assert all(torch.equal(a, b) for a, b in zip(*runs))
    assert not torch.equal(runs[0][0], runs[0][1]), "successive calls must differ"
    torch.manual_seed(11)
    assert torch.equal(runs[0][0], torch_rngx.randn_like(x))


@pytest.mark.key_reuse_ok("draws one seed's stream twice, to show the same seed gives the same values")
def test_seed_gives_a_fresh_stream_and_decorator_form():
    @torch_rngx.mode(seed=5)
    def noise():
        return torch.rand(8)

    g = Generator(5)
    for _ in range(2):  # one stream for the decorated function: each call continues it
        assert torch.equal(noise(), torch_rngx.rand_like(torch.empty(8), generator=g))
    with torch_rngx.mode(seed=5):
        assert torch.equal(torch.rand(8), torch_rngx.rand_like(torch.empty(8), generator=Generator(5)))


def test_flow_matching_step_compiled_equals_eager():
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(9, 32), torch.nn.SiLU(), torch.nn.Linear(32, 8))

    def loss_of(x1):
        t = torch.rand(x1.shape[0], 1)
        x0 = torch.randn_like(x1)
        xt = (1 - t) * x0 + t * x1
        return (net(torch.cat([xt, t], 1)) - (x1 - x0)).square().mean(), x0, t

    compiled = torch.compile(loss_of, fullgraph=True)
    x1 = torch.linspace(-1, 1, 16 * 8).view(16, 8)
    g1, g2 = Generator(9), Generator(9)
    for _ in range(2):
        with torch_rngx.mode(generator=g1):
            _, x0_e, t_e = loss_of(x1)
        with torch_rngx.mode(generator=g2):
            _, x0_c, t_c = compiled(x1)
        assert torch.equal(x0_e, x0_c) and torch.equal(t_e, t_c)


def test_uncovered_warns_once_naming_the_function_raises_or_stays_quiet():
    torch_rngx._mode.mode._warned.discard("torch.poisson")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch_rngx.mode(seed=1):
            torch.poisson(torch.ones(3))
            torch.poisson(torch.ones(3))
            torch.dropout(x35, 0.5, False)  # draws nothing: no warning
    ours = [w for w in caught if issubclass(w.category, torch_rngx.UncoveredRandomWarning)]
    assert len(ours) == 1 and "torch.poisson" in str(ours[0].message)
    for call, name in ((lambda: torch.binomial(torch.ones(3), torch.full((3,), 0.5)), "torch.binomial"),
                       (lambda: torch._standard_gamma(torch.ones(3)), "_standard_gamma"),
                       (lambda: torch.empty(3).cauchy_(generator=torch.Generator()), "cauchy_"),
                       (lambda: torch.rand(3, generator=torch.Generator()), "torch.rand")):
        with pytest.raises(RuntimeError, match=name), torch_rngx.mode(seed=1, uncovered="error"):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch_rngx.mode(seed=1, uncovered="ignore"):
            torch.poisson(torch.ones(3))


EXPLICIT = [("torch.rand", lambda g: torch.rand(4, generator=g)),
            ("torch.normal", lambda g: torch.normal(0.0, 1.0, (4,), generator=g)),  # a rebound name
            ("torch.Tensor.uniform_", lambda g: torch.empty(4).uniform_(generator=g))]


@pytest.mark.parametrize("name,call", EXPLICIT, ids=[c[0] for c in EXPLICIT])
def test_explicit_torch_generator_stays_torchs(name, call):
    """A call given a torch.Generator draws from it, as written, routed or rebound function alike, and is reported."""
    with torch_rngx.mode(seed=1, uncovered="ignore"):
        got = call(torch.Generator().manual_seed(3))
    assert torch.equal(got, call(torch.Generator().manual_seed(3)))
    with pytest.raises(RuntimeError, match=name), torch_rngx.mode(seed=1, uncovered="error"):
        call(torch.Generator())


def test_nested_modes_innermost_routes():
    outer, inner = Generator(1), Generator(2)
    with torch_rngx.mode(generator=outer):
        a = torch.rand(4)
        with torch_rngx.mode(generator=inner):
            b = torch.randn_like(a)
        c = torch.rand(4)
    g = Generator(1)
    assert torch.equal(a, torch_rngx.rand_like(a, generator=g)) and torch.equal(c, torch_rngx.rand_like(a, generator=g))
    assert torch.equal(b, torch_rngx.randn_like(a, generator=Generator(2)))
    assert torch.nn.init.trunc_normal_ is torch_rngx._mode.mode._TRUNC_NORMAL, "the binding outlived the modes"


def test_threads_each_their_own():
    """A thread without the mode keeps torch's functions while another thread is inside it, eager and compiled."""
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.randn_like(x) + torch.rand(4), fullgraph=True)
    inside, barrier, results = threading.Barrier(2), threading.Barrier(2), {}

    def in_mode():
        with torch_rngx.mode(generator=Generator(6)):
            inside.wait()
            results["eager"] = torch.randn_like(torch.zeros(4)) + torch.rand(4)
            results["compiled_mode"] = f(torch.zeros(4))
            barrier.wait()

    def plain():
        inside.wait()
        gen_state = torch.get_rng_state()
        results["plain"] = torch.randn_like(torch.zeros(4))
        results["plain_compiled"] = f(torch.zeros(4))
        results["torch_drew"] = not torch.equal(gen_state, torch.get_rng_state())
        barrier.wait()

    threads = [threading.Thread(target=t) for t in (in_mode, plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    g = Generator(6)
    want = torch_rngx.randn_like(torch.zeros(4), generator=g) + torch_rngx.rand_like(torch.zeros(4), generator=g)
    assert torch.equal(results["eager"], want)
    assert results["torch_drew"], "the thread outside the mode must draw from torch's generator"
    ours = torch_rngx.randn_like(torch.zeros(4), generator=Generator(6))
    assert not torch.equal(results["plain"], ours)
    assert not torch.equal(results["plain_compiled"], results["compiled_mode"])


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="not both"):
        torch_rngx.mode(seed=1, generator=Generator(1))
    with pytest.raises(ValueError, match="uncovered"):
        torch_rngx.mode(uncovered="loud")
    with pytest.raises(TypeError, match="generator"):
        torch_rngx.mode(generator=torch.Generator())
    with pytest.raises(ValueError, match="p"), torch_rngx.mode(seed=1):
        TF.dropout(x35, 1.5)
