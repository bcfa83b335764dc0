"""Guarantee (docs/guarantees.md, "Training loops"): random state behaves like model state.

- Activation checkpointing recomputes exactly: outputs, gradients and final generator states equal the
  un-checkpointed run, for explicit Generators, nn.RNG modules, module-owned seeds and generator=None; where a
  mechanism cannot be exact (use_reentrant=True with a Generator, the compiled partitioner recomputing a draw) it
  raises a clear error instead of returning other gradients.
- torch.func: grad, vjp, jacrev, jvp and functional_call through every differentiable op; vmap over keys; vmap of
  stateful calls follows the randomness flag.
- Module-owned state is in state_dict, moves with .to(), survives .half(), deepcopy and torch.save, and a resumed
  run (a fresh process) continues bitwise; export shows it as a buffer mutation; compile does not recompile.
"""
import copy
import functools
import io
import subprocess
import sys
import textwrap

import pytest
import torch
import torch._functorch.config
from torch.func import functional_call, grad, jacrev, jvp, vjp, vmap
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare checkpointed, resumed and plain runs")


# ---- activation checkpointing ----

W1 = torch.randn(16, 16, generator=torch.Generator().manual_seed(1))
W2 = torch.randn(16, 16, generator=torch.Generator().manual_seed(2))


class Block(torch.nn.Module):
    """Dropout and quantize noise between two matmuls, drawing from `stream`: "gen" (a Generator), "rng" (an
    nn.RNG), "seed" (modules that own their state) or "none" (torch's generator)."""

    def __init__(self, stream, shared):
        super().__init__()
        self.w1, self.w2 = torch.nn.Parameter(W1.clone()), torch.nn.Parameter(W2.clone())
        self.drop = torch_rngx.nn.Dropout(0.5, seed=7) if stream == "seed" else torch_rngx.nn.Dropout(0.5, generator=shared)
        self.generator = torch_rngx.nn.RNG(8) if stream == "seed" else shared

    def forward(self, x):
        h = self.drop((x @ self.w1) * 0.5)
        return torch.relu(torch_rngx.quantize(h, generator=self.generator) @ self.w2)


def _sac_policy(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE


MECHANISMS = {
    "plain": lambda blk, x: blk(x),
    "non_reentrant": lambda blk, x: checkpoint(blk, x, use_reentrant=False),
    "selective": lambda blk, x: checkpoint(
        blk, x, use_reentrant=False, context_fn=functools.partial(create_selective_checkpoint_contexts, _sac_policy)),
    "rngx_context": lambda blk, x: checkpoint(blk, x, use_reentrant=False, context_fn=torch_rngx.checkpoint_context),
    "rngx_context_policy": lambda blk, x: checkpoint(
        blk, x, use_reentrant=False, context_fn=functools.partial(torch_rngx.checkpoint_context, _sac_policy)),
    "reentrant": lambda blk, x: checkpoint(blk, x, use_reentrant=True),
}


def _train_step(stream, mechanism, compiled=False):
    """Loss, gradients (input and parameters) and the final stream states of one step over three blocks."""
    torch._dynamo.reset()
    shared = {"gen": torch_rngx.Generator(7), "rng": torch_rngx.nn.RNG(7)}.get(stream)
    blocks = torch.nn.ModuleList(Block(stream, shared) for _ in range(3))
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(5), requires_grad=True)

    def step(x):
        for blk in blocks:
            x = MECHANISMS[mechanism](blk, x)
        return x

    torch.manual_seed(1)
    out = (torch.compile(step, fullgraph=True) if compiled else step)(x)
    out.backward(torch.ones_like(out))
    states = [s.clone() for b in blocks for s in (b.drop.rng_state, b.generator.state)] if stream == "seed" else []
    if shared is not None:
        states.append(shared.state.clone())
    return [out.detach(), x.grad] + [p.grad for p in blocks.parameters()] + states


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert torch.equal(g, w)


STREAMS = ["gen", "rng", "seed", "none"]


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("mechanism", ["non_reentrant", "selective", "rngx_context", "rngx_context_policy"])
@REUSES_KEYS
def test_eager_checkpointing_is_exact(stream, mechanism):
    _assert_same(_train_step(stream, mechanism), _train_step(stream, "plain"))


