"""Guarantee: normal, truncated_normal, bernoulli and randint give docs/stream.md's bits (the independent NumPy
reference, tests/reference.py) for every dtype, in every layout, with batched states; vmap over keys gives the
batched state's bits; the stateful functions follow torch.manual_seed, and a Generator advances by
blocks_used(numel, dtype, op); bernoulli with a
float p is dropout's mask, dropped; every truncated normal value lies in [a, b]; torch_rngx.nn.init.trunc_normal_
fills in place like torch's. Compiled, exported, threaded, on every Philox path and in a global view, these ops
run with every other op of tests/ops_table.py (test_compile, test_simd_paths, test_threads, test_global_view)."""
import numpy as np
import pytest
import torch
from conftest import DTYPE_NAMES, FLOAT_DTYPES, INT_VIEW, UINT, layouts, make_state, np_state, recompute
from reference import bernoulli_ref, normal_ref, randint_ref, truncated_normal_ref, word

import torch_rngx
from torch_rngx import functional as F

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("draws every op, layout or path from one key, each against the reference")


STATE = make_state(0x9E3779B97F4A7C15, 2**64 - 3)  # offsets wrap past 2^64 inside the call
RANDINT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
TRUNC = [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.3), (0.0, 1.0, 4.0, 4.5), (3.0, 0.01, 2.9, 3.0000001)]


def bits(t):
    """A float tensor's logical values as unsigned bit patterns, row-major, flat."""
    return t.contiguous().view(INT_VIEW[t.element_size()]).numpy().reshape(-1).view(UINT[t.element_size()])


def reference(kind, x, state, *params):
    name, st = DTYPE_NAMES.get(x.dtype), np_state(state)
    if kind == "normal":
        return normal_ref(x.shape, st, name, *params)
    if kind == "truncated_normal":
        return truncated_normal_ref(x.shape, st, name, *params)
    return bernoulli_ref(x.shape, st, name, *params)


SAMPLERS = {
    "normal": lambda x, s: F.normal(x, s, 0.25, 1.5),
    "truncated_normal": lambda x, s: F.truncated_normal(x, s, 0.5, 2.0, -1.0, 3.3),
    "bernoulli": lambda x, s: F.bernoulli(x, s, 0.3),
}
PARAMS = {"normal": (0.25, 1.5), "truncated_normal": (0.5, 2.0, -1.0, 3.3), "bernoulli": (0.3,)}


