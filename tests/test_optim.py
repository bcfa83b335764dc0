"""Guarantee (docs/training.md, "bfloat16 weights without a master copy"): torch_rngx.optim.stochastic_rounding makes
any torch.optim optimizer step its bfloat16/float16 parameters in float32 and round the result back with
stochastic_round under the key fold_in(fold_in(key(seed), step), index): bit for bit the same optimizer run on float32
copies, its state included (fused=False; Adam's and AdamW's fused step: their formula with each operation IEEE
float32, rounded once, on 1 and 2 threads; torch's own step differs from it only by its kernels' roundings);
a run resumed from optimizer.state_dict() (through torch.save) rounds exactly as the
uninterrupted one; updates far below half a bfloat16 step add up where plain bfloat16 stalls; float32 parameters and
everything after remove() are the optimizer's own; bad arguments are named. A DTensor-sharded parameter on 2 gloo
ranks equals 1 rank: tests/test_distributed.py (`make dist`)."""
import contextlib
import io

import numpy as np
import pytest
import torch

import torch_rngx
from torch_rngx import functional as F

SEED = 1234
RERUNS = pytest.mark.key_reuse_ok("runs one seed's training more than once (or derives its keys again), to compare")


def mlp(seed=0, dtype=torch.bfloat16):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.GELU(), torch.nn.Linear(24, 3)).to(dtype)


def batches(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 12, generator=g), torch.randn(16, 3, generator=g)) for _ in range(n)]


def loss(model, x, y):
    return ((model(x.to(model[0].weight.dtype)).float() - y) ** 2).mean()


def train(model, opt, data):
    for x, y in data:
        opt.zero_grad()
        loss(model, x, y).backward()
        opt.step()


def key_for(step, index):
    return F.fold_in(F.fold_in(F.key(SEED), step), index)


@pytest.mark.parametrize("make, fused", [
    (lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1), False),
    (lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True), True),
    (lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=False, amsgrad=True), True),
], ids=["AdamW-unfused", "SGD-nesterov", "Adam-amsgrad-for-loop"])
@RERUNS
def test_each_step_is_the_float32_step_rounded_stochastically(make, fused):
    """The optimizers without a fused step (and AdamW with fused=False) step float32 copies: torch's own float32 step,
    bit for bit on this CPU, then the rounding."""
    model = mlp()
    opt = make(model.parameters())
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED, fused=fused)
    shadow = [torch.nn.Parameter(p.detach().float()) for p in model.parameters()]
    ref = make(shadow)
    for step, (x, y) in enumerate(batches(5)):
        opt.zero_grad()
        loss(model, x, y).backward()
        for s, p in zip(shadow, model.parameters()):
            s.data.copy_(p.detach().float())  # the float32 copy the step starts from
            s.grad = p.grad.float()
        opt.step()
        ref.step()
        for index, (s, p) in enumerate(zip(shadow, model.parameters())):
            assert p.dtype == torch.bfloat16 and p.grad.dtype == torch.bfloat16
            assert torch.equal(p, F.stochastic_round(s.detach(), key_for(step, index), torch.bfloat16)), (step, index)
            for name, value in ref.state[s].items():  # the optimizer's state: float32, as for float32 weights
                assert torch.equal(opt.state[p][name], value), (step, index, name)
    assert opt.param_groups[0]["stochastic_round_step"] == 5


def adam_reference(p, g, m, v, step, lr, betas, eps, weight_decay, decoupled, maximize):
    """torch.optim.adam's _single_tensor_adam on float32 p, in NumPy float32: each operation IEEE, rounded once, the
    square root correctly rounded (the fused step's formula, docs/training.md). Returns p, m, v after step `step`."""
    p, g, m, v = (t.numpy() for t in (p, g, m, v))
    f, (b1, b2) = np.float32, betas  # a scalar as torch's kernels take it: its double rounded to float32
    g = -g if maximize else g
    if weight_decay and decoupled:
        p = p * f(1 - lr * weight_decay)
    elif weight_decay:
        g = g + f(weight_decay) * p
    diff = g - m
    m = m + f(1 - b1) * diff if 1 - b1 < 0.5 else g - diff * (f(1.0) - f(1 - b1))
    v = v * f(b2) + (f(1 - b2) * g) * g
    denom = np.sqrt(v) / f((1 - b2**step) ** 0.5) + f(eps)
    return tuple(torch.from_numpy(t) for t in (p + (f(-(lr / (1 - b1**step))) * m) / denom, m, v))


