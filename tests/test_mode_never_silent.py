"""torch_rngx.mode is never silent (issue 30's measurements, each a test that failed before): torch's own
MultiheadAttention and Transformer layers and recurrent modules route their dropout; a reference bound before the
mode routes compiled too; private samplers are reported compiled; reports trace under fullgraph=True; random_()
without bounds is routed; random ops the function-level mode cannot see are named by the eager net; and the small
parities with torch (dropout at p=0, feature_alpha_dropout of an integer tensor, randint_like's dtype)."""
import warnings

import pytest
import torch
import torch.nn.functional as TF

import torch_rngx
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("compares the same stream's draws eager and compiled")


def _fresh_warnings():
    torch_rngx._mode.mode._warned.clear()


def _quiet_run(f, *args):
    """f(*args) with every UncoveredRandomWarning an error, torch's default generator checked untouched."""
    before = torch.get_rng_state()
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_rngx.UncoveredRandomWarning)
        out = f(*args)
    assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"
    return out


def _compiled_equals_eager(model_of, batch, steps=3, backend="aot_eager", fullgraph=True):
    """Trains two copies for `steps` SGD steps under a mode each on the same seed, one eager, one compiled
    (fullgraph); returns the eager losses and the two streams' final states, having checked them equal."""
    torch._dynamo.reset()
    losses, states = [], []
    for compiled in (False, True):
        model = model_of()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        step = torch.compile(model, fullgraph=fullgraph, backend=backend) if compiled else model
        g, run = Generator(11), []
        for _ in range(steps):
            opt.zero_grad()
            with torch_rngx.mode(generator=g, uncovered="error"):
                loss = step(*batch).square().mean()
            loss.backward()
            opt.step()
            run.append(loss.detach())
        losses.append(torch.stack(run))
        states.append(g.state.clone())
    assert torch.equal(*losses), (losses[0] - losses[1]).abs().max()
    assert torch.equal(*states) and states[0][1] > 0
    assert len(set(losses[0].tolist())) == steps
    return losses[0]


# ---- 1. torch's MultiheadAttention and Transformer layers ----

def _encoder_layer():
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)


x3 = torch.linspace(-1, 1, 3 * 5 * 16).view(3, 5, 16)


def test_transformer_encoder_layer_after_convert_routes_its_attention_dropout():
    layer = _encoder_layer()
    torch_rngx.nn.convert(layer, seed=0)
    start = layer.rngx_state.clone()
    _fresh_warnings()
    out = _quiet_run(layer, x3)
    assert not torch.equal(layer.rngx_state, start), "attention's dropout must draw from the model's stream"
    after_one = layer.rngx_state.clone()
    assert not torch.equal(_quiet_run(layer, x3), out)
    assert layer.rngx_state[1] == 2 * after_one[1] - start[1], "each forward draws the same amount"


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_under_the_mode_is_routed(need_weights):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 2, dropout=0.5, batch_first=True)
    g = Generator(3)

    def run():
        with torch_rngx.mode(generator=g):
            return mha(x3, x3, x3, need_weights=need_weights)[0]

    _fresh_warnings()
    out = _quiet_run(run)
    assert g.state[1] > 0
    g.set_offset(0)
    assert torch.equal(_quiet_run(run), out), "the same stream position gives the same attention"
    assert not torch.equal(_quiet_run(run), out)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_trains_compiled_as_eager(need_weights):
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(16, 2, dropout=0.3, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=need_weights)[0]

    def model():
        torch.manual_seed(0)
        return Attention()

    _compiled_equals_eager(model, (x3,))


def test_transformer_trains_compiled_as_eager():
    def model():
        torch.manual_seed(0)
        return torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.2, batch_first=True)

    _compiled_equals_eager(model, (x3, x3[:, :4]))


def test_eval_draws_nothing_and_gives_torchs_values():
    """In eval (torch's fast path) nothing is random: the stream does not move and no warning is given."""
    layer = _encoder_layer().eval()
    with torch.no_grad():
        want = layer(x3)
        g = Generator(1)
        with torch_rngx.mode(generator=g, uncovered="error"):
            got = layer(x3)
    assert g.get_offset() == 0
    torch.testing.assert_close(got, want)  # the slow path under a mode: the same math, rounded its own way