@pytest.mark.parametrize("kind", SAMPLERS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "sliced"])
def test_float_samplers_equal_reference_in_every_layout(kind, dtype, layout):
    x = layouts(dtype=dtype)[layout]
    out = SAMPLERS[kind](x, STATE)
    assert out.dtype == dtype and out.shape == x.shape and out.stride() == torch.empty_like(x).stride()
    np.testing.assert_array_equal(bits(out), reference(kind, x, STATE, *PARAMS[kind]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mean,std,a,b", TRUNC)
def test_truncated_normal_equals_reference_and_stays_in_bounds(dtype, mean, std, a, b):
    x = torch.empty(7, 301, dtype=dtype)
    out = F.truncated_normal(x, STATE, mean, std, a, b)
    np.testing.assert_array_equal(bits(out), truncated_normal_ref(x.shape, np_state(STATE), DTYPE_NAMES[dtype],
                                                                  mean, std, a, b))
    wide = out.double()
    assert bool((wide >= a).all()) and bool((wide <= b).all())


@pytest.mark.parametrize("dtype", RANDINT_DTYPES)
@ONE_KEY_FOR_ALL
def test_randint_equals_reference(dtype):
    lo, hi = (0, 256) if dtype == torch.uint8 else (-100, 127) if dtype == torch.int8 else (-70000, 3)
    if dtype == torch.int16:
        lo, hi = -32768, 32768
    for layout, x in layouts().items():
        out = F.randint(x, STATE, lo, hi, dtype=dtype)
        assert out.dtype == dtype and out.stride() == torch.empty_like(x).stride(), layout
        np.testing.assert_array_equal(out.contiguous().numpy(), randint_ref(x.shape, np_state(STATE), str(dtype)[6:], lo, hi))


@pytest.mark.parametrize("dtype,lo,hi", [(torch.int64, -2**63, 2**63 - 1), (torch.int32, -2**31, 2**31),
                                         (torch.int64, 0, 2**62 + 12345), (torch.int64, 5, 6)])
def test_randint_extreme_ranges(dtype, lo, hi):
    x = torch.empty(4, 1000)
    out = F.randint(x, STATE, lo, hi, dtype=dtype)
    np.testing.assert_array_equal(out.numpy(), randint_ref(x.shape, np_state(STATE), str(dtype)[6:], lo, hi))
    assert int(out.min()) >= lo and int(out.max()) < hi


@pytest.mark.parametrize("low,high,k", [(-2**40, -2**40 + 2**32, 2), (-2**40, -2**40 + 2**32 + 1, 4)])
def test_randint_int64_takes_two_words_up_to_a_range_of_2_to_the_32(low, high, k):
    """Both sides of the boundary: the values (a range of exactly 2^32 gives each element its first word), the
    blocks a Generator advances, and where the next call's words start."""
    x = torch.empty(3, 7)
    n = x.numel()
    assert torch_rngx.blocks_used(n, torch.int64, "randint", range=high - low) == -(-n * k // 4)
    out = F.randint(x, STATE, low, high)
    np.testing.assert_array_equal(out.numpy(), randint_ref(x.shape, np_state(STATE), "int64", low, high))
    if k == 2:
        first = word(*np_state(STATE), 2 * np.arange(n, dtype=np.uint64)).astype(np.int64)
        np.testing.assert_array_equal(out.numpy().reshape(-1) - low, first)
    g = torch_rngx.Generator(23)
    drawn = torch_rngx.randint_like(x, low, high, generator=g)
    assert int(g.state[1]) == -(-n * k // 4)
    with recompute():
        assert torch.equal(drawn, F.randint(x, make_state(23, 0), low, high))


@pytest.mark.parametrize("low,high,k", [(-500, 500, 2), (-2**39, 2**40 + 7, 4)])
@pytest.mark.parametrize("start", [2**62 - 8, 2**62, 3 * 2**61 + 2, 2**63 - 18])
@ONE_KEY_FOR_ALL
def test_randint_int64_at_global_index_2_to_the_62_and_past(low, high, k, start):
    """Element j's words start at word k j: with 4 words, past 2^64 from j = 2^62 on. They lie in block offset +
    k j / 4 (modulo 2^64), so a block of the global tensor at `start` (even) is the call at index 0 with the offset
    moved by k start / 4 (issue 43, item 8). The raw op takes a global tensor of up to 2^63 - 1 elements; the public
    functions, one whose int64 storage fits in 2^63 bytes."""
    like, whole = torch.empty(16, dtype=torch.int64), [2**63 - 1]
    shifted = make_state(0x1234, (5 + k * start // 4) % 2**64)
    want = randint_ref(like.shape, np_state(shifted), "int64", low, high)
    raw = torch.ops.rngx.randint(like, make_state(0x1234, 5), low, high, torch.int64, whole, [start])
    np.testing.assert_array_equal(raw.numpy(), want)


@ONE_KEY_FOR_ALL
def test_batched_states_give_each_slice_its_key():
    keys = torch.stack([make_state(11 + i, 3 * i) for i in range(4)]).view(4, 1, 1, 2)
    x = torch.empty(4, 6, 9)
    for kind, fn in SAMPLERS.items():
        out = fn(x, keys)
        for i in range(4):
            assert torch.equal(out[i], fn(x[i], keys[i, 0, 0])), kind
            np.testing.assert_array_equal(bits(out), reference(kind, x, keys, *PARAMS[kind]))
    out = F.randint(x, keys, -5, 5)
    for i in range(4):
        assert torch.equal(out[i], F.randint(x[i], keys[i, 0, 0], -5, 5))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@ONE_KEY_FOR_ALL
def test_bernoulli_is_dropouts_mask_dropped(dtype):
    x = layouts(dtype=dtype)["channels_last"]
    for p in (0.0, 0.3, 0.5, 1.0):
        dropped = F.dropout(torch.ones_like(x), STATE, p) == 0
        assert torch.equal(F.bernoulli(x, STATE, p), dropped.to(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bernoulli_tensor_p_broadcasts_and_equals_reference(dtype):
    x = torch.empty(3, 5, 7, dtype=dtype)
    p = torch.linspace(0, 1, 7, dtype=torch.float64)  # broadcast: the kernel reads it with stride-0 dims
    out = F.bernoulli(x, STATE, p)
    np.testing.assert_array_equal(bits(out), bernoulli_ref(x.shape, np_state(STATE), DTYPE_NAMES[dtype],
                                                           p.to(dtype).double().numpy()))
    assert bool((out[..., 0] == 0).all()) and bool((out[..., -1] == 1).all())
    with recompute():  # a tensor holding one p everywhere is the float p
        assert torch.equal(F.bernoulli(x, STATE, torch.tensor(0.25)), F.bernoulli(x, STATE, 0.25))


def test_normal_mean_std_rounding_order():
    """z * std + mean in float32 for <= 32-bit types: fl32(fl32(z) * fl32(std)) + fl32(mean), each rounded."""
    x = torch.empty(1000)
    z = F.normal(x, STATE)
    with recompute():
        assert torch.equal(F.normal(x, STATE, 0.1, 3.0), z * torch.tensor(3.0) + torch.tensor(0.1))
        z16 = F.normal(x.half(), STATE)
    assert torch.equal(z16, z.half())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normal_pairs_share_one_radius_and_any_start_or_count(dtype):
    """Elements 2p and 2p + 1 are r cos and r sin of one pair: z0^2 + z1^2 = -2 ln u1, u1 from the pair's first
    word(s). Element i depends on i alone: an odd count is the even one cut short, and a block starting mid-pair
    (a global view at an odd index) is that slice of the whole."""
    n = 4001
    z = F.normal(torch.empty(n + 1, dtype=torch.float64), STATE, dtype=dtype).double()
    st = np_state(STATE)
    t = np.arange(0, n + 1, 2, dtype=np.uint64) * np.uint64(2 if dtype == torch.float64 else 1)
    w0 = word(st[0], st[1], t).astype(np.float64)
    if dtype == torch.float64:
        w1 = word(st[0], st[1], t + np.uint64(1)).astype(np.float64)
        u1 = ((w0 % 2**21) * 2.0**32 + w1 + 1) * 2.0**-53
    else:
        u1 = (w0 + 1) * 2.0**-32
    r2 = (z[0::2] ** 2 + z[1::2] ** 2).numpy()
    np.testing.assert_allclose(r2, -2 * np.log(u1), rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-6)
    with recompute():
        assert torch.equal(F.normal(torch.empty(n, dtype=dtype), STATE), z[:n].to(dtype))
        for start in (1, 3, 7):
            block = F.normal(torch.empty(5, dtype=dtype), STATE, global_shape=(n + 1,), global_start=(start,))
            assert torch.equal(block, z[start:start + 5].to(dtype)), start


def test_stateful_functions_follow_manual_seed_and_generators():
    x = torch.empty(5, 7)
    fns = {
        "randn_like": lambda g: torch_rngx.randn_like(x, generator=g),
        "normal_like": lambda g: torch_rngx.normal_like(x, 2.0, 0.5, generator=g),
        "normal_like_f64": lambda g: torch_rngx.normal_like(x, generator=g, dtype=torch.float64),
        "bernoulli_like": lambda g: torch_rngx.bernoulli_like(x, 0.4, generator=g),
        "bernoulli_like_tensor": lambda g: torch_rngx.bernoulli_like(x, torch.linspace(0, 1, 7), generator=g),
        "randint_like": lambda g: torch_rngx.randint_like(x, -3, 9, generator=g),
        "randint_like_int8": lambda g: torch_rngx.randint_like(x, -3, 9, generator=g, dtype=torch.int8),
    }
    op_of = {"randn_like": ("normal", torch.float32), "normal_like": ("normal", torch.float32),
             "normal_like_f64": ("normal", torch.float64), "bernoulli_like": ("bernoulli", torch.float32),
             "bernoulli_like_tensor": ("bernoulli", torch.float32), "randint_like": ("randint", torch.int64),
             "randint_like_int8": ("randint", torch.int8)}
    for name, fn in fns.items():
        torch.manual_seed(3)
        a, b = fn(None), fn(None)
        torch.manual_seed(3)
        assert torch.equal(a, fn(None)) and torch.equal(b, fn(None)) and not torch.equal(a, b), name
        g = torch_rngx.Generator(17)
        start = g.state.clone()
        first = fn(g)
        op, dtype = op_of[name]
        extra = {"range": 12} if op == "randint" else {}
        assert int(g.state[1] - start[1]) == torch_rngx.blocks_used(x.numel(), dtype, op, **extra), name
        assert torch.equal(fn(torch_rngx.Generator(17)), first), name


def test_blocks_used_per_op():
    assert torch_rngx.blocks_used(10, torch.float32, "normal") == 3  # 5 pairs of 2 words
    assert torch_rngx.blocks_used(9, torch.float32, "normal") == 3  # the 5th pair's second word is in block 2
    assert torch_rngx.blocks_used(10, torch.float64, "normal") == 5
    assert torch_rngx.blocks_used(9, torch.float64, "normal") == 5
    assert torch_rngx.blocks_used(10, torch.float16, "truncated_normal") == 5
    assert torch_rngx.blocks_used(10, torch.float32, "bernoulli") == 3
    assert torch_rngx.blocks_used(10, torch.int8, "randint", range=256) == 5
    assert torch_rngx.blocks_used(10, torch.int64, "randint", range=1000) == 5
    assert torch_rngx.blocks_used(10, torch.int64, "randint", range=2**63) == 10
    with pytest.raises(TypeError, match="range"):
        torch_rngx.blocks_used(10, torch.int64, "randint")
    with pytest.raises(ValueError, match="range"):
        torch_rngx.blocks_used(10, torch.int32, "randint", range=2**32 + 1)
    with pytest.raises(ValueError, match="range"):
        torch_rngx.blocks_used(10, torch.int64, "randint", range=0)
    with pytest.raises(ValueError, match="range"):
        torch_rngx.blocks_used(10, torch.float32, range=5)
    with pytest.raises(ValueError, match="op"):
        torch_rngx.blocks_used(10, torch.float32, "gamma")
    with pytest.raises(TypeError, match="normal"):
        torch_rngx.blocks_used(10, torch.int32, "normal")


@ONE_KEY_FOR_ALL
def test_samplers_are_not_differentiable():
    x = torch.randn(4, 5, requires_grad=True)
    for out in (F.normal(x, STATE), F.truncated_normal(x, STATE), F.bernoulli(x, STATE, 0.5),
                torch_rngx.randn_like(x), torch_rngx.bernoulli_like(x, 0.5)):
        assert not out.requires_grad and out.grad_fn is None


def test_trunc_normal_fills_in_place_like_torch():
    w = torch.empty(64, 32, requires_grad=True)
    out = torch_rngx.nn.init.trunc_normal_(w, 0.0, 0.02, -0.04, 0.04, generator=torch_rngx.Generator(5))
    assert out is w and w.requires_grad
    with recompute():
        want = F.truncated_normal(torch.empty(64, 32), make_state(5, 0), 0.0, 0.02, -0.04, 0.04)
    assert torch.equal(w.detach(), want)
    assert float(w.detach().min()) >= -0.04 and float(w.detach().max()) <= 0.04
    torch.manual_seed(1)
    a = torch_rngx.nn.init.trunc_normal_(torch.empty(10))
    torch.manual_seed(1)
    assert torch.equal(a, torch_rngx.nn.init.trunc_normal_(torch.empty(10)))


@pytest.mark.parametrize("chunk", [1 << 10, None])  # two chunks and a tail, of 2^10 elements and of the default
def test_trunc_normal_fills_large_tensors_in_chunks_with_the_same_bits(monkeypatch, chunk):
    """Plain eager code (the key-reuse checker off: with it on, the fill is one draw that it sees) fills a large
    contiguous tensor a chunk at a time, with the bits and the step of one draw."""
    if chunk is not None:
        monkeypatch.setattr(torch_rngx._engine.router, "FILL_CHUNK", chunk)
    chunk = torch_rngx._engine.router.FILL_CHUNK
    calls = []
    op = torch_rngx._engine.router._KERNEL["truncated_normal"]
    monkeypatch.setitem(torch_rngx._engine.router._KERNEL, "truncated_normal", lambda *a: calls.append(a[0].numel()) or op(*a))
    shape = (4, chunk // 2 + 57)  # two chunks and 228 elements
    g = torch_rngx.Generator(5)
    for dtype in FLOAT_DTYPES:
        start, calls[:] = g.state.clone(), []
        with recompute():
            w = torch_rngx.nn.init.trunc_normal_(torch.empty(shape, dtype=dtype), 0.5, 2.0, -1.0, 3.3, generator=g)
            assert calls == [chunk, chunk, 228] and w.dtype == dtype
            want = F.truncated_normal(torch.empty(shape, dtype=dtype), start, 0.5, 2.0, -1.0, 3.3)
        assert (bits(w) == bits(want)).all()
        assert int(g.state[1] - start[1]) == torch_rngx.blocks_used(w.numel(), dtype, "truncated_normal")
        t, calls[:] = torch.empty(shape[::-1], dtype=dtype).t(), []  # not contiguous: one draw, the same values
        with recompute():
            torch_rngx.nn.init.trunc_normal_(t, 0.5, 2.0, -1.0, 3.3, generator=torch_rngx.Generator(5).set_state(start))
        assert calls == [t.numel()] and (bits(t) == bits(want)).all()
    torch.manual_seed(1)
    with recompute():
        a = torch_rngx.nn.init.trunc_normal_(torch.empty(shape))
    after = torch.rand(3)
    torch.manual_seed(1)
    with recompute():
        want = F.truncated_normal(torch.empty(shape), torch_rngx._engine.step.fresh_seed(), 0.0, 1.0, -2.0, 2.0)
    assert torch.equal(a, want) and torch.equal(torch.rand(3), after)


def test_vmap_over_keys_equals_batched_state():
    keys = F.split(STATE, 3)
    x = torch.empty(5, 4)
    out = torch.func.vmap(lambda k: F.normal(x, k), randomness="different")(keys)
    with recompute():
        for i in range(3):
            assert torch.equal(out[i], F.normal(x, keys[i]))
    p, key = torch.rand(3, 4), F.fold_in(STATE, 3)  # a key of its own: STATE's blocks 0..2 are keys above
    out = torch.func.vmap(lambda pi: F.bernoulli(x, key, pi))(p)
    with recompute():
        for i in range(3):
            assert torch.equal(out[i], F.bernoulli(x, key, p[i]))