FUSED_CASES = {
    "AdamW": dict(kind=torch.optim.AdamW, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1),
    "AdamW-no-decay-maximize": dict(kind=torch.optim.AdamW, lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0,
                                    maximize=True),
    "Adam-L2": dict(kind=torch.optim.Adam, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05),
    "Adam-beta1-below-half": dict(kind=torch.optim.Adam, lr=1e-3, betas=(0.3, 0.9), eps=1e-8, weight_decay=0.0),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", FUSED_CASES)
@RERUNS
def test_adam_and_adamw_take_the_fused_step_with_torchs_formula_rounded_once(case, dtype):
    """Adam and AdamW step CPU parameters in one fused op: the weights are stochastic_round of the reference formula's
    float32 update (each operation rounded once, in torch's order), under the step's key; the moments and the step
    count are the reference's, in torch's state layout. Parameters of 70001 elements cross the op's pieces and
    threads' chunks; one is a non-contiguous view's copy, kept as a column."""
    options = dict(FUSED_CASES[case])
    kind = options.pop("kind")
    torch.manual_seed(3)
    params = [torch.nn.Parameter(torch.randn(70001).to(dtype)), torch.nn.Parameter(torch.randn(64, 3).to(dtype))]
    opt = kind(params, **options)
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
    ref = [(p.detach().float(), torch.zeros(p.shape), torch.zeros(p.shape)) for p in params]
    for step in range(1, 5):
        for p in params:
            p.grad = (torch.randn(p.shape) * 10.0 ** -step).to(dtype)
        before = [(p.detach().float(), p.grad.float()) for p in params]
        opt.step()
        for index, (p, (w, g), (_, m, v)) in enumerate(zip(params, before, ref)):
            w, m, v = adam_reference(w, g, m, v, step, options["lr"], options["betas"], options["eps"],
                                     options["weight_decay"], kind is torch.optim.AdamW,
                                     options.get("maximize", False))
            ref[index] = (w, m, v)
            state = opt.state[p]
            assert set(state) == {"step", "exp_avg", "exp_avg_sq"} and state["step"].dtype == torch.float32
            assert float(state["step"]) == step and p.dtype == dtype and p.grad.dtype == dtype
            assert torch.equal(state["exp_avg"], m) and torch.equal(state["exp_avg_sq"], v), (step, index)
            assert torch.equal(p, F.stochastic_round(w, key_for(step - 1, index), dtype)), (step, index)
    assert opt.param_groups[0]["params"] == params


@pytest.mark.parametrize("kind, options", [
    (torch.optim.AdamW, dict(weight_decay=0.1)), (torch.optim.Adam, dict(weight_decay=0.05, maximize=True)),
], ids=["AdamW", "Adam-L2-maximize"])
@RERUNS
def test_the_fused_step_is_torchs_own_step_but_for_torchs_roundings(kind, options):
    """From the same weights and moments, torch's own float32 step on copies (fused=False) and the fused step agree
    to torch's roundings: its kernels fuse multiply-adds on AVX2 and AVX-512, and its float32 square root is not
    always correctly rounded. Over 5 steps the moments agree to an ulp or two of their scale, and all but a few weights are the same
    bfloat16 value, the others a neighbour (a float32 update a few ulp apart rounds the other way about once in 2^14)."""
    results = []
    for fused in (True, False):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(20000).bfloat16())
        opt = kind([w], lr=1e-2, **options)
        torch_rngx.optim.stochastic_rounding(opt, seed=5, fused=fused)
        for _ in range(5):
            w.grad = (torch.randn(20000) * 0.1).bfloat16()
            opt.step()
        results.append((w.detach().clone(), opt.state[w]["exp_avg"], opt.state[w]["exp_avg_sq"]))
    (w, m, v), (w_torch, m_torch, v_torch) = results
    torch.testing.assert_close(m, m_torch, rtol=1e-5, atol=1e-7)  # |m| ~ 0.03: an ulp or two of torch's lerp
    torch.testing.assert_close(v, v_torch, rtol=1e-5, atol=1e-10)
    differ = w != w_torch
    assert int(differ.sum()) <= 20
    assert torch.equal(torch.abs(w[differ].float() - w_torch[differ].float()) <= torch.abs(w_torch[differ].float()) / 64,
                       torch.ones(int(differ.sum()), dtype=torch.bool))  # neighbours: a bfloat16 step is <= 2^-7