# ---- 2. recurrent modules with dropout between layers ----

RECURRENT = {
    "lstm": lambda: torch.nn.LSTM(4, 8, num_layers=3, dropout=0.4),
    "lstm_bidirectional_batch_first": lambda: torch.nn.LSTM(4, 8, num_layers=2, dropout=0.4, bidirectional=True,
                                                            batch_first=True),
    "lstm_proj": lambda: torch.nn.LSTM(4, 8, num_layers=2, dropout=0.4, proj_size=3),
    "lstm_no_bias": lambda: torch.nn.LSTM(4, 8, num_layers=2, dropout=0.4, bias=False),
    "gru": lambda: torch.nn.GRU(4, 8, num_layers=2, dropout=0.4, bidirectional=True),
    "rnn_tanh": lambda: torch.nn.RNN(4, 8, num_layers=2, dropout=0.4),
    "rnn_relu": lambda: torch.nn.RNN(4, 8, num_layers=2, dropout=0.4, nonlinearity="relu", batch_first=True),
}
seq = torch.linspace(-1, 1, 6 * 3 * 4).view(6, 3, 4)


def _by_layers(rnn, x, hx, g):
    """The reference: torch's dropout between layers as torch defines it, each layer a 1-layer module of torch's
    with the same weights, our dropout on the output of every layer but the last."""
    d = 2 if rnn.bidirectional else 1
    outs = []
    for layer in range(rnn.num_layers):
        kwargs = dict(bias=rnn.bias, batch_first=rnn.batch_first, bidirectional=rnn.bidirectional)
        if isinstance(rnn, torch.nn.LSTM):
            kwargs["proj_size"] = rnn.proj_size
        if isinstance(rnn, torch.nn.RNN):
            kwargs["nonlinearity"] = rnn.nonlinearity
        one = type(rnn)(x.shape[-1], rnn.hidden_size, 1, **kwargs)
        for name, _ in one.named_parameters():
            own = name.replace("_l0", f"_l{layer}")
            getattr(one, name).data.copy_(getattr(rnn, own))
        rows = slice(layer * d, (layer + 1) * d)
        state = tuple(h[rows] for h in hx) if isinstance(hx, tuple) else hx[rows]
        x, h = one(x, state)
        outs.append(h)
        if layer < rnn.num_layers - 1:
            x = torch_rngx.dropout(x, rnn.dropout, generator=g)
    if isinstance(rnn, torch.nn.LSTM):
        return x, (torch.cat([h for h, _ in outs]), torch.cat([c for _, c in outs]))
    return x, torch.cat(outs)


def _hx(rnn, batch):
    d = 2 if rnn.bidirectional else 1
    size = rnn.proj_size if getattr(rnn, "proj_size", 0) else rnn.hidden_size
    h = torch.linspace(-0.5, 0.5, rnn.num_layers * d * batch * size).view(rnn.num_layers * d, batch, size)
    if isinstance(rnn, torch.nn.LSTM):
        return h, torch.linspace(0.5, -0.5, rnn.num_layers * d * batch * rnn.hidden_size).view(
            rnn.num_layers * d, batch, rnn.hidden_size)
    return h


@pytest.mark.parametrize("name", RECURRENT)
def test_recurrent_dropout_is_routed_layer_by_layer(name):
    torch.manual_seed(0)
    rnn = RECURRENT[name]()
    x = seq.transpose(0, 1).contiguous() if rnn.batch_first else seq
    hx = _hx(rnn, 3)
    g = Generator(5)
    _fresh_warnings()
    with torch_rngx.mode(generator=g):
        out, state = _quiet_run(rnn, x, hx)
    with torch.no_grad():
        want, want_state = _by_layers(rnn, x, hx, Generator(5))
    # torch's one-layer kernels on separate modules round like its multi-layer one to within an ulp or two (3e-8
    # here, with dropout 0 too); the masks are the same or the values would be far apart
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(state, want_state)
    with torch_rngx.mode(generator=g):  # without hx: zeros, as torch
        _quiet_run(rnn, x)
    assert g.get_offset() > 0


