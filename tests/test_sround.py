"""Guarantee: stochastic_round (docs/stream.md, "stochastic_round") for every (input, target) pair and both saturate
settings: docs/stream.md's bits (the independent NumPy reference, tests/reference.py); a value the target holds
comes back exactly; every result is one of x's two neighbours in the target; the mean over 2^14 keys is within 4
standard errors of x across the target's whole range, its subnormals and below them included; NaN, infinities,
out-of-range values and saturate as stated (x.to(dtype)'s values past the range); the gradient passes straight
through (backward, forward mode, torch.func); vmap over keys and inputs; compiled (fullgraph, static and dynamic)
and exported equal eager for every pair; a Generator advances by blocks_used of x's dtype; bad arguments are refused
naming the argument, in Python and again in C++. Layouts, threads, Philox paths and global views: with every other op
of tests/ops_table.py (test_ops_table, test_threads, test_simd_paths, test_global_view, test_compile)."""
import math

import numpy as np
import pytest
import torch
from conftest import make_state, np_state, raw_bits
from reference import stochastic_round_ref

import torch_rngx
from torch_rngx import functional as F
from torch_rngx._engine.checks import ROUND_TARGETS

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("rounds one input with one key in several ways, to compare them")

PAIRS = [(src, dst) for src, dsts in ROUND_TARGETS.items() for dst in dsts]
IDS = [f"{str(s)[6:]}->{str(d)[6:]}" for s, d in PAIRS]
NAME = {dt: str(dt)[6:] for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.float8_e4m3fn, torch.float8_e5m2)}
STATE = make_state(0x0123456789ABCDEF, 2**64 - 2)  # the offset wraps past 2^64 inside the call
BITS_VIEW = {1: torch.uint8, 2: torch.int16}


def target_values(dst):
    """Every non-negative finite value of dst in increasing order (float64), from its bit patterns."""
    top = torch.tensor(torch.finfo(dst).max).to(dst).view(BITS_VIEW[dst.itemsize]).item()
    return torch.arange(top + 1).to(BITS_VIEW[dst.itemsize]).view(dst).double()


def neighbours(x, dst):
    """(lo, hi): the target's values next to |x| (lo <= |x| < hi), for finite |x| <= the target's max."""
    vals = target_values(dst)
    i = torch.searchsorted(vals, x.double().abs(), right=True) - 1
    return vals[i], vals[(i + 1).clamp(max=len(vals) - 1)]


def inputs(src, dst, n, seed):
    """n values exact in src across dst's range: binades from 2^-6 below its smallest subnormal to its largest, both
    signs, with the specials first."""
    g = torch.Generator().manual_seed(seed)
    fi = torch.finfo(dst)
    lo_e, hi_e = math.log2(fi.smallest_normal * fi.eps) - 6, math.log2(fi.max)
    e = lo_e + (hi_e - lo_e) * torch.rand(n, generator=g, dtype=torch.float64)
    x = torch.exp2(e) * torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    specials = [0.0, -0.0, math.nan, math.inf, -math.inf, fi.max, -fi.max, fi.max * 1.04, fi.max * 1.3, 1.0, 3.0]
    x[: len(specials)] = torch.tensor(specials, dtype=torch.float64)
    return x.to(src)


def bits(t):
    return raw_bits(t)


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_equals_reference(pair, saturate):
    src, dst = pair
    x = inputs(src, dst, 400, seed=3)
    out = F.stochastic_round(x, STATE, dst, saturate)
    assert out.dtype == dst and out.shape == x.shape
    want = stochastic_round_ref(x.double().numpy(), np_state(STATE), NAME[src], NAME[dst], saturate)
    np.testing.assert_array_equal(bits(out), want)


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
@ONE_KEY_FOR_ALL
def test_representable_values_come_back_exactly(pair):
    src, dst = pair
    vals = target_values(dst)
    vals = torch.cat([vals, -vals])
    vals = vals[vals.to(src).double() == vals]  # the target's values that x's dtype holds too
    x = vals.to(src)
    want = bits(x.to(dst))
    for key in (STATE, make_state(7, 1)):
        np.testing.assert_array_equal(bits(F.stochastic_round(x, key, dst)), want)


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_every_result_is_one_of_the_two_neighbours(pair):
    src, dst = pair
    x = inputs(src, dst, 4000, seed=4)[11:]
    x = x[x.double().abs() <= torch.finfo(dst).max]
    out = F.stochastic_round(x, STATE, dst).double()
    lo, hi = neighbours(x, dst)
    mag = out.abs()
    assert bool(((mag == lo) | (mag == hi)).all())
    assert bool((torch.signbit(out) == torch.signbit(x)).all())
    assert bool(((mag == lo) | (x.double().abs() != lo)).all())  # a value the target holds is never moved