@RERUNS
def test_the_fused_step_is_the_same_on_1_and_2_threads_and_its_state_serves_the_unfused_step():
    """The fused op splits a parameter over torch's threads: 1 and 2 give the same bits. Its state is torch's layout,
    so a run that turns fused off midway (a new StochasticRounding over the same optimizer) goes on from it."""
    def run(threads, switch):
        torch.set_num_threads(threads)
        torch.manual_seed(1)
        w = torch.nn.Parameter(torch.randn(300000).bfloat16())
        opt = torch.optim.AdamW([w], lr=1e-3, weight_decay=0.01)
        rounding = torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
        for step in range(4):
            if step == 2 and switch:
                rounding.remove()
                rounding = torch_rngx.optim.stochastic_rounding(opt, seed=SEED, fused=False)
            w.grad = (torch.randn(300000) * 1e-3).bfloat16()
            opt.step()
        return w.detach().clone(), opt.state[w]["exp_avg"].clone()

    threads = torch.get_num_threads()
    try:
        one, two, switched = run(1, False), run(2, False), run(2, True)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])
    assert switched[0].dtype == torch.bfloat16 and switched[1].dtype == torch.float32
    assert int((switched[0] != two[0]).sum()) <= 30  # the unfused steps differ only by torch's roundings


@pytest.fixture
def adam_calls(monkeypatch):
    """The shapes of the params the fused op is called on, as the optimizer calls it."""
    calls = []
    real = torch_rngx.optim.ops

    class Spy:
        def adam_sround_(self, *args):
            calls.append(args[0].shape)
            return real.adam_sround_(*args)

    monkeypatch.setattr(torch_rngx.optim, "ops", Spy())
    return calls


class AdamWSubclass(torch.optim.AdamW):
    pass


@pytest.mark.parametrize("make, step, fused_calls", [
    (lambda ps: torch.optim.AdamW(ps, lr=0.05), lambda opt: opt.step(), 2),
    (lambda ps: torch.optim.Adam(ps, lr=0.05, foreach=True), lambda opt: opt.step(), 2),  # its loop is replaced
    (lambda ps: torch.optim.AdamW(ps, lr=0.05), lambda opt: opt.step(lambda: None), 0),  # a closure
    (lambda ps: torch.optim.AdamW(ps, lr=0.05, amsgrad=True), lambda opt: opt.step(), 0),
    (lambda ps: AdamWSubclass(ps, lr=0.05), lambda opt: opt.step(), 0),
    (lambda ps: torch.optim.AdamW([{"params": ps, "lr": 0.05}]), lambda opt: (
        opt.param_groups[0].update(lr=-0.05), opt.step()), 0),  # a group edited past what the constructor takes
], ids=["AdamW", "Adam-foreach", "closure", "amsgrad", "subclass", "negative-lr"])
@RERUNS
def test_which_steps_are_fused(adam_calls, make, step, fused_calls):
    """The fused op steps Adam's and AdamW's own CPU parameters; a closure, amsgrad, a subclass (whose step may differ)
    or numbers torch's constructor refuses take the float32 copies, and every case steps both parameters."""
    params = [torch.nn.Parameter(torch.ones(30, dtype=torch.bfloat16)), torch.nn.Parameter(torch.ones(2, 5).bfloat16())]
    opt = make(params)
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
    for p in params:
        p.grad = torch.full_like(p, 0.5)
    step(opt)
    assert len(adam_calls) == fused_calls
    assert all(bool((p != 1).all()) and opt.state[p]["exp_avg"].dtype == torch.float32 for p in params)
    assert opt.param_groups[0]["params"] == params