def test_checkpointing_a_one_call_draw_is_exact():
    """rand_like and quantize without a gradient take the one-call path outside checkpoints; inside, the draw is
    journaled and replayed like every other."""
    w = torch.randn(16, 16, generator=torch.Generator().manual_seed(3), requires_grad=True)

    def block(x, g):
        h = x @ w
        return h * torch_rngx.rand_like(h, generator=g) + torch_rngx.quantize(h.detach(), generator=g)

    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(4))
    results = []
    for wrap in (lambda f, *a: f(*a), lambda f, *a: checkpoint(f, *a, use_reentrant=False)):
        g = torch_rngx.Generator(9)
        wrap(block, x, g).sum().backward()
        results.append((w.grad.clone(), g.state.clone()))
        w.grad = None
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_each_generator_advances_once_per_forward():
    got = _train_step("gen", "non_reentrant")
    assert got[-1].tolist() == [7, 3 * 2 * torch_rngx.blocks_used(8 * 16, torch.float32)]


@pytest.mark.parametrize("stream", ["gen", "rng", "seed"])
@REUSES_KEYS
def test_reentrant_checkpointing_of_a_stateful_draw_raises(stream):
    with pytest.raises(RuntimeError, match="cannot be replayed.*use_reentrant=True"):
        _train_step(stream, "reentrant")


def test_reentrant_checkpointing_with_torch_generator_is_exact():
    # generator=None draws from torch's generator, which checkpoint itself restores before recomputing.
    _assert_same(_train_step("none", "reentrant"), _train_step("none", "plain"))


@pytest.mark.slow("eight Inductor compiles")
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("mechanism", ["rngx_context", "rngx_context_policy"])
def test_compiled_checkpointing_with_rngx_context_is_exact(stream, mechanism):
    # Against the compiled un-checkpointed step: Inductor's own reductions may round differently from eager's.
    _assert_same(_train_step(stream, mechanism, compiled=True), _train_step(stream, "plain", compiled=True))


@pytest.mark.parametrize("stream", STREAMS)
@REUSES_KEYS
def test_eager_checkpoint_of_compiled_blocks_is_exact(stream):
    """Compiled blocks under an eager checkpoint: each graph's step (rngx::take_, C++ for a CPU state) asks the
    journal (csrc/journal.h) while the checkpoint's hooks are on, so the forward records its keys and the
    recomputation gets them back instead of stepping again."""

    def run(mechanism):
        torch._dynamo.reset()
        shared = {"gen": torch_rngx.Generator(7), "rng": torch_rngx.nn.RNG(7)}.get(stream)
        blocks = torch.nn.ModuleList(Block(stream, shared) for _ in range(3))
        compiled = [torch.compile(blk, fullgraph=True) for blk in blocks]
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(5), requires_grad=True)
        torch.manual_seed(1)
        h = x
        for blk in compiled:
            h = MECHANISMS[mechanism](blk, h)
        h.backward(torch.ones_like(h))
        states = [s.clone() for b in blocks for s in (b.drop.rng_state, b.generator.state)] if stream == "seed" else []
        return [h.detach(), x.grad] + [p.grad for p in blocks.parameters()] + states + (
            [shared.state.clone()] if shared is not None else [])

    _assert_same(run("non_reentrant"), run("plain"))


@pytest.mark.parametrize("stream", ["gen", "rng", "seed"])
def test_compiled_recomputation_of_a_draw_raises(stream):
    """Plain checkpoint under compile: the partitioner recomputes the draw in backward, from the state the
    forward already advanced. That draw refuses to run rather than give other gradients, and names the recipe
    that is exact there."""
    with pytest.raises(RuntimeError, match=r"cannot be replayed.*under torch\.compile, checkpoint\(\.\.\., "
                                           r"use_reentrant=False, context_fn=torch_rngx\.checkpoint_context\)"):
        _train_step(stream, "non_reentrant", compiled=True)


def test_compiled_checkpointing_of_torch_generator_draws_fails_loudly_before_torch_2_15():
    """generator=None under compile + plain checkpoint: before torch 2.15, AOTAutograd cannot recompute the ordered
    effect that keeps seed draws in order (an assertion in unlift_tokens), and fails loudly, at compile time, where
    checkpoint_context (above) is the working recipe; torch 2.15 recomputes it, and the step is eager's bit for bit
    (make interop runs this module's checkpointing tests under 2.14.1 and 2.15.0)."""
    if tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15):
        with pytest.raises(Exception, match="num_erased_outs"):
            _train_step("none", "non_reentrant", compiled=True)
    else:
        _assert_same(_train_step("none", "non_reentrant", compiled=True), _train_step("none", "non_reentrant"))