def mean_cases(src, dst):
    """Values of src, none of them dst's, alternating in sign: three below dst's smallest subnormal (2^-2 .. 2^-4 of
    it), four among its subnormals and nine over its normal binades up to its largest, those at a point k/17 of the
    way from one value of dst to the next (1 <= k <= 16). Each rounds up with probability at least 2^-5, so 2^-14 keys
    see both outcomes hundreds of times. Those src cannot hold (float16 holds no bfloat16 subnormal) are left out."""
    d, s = torch.finfo(dst), torch.finfo(src)
    tiny = d.smallest_normal * d.eps  # dst's smallest subnormal
    below = [tiny * 2.0**-k for k in (2, 3, 4)]
    lo_e = math.log2(max(d.smallest_normal, s.smallest_normal * s.eps * 2**12))
    hi_e = math.log2(min(d.max, s.max)) - 1
    starts = [d.smallest_normal * f for f in (0.1, 0.35, 0.6, 0.85)]
    starts += [2.0 ** (lo_e + (hi_e - lo_e) * k / 8) for k in range(9)]
    vals = target_values(dst)
    cases = below[:]
    for k, start in enumerate(starts):
        lo = vals[torch.searchsorted(vals, torch.tensor(start, dtype=torch.float64), right=True) - 1]
        hi = vals[torch.searchsorted(vals, lo, right=True)]
        cases.append(float(lo + (hi - lo) * (k % 16 + 1) / 17))
    x = torch.tensor(cases, dtype=torch.float64).to(src)
    lo, _ = neighbours(x, dst)
    x = x[x.double() > lo]  # strictly between two values of dst in src too
    return x * torch.tensor([(-1.0) ** i for i in range(len(x))]).to(src)


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
def test_mean_over_keys_is_x(pair):
    src, dst = pair
    n = 2**14
    x = mean_cases(src, dst)
    assert len(x) >= (9 if src == torch.float16 and dst == torch.bfloat16 else 15)
    lo, hi = neighbours(x, dst)
    keys = F.split(F.key(2024), n).view(n, 1, 2)  # one key per row
    out = F.stochastic_round(x.expand(n, -1), keys, dst).double()
    mean = out.mean(0)
    p = (x.double().abs() - lo) / (hi - lo)
    se = (hi - lo) * torch.sqrt(p * (1 - p) / n)
    z = (mean - x.double()).abs() / se
    assert bool((z <= 4).all()), list(zip(x.tolist(), z.tolist()))


@pytest.mark.parametrize("pair", PAIRS, ids=IDS)
@ONE_KEY_FOR_ALL
def test_nan_infinities_out_of_range_and_saturate(pair):
    src, dst = pair
    fi = torch.finfo(dst)
    over = [fi.max * f for f in (1.0001, 1.02, 1.0625, 1.5, 4.0, 1e5)] + [math.inf]
    x = torch.tensor([math.nan, -math.nan] + over + [-v for v in over], dtype=torch.float64).to(src)
    out = F.stochastic_round(x, STATE, dst)
    nan = {torch.bfloat16: 0x7FC0, torch.float16: 0x7E00, torch.float8_e4m3fn: 0x7F, torch.float8_e5m2: 0x7F}[dst]
    sign = 0x80 if dst.itemsize == 1 else 0x8000
    nans = [nan | (sign if bool(torch.signbit(v)) else 0) for v in x[:2]]  # NaN stays NaN, with x's sign
    assert bits(out)[:2].tolist() == nans
    big = x[2:][x[2:].double().abs() > fi.max]
    # past the largest value: x.to(dtype)'s (torch >= 2.13: e4m3fn saturates, the others give +-inf from halfway
    # to the next binade's first value on, as the table of docs/stream.md says)
    np.testing.assert_array_equal(bits(F.stochastic_round(big, STATE, dst)), bits(big.to(dst)))
    got = F.stochastic_round(big, STATE, dst).double()
    assert bool((got.abs() == fi.max).logical_or(got.abs() == math.inf).all())
    assert bool((got[big.isinf()].abs() == (fi.max if dst == torch.float8_e4m3fn else math.inf)).all())
    sat = F.stochastic_round(x, STATE, dst, saturate=True)
    assert bits(sat)[:2].tolist() == nans
    assert torch.equal(sat[2:].double(), torch.sign(x[2:].double()) * fi.max)


def test_signed_zero_and_tiny_negatives_keep_their_sign():
    x = torch.tensor([-0.0, 0.0, -1e-30, 1e-30])
    out = F.stochastic_round(x, STATE, torch.float16)
    assert torch.signbit(out).tolist() == [True, False, True, False]
    assert out.double().abs().max() <= 2.0**-24