def test_the_fused_ops_raw_call_is_checked_in_cpp_before_it_writes():
    """torch.ops.rngx.adam_sround_ checks every argument before it writes a weight or moment, naming it."""
    p, g = torch.ones(8, dtype=torch.bfloat16), torch.ones(8, dtype=torch.bfloat16)
    m, v, key = torch.zeros(8), torch.zeros(8), F.key(0)
    good = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=True, maximize=False, step=1)
    bad = [
        ((p.float(), g, m, v, key), good, "param must be bfloat16 or float16"),
        ((p, g.float(), m, v, key), good, "grad must have param's dtype"),
        ((p, g, m.double(), v, key), good, "exp_avg must be float32"),
        ((p, g, m, torch.zeros(9), key), good, "exp_avg_sq must be contiguous, of param's shape"),
        ((p, g[::1].view(2, 4).t(), m, v, key), good, "grad must be contiguous, of param's shape"),
        ((p, g, m, v, key), dict(good, step=0), "step must be >= 1"),
        ((p, g, m, v, key), dict(good, beta2=1.0), "beta1, beta2 in"),
        ((p, g, m, v, torch.zeros(3, dtype=torch.int64)), good, "state"),
    ]
    for args, kwargs, words in bad:
        with pytest.raises(RuntimeError, match=words):
            torch.ops.rngx.adam_sround_(*args, **kwargs)
        assert torch.equal(p, torch.ones(8, dtype=torch.bfloat16)) and not m.any() and not v.any()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@RERUNS
def test_resume_from_state_dict_is_bitwise(dtype):
    data = batches(10)

    def fresh():
        model = mlp(dtype=dtype)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
        return model, opt

    model, opt = fresh()
    train(model, opt, data)
    whole = [p.detach().clone() for p in model.parameters()]
    model, opt = fresh()
    train(model, opt, data[:4])
    saved = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, saved)
    saved.seek(0)
    checkpoint = torch.load(saved)
    model, opt = fresh()  # a new process's objects
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["opt"])
    assert opt.param_groups[0]["stochastic_round_step"] == 4
    assert all(state["exp_avg"].dtype == torch.float32 for state in opt.state.values())  # not cast to dtype
    assert all(p.dtype == dtype for p in model.parameters())
    train(model, opt, data[4:])
    assert all(torch.equal(a, b) for a, b in zip(whole, model.parameters()))


@RERUNS
def test_small_updates_add_up_where_round_to_nearest_stalls():
    """An update of 2^-12 per step to bfloat16 weights of 1.0 (a gap of 2^-7 above 1): round-to-nearest never
    moves them; with stochastic rounding their mean follows the float32 sum."""
    def run(rounding):
        w = torch.nn.Parameter(torch.ones(4096, dtype=torch.bfloat16))
        opt = torch.optim.SGD([w], lr=1.0)
        if rounding:
            torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
        for _ in range(64):
            w.grad = torch.full_like(w, -(2.0**-12))
            opt.step()
        return w.detach().double()

    assert torch.equal(run(False), torch.ones(4096, dtype=torch.float64))
    mean, want = float(run(True).mean()), 1 + 64 * 2.0**-12
    se = 64**0.5 * 2.0**-7 / 2 / 4096**0.5  # at most: 64 roundings of variance <= gap^2 / 4 each, 4096 weights
    assert abs(mean - want) < 4 * se