def test_packed_sequences_and_eval():
    torch.manual_seed(0)
    rnn = torch.nn.LSTM(4, 8, num_layers=2, dropout=0.5)
    packed = torch.nn.utils.rnn.pack_padded_sequence(seq, [6, 4, 2])
    g = Generator(8)
    with torch_rngx.mode(generator=g):
        a = _quiet_run(rnn, packed)[0].data
    with torch_rngx.mode(generator=g):
        b = _quiet_run(rnn, packed)[0].data
    assert not torch.equal(a, b) and g.get_offset() > 0
    g.set_offset(0)
    with torch_rngx.mode(generator=g):
        assert torch.equal(rnn(packed)[0].data, a)
    rnn.eval()
    with torch_rngx.mode(generator=Generator(8)) as m:
        rnn(packed)
    assert m.generator.get_offset() == 0, "eval draws nothing"


@pytest.mark.parametrize("allow_rnn", [False, True])
def test_lstm_trains_compiled_as_eager(allow_rnn):
    """torch.compile leaves nn.LSTM to eager by default (a graph break: the routed op runs eagerly); with
    torch._dynamo.config.allow_rnn on, AOTAutograd fails on torch.lstm in training even without the mode, so a
    routed call breaks the graph there too."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(4, 8, num_layers=2, dropout=0.3, bidirectional=True)

        def forward(self, x):
            return self.rnn(x)[0]

    def model():
        torch.manual_seed(0)
        return Model()

    with torch._dynamo.config.patch(allow_rnn=allow_rnn):
        _compiled_equals_eager(model, (seq,), fullgraph=False)


# ---- 3. a reference bound before the mode, compiled ----

def test_a_reference_bound_before_the_mode_is_routed_compiled():
    from torch import randn_like as rl

    torch._dynamo.reset()
    f = torch.compile(lambda t: rl(t) + torch.ops.aten.rand_like.default(t) * 0, fullgraph=True)
    x = torch.zeros(4, 5)
    with torch_rngx.mode(seed=0):
        eager = rl(x)
    with torch_rngx.mode(seed=0, uncovered="ignore"):
        compiled = torch.compile(lambda t: rl(t), fullgraph=True)(x)
    assert torch.equal(eager, compiled)
    assert torch.equal(eager, torch_rngx.randn_like(x, generator=Generator(0)))
    with pytest.raises(RuntimeError, match="aten.rand_like"), torch_rngx.mode(seed=0, uncovered="error"):
        f(x)  # an aten op called by name is reported, compiled


# ---- 4. private samplers, compiled ----

SAMPLERS = {
    "Gamma": lambda: torch.distributions.Gamma(torch.full((3,), 2.0), torch.ones(3)),
    "Dirichlet": lambda: torch.distributions.Dirichlet(torch.ones(3)),
    "Beta": lambda: torch.distributions.Beta(torch.full((3,), 2.0), torch.full((3,), 3.0)),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_private_samplers_are_reported_compiled(name):
    torch._dynamo.reset()
    dist = SAMPLERS[name]()
    f = torch.compile(lambda: dist.rsample(), fullgraph=True, backend="aot_eager")
    with pytest.raises(RuntimeError, match="_standard_gamma|_sample_dirichlet"):
        with torch_rngx.mode(seed=0, uncovered="error"):
            f()
    with pytest.raises(RuntimeError, match="_standard_gamma|_sample_dirichlet"):
        with torch_rngx.mode(seed=0, uncovered="error"):
            dist.rsample()


def test_a_graph_broken_sampler_compiled_draws_eagers_values():
    """VonMises.sample's rejection loop breaks the graph; the eager parts between call the mode from C, in frames
    torch.compile would compile alone (and there gave loc.device for loc.dtype): the mode's dispatch is never one."""
    dist = torch.distributions.VonMises(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 4.0]))
    torch._dynamo.reset()
    f = torch.compile(lambda: dist.sample((2,)), backend="aot_eager")
    with torch_rngx.mode(seed=0, uncovered="error"):
        want = _quiet_run(dist.sample, (2,))
    with torch_rngx.mode(seed=0, uncovered="error"):
        assert torch.equal(_quiet_run(f), want)


