"""torch_rngx.mode at its edges (issue 43): nn.init functions a library rebinds to wrappers of torch's (transformers
5's guards), the routes' defaults under torch.compile, and complex dtypes. Each test failed before its fix."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torch_rngx
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("compares the same stream's draws eager and compiled")


# ---- nn.init functions rebound to wrappers ----

def _wrap(monkeypatch, name):
    """torch.nn.init.<name> rebound to a Python wrapper of torch's, as transformers 5 does while it builds a model."""
    original = getattr(torch.nn.init, name)

    def wrapper(tensor, *args, **kwargs):
        return original(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.nn.init, name, wrapper)


WRAPPED = [
    ("normal_", lambda t: torch.nn.init.normal_(t, 0.5, 2.0), lambda g, t: torch_rngx.normal_like(t, 0.5, 2.0, generator=g)),
    ("uniform_", lambda t: torch.nn.init.uniform_(t, -1.0, 3.0),
     lambda g, t: torch_rngx.uniform_like(t, -1.0, 3.0, generator=g)),
    ("xavier_normal_", lambda t: torch.nn.init.xavier_normal_(t),
     lambda g, t: torch_rngx.normal_like(t, 0.0, math.sqrt(2 / 8), generator=g)),
]


@pytest.mark.parametrize("name,call,ours", WRAPPED, ids=[w[0] for w in WRAPPED])
def test_a_wrapped_nn_init_function_is_routed_eager_and_compiled(monkeypatch, name, call, ours):
    _wrap(monkeypatch, name)
    before = torch.get_rng_state()
    for run in (call, torch.compile(call, fullgraph=True, backend="aot_eager")):
        torch._dynamo.reset()
        g = Generator(5)
        with torch_rngx.mode(generator=g, uncovered="error"):
            got = run(torch.empty(3, 5))
        assert torch.equal(got, ours(Generator(5), torch.empty(3, 5)))
        assert g.state[1] > 0
    assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"


def test_a_transformers_model_builds_on_the_modes_stream():
    """transformers 5 builds a model with torch.nn.init's names bound to its guards: under mode(uncovered="error") it
    builds, each seed gives its own weights and the same seed the same, and torch's generator stays where it was."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=16)
    before = torch.get_rng_state()
    weights = []
    for seed in (0, 0, 1):
        with torch_rngx.mode(seed=seed, uncovered="error"):
            model = transformers.BertModel(config)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])


# ---- torch's defaults, where torch.compile hands the mode the arguments as written ----

@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("shape", [(2, 3, 4), ()], ids=["3d", "0d"])
def test_a_route_takes_torchs_defaults_compiled(name, shape):
    """F.alpha_dropout(x) and F.feature_alpha_dropout(x) default to training=False: compiled under the mode they
    return x, as eager does (the route's own default was True: compiled, it dropped, and a 0-d input failed to
    compile)."""
    f = getattr(TF, name)
    x = torch.linspace(-1, 1, math.prod(shape)).view(shape)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: f(t), fullgraph=True, backend="inductor")
    g = Generator(2)
    with torch_rngx.mode(generator=g, uncovered="error"):
        assert torch.equal(f(x), x) and torch.equal(compiled(x), x)
    assert g.state[1] == 0, "training=False draws nothing"


# ---- complex dtypes ----

COMPLEX = [
    ("rand", lambda d: torch.rand(3, 4, dtype=d), lambda g, d, r: torch_rngx.uniform_like(r, generator=g), False),
    ("randn", lambda d: torch.randn(3, 4, dtype=d), lambda g, d, r: torch_rngx.normal_like(r, 0, 1 / math.sqrt(2), generator=g),
     True),
    ("rand_like", lambda d: torch.rand_like(torch.zeros(3, 4, dtype=d)),
     lambda g, d, r: torch_rngx.uniform_like(r, generator=g), False),
    ("randn_like", lambda d: torch.randn_like(torch.zeros(3, 4, dtype=d)),
     lambda g, d, r: torch_rngx.normal_like(r, 0, 1 / math.sqrt(2), generator=g), True),
    ("uniform_", lambda d: torch.zeros(3, 4, dtype=d).uniform_(-2, 3),
     lambda g, d, r: torch_rngx.uniform_like(r, -2, 3, generator=g), False),
    ("normal_", lambda d: torch.zeros(3, 4, dtype=d).normal_(1.0, 2.0),
     lambda g, d, r: torch_rngx.normal_like(r, 1.0, 2.0 / math.sqrt(2), generator=g), True),
]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name,call,ours,normal", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_draws_run_under_the_mode_as_torch_defines_them(name, call, ours, normal, dtype):
    """torch.randn(2, dtype=torch.complex64) runs under the mode as without it: the real and imaginary parts drawn
    on the real view, (re, im) one pair of the stream, each part N(mean, std^2 / 2) for a normal draw (torch's
    rule), U[a, b) for a uniform one; eager and compiled alike, torch's generator untouched."""
    real = torch.empty(3, 4, 2, dtype=torch.float32 if dtype == torch.complex64 else torch.float64)
    before = torch.get_rng_state()
    torch._dynamo.reset()
    for run in (call, torch.compile(call, fullgraph=True, backend="aot_eager")):
        with torch_rngx.mode(seed=4, uncovered="error"):
            got = run(dtype)
        assert got.dtype == dtype and got.shape == (3, 4)
        assert torch.equal(torch.view_as_real(got), ours(Generator(4), dtype, real))
    assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"
    if normal:  # torch's variance: E|z|^2 = std^2, split evenly between the parts
        with torch_rngx.mode(seed=1):
            z = torch.randn(200_000, dtype=dtype)
        assert abs(float(z.abs().square().mean()) - 1.0) < 0.02
        assert abs(float(z.real.var()) - 0.5) < 0.01 and abs(float(z.imag.var()) - 0.5) < 0.01