@RERUNS
def test_float32_parameters_groups_and_missing_gradients():
    """float32 parameters step as the optimizer alone steps them; a bfloat16 parameter without a gradient is left
    alone; the index in the key runs across param groups, in state_dict order."""
    w32, w16, idle = (torch.nn.Parameter(torch.randn(50)), torch.nn.Parameter(torch.randn(50).bfloat16()),
                      torch.nn.Parameter(torch.randn(7).bfloat16()))
    ref32 = torch.nn.Parameter(w32.detach().clone())
    opt = torch.optim.SGD([{"params": [w32, idle]}, {"params": [w16], "lr": 0.5}], lr=0.1)
    rounding = torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
    plain = torch.optim.SGD([ref32], lr=0.1)
    grad = torch.randn(50)
    w32.grad, ref32.grad, w16.grad = grad, grad.clone(), grad.bfloat16()
    before16, before_idle = w16.detach().float(), idle.detach().clone()
    opt.step()
    plain.step()
    assert torch.equal(w32, ref32) and torch.equal(idle, before_idle)
    assert torch.equal(w16, F.stochastic_round(before16 - 0.5 * grad.bfloat16().float(), key_for(0, 2),
                                               torch.bfloat16))
    assert [g["stochastic_round_step"] for g in opt.param_groups] == [1, 1]
    rounding.remove()  # the optimizer's own bfloat16 step again
    w16.grad = grad.bfloat16()
    before = w16.detach().clone()
    opt.step()
    assert torch.equal(w16, before - 0.5 * grad.bfloat16())


def test_seed_defaults_from_torch_manual_seed_and_bad_arguments_are_named():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=1.0)
    torch.manual_seed(7)
    a = torch_rngx.optim.stochastic_rounding(opt).seed
    torch.manual_seed(7)
    assert torch_rngx.optim.stochastic_rounding(opt).seed == a
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer, got Linear"):
        torch_rngx.optim.stochastic_rounding(torch.nn.Linear(2, 2))
    for seed, error, words in ((1.5, TypeError, "seed must be an int, got float"), (True, TypeError, "got bool"),
                               (-1, ValueError, r"seed must be in \[0, 2\^64\)"), (1 << 64, ValueError, "seed")):
        with pytest.raises(error, match=words):
            torch_rngx.optim.stochastic_rounding(opt, seed=seed)
    with pytest.raises(TypeError, match="fused must be a bool, got int"):
        torch_rngx.optim.stochastic_rounding(opt, seed=1, fused=1)


@RERUNS
def test_a_step_that_raises_leaves_the_parameters_in_place():
    """The optimizer sees float32 stand-ins during a step; a step that raised (here its closure) has them put back
    at the next one, which then rounds as usual."""
    w = torch.nn.Parameter(torch.randn(30).bfloat16())
    opt = torch.optim.SGD([w], lr=0.5, momentum=0.9)
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED)

    def closure():
        raise RuntimeError("closure failed")

    w.grad = torch.randn(30).bfloat16()
    with pytest.raises(RuntimeError, match="closure failed"):
        opt.step(closure)
    before = w.detach().float()
    opt.step()
    assert opt.param_groups[0]["params"][0] is w and w.dtype == torch.bfloat16
    assert opt.state[w]["momentum_buffer"].dtype == torch.float32
    assert torch.equal(w, F.stochastic_round(before - 0.5 * w.grad.float(), key_for(0, 0), torch.bfloat16))


# ---- the fused op, rngx::adam_sround_, cell by cell ----
HYPER = (1e-2, 0.9, 0.999, 1e-8, 0.1, True, False, 3)  # lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step