# ---- 5. reports compile under fullgraph=True ----

UNCOVERED = {
    "binomial": (lambda x: torch.binomial(torch.full_like(x, 5.0), x.sigmoid()), "torch.binomial"),
    "_standard_gamma": (lambda x: torch._standard_gamma(x.abs() + 1), "torch._standard_gamma"),
    "Poisson.sample": (lambda x: torch.distributions.Poisson(x.abs() + 1).sample(), "torch.poisson"),
    "rrelu_with_noise": (lambda x: torch._C._nn.rrelu_with_noise(x, torch.empty_like(x), 0.1, 0.3, True),
                         "rrelu_with_noise"),
}


@pytest.mark.parametrize("name", UNCOVERED)
def test_reports_trace_under_fullgraph(name):
    call, reported = UNCOVERED[name]
    x = torch.linspace(-1, 1, 12).view(3, 4)
    for uncovered in ("warn", "error"):
        torch._dynamo.reset()
        _fresh_warnings()
        f = torch.compile(call, fullgraph=True, backend="aot_eager")
        if uncovered == "warn":
            with warnings.catch_warnings(record=True) as caught, torch_rngx.mode(seed=0):
                warnings.simplefilter("always")
                f(x)
                f(x)
            ours = [str(w.message) for w in caught if issubclass(w.category, torch_rngx.UncoveredRandomWarning)]
            assert len(ours) == 1 and reported in ours[0], ours
            assert __file__ in [w.filename for w in caught if issubclass(w.category, torch_rngx.UncoveredRandomWarning)]
        else:
            with pytest.raises(RuntimeError, match=reported.replace(".", r"\.")):
                with torch_rngx.mode(seed=0, uncovered="error"):
                    f(x)


def test_fractional_max_pool_is_routed_eager_and_compiled():
    x = torch.linspace(-1, 1, 2 * 3 * 8 * 8).view(2, 3, 8, 8)
    torch._dynamo.reset()
    f = torch.compile(lambda t: TF.fractional_max_pool2d(t, 2, output_size=4, return_indices=True), fullgraph=True,
                      backend="aot_eager")
    g_eager, g_compiled = Generator(4), Generator(4)
    with torch_rngx.mode(generator=g_eager, uncovered="error"):
        want = _quiet_run(lambda: TF.fractional_max_pool2d(x, 2, output_size=4, return_indices=True))
    with torch_rngx.mode(generator=g_compiled, uncovered="error"):
        got = _quiet_run(f, x)
    assert torch.equal(want[0], got[0]) and torch.equal(want[1], got[1])
    assert torch.equal(g_eager.state, g_compiled.state) and g_eager.get_offset() > 0
    samples = torch_rngx.rand_like(torch.empty(2, 3, 2), generator=Generator(4))  # torch's _random_samples shape
    assert torch.equal(want[0], TF.fractional_max_pool2d(x, 2, output_size=4, _random_samples=samples))


# ---- 6. random_() without bounds ----

@pytest.mark.parametrize("dtype,high", [(torch.int64, 1 << 63), (torch.int32, 1 << 31), (torch.uint8, 256),
                                        (torch.int8, 128), (torch.bool, 2), (torch.float32, (1 << 24) + 1),
                                        (torch.float16, (1 << 11) + 1), (torch.float64, (1 << 53) + 1)])
def test_random_without_bounds_is_routed_over_torchs_range(dtype, high):
    g = Generator(2)
    with torch_rngx.mode(generator=g, uncovered="error"):
        got = _quiet_run(lambda: torch.empty(4096, dtype=dtype).random_())
    if dtype == torch.int64:  # one below and back: int64's top is one past what randint's high may be
        want = torch_rngx.randint_like(torch.empty(4096, dtype=dtype), -1, high - 1, generator=Generator(2)) + 1
    else:
        want = torch_rngx.randint_like(torch.empty(4096, dtype=dtype), 0, high, generator=Generator(2))
    assert got.dtype == dtype and torch.equal(got, want)
    assert got.double().min() >= 0 and got.double().max() <= high - 1