@pytest.mark.parametrize("stream", ["gen", "rng"])
def test_compiled_memory_budget_never_gives_other_gradients(stream):
    want = _train_step(stream, "plain", compiled=True)
    old = torch._functorch.config.activation_memory_budget
    torch._functorch.config.activation_memory_budget = 0.1
    try:
        got = _train_step(stream, "plain", compiled=True)
    except RuntimeError as e:  # the partitioner chose to recompute a draw
        assert "cannot be replayed" in str(e)
    else:
        _assert_same(got, want)
    finally:
        torch._functorch.config.activation_memory_budget = old


# ---- torch.func ----

KEY = F.key(3)
OPS = {
    "dropout": lambda x: F.dropout(x, KEY, 0.4),
    "quantize_noise": lambda x: F.quantize_noise(x, KEY, 0.5),
    "uniform_times_x": lambda x: x * F.uniform(x, KEY),
}
X = torch.randn(6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)


@pytest.mark.parametrize("name", OPS)
@REUSES_KEYS
def test_grad_vjp_jacrev_jvp_agree_with_autograd(name):
    fn = OPS[name]
    x = X.clone().requires_grad_()
    want = torch.autograd.functional.jacobian(fn, x)
    assert torch.equal(jacrev(fn)(X), want)
    assert torch.equal(grad(lambda x: fn(x).sum())(X), want.sum(0))
    assert torch.equal(vjp(fn, X)[1](torch.ones(6, dtype=torch.float64))[0], want.sum(0))
    tangent = torch.arange(6, dtype=torch.float64)
    out, jvp_out = jvp(fn, (X,), (tangent,))
    assert torch.equal(out, fn(X))
    assert torch.allclose(jvp_out, want @ tangent, rtol=0, atol=1e-12)


@REUSES_KEYS
def test_dropout_forward_mode_is_dropout_of_the_tangent():
    tangent = torch.randn(6, dtype=torch.float64)
    assert torch.equal(jvp(OPS["dropout"], (X,), (tangent,))[1], F.dropout(tangent, KEY, 0.4))


@REUSES_KEYS
def test_functional_call_through_module_state():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch_rngx.nn.Dropout(0.5, seed=3))
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    x = torch.randn(2, 4)
    g = grad(lambda p: functional_call(model, (p, buffers), (x,)).sum())(params)
    model(x).sum().backward()
    for k, v in model.named_parameters():
        assert torch.equal(g[k], v.grad)
    assert torch.equal(buffers["1.rng_state"], model[1].rng_state)  # both advanced once


@REUSES_KEYS
def test_vmap_unbatched_key_is_the_pure_function_on_each_row():
    x = torch.randn(4, 6)
    for fn in OPS.values():
        got = vmap(fn)(x)
        for i in range(4):
            assert torch.equal(got[i], fn(x[i]))


@REUSES_KEYS
def test_vmap_batched_keys_equal_the_loop():
    x, keys = torch.randn(4, 6), F.split(KEY, 4)
    got = vmap(lambda r, k: F.dropout(r, k, 0.5))(x, keys)
    for i in range(4):
        assert torch.equal(got[i], F.dropout(x[i], keys[i], 0.5))
    bits = vmap(lambda k: F.bits((5,), k))(keys)
    split = vmap(lambda k: F.split(k, 3))(keys)
    folded = vmap(lambda k: F.fold_in(k, 9))(keys)
    for i in range(4):
        assert torch.equal(bits[i], F.bits((5,), keys[i]))
        assert torch.equal(split[i], F.split(keys[i], 3))
        assert torch.equal(folded[i], F.fold_in(keys[i], 9))


@REUSES_KEYS
def test_vmap_grad_per_key():
    x, keys = torch.randn(4, 6), F.split(KEY, 4)
    got = vmap(grad(lambda r, k: F.dropout(r, k, 0.5).sum()))(x, keys)
    for i in range(4):
        assert torch.equal(got[i], F.dropout(torch.ones(6), keys[i], 0.5))