def adam_inputs(dtype=torch.bfloat16, shape=(3, 70), seed=0):
    """param, grad, exp_avg, exp_avg_sq: moments from earlier steps."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype), (torch.randn(shape, generator=g) * 0.1).to(dtype),
            torch.randn(shape, generator=g) * 0.01, torch.rand(shape, generator=g) * 1e-3]


def adam_op(inputs, key, *view, hyper=HYPER):
    """The op on copies of inputs: the param and moments it leaves."""
    p, g, m, v = (t.clone() for t in inputs)
    torch.ops.rngx.adam_sround_(p, g, m, v, key, *hyper, *view)
    return p, m, v


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_the_fused_op_is_the_independent_reference():
    """Weights from tests/reference.py's stochastic rounding (exact arithmetic on the stream's words, written from
    docs/stream.md) of the NumPy float32 update; the op's words are stochastic_round's of a float32 x."""
    import reference

    inputs, key = adam_inputs(shape=(5, 41)), F.key(77)
    p, m, v = adam_op(inputs, key)
    lr, b1, b2, eps, wd, decoupled, maximize, step = HYPER
    w, m_ref, v_ref = adam_reference(inputs[0].float(), inputs[1].float(), inputs[2], inputs[3], step, lr, (b1, b2),
                                     eps, wd, decoupled, maximize)
    bits = reference.stochastic_round_ref(w.double().numpy(), key.numpy(), "float32", "bfloat16")
    assert np.array_equal(p.view(torch.int16).numpy().astype(np.uint16), bits)
    assert torch.equal(m, m_ref) and torch.equal(v, v_ref)


@pytest.mark.parametrize("dynamic", [False, True])
def test_the_fused_op_compiled_and_exported_is_eager(dynamic):
    """torch.compile(fullgraph=True), static and dynamic, and torch.export: the weights and moments eager leaves."""
    def step(p, g, m, v, key):
        torch.ops.rngx.adam_sround_(p, g, m, v, key, *HYPER)
        return p, m, v

    inputs, key = adam_inputs(), F.key(5)
    want = adam_op(inputs, key)
    compiled = torch.compile(step, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    assert same(compiled(*(t.clone() for t in inputs), key), want)

    class Step(torch.nn.Module):
        def forward(self, p, g, m, v, key):
            return step(p, g, m, v, key)

    exported = torch.export.export(Step(), (*(t.clone() for t in inputs), key)).module()
    assert same(exported(*(t.clone() for t in inputs), key), want)


def test_the_fused_op_on_every_thread_count_and_philox_path():
    """1, 2 and 3 threads on every Philox path this CPU runs (scalar, AVX2, AVX-512) give the bits of the scalar path
    on one thread; 200003 elements span several parallel tasks and pieces."""
    from torch_rngx import _C

    inputs, key = adam_inputs(shape=(200003,)), F.key(9)
    threads, path = torch.get_num_threads(), _C.simd()
    try:
        _C.set_simd("scalar")
        torch.set_num_threads(1)
        want = adam_op(inputs, key)
        for simd in _C.simd_paths():
            _C.set_simd(simd)
            for n in (1, 2, 3):
                torch.set_num_threads(n)
                assert same(adam_op(inputs, key), want), (simd, n)
    finally:
        torch.set_num_threads(threads)
        _C.set_simd(path)


def test_the_fused_op_with_batched_keys_and_a_global_view():
    """A key per row gives each row the op on that row alone with its key; a block under a global view is the whole
    tensor's block."""
    inputs = adam_inputs(shape=(4, 33))
    keys = torch.stack([F.key(i) for i in range(4)]).view(4, 1, 2)
    batched = adam_op(inputs, keys)
    for r in range(4):
        row = adam_op([t[r].clone() for t in inputs], keys[r, 0])
        assert same(row, [t[r] for t in batched]), r
    whole = adam_op(inputs, F.key(3))
    block = adam_op([t[1:3, 5:20].contiguous() for t in inputs], F.key(3), [4, 33], [1, 5])
    assert same(block, [t[1:3, 5:20] for t in whole])