@ONE_KEY_FOR_ALL
def test_gradient_passes_straight_through():
    """As x.to(dtype): the output's gradient converted to x's dtype; a tangent to the output's dtype. Float8 outputs
    too (torch.library.opcheck cannot check their gradient: float8 has no sum)."""
    x = torch.randn(6, 7, requires_grad=True)
    for dst in (torch.bfloat16, torch.float8_e4m3fn):
        y = F.stochastic_round(x, STATE, dst)
        assert y.requires_grad and y.dtype == dst
        g = torch.linspace(-2, 2, 42).view(6, 7).to(dst)
        (gx,) = torch.autograd.grad(y, x, g)
        assert gx.dtype == torch.float32 and torch.equal(gx, g.float())
    grad = torch.func.grad(lambda v: F.stochastic_round(v, STATE, torch.bfloat16).float().sum())(x.detach())
    assert torch.equal(grad, torch.ones(6, 7))
    out, tangent = torch.func.jvp(lambda v: F.stochastic_round(v, STATE, torch.float16), (x.detach(),),
                                  (torch.full((6, 7), 0.5),))
    assert tangent.dtype == torch.float16 and torch.equal(tangent, torch.full((6, 7), 0.5, dtype=torch.float16))
    assert torch.equal(out, F.stochastic_round(x.detach(), STATE, torch.float16))
    stateful = torch_rngx.stochastic_round(x, torch.bfloat16, generator=torch_rngx.Generator(0))
    (gs,) = torch.autograd.grad(stateful.float().sum(), x)
    assert torch.equal(gs, torch.ones(6, 7))


@ONE_KEY_FOR_ALL
def test_vmap_over_keys_and_inputs():
    x = torch.randn(5, 33, dtype=torch.float64)
    keys = torch.stack([make_state(40 + i, i) for i in range(5)])
    got = torch.func.vmap(lambda k: F.stochastic_round(x[0], k, torch.float8_e5m2))(keys)
    for i in range(5):
        assert torch.equal(got[i].view(torch.uint8), F.stochastic_round(x[0], keys[i], torch.float8_e5m2)
                           .view(torch.uint8))
    rows = torch.func.vmap(lambda r, k: F.stochastic_round(r, k, torch.bfloat16))(x, keys)
    assert torch.equal(rows, F.stochastic_round(x, keys.view(5, 1, 2), torch.bfloat16))
    same = torch.func.vmap(lambda r: F.stochastic_round(r, STATE, torch.bfloat16))(x)
    assert torch.equal(same, torch.stack([F.stochastic_round(r, STATE, torch.bfloat16) for r in x]))
    g, ref = torch_rngx.Generator(3), torch_rngx.Generator(3)
    different = torch.func.vmap(lambda r: torch_rngx.stochastic_round(r, torch.bfloat16, generator=g),
                                randomness="different")(x)
    assert torch.equal(different, torch_rngx.stochastic_round(x, torch.bfloat16, generator=ref))
    assert torch.equal(g.state, ref.state)


def _all_pairs(x, key):
    return [F.stochastic_round(x.to(src), key, dst, saturate) for (src, dst) in PAIRS for saturate in (False, True)]


@pytest.mark.slow("Inductor compiles of all 26 (pair, saturate) calls in one graph: about 25 s")
@pytest.mark.parametrize("dynamic", [False, True])
@ONE_KEY_FOR_ALL
def test_compiled_and_exported_equal_eager_for_every_pair(dynamic):
    x = torch.randn(3, 40) * torch.logspace(-9, 4, 40)
    torch._dynamo.reset()
    compiled = torch.compile(_all_pairs, fullgraph=True, dynamic=dynamic)
    for key in (STATE, make_state(3, 99)):
        for got, want in zip(compiled(x, key), _all_pairs(x, key)):
            assert got.dtype == want.dtype and torch.equal(got.view(BITS_VIEW.get(got.itemsize, got.dtype)),
                                                           want.view(BITS_VIEW.get(want.itemsize, want.dtype)))
    if dynamic:
        return

    class AllPairs(torch.nn.Module):
        def forward(self, x, key):
            return _all_pairs(x, key)

    ep = torch.export.export(AllPairs(), (x, STATE))
    for got, want in zip(ep.module()(x, STATE), _all_pairs(x, STATE)):
        assert torch.equal(got.view(BITS_VIEW[got.itemsize]), want.view(BITS_VIEW[want.itemsize]))


