"""Guarantee (docs/guarantees.md, "Drop-in dropout family"): torch_rngx's dropout, dropout1d/2d/3d, alpha_dropout,
feature_alpha_dropout and their modules accept torch's arguments and follow torch's semantics (inplace, rank rules
and warnings, channel-wise decisions, the alpha affine correction), with torch_rngx's stream: compiled and
exported equal eager, any layout, exact checkpointing, torch.func; convert() swaps a model's torch dropout
modules for these."""
import copy
import inspect
import warnings

import pytest
import torch
import torch.nn.functional as TF
from conftest import recompute
from torch.func import grad, vmap
from torch.utils.checkpoint import checkpoint

import torch_rngx
from torch_rngx import functional as F

FUNCTIONS = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
MODULES = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
SHAPES = {"dropout": (2, 3, 4, 5), "dropout1d": (2, 3, 7), "dropout2d": (2, 3, 4, 5), "dropout3d": (2, 3, 2, 4, 5),
          "alpha_dropout": (2, 3, 4, 5), "feature_alpha_dropout": (2, 3, 4, 5)}


def _x(name, dtype=torch.float32):
    return torch.randn(SHAPES[name], generator=torch.Generator().manual_seed(4)).to(dtype)


def _call(name, x, *args, seed=9, **kwargs):
    return getattr(torch_rngx, name)(x, *args, generator=torch_rngx.Generator(seed), **kwargs)


# ---- torch's signatures ----

@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_signatures_match_torch(name):
    ours, theirs = inspect.signature(getattr(torch_rngx, name)), inspect.signature(getattr(TF, name))
    assert list(theirs.parameters) == list(ours.parameters)[:len(theirs.parameters)]
    for param in theirs.parameters.values():
        assert ours.parameters[param.name].default == param.default, param.name
    assert ours.parameters["generator"].kind is inspect.Parameter.KEYWORD_ONLY
    x = _x(name)
    torch.equal(_call(name, x, 0.5, True, False), _call(name, x, p=0.5, training=True, inplace=False))


@pytest.mark.parametrize("name", MODULES)
def test_module_signatures_match_torch(name):
    ours, theirs = getattr(torch_rngx.nn, name), getattr(torch.nn, name)
    ours_params = list(inspect.signature(ours).parameters)
    theirs_params = list(inspect.signature(theirs).parameters)
    assert ours_params[:len(theirs_params)] == theirs_params
    for m in (ours(0.1, True), ours(p=0.1, inplace=False)):
        t = theirs(0.1, m.inplace)
        assert (m.p, m.inplace) == (t.p, t.inplace)
        assert repr(m).endswith(f"(p={m.p}, inplace={m.inplace})")


# ---- inplace ----

@pytest.mark.parametrize("name", FUNCTIONS)
def test_inplace_writes_the_input_and_returns_it(name):
    x = _x(name)
    want = _call(name, x.clone(), 0.3, True)
    y = x.clone()
    out = _call(name, y, 0.3, True, True)
    assert out is y and torch.equal(y, want)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_inplace_gradient_equals_out_of_place(name):
    leaf = _x(name).requires_grad_()
    (_call(name, leaf * 1, 0.3, True) * 3).sum().backward()
    want, leaf.grad = leaf.grad.clone(), None
    (_call(name, leaf * 1, 0.3, True, True) * 3).sum().backward()
    assert torch.equal(leaf.grad, want)