STATEFUL = {
    "dropout": lambda r, gen: torch_rngx.dropout(r, 0.5, generator=gen),
    "quantize": lambda r, gen: torch_rngx.quantize(r, generator=gen),
    "rand_like": lambda r, gen: torch_rngx.rand_like(r, generator=gen),
}


@pytest.mark.parametrize("name", STATEFUL)
@pytest.mark.parametrize("stream", ["gen", "none"])
def test_vmap_randomness_flag(name, stream):
    fn, x = STATEFUL[name], torch.ones(4, 6)

    def run(randomness):
        torch.manual_seed(0)
        gen = torch_rngx.Generator(9) if stream == "gen" else None
        out = vmap(lambda r: fn(r, gen), randomness=randomness)(x)
        return out, gen

    with pytest.raises(RuntimeError, match="randomness='error'"):
        run("error")
    same, gen = run("same")
    assert all(torch.equal(same[i], same[0]) for i in range(4))
    torch.manual_seed(0)
    gen_row = torch_rngx.Generator(9) if stream == "gen" else None
    assert torch.equal(same[0], fn(x[0], gen_row))
    if gen is not None:
        assert torch.equal(gen.state, gen_row.state)  # advanced once, by one row's blocks
    different, gen = run("different")
    torch.manual_seed(0)
    gen_whole = torch_rngx.Generator(9) if stream == "gen" else None
    assert torch.equal(different, fn(x, gen_whole))  # the call on the whole batch
    if gen is not None:
        assert torch.equal(gen.state, gen_whole.state)


# ---- module-owned state ----

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch_rngx.nn.Dropout(0.5, seed=11)
        self.rng = torch_rngx.nn.RNG(5)

    def forward(self, x):
        return torch_rngx.quantize(self.drop(self.lin(x)), generator=self.rng)


@REUSES_KEYS
def test_module_state_is_in_state_dict_and_survives_dtype_casts_and_copies():
    net = Net()
    assert {"drop.rng_state", "rng.state"} <= set(net.state_dict())
    net.half().to(torch.float64)
    assert net.drop.rng_state.dtype == net.rng.state.dtype == torch.int64
    net.float()
    x = torch.randn(4, 8)
    twin = copy.deepcopy(net)
    assert torch.equal(net(x), twin(x))
    buf = io.BytesIO()
    torch.save(net, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(x), net(x))
    assert net.drop.rng_state.tolist() == [11, 2 * torch_rngx.blocks_used(32, torch.float32)]


def test_load_state_dict_rejects_a_bad_state_buffer():
    sd = Net().state_dict()
    for bad in (sd["rng.state"].float(), torch.zeros(3, dtype=torch.int64)):
        with pytest.raises(ValueError, match="rng.state must be an int64 tensor of shape"):
            Net().load_state_dict({**sd, "rng.state": bad})
    with pytest.raises(ValueError, match="drop.rng_state"):
        Net().load_state_dict({**sd, "drop.rng_state": torch.zeros(2, dtype=torch.int32)})


@pytest.mark.parametrize("assign", [False, True])
@REUSES_KEYS
def test_a_strided_state_buffer_loads_and_draws(assign):
    """A saved stream that is a strided view (a [seed, offset] column of a bigger tensor): load_state_dict(assign=True)
    makes the loaded value the buffer itself, which every draw then refused (issue 43, item 9). It loads as its
    contiguous copy, and the modules draw as from the same position loaded by copy. A sparse one is refused."""
    sd = Net().state_dict()
    strided = {k: torch.stack([v, v + 7], dim=1)[:, 0] for k, v in sd.items() if k in ("rng.state", "drop.rng_state")}
    assert not any(v.is_contiguous() for v in strided.values())
    for v in strided.values():
        v[1] = 5  # offset 5
    loaded, plain = Net(), Net()
    loaded.load_state_dict({**sd, **strided}, assign=assign)
    plain.load_state_dict({**sd, **{k: v.contiguous() for k, v in strided.items()}})
    x = torch.randn(4, 8)
    assert torch.equal(loaded(x), plain(x))
    assert torch.equal(loaded.drop.rng_state, plain.drop.rng_state) and loaded.drop.rng_state[1] > 5
    assert torch.equal(torch_rngx.rand_like(x, generator=loaded.rng), torch_rngx.rand_like(x, generator=plain.rng))
    with pytest.raises(ValueError, match="rng.state must be a dense"):
        Net().load_state_dict({**sd, "rng.state": sd["rng.state"].to_sparse()}, assign=assign)


