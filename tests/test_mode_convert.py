"""nn.convert(model, seed=...) routes forward's own random calls to a stream the model owns (the buffer rngx_state):
compiled == eager, export shows the buffer mutation, exact checkpointing, resume in a fresh process, fold_in_; on a root
dropout module it returns a new module and leaves the original alone."""
import copy
import io
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as TF
from torch.utils.checkpoint import checkpoint

import torch_rngx
from torch_rngx import Generator
from torch_rngx import functional as rngx

pytestmark = pytest.mark.key_reuse_ok("compares a converted model's draws eager, compiled, exported, checkpointed and resumed, from one seed")


class Noisy(torch.nn.Module):
    """Random calls that are not modules: stochastic depth, functional dropout and Gaussian noise."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(6, 6)
        self.drop = torch.nn.Dropout(0.25)

    def forward(self, x):
        keep = (torch.rand(x.shape[0], 1) >= 0.2).to(x.dtype)
        h = TF.dropout(self.linear(x), 0.3, self.training) * keep
        return self.drop(h + 0.1 * torch.randn_like(h))


def _model(seed=0):
    torch.manual_seed(seed)
    return Noisy()


x = torch.linspace(-1, 1, 24).view(4, 6)


def test_root_dropout_module_gives_a_new_module_and_leaves_the_original():
    original = torch.nn.Dropout(0.1)
    converted = torch_rngx.nn.convert(original, seed=3)
    assert isinstance(converted.model, torch_rngx.nn.Dropout) and converted.model.p == 0.1
    assert converted.replaced == [("", "Dropout")] and converted.routed == ()
    assert type(original) is torch.nn.Dropout and dict(original.named_children()) == {}
    assert list(original.state_dict()) == [] and "forward" not in original.__dict__
    assert torch.equal(converted.model.rng_state, rngx.fold_in(rngx.key(3), 0))


def test_forward_runs_under_the_mode_on_the_models_stream():
    model = _model()
    converted = torch_rngx.nn.convert(model, seed=7)
    assert converted.replaced == [("drop", "Dropout")] and "torch.randn_like" in converted.routed
    assert set(model.state_dict()) == {"linear.weight", "linear.bias", "drop.rng_state", "rngx_state"}
    assert torch.equal(model.rngx_state, rngx.fold_in(rngx.key(7), (1 << 64) - 1))
    state, drop_state = model.rngx_state.clone(), model.drop.rng_state.clone()
    before = torch.get_rng_state()
    out = model(x)
    assert torch.equal(torch.get_rng_state(), before), "forward drew from torch's generator"
    plain = _model()
    with torch.no_grad():
        g = Generator.on(state)
        with torch_rngx.mode(generator=g):
            keep = (torch.rand(4, 1) >= 0.2).float()
            h = TF.dropout(plain.linear(x), 0.3) * keep
            h = h + 0.1 * torch.randn_like(h)
        want = torch_rngx.dropout(h, 0.25, generator=Generator.on(drop_state))
    assert torch.equal(out, want) and torch.equal(state, model.rngx_state)
    assert not torch.equal(model(x), out), "successive calls must differ"


def test_functional_false_only_replaces_modules():
    model = _model()
    converted = torch_rngx.nn.convert(model, seed=7, functional=False)
    assert converted.routed == () and "forward" not in model.__dict__ and "rngx_state" not in model.state_dict()


def _steps(model, compiled, n=3):
    """Losses of n SGD steps; compiled: the captured graph run by eager's kernels (aot_eager), so that only the
    routing can make them differ (test_mode.py compiles every routed call with Inductor)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    f = torch.compile(model, fullgraph=True, backend="aot_eager") if compiled else model
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = f(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def test_compiled_equals_eager_and_deepcopy_keeps_the_routing():
    torch._dynamo.reset()
    model = _model()
    torch_rngx.nn.convert(model, seed=1)
    twin = copy.deepcopy(model)
    assert twin.forward.args[0] is twin
    assert torch.equal(_steps(model, False), _steps(twin, True))
    assert torch.equal(model.rngx_state, twin.rngx_state)


@pytest.mark.parametrize("strict", [True, False])
def test_export_shows_the_stream_as_a_buffer_mutation(strict):
    model = _model()
    torch_rngx.nn.convert(model, seed=2)
    twin = copy.deepcopy(model)
    exported = torch.export.export(model, (x,), strict=strict)
    specs = exported.run_decompositions().graph_signature.output_specs
    assert {s.target for s in specs if s.kind.name == "BUFFER_MUTATION"} == {"rngx_state", "drop.rng_state"}
    module = exported.module()
    for _ in range(2):
        assert torch.equal(module(x), twin(x))


def test_checkpointing_is_exact():
    model = _model()
    torch_rngx.nn.convert(model, seed=4)
    twin = copy.deepcopy(model)
    xa = x.clone().requires_grad_()
    out = model(xa)
    out.sum().backward()
    inner = twin.forward

    def region(t):
        return inner(t)

    y = x.detach().requires_grad_()
    got = checkpoint(region, y, use_reentrant=False)
    got.sum().backward()
    assert torch.equal(out, got) and torch.equal(xa.grad, y.grad)
    assert torch.equal(model.rngx_state, twin.rngx_state)


def test_resume_in_a_fresh_process_and_whole_model_save():
    model = _model()
    torch_rngx.nn.convert(model, seed=5)
    model(x)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    whole = io.BytesIO()
    torch.save(model, whole)
    want = model(x)
    whole.seek(0)
    assert torch.equal(torch.load(whole, weights_only=False)(x), want)
    script = (
        "import io, sys, torch, torch_rngx\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_mode_convert import _model, x\n"
        "model = _model()\n"
        "torch_rngx.nn.convert(model, seed=0)\n"
        "model.load_state_dict(torch.load(io.BytesIO(sys.stdin.buffer.read())))\n"
        "sys.stdout.buffer.write(model(x).detach().numpy().tobytes())\n")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], input=buffer.getvalue(),
                          capture_output=True, check=True)
    assert done.stdout == want.detach().numpy().tobytes()


def test_fold_in_reaches_the_models_stream():
    model = _model()
    torch_rngx.nn.convert(model, seed=6)
    before = model.rngx_state.clone()
    assert set(torch_rngx.nn.fold_in_(model, 3)) == {"drop.rng_state", "rngx_state"}
    assert torch.equal(model.rngx_state, rngx.fold_in(before, 3))


def test_a_bad_saved_stream_is_refused():
    model = _model()
    torch_rngx.nn.convert(model, seed=6)
    state = model.state_dict()
    state["rngx_state"] = state["rngx_state"].float()
    with pytest.raises(ValueError, match="rngx_state"):
        model.load_state_dict(state)