@ONE_KEY_FOR_ALL
def test_stateful_advances_a_generator_by_the_inputs_words():
    for src, n in ((torch.float32, 10), (torch.float64, 10), (torch.float32, 2**16 + 3)):  # small: the fused call
        x = torch.randn(n).to(src)
        g = torch_rngx.Generator(17)
        first = torch_rngx.stochastic_round(x, torch.float16, generator=g)
        blocks = torch_rngx.blocks_used(n, src, "stochastic_round")
        assert int(g.state[1]) == blocks == -(-n * (2 if src == torch.float64 else 1) // 4)
        assert torch.equal(first, F.stochastic_round(x, make_state(17, 0), torch.float16))
        second = torch_rngx.stochastic_round(x, torch.float16, generator=g, saturate=True)
        assert torch.equal(second, F.stochastic_round(x, make_state(17, blocks), torch.float16, True))
    torch.manual_seed(3)
    a = torch_rngx.stochastic_round(x, torch.bfloat16)
    torch.manual_seed(3)
    assert torch.equal(a, torch_rngx.stochastic_round(x, torch.bfloat16))
    with pytest.raises(TypeError, match="stochastic_round does not take x of torch.int32"):
        torch_rngx.blocks_used(4, torch.int32, "stochastic_round")


@pytest.mark.parametrize("call", [
    lambda x, dt, **kw: F.stochastic_round(x, STATE, dt, **kw),
    lambda x, dt, **kw: torch_rngx.stochastic_round(x, dt, **kw),
], ids=["functional", "stateful"])
def test_bad_arguments_are_named(call):
    x = torch.randn(4)
    for bad_x in (torch.arange(4), torch.randn(4, dtype=torch.complex64), torch.ones(4, dtype=torch.bool)):
        with pytest.raises(TypeError, match="x's dtype must be float16, bfloat16, float32 or float64"):
            call(bad_x, torch.bfloat16)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        call([1.0, 2.0], torch.bfloat16)
    for dt in (torch.float32, torch.float64, torch.int8, torch.complex64):
        with pytest.raises(TypeError, match="dtype must be bfloat16, float16, float8_e4m3fn or float8_e5m2"):
            call(x, dt)
    for src, dt in ((torch.float16, torch.float16), (torch.bfloat16, torch.float16), (torch.bfloat16, torch.bfloat16)):
        with pytest.raises(TypeError, match="dtype must be of lower precision than x's dtype"):
            call(x.to(src), dt)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype, got str"):
        call(x, "bfloat16")
    with pytest.raises(TypeError, match="saturate must be a bool"):
        call(x, torch.bfloat16, saturate=1)
    with pytest.raises(ValueError, match="global_shape and global_start go together"):
        call(x, torch.bfloat16, global_shape=[4])


def test_bad_keys_are_named():
    x = torch.randn(4)
    with pytest.raises(TypeError, match="state must be an int64 or uint64 tensor"):
        F.stochastic_round(x, torch.tensor([1.0, 2.0]), torch.bfloat16)
    with pytest.raises(ValueError, match=r"state must have shape \(2,\) or \(\*B, 2\)"):
        F.stochastic_round(x, torch.tensor([1, 2, 3]), torch.bfloat16)
    with pytest.raises(ValueError, match="does not broadcast to the output"):
        F.stochastic_round(x, torch.zeros(3, 2, dtype=torch.int64), torch.bfloat16)
    with pytest.raises(TypeError, match="generator must be a torch_rngx.Generator"):
        torch_rngx.stochastic_round(x, torch.bfloat16, generator=torch.Generator())


def test_raw_ops_are_checked_again_in_cpp():
    ops, x = torch.ops.rngx, torch.randn(4)
    with pytest.raises(RuntimeError, match=r"rngx.stochastic_round: dtype \(float16\) must be of lower precision than "
                                           r"x's dtype \(bfloat16\)"):
        ops.stochastic_round(x.bfloat16(), STATE, False, torch.float16)
    with pytest.raises(RuntimeError, match="rngx.stochastic_round: dtype must be bfloat16, float16, float8_e4m3fn"):
        ops.stochastic_round(x, STATE, False, torch.float32)
    with pytest.raises(RuntimeError, match="x must be float16, bfloat16, float32 or float64"):
        ops.stochastic_round(torch.arange(4), STATE, False, torch.bfloat16)
    state = make_state(1, 2)
    with pytest.raises(RuntimeError, match="dtype must be bfloat16, float16, float8_e4m3fn"):
        ops.stochastic_round_from_(state, x, False, torch.int8)
    assert state.tolist() == [1, 2]  # refused before the step
    with pytest.raises(RuntimeError, match="state must be an int64 or uint64 tensor"):
        ops.stochastic_round(x, torch.tensor([1.0, 2.0]), False, torch.bfloat16)