@REUSES_KEYS
def test_fold_in_gives_each_rank_its_own_streams():
    nets = [Net() for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())  # what DDP does: rank 0's buffers everywhere
    assert torch_rngx.nn.fold_in_(nets[1], 1) == ["drop.rng_state", "rng.state"]
    assert torch.equal(nets[1].rng.state, F.fold_in(nets[0].rng.state, 1))
    assert torch.equal(nets[1].drop.rng_state, F.fold_in(nets[0].drop.rng_state, 1))
    x = torch.randn(4, 8)
    assert not torch.equal(nets[0](x), nets[1](x))


def test_generator_argument_is_checked():
    with pytest.raises(TypeError, match="generator must be a torch_rngx.Generator, a torch_rngx.nn.RNG or None"):
        torch_rngx.dropout(torch.ones(3), generator=torch.Generator())
    with pytest.raises(TypeError, match="generator must be"):
        torch_rngx.nn.Dropout(0.5, generator=123)
    with pytest.raises(ValueError, match="not both"):
        torch_rngx.nn.Dropout(0.5, generator=torch_rngx.Generator(1), seed=2)


_RESUME = textwrap.dedent("""
    import sys, torch, torch_rngx
    sys.path.insert(0, {tests!r})
    from test_training import Net
    torch.manual_seed(0)
    net, (n, m, compiled, path, mode) = Net(), sys.argv[1:3] and (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    step = torch.compile(net, fullgraph=True, backend="aot_eager") if compiled else net
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(3))
    def train(k):
        for _ in range(k):
            opt.zero_grad(); step(x).square().sum().backward(); opt.step()
    if mode == "resume":
        ckpt = torch.load(path); net.load_state_dict(ckpt["net"]); opt.load_state_dict(ckpt["opt"]); train(m)
    else:
        train(n)
        if mode == "save":
            torch.save({{"net": net.state_dict(), "opt": opt.state_dict()}}, path); sys.exit(0)
    torch.save(net.state_dict(), path + ".final")
""")


@pytest.mark.slow("three fresh processes")
@pytest.mark.parametrize("compiled", [False, True])
def test_resume_in_a_fresh_process_is_bitwise(tmp_path, compiled):
    script = tmp_path / "resume.py"
    script.write_text(_RESUME.format(tests=str(__import__("pathlib").Path(__file__).parent)))
    flag = "1" if compiled else "0"

    def run(n, m, path, mode):
        subprocess.run([sys.executable, str(script), str(n), str(m), flag, str(path), mode], check=True)

    run(5, 0, tmp_path / "straight", "straight")
    run(2, 0, tmp_path / "ckpt", "save")
    run(0, 3, tmp_path / "ckpt", "resume")
    straight, resumed = torch.load(f"{tmp_path / 'straight'}.final"), torch.load(f"{tmp_path / 'ckpt'}.final")
    assert straight.keys() == resumed.keys()
    for k in straight:
        assert torch.equal(straight[k], resumed[k]), k


# ---- export and compile ----

@pytest.mark.parametrize("strict", [True, False])
def test_export_mutates_the_state_buffers(strict):
    x = torch.randn(4, 8)
    net = Net()
    net.to("cpu")  # .to() before export
    ep = torch.export.export(copy.deepcopy(net), (x,), strict=strict)
    takes = [n for n in ep.graph.nodes if n.target == torch.ops.rngx.take_.default]
    assert [n.args[0].target for n in takes] == ["b_drop_rng_state", "b_rng_state"]
    mutations = {s.target for s in ep.run_decompositions().graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"}
    assert mutations == {"drop.rng_state", "rng.state"}
    module, eager = ep.module(), copy.deepcopy(net)
    for _ in range(2):
        assert torch.equal(module(x), eager(x))


def test_compile_does_not_recompile_across_steps():
    """aot_eager: the Linear's float math is eager's, so the outputs compare bitwise; the states are ours alone."""
    torch._dynamo.reset()
    net, twin = Net(), Net()
    twin.load_state_dict(net.state_dict())
    x = torch.randn(4, 8)
    compiled = torch.compile(net, fullgraph=True, backend="aot_eager")
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(3):
            assert torch.equal(compiled(x), twin(x))
    assert torch.equal(net.drop.rng_state, twin.drop.rng_state)