def test_inplace_on_a_leaf_that_requires_grad_raises_like_torch():
    x = torch.randn(4, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        TF.dropout(x, 0.5, True, True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch_rngx.dropout(x, 0.5, True, True)


@pytest.mark.parametrize("name", ["dropout", "dropout2d"])
def test_inplace_under_compile_mutates_the_graph_input_as_eager(name):
    torch._dynamo.reset()
    g_eager, g_comp = torch_rngx.Generator(3), torch_rngx.Generator(3)
    a, b = _x(name), _x(name)
    fn = getattr(torch_rngx, name)
    out_e = fn(a, 0.4, True, True, generator=g_eager)
    out_c = torch.compile(lambda t: fn(t, 0.4, True, True, generator=g_comp), fullgraph=True)(b)
    assert torch.equal(a, b) and torch.equal(out_e, out_c) and torch.equal(g_eager.state, g_comp.state)


# ---- channel dropout ----

@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
def test_one_decision_per_sample_and_channel_from_the_stream(name):
    x = _x(name).abs() + 1  # no zeros of its own
    g = torch_rngx.Generator(11)
    key = g.state.clone()
    out = getattr(torch_rngx, name)(x, 0.5, generator=g)
    n, c = x.shape[:2]
    with recompute():
        mask = F.dropout(torch.ones(n, c), key, 0.5)  # one word per (n, c), in logical order
    assert torch.equal(out, x * mask.view(n, c, *([1] * (x.dim() - 2))))
    assert g.state.tolist() == [11, torch_rngx.blocks_used(n * c, torch.float32)]


@pytest.mark.parametrize("name,shape", [("dropout1d", (3, 7)), ("dropout3d", (3, 2, 4, 5))])
def test_unbatched_inputs_are_one_sample(name, shape):
    x = torch.randn(shape)
    assert torch.equal(_call(name, x, 0.5), _call(name, x.unsqueeze(0), 0.5).squeeze(0))


def test_channel_dropout_in_any_layout():
    x = _x("dropout2d")
    want = _call("dropout2d", x, 0.5)
    for y in (x.to(memory_format=torch.channels_last), x.transpose(2, 3).contiguous().transpose(2, 3)):
        got = _call("dropout2d", y, 0.5)
        assert torch.equal(got, want) and got.stride() == (y * 1).stride()


@pytest.mark.parametrize("name", ["dropout2d", "alpha_dropout", "feature_alpha_dropout"])
def test_composites_in_every_layout_path_and_thread_count(name):
    from torch_rngx import _C
    base = _x(name)
    want = _call(name, base, 0.4, True)
    sliced = torch.zeros(base.shape[0], base.shape[1], 2 * base.shape[2], base.shape[3] + 1)[:, :, ::2, 1:]
    sliced.copy_(base)
    layouts = {"channels_last": base.to(memory_format=torch.channels_last),
               "transposed": base.transpose(1, 3).contiguous().transpose(1, 3), "sliced": sliced,
               "expanded": base[:1].expand(base.shape)}
    before_path, before_threads = _C.simd(), torch.get_num_threads()
    try:
        for path in _C.simd_paths():
            for threads in (1, 2, 3):
                _C.set_simd(path)
                torch.set_num_threads(threads)
                for lname, y in layouts.items():
                    expect = want if lname != "expanded" else _call(name, base[:1].expand(base.shape).contiguous(),
                                                                     0.4, True)
                    assert torch.equal(_call(name, y, 0.4, True), expect), (path, threads, lname)
    finally:
        _C.set_simd(before_path)
        torch.set_num_threads(before_threads)


def test_channel_dropout_backward_is_the_same_mask():
    x = _x("dropout2d").requires_grad_()
    out = _call("dropout2d", x, 0.5)
    out.backward(torch.ones_like(out))
    assert torch.equal(x.grad, out.detach() / x.detach())


def test_channel_dropout_keeps_only_the_key_for_backward():
    saved = []
    x = _x("dropout2d").requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, lambda t: t):
        out = _call("dropout2d", x * 1, 0.5)
    assert saved == [2]  # the key; the (N, C) scale is made again in backward
    out.backward(torch.ones_like(out))
    assert torch.equal(x.grad, _call("dropout2d", torch.ones_like(x), 0.5))


def test_feature_dropout_per_sample_keys():
    x = _x("dropout2d")
    keys = F.split(F.key(5), x.shape[0]).view(-1, 1, 1, 1, 2)
    out = F.feature_dropout(x, keys, 0.5)
    with recompute():
        for i in range(x.shape[0]):
            assert torch.equal(out[i:i + 1], F.feature_dropout(x[i:i + 1], keys[i, 0, 0, 0], 0.5))
        with pytest.raises(ValueError, match="varies along a spatial dim"):
            F.feature_dropout(x, F.split(F.key(5), 4).view(1, 1, 4, 1, 2), 0.5)


# ---- torch's rank rules, messages and warnings ----

def _outcome(fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(x, 0.5, True)
            error = None
        except RuntimeError as e:
            error = str(e)
    return error, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
@pytest.mark.parametrize("dim", [1, 2, 3, 4, 5, 6])
def test_rank_rules_and_warnings_are_torchs(name, dim):
    x = torch.randn(*([2] * dim))
    ours, theirs = _outcome(getattr(torch_rngx, name), x), _outcome(getattr(TF, name), x)
    assert ours == theirs


# ---- alpha dropout ----

def test_alpha_dropout_uses_torchs_affine_correction():
    x, p = _x("alpha_dropout"), 0.3
    g = torch_rngx.Generator(2)
    key = g.state.clone()
    out = torch_rngx.alpha_dropout(x, p, True, generator=g)
    with recompute():
        keep = F.dropout(torch.ones_like(x), key, p) != 0
    alpha = 1.7580993408473766
    a = ((alpha * alpha * p + 1) * (1 - p)) ** -0.5
    noise = keep.float()
    want = x * (noise * a) + ((noise - 1) * (alpha * a) + alpha * a * p)
    assert torch.equal(out, want)
    assert torch.equal(torch_rngx.alpha_dropout(x, p), x)  # training defaults to False, as in torch
    assert torch.equal(torch_rngx.alpha_dropout(x, 1.0, True), x * 0)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_mean_and_variance(name):
    x = torch.randn(64, 32, 16, 16, generator=torch.Generator().manual_seed(0))
    out = getattr(torch_rngx, name)(x, 0.2, True, generator=torch_rngx.Generator(1))
    assert abs(float(out.mean())) < 0.05 and abs(float(out.std()) - 1) < 0.05


def test_feature_alpha_dropout_is_channel_wise():
    x = torch.randn(4, 6, 5, 5)
    out = torch_rngx.feature_alpha_dropout(x, 0.5, True, generator=torch_rngx.Generator(3))
    dropped = out == out[..., :1, :1]  # a dropped channel is one constant
    assert (dropped.all(-1).all(-1)).any() and not dropped.all()


# ---- compile, export, checkpoint, torch.func ----

@pytest.mark.slow("twelve Inductor compiles")
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_equals_eager(name, dynamic):
    torch._dynamo.reset()
    x = _x(name).requires_grad_()
    fn = getattr(torch_rngx, name)

    def step(t, g):
        return fn(t * 2, 0.3, True, generator=g) + 1

    want = step(x, torch_rngx.Generator(5))
    want.sum().backward()
    want_grad, x.grad = x.grad.clone(), None
    got = torch.compile(step, fullgraph=True, dynamic=dynamic)(x, torch_rngx.Generator(5))
    got.sum().backward()
    assert torch.equal(got, want) and torch.equal(x.grad, want_grad)


@pytest.mark.parametrize("name", MODULES)
def test_export_of_module_owned_streams(name):
    m = torch.nn.Sequential(torch.nn.Identity(), getattr(torch_rngx.nn, name)(0.4, seed=6))
    x = _x(FUNCTIONS[MODULES.index(name)])
    ep = torch.export.export(copy.deepcopy(m), (x,))
    exported, eager = ep.module(), copy.deepcopy(m)
    for _ in range(2):
        assert torch.equal(exported(x), eager(x))


def test_checkpointing_channel_dropout_is_exact():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    drop = torch_rngx.nn.Dropout2d(0.5, seed=3)
    x = _x("dropout2d").requires_grad_()

    def block(t):
        return torch.relu(drop(conv(t)))

    block(x).sum().backward()
    want = (x.grad.clone(), conv.weight.grad.clone(), drop.rng_state.clone())
    x.grad = conv.weight.grad = None
    drop.rng_state.copy_(torch.tensor([3, 0]))
    with recompute():  # the same draws again, checkpointed
        checkpoint(block, x, use_reentrant=False).sum().backward()
    for g, w in zip((x.grad, conv.weight.grad, drop.rng_state), want):
        assert torch.equal(g, w)


@pytest.mark.key_reuse_ok("draws each dropout from one key, to compare torch.func.grad with backward")
def test_grad_through_functional_channel_and_alpha_dropout():
    x, key = _x("dropout2d").double(), F.key(2)
    for fn in (F.feature_dropout, F.alpha_dropout, F.feature_alpha_dropout):
        got = grad(lambda t: fn(t, key, 0.3).sum())(x)
        t = x.clone().requires_grad_()
        fn(t, key, 0.3).sum().backward()
        assert torch.equal(got, t.grad)


def test_vmap_randomness_for_channel_dropout():
    x = torch.ones(4, 2, 3, 5, 5)
    with pytest.raises(RuntimeError, match="randomness='error'"):
        vmap(lambda r: torch_rngx.dropout2d(r, 0.5, generator=torch_rngx.Generator(1)))(x)
    same = vmap(lambda r: torch_rngx.dropout2d(r, 0.5, generator=torch_rngx.Generator(1)), randomness="same")(x)
    assert all(torch.equal(same[i], same[0]) for i in range(4))
    g = torch_rngx.Generator(1)
    different = vmap(lambda r: torch_rngx.dropout2d(r, 0.5, generator=g), randomness="different")(x)
    with recompute():  # g's stream, cut into a key per row
        keys = F.split(torch_rngx.Generator(1).state, 4)
        for i in range(4):
            assert torch.equal(different[i], F.feature_dropout(x[i], keys[i], 0.5))
    assert g.state.tolist() == [1, torch_rngx.blocks_used(4 * 2 * 3, torch.float32)]


# ---- convert ----

def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.2, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def test_convert_keeps_names_modes_and_parameters():
    model = _encoder()
    model.layers[1].dropout.eval()
    keys_before = set(model.state_dict())
    converted = torch_rngx.nn.convert(model, seed=5, functional=False)
    replaced = converted.replaced
    assert converted.model is model and converted.routed == ()
    assert [n for n, _ in replaced] == [f"layers.{i}.dropout{s}" for i in range(2) for s in ("", "1", "2")]
    assert all(cls == "Dropout" for _, cls in replaced)
    assert set(model.state_dict()) == keys_before | {f"{n}.rng_state" for n, _ in replaced}
    assert not model.layers[1].dropout.training and model.layers[1].dropout1.training
    assert isinstance(model.layers[0].dropout, torch_rngx.nn.Dropout) and model.layers[0].dropout.p == 0.2
    states = [model.get_submodule(n).rng_state for n, _ in replaced]
    assert len({tuple(s.tolist()) for s in states}) == len(states)  # a stream each
    with recompute():  # convert derived the modules' keys from key 5
        assert torch.equal(states[1], F.fold_in(F.key(5), 1))
    with pytest.raises(ValueError, match="not both"):
        torch_rngx.nn.convert(_encoder(), seed=1, generator=torch_rngx.Generator(1))


def _train(model, compiled, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = torch.compile(model, fullgraph=True, backend="aot_eager") if compiled else model
    x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def test_converted_cnn_trains_bitwise_eager_and_compiled():
    """The captured training graph run by eager's kernels (aot_eager) gives eager's losses and weights bit for bit:
    the masks are eager's. (Inductor's own reductions, the bias gradients', may round otherwise on another CPU; the
    ops under Inductor are test_compiled_equals_eager's, the transformer below is trained under Inductor.)"""
    torch._dynamo.reset()
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Dropout2d(0.3),
                              torch.nn.Conv2d(8, 4, 3, padding=1), torch.nn.Dropout(0.2), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 16 * 16, 10))
    torch_rngx.nn.convert(cnn, seed=2)
    twin = copy.deepcopy(cnn)
    want, got = _train(cnn, False), _train(twin, True)
    for a, b in zip(want[0] + want[1], got[0] + got[1]):
        assert torch.equal(a, b)


@pytest.mark.slow("trains a transformer under Inductor")
def test_converted_transformer_trains_eager_and_compiled():
    """Softmax and layer norm are Inductor's own math, so compiled equals eager within rounding; the dropout
    masks (and the streams after the steps) are bitwise the same."""
    torch._dynamo.reset()
    model = _encoder()
    torch_rngx.nn.convert(model, seed=3)
    for layer in model.layers:  # attention's own dropout is a functional call: torch's RNG, which Inductor replaces
        layer.self_attn.dropout = 0.0
    twin = copy.deepcopy(model)
    x = torch.randn(4, 6, 16, generator=torch.Generator().manual_seed(2))
    outs = []
    for m, compiled in ((model, False), (twin, True)):
        f = torch.compile(m, fullgraph=True) if compiled else m
        outs.append(torch.stack([f(x) for _ in range(2)]))
    assert torch.allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(model.buffers(), twin.buffers()))