def test_the_fused_op_refuses_other_layouts_and_a_gradient_and_its_fake_checks_as_cpp_does():
    """The op needs contiguous tensors: channels_last, transposed, sliced and expanded ones are refused, naming the
    argument, in C++ and in the fake kernel, and nothing is written; it has no derivative, so a tensor requiring grad
    in grad mode is refused (an optimizer step runs under no_grad). The optimizer gives such weights the float32
    stand-ins instead (test_which_steps_are_fused)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    p, g, m, v = adam_inputs(shape=(2, 3, 4, 5))
    layouts = {
        "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last),
        "transposed": lambda t: t.transpose(2, 3).contiguous().transpose(2, 3),
        "sliced": lambda t: torch.cat([t, t], -1)[..., ::2],
        "expanded": lambda t: t[:1].expand(2, 3, 4, 5),
    }
    for name, make in layouts.items():
        for arg in ("param", "grad", "exp_avg"):
            args = {"param": p.clone(), "grad": g, "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
            args[arg] = make(args[arg])
            before = [t.clone() for t in args.values()]
            with pytest.raises(RuntimeError, match=f"{arg} must be contiguous"):
                torch.ops.rngx.adam_sround_(*args.values(), F.key(0), *HYPER)
            assert same(args.values(), before), (name, arg)
            with FakeTensorMode() as fake, pytest.raises(ValueError, match=f"{arg} must be a contiguous"):
                torch.ops.rngx.adam_sround_(*(fake.from_tensor(t) for t in args.values()), F.key(0), *HYPER)
    leaf = p.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="has no derivative: call it under torch.no_grad"):
        torch.ops.rngx.adam_sround_(leaf, g, m.clone(), v.clone(), F.key(0), *HYPER)
    with torch.no_grad():
        torch.ops.rngx.adam_sround_(leaf, g, m.clone(), v.clone(), F.key(0), *HYPER)
    assert torch.equal(leaf.detach(), adam_op([p, g, m, v], F.key(0))[0])


def test_a_channels_last_weight_takes_the_float32_stand_ins(adam_calls):
    """A conv weight in channels_last (not contiguous) is stepped by AdamW over its float32 stand-in, as before."""
    conv = torch.nn.Conv2d(4, 8, 3).to(torch.bfloat16).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(conv.parameters(), lr=0.05)
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
    before = conv.weight.detach().clone()
    for p in conv.parameters():
        p.grad = torch.full_like(p, 0.5)
    opt.step()
    assert adam_calls == [conv.bias.shape]  # the bias is contiguous: fused; the weight: its stand-in
    assert conv.weight.is_contiguous(memory_format=torch.channels_last) and bool((conv.weight != before).all())


def test_under_the_mode_and_the_key_reuse_checker():
    """Under torch_rngx.mode(uncovered="error") the fused steps run, report nothing and leave torch's generator where
    it was, with the same weights as outside the mode; the key-reuse checker is quiet over steps, and raises when a
    step's key comes round again (the step count set back)."""
    def run(context):
        w = torch.nn.Parameter(torch.linspace(-1, 1, 500).bfloat16())
        opt = torch.optim.AdamW([w], lr=1e-2)
        torch_rngx.optim.stochastic_rounding(opt, seed=3)
        with context:
            for step in range(3):
                w.grad = torch.full_like(w, 0.1 * (step + 1))
                opt.step()
        return w.detach(), opt

    torch.manual_seed(0)
    rng = torch.get_rng_state()
    with torch_rngx.debug.key_reuse("raise"):
        inside, _ = run(torch_rngx.mode(uncovered="error"))
    assert torch.equal(torch.get_rng_state(), rng)
    with torch_rngx.debug.key_reuse("raise"):
        outside, opt = run(contextlib.nullcontext())
        assert torch.equal(inside, outside)
        opt.param_groups[0]["stochastic_round_step"] = 1  # step 1's key again: caught as it is derived
        with pytest.raises(torch_rngx._engine.reuse.KeyReuseError, match="key reuse"):
            opt.step()
        rounding = torch_rngx.optim.stochastic_rounding(opt, seed=4)
        w, group = opt.param_groups[0]["params"][0], opt.param_groups[0]
        key, before, steps = F.key(11), w.detach().clone(), float(opt.state[w]["step"])
        F.uniform(torch.empty(10), key)
        with pytest.raises(torch_rngx._engine.reuse.KeyReuseError, match="adam_sround_"):  # the op's words, checked
            rounding._adam_step(w, group, key)
        assert torch.equal(w.detach(), before) and float(opt.state[w]["step"]) == steps  # refused before anything