def test_dataloader_base_seed_draw_is_routed():
    """Every DataLoader iterator draws its base seed with torch.empty((), dtype=torch.int64).random_()."""
    with torch_rngx.mode(seed=3, uncovered="error"):
        seeds = [_quiet_run(lambda: torch.empty((), dtype=torch.int64).random_().item()) for _ in range(2)]
    assert seeds[0] != seeds[1] and all(s >= 0 for s in seeds)


# ---- the eager net: what the function-level mode cannot see ----

_lib = torch.library.Library("rngx_test_net", "DEF")
_lib.define("noisy(Tensor x) -> Tensor")
_lib.impl("noisy", lambda x: x + torch.rand_like(x), "CompositeImplicitAutograd")  # as a C++ extension might


def test_the_eager_net_names_a_draw_inside_another_librarys_op():
    x = torch.zeros(3)
    with pytest.raises(RuntimeError, match=r"rngx_test_net\.noisy.*aten\.rand_like"):
        with torch_rngx.mode(seed=0, uncovered="error"):
            torch.ops.rngx_test_net.noisy(x)
    _fresh_warnings()
    with warnings.catch_warnings(record=True) as caught, torch_rngx.mode(seed=0):
        warnings.simplefilter("always")
        torch.ops.rngx_test_net.noisy(x)
    assert [w for w in caught if issubclass(w.category, torch_rngx.UncoveredRandomWarning)]


def test_the_net_leaves_our_own_draws_alone():
    """torch_rngx's ops with generator=None draw their seed from torch's generator (rngx::seed_state, tagged
    random): that is ours, and not reported."""
    with torch_rngx.mode(uncovered="error"):
        torch_rngx.rand_like(torch.zeros(3))
        torch.rand(3)  # the mode without a generator: a seed per call from torch's generator
        TF.scaled_dot_product_attention(*(torch.zeros(1, 2, 3, 4),) * 3)  # dropout_p=0: torch's, drawing nothing


class _NetSeen:
    """The aten ops the eager net is called for, by phase of a training step (monkeypatched in)."""

    def __init__(self, monkeypatch):
        self.ops, self.phase = {}, None
        net = torch_rngx._mode.mode._Net
        seen = net.__torch_dispatch__

        def spy(mode, func, types, args=(), kwargs=None):
            self.ops.setdefault(self.phase, []).append(str(func))
            return seen(mode, func, types, args, kwargs)

        monkeypatch.setattr(net, "__torch_dispatch__", spy)


class _Noisy(torch.autograd.Function):
    """Its backward calls another library's op that draws inside (rngx_test_net.noisy)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return torch.ops.rngx_test_net.noisy(grad)


class _NoisySGD(torch.optim.SGD):
    """SGD whose step also calls another library's op that draws inside."""

    def step(self, closure=None):
        torch.ops.rngx_test_net.noisy(torch.zeros(2))
        return super().step(closure)


class _Failing(torch.optim.SGD):
    def step(self, closure=None):
        raise ValueError("a step that raises")


def test_backward_and_optimizer_steps_run_without_the_net_but_a_watched_call_there_runs_under_it(monkeypatch):
    """The net is set aside for a backward pass and an optimizer step (the mode's cost on a small model's eager step:
    docs: performance/, "torch_rngx.mode"), not for the forward, nor for a step given a closure, and a call the mode
    watches inside them (another library's op) still has its draws named."""
    seen = _NetSeen(monkeypatch)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
    opt = torch.optim.Adam(model.parameters())
    x = torch.ones(3, 4)
    with torch_rngx.mode(seed=0, uncovered="error"):
        seen.phase = "forward"
        loss = model(x).sum()
        seen.phase = "backward"
        loss.backward()
        seen.phase = "step"
        opt.step()
        seen.phase = "step with a closure"
        opt.step(lambda: model(x).sum())
    assert "aten.addmm.default" in seen.ops["forward"] and "rngx.dropout.default" in seen.ops["forward"]
    assert "backward" not in seen.ops
    assert {op.split(".")[0] for op in seen.ops["step"]} == {"profiler"}  # its range opens before the step's hooks
    assert "aten.addmm.default" in seen.ops["step with a closure"]  # the closure's forward
    assert torch._C._len_torch_dispatch_stack() == 0
    y = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"rngx_test_net\.noisy.*aten\.rand_like"):
        with torch_rngx.mode(seed=0, uncovered="error"):
            _Noisy.apply(y).sum().backward()
    with pytest.raises(RuntimeError, match=r"rngx_test_net\.noisy.*aten\.rand_like"):
        with torch_rngx.mode(seed=0, uncovered="error"):
            _NoisySGD([y], lr=0.1).step()
    assert torch._C._len_torch_dispatch_stack() == 0


