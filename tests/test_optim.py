"""Guarantee (docs/training.md, "bfloat16 weights without a master copy"): torch_rngx.optim.stochastic_rounding makes
any torch.optim optimizer step its bfloat16/float16 parameters in float32 and round the result back with
stochastic_round under the key fold_in(fold_in(key(seed), step), index): bit for bit the same optimizer run on float32
copies, its state included; a run resumed from optimizer.state_dict() (through torch.save) rounds exactly as the
uninterrupted one; updates far below half a bfloat16 step add up where plain bfloat16 stalls; float32 parameters and
everything after remove() are the optimizer's own; bad arguments are named. A DTensor-sharded parameter on 2 gloo
ranks equals 1 rank: tests/test_distributed.py (`make dist`)."""
import io

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


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=False, amsgrad=True),
], ids=["AdamW", "SGD-nesterov", "Adam-amsgrad-for-loop"])
@RERUNS
def test_each_step_is_the_float32_step_rounded_stochastically(make):
    model = mlp()
    opt = make(model.parameters())
    torch_rngx.optim.stochastic_rounding(opt, seed=SEED)
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