# ---- routed calls whose arithmetic is in our kernels: compiled with Inductor == eager, in every dtype ----

x5 = torch.linspace(-3, 3, 2 * 3 * 4 * 3 * 5).view(2, 3, 4, 3, 5)
# (name, call(x, s)): s = |x| + 0.1, made outside the compiled function (Inductor's own arithmetic on the inputs
# is not ours: it rounds x.abs() + 0.1 otherwise than eager in float16)
IN_KERNELS = [
    ("normal_tensor_tensor", lambda x, s: torch.normal(x, s)),
    ("normal_float_tensor", lambda x, s: torch.normal(2.0, s)),
    ("normal_tensor_float", lambda x, s: torch.normal(x, 0.3)),
    ("alpha_dropout", lambda x, s: TF.alpha_dropout(x, 0.3, True)),
    ("feature_alpha_dropout", lambda x, s: TF.feature_alpha_dropout(x, 0.3, True)),
    ("feature_alpha_dropout_channels_last", lambda x, s: TF.feature_alpha_dropout(
        x.contiguous(memory_format=torch.channels_last_3d), 0.3, True)),
    ("rrelu", lambda x, s: TF.rrelu(x, 0.1, 0.4, training=True)),
    ("rrelu_", lambda x, s: TF.rrelu_(x.clone(), training=True)),
    ("cauchy_", lambda x, s: torch.empty_like(x).cauchy_(0.5, 2.0)),
    ("log_normal_", lambda x, s: torch.empty_like(x).log_normal_(0.25, 0.5)),
    ("geometric_", lambda x, s: torch.empty_like(x).geometric_(0.3)),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name,call", IN_KERNELS, ids=[c[0] for c in IN_KERNELS])
def test_routed_arithmetic_is_ours_compiled_with_inductor_as_eager(name, call, dtype):
    """torch.normal with tensor arguments, alpha and feature alpha dropout (5-D), rrelu in training, cauchy_,
    log_normal_ and geometric_ under the mode: one op of ours each, so Inductor gives eager's bits in every dtype and
    layout (it fused normal's mean + std * z and alpha dropout's affine into its own roundings in bfloat16), the
    stream advanced alike, torch's generator untouched, nothing reported."""
    x = x5.to(dtype)
    s = x.abs() + 0.1
    torch._dynamo.reset()
    compiled = torch.compile(call, fullgraph=True, backend="inductor")
    before = torch.get_rng_state()
    g_eager, g_compiled = Generator(8), Generator(8)
    for _ in range(2):
        with torch_rngx.mode(generator=g_eager, uncovered="error"):
            want = call(x, s)
        with torch_rngx.mode(generator=g_compiled, uncovered="error"):
            got = compiled(x, s)
        assert got.dtype == want.dtype and torch.equal(got, want), (got.double() - want.double()).abs().max()
    assert torch.equal(g_eager.state, g_compiled.state) and g_eager.state[1] > 0
    assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"


def test_routed_normal_with_tensors_is_torchs_arithmetic_in_one_op():
    """torch.normal(mean, std) under the mode is normal(0, 1) * std + mean with torch's roundings (the values the
    composite route gave), in the first tensor's dtype as torch's; a float beside a tensor is taken in that dtype."""
    m, s = x5.to(torch.bfloat16), (x5.abs() + 0.1).to(torch.bfloat16)
    g = Generator(2)
    with torch_rngx.mode(generator=Generator(2)):
        got = torch.normal(m, s)
    assert torch.equal(got, torch_rngx.randn_like(m, generator=g) * s + m)
    with torch_rngx.mode(seed=1):
        assert torch.normal(m, s.double()).dtype == torch.bfloat16  # torch's rule: mean's dtype
        assert torch.normal(1.0, s).dtype == torch.bfloat16


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_the_direct_rand_routes_check_like_as_the_public_functions_do():
    """torch.rand/randn and their _like forms go from the route to the draw for a plain real tensor, after the
    public function's own check of it: an integer dtype and a nested tensor raise what rand_like/randn_like raise."""
    nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    with torch_rngx.mode(seed=0, uncovered="ignore"):
        for call, public in [
            (lambda: torch.randn(3, dtype=torch.int64), lambda: torch_rngx.randn_like(torch.empty(3, dtype=torch.int64))),
            (lambda: torch.rand_like(torch.zeros(2, dtype=torch.int32)),
             lambda: torch_rngx.rand_like(torch.zeros(2, dtype=torch.int32))),
            (lambda: torch.rand_like(nested), lambda: torch_rngx.rand_like(nested)),
        ]:
            with pytest.raises(Exception) as routed:
                call()
            with pytest.raises(Exception) as direct:
                public()
            assert type(routed.value) is type(direct.value) and str(routed.value) == str(direct.value)


# ---- number arguments as torch reads them ----

def _t(v):
    return torch.tensor(v)


# (name, the call with numbers, the same call with 0-dim tensors or NumPy scalars where torch takes a number)
NUMBERS = [
    ("uniform_", lambda: torch.empty(5).uniform_(0.0, 2.0), lambda: torch.empty(5).uniform_(_t(0.0), _t(2.0))),
    ("uniform_ int tensors", lambda: torch.empty(5).uniform_(0, 2), lambda: torch.empty(5).uniform_(_t(0), _t(2))),
    ("uniform_ from= to=", lambda: torch.empty(5).uniform_(-1.0, 2.0),
     lambda: torch.empty(5).uniform_(**{"from": _t(-1.0), "to": 2.0})),
    ("normal_", lambda: torch.empty(5).normal_(1.0, 2.0), lambda: torch.empty(5).normal_(_t(1.0), _t(2.0))),
    ("exponential_", lambda: torch.empty(5).exponential_(2.0), lambda: torch.empty(5).exponential_(_t(2.0))),
    ("cauchy_", lambda: torch.empty(5).cauchy_(0.5, 2.0), lambda: torch.empty(5).cauchy_(_t(0.5), _t(2.0))),
    ("log_normal_", lambda: torch.empty(5).log_normal_(0.5, 2.0), lambda: torch.empty(5).log_normal_(_t(0.5), _t(2.0))),
    ("geometric_", lambda: torch.empty(5).geometric_(0.3), lambda: torch.empty(5).geometric_(_t(0.3))),
    ("random_", lambda: torch.empty(5).random_(2, 9), lambda: torch.empty(5).random_(_t(2), _t(9))),
    ("randint", lambda: torch.randint(2, 9, (5,)), lambda: torch.randint(_t(2), _t(9), (5,))),
    ("randint NumPy", lambda: torch.randint(2, 9, (5,)), lambda: torch.randint(np.int64(2), np.int64(9), (5,))),
    ("randint_like", lambda: torch.randint_like(torch.empty(5), 2, 9),
     lambda: torch.randint_like(torch.empty(5), _t(2), _t(9))),
    ("normal(float, float, size)", lambda: torch.normal(2.0, 3.0, (5,)), lambda: torch.normal(_t(2.0), _t(3.0), (5,))),
    ("F.dropout", lambda: TF.dropout(torch.ones(8), 0.5), lambda: TF.dropout(torch.ones(8), _t(0.5))),
    ("F.dropout p=", lambda: TF.dropout(torch.ones(8), p=0.5), lambda: TF.dropout(torch.ones(8), p=np.float64(0.5))),
    ("F.alpha_dropout", lambda: TF.alpha_dropout(torch.ones(8), 0.5, True),
     lambda: TF.alpha_dropout(torch.ones(8), _t(0.5), True)),
    ("torch.dropout", lambda: torch.dropout(torch.ones(8), 0.5, True), lambda: torch.dropout(torch.ones(8), _t(0.5), True)),
    ("F.rrelu", lambda: TF.rrelu(-torch.ones(8), 0.1, 0.3, True), lambda: TF.rrelu(-torch.ones(8), _t(0.1), _t(0.3), True)),
    ("randperm", lambda: torch.randperm(7), lambda: torch.randperm(_t(7))),
    ("multinomial", lambda: torch.multinomial(torch.ones(6), 3), lambda: torch.multinomial(torch.ones(6), _t(3))),
    ("sdpa", lambda: TF.scaled_dot_product_attention(*[torch.ones(1, 3, 4)] * 3, dropout_p=0.5),
     lambda: TF.scaled_dot_product_attention(*[torch.ones(1, 3, 4)] * 3, dropout_p=_t(0.5))),
]


@pytest.mark.parametrize("name,numbers,tensors", NUMBERS, ids=[n[0] for n in NUMBERS])
def test_a_0_dim_tensor_or_numpy_scalar_stands_for_its_number_as_in_torch(name, numbers, tensors):
    """Where torch's signature takes a number, torch also takes a 0-dim tensor that needs no gradient and a NumPy
    scalar (torchvision's RandomResizedCrop calls uniform_ with two 0-dim tensors): under the mode the call is routed
    with that number, bitwise the call with a Python number, and the stream moves the same."""
    torch.manual_seed(0)
    plain = torch_rngx.Generator(5)
    with torch_rngx.mode(generator=plain, uncovered="error"):
        want = numbers()
    given = torch_rngx.Generator(5)
    with torch_rngx.mode(generator=given, uncovered="error"):
        got = tensors()
    assert torch.equal(got, want), name
    assert torch.equal(given.state, plain.state)
    assert plain.get_offset() > 0


def test_a_number_torch_refuses_is_refused_under_the_mode_and_the_stream_stays():
    """What torch refuses for a number (a tensor that requires grad, a 1-element tensor of one dim, an unknown
    keyword) is refused under the mode too, before the stream moves."""
    g = torch_rngx.Generator(5)
    with torch_rngx.mode(generator=g, uncovered="error"):
        for call in (
            lambda: torch.empty(3).uniform_(_t(0.0).requires_grad_(), 1.0),
            lambda: torch.empty(3).uniform_(_t([0.0]), 1.0),
            lambda: torch.empty(3).uniform_(low=0.0),
            lambda: torch.empty(3).exponential_(_t([2.0])),
        ):
            with pytest.raises(TypeError):
                call()
    assert g.get_offset() == 0