def test_a_step_that_raises_leaves_the_net_to_the_next_step_or_the_modes_exit():
    y = torch.ones(2, requires_grad=True)
    y.grad = torch.ones(2)
    with torch_rngx.mode(seed=0, uncovered="error"):
        net = torch_rngx._mode.mode._here.net
        with pytest.raises(ValueError, match="a step that raises"):
            _Failing([y], lr=0.1).step()
        with pytest.raises(RuntimeError, match=r"rngx_test_net\.noisy"):  # a watched call: under the net again
            torch.ops.rngx_test_net.noisy(torch.zeros(2))
        torch.optim.SGD([y], lr=0.1).step()  # its end puts the net back
        assert torch._C._get_dispatch_stack_at(torch._C._len_torch_dispatch_stack() - 1) is net
        with pytest.raises(ValueError, match="a step that raises"):
            _Failing([y], lr=0.1).step()
    assert torch._C._len_torch_dispatch_stack() == 0  # the mode's exit put it back, then took it off


def test_checkpoint_backward_inside_the_mode_replays_the_forwards_draws():
    """loss.backward() inside the mode: a checkpointed region's recomputation draws what its forward drew."""
    from torch.utils.checkpoint import checkpoint

    w = torch.linspace(-1, 1, 16).view(4, 4).requires_grad_()
    x = torch.linspace(0, 1, 8).view(2, 4)

    def region(t):
        return TF.dropout(t @ w, 0.5) + torch.rand_like(t)

    grads = []
    for checkpointed in (False, True):
        w.grad = None
        with torch_rngx.mode(seed=1, uncovered="error"):
            out = checkpoint(region, x, use_reentrant=False) if checkpointed else region(x)
            out.square().sum().backward()
        grads.append(w.grad.clone())
    assert torch.equal(*grads)


# ---- the table, generated from torch's tags: tests/test_mode_sweep.py ----


# ---- 8. parities with torch ----

@pytest.mark.parametrize("module", [torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d,
                                    torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout])
def test_dropout_at_p_0_returns_its_input_and_draws_nothing(module):
    x = torch.ones(2, 3, 4, 4, 4) if module is torch.nn.Dropout3d else torch.ones(2, 3, 4)
    g = Generator(1)
    with torch_rngx.mode(generator=g):
        out = module(p=0.0)(x)
    assert out is x and g.get_offset() == 0
    ours = getattr(torch_rngx.nn, module.__name__)(p=0.0, seed=1)
    assert ours(x) is x and ours.rng_state[1] == 0


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout2d"])
def test_an_integer_tensor_not_in_training_is_returned(name):
    i = torch.arange(24).view(2, 3, 4)
    assert getattr(torch_rngx, name)(i, 0.5, training=False) is i
    assert getattr(torch_rngx, name)(i, 0.0, training=True) is i
    with pytest.raises(TypeError, match="input"):
        getattr(torch_rngx, name)(i, 0.5, training=True)
    with torch_rngx.mode(seed=0):
        assert getattr(TF, name)(i, 0.5, training=False) is i


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8, torch.bool])
def test_randint_like_keeps_the_dtype_like_torch(dtype):
    x = torch.empty(64, dtype=dtype)
    out = torch_rngx.randint_like(x, 2, generator=Generator(0))
    assert out.dtype == torch.randint_like(x, 2).dtype == dtype
    assert set(out.tolist()) <= {0, 1}
    assert torch.equal(out, torch_rngx.randint_like(x, 0, 2, dtype=torch.int64, generator=Generator(0)).to(dtype))
    with torch_rngx.mode(generator=Generator(0)):
        assert torch.equal(torch.randint_like(x, 2), out)
