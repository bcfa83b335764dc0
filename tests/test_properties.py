"""Property tests: every op, on random shapes, memory layouts, dtypes, seeds and offsets (in Philox blocks),
int64 and uint64 states, unbatched and batched, equals the NumPy reference of the stream (tests/reference.py)
bit for bit, and writes nothing but its own fresh output.

Hypothesis runs derandomized (the examples are a function of the test's source), so CI is reproducible.
"""
import math

import numpy as np
import pytest
import reference as ref
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare random layouts (hypothesis replays examples)")


U64 = 1 << 64
CARRY = 1 << 32  # block index where the counter's low 32 bits carry into the high ones
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
NAME = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.uint64]
INT_VIEW = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

PROFILE = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def signed(v):
    return v - U64 if v >= 1 << 63 else v


# ---- strategies -------------------------------------------------------------------------------------------

seeds = st.one_of(
    st.integers(0, U64 - 1),
    st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, U64 - 1]),
)
offsets = st.one_of(
    st.integers(0, 64),  # small
    st.integers(0, U64 - 1),
    st.integers(CARRY - 700, CARRY + 8),  # the counter's 32-bit carry falls inside the call
    st.integers(U64 - 700, U64 - 1),  # block indices wrap modulo 2^64 inside the call
)


@st.composite
def states(draw):
    """(seed, offset, state tensor, holder); the state is int64 or uint64 (the same bits), and sometimes a
    contiguous view with a storage offset into holder."""
    seed, offset = draw(seeds), draw(offsets)
    values = [signed(seed), signed(offset)]
    as_dtype = (lambda t: t.view(torch.uint64)) if draw(st.booleans()) else (lambda t: t)  # noqa: E731
    if draw(st.booleans()):
        holder = as_dtype(torch.tensor([-7] + values + [-9], dtype=torch.int64))
        return seed, offset, holder[1:3], holder
    state = as_dtype(torch.tensor(values, dtype=torch.int64))
    return seed, offset, state, state


@st.composite
def shapes(draw, max_numel=4000):
    ndim = draw(st.integers(0, 4))
    shape = [draw(st.one_of(st.integers(0, 5), st.sampled_from([1, 1, 7]))) for _ in range(ndim)]
    if ndim and draw(st.integers(0, 4)) == 0:  # now and then a long dim: several 256-element batches
        shape[draw(st.integers(0, ndim - 1))] = draw(st.integers(200, 700))
    while math.prod(shape) > max_numel:
        shape[shape.index(max(shape))] //= 2
    return shape


SPECIALS = [0.0, -0.0, 1.0, -1.0, 65504.0, 70000.0, 1e-40, -3e-8, float("inf"), float("-inf"), float("nan")]


@st.composite
def tensors(draw, dtype=None, shape=None, specials=True):
    """A float tensor of a random logical shape laid out in memory in a random way: dims permuted, stepped
    (gaps), expanded (stride 0) and at a storage offset, all carved out of one flat buffer.

    Returns (x, buffer): x is a view of buffer, so comparing buffer before/after catches any stray write."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES)) if dtype is None else dtype
    shape = draw(shapes()) if shape is None else shape
    ndim = len(shape)
    order = draw(st.permutations(range(ndim)))  # order[-1] is the innermost dim in memory
    strides = [0] * ndim
    stride = draw(st.sampled_from([1, 1, 1, 2, 3]))
    for d in reversed(order):
        if shape[d] <= 1 or draw(st.integers(0, 6)) != 0:
            strides[d] = stride
            stride *= shape[d] + draw(st.sampled_from([0, 0, 0, 1, 3]))
            stride = max(stride, 1)
        # else: an expanded dim, stride 0
    storage_offset = draw(st.sampled_from([0, 0, 1, 5]))
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    length = storage_offset + span + draw(st.integers(0, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.standard_normal(length).astype(np.float32) * np.float32(draw(st.sampled_from([1.0, 100.0])))
    if specials and length and draw(st.booleans()):
        where = rng.integers(0, length, size=max(1, length // 8))
        values[where] = rng.choice(np.array(SPECIALS, dtype=np.float32), size=len(where))
    buffer = torch.from_numpy(values).to(dtype)
    x = torch.as_strided(buffer, shape, strides, storage_offset)
    if ndim == 4 and draw(st.integers(0, 4)) == 0:  # torch's own channels_last, for good measure
        x = x.contiguous(memory_format=torch.channels_last)
        buffer = x
    return x, buffer


probabilities = st.one_of(
    st.floats(0.0, 1.0),
    st.integers(0, 1 << 24).map(lambda m: m * 2.0**-24),  # exactly on a float32 u: u == p must keep
    st.sampled_from([0.0, 1.0, 0.5, 5e-324, 2.0**-24, 1 - 2.0**-53, 1 - 2.0**-24]),
)


# ---- helpers ----------------------------------------------------------------------------------------------


def logical_bits(t):
    """The tensor's elements in logical row-major order, as raw bit patterns (unsigned NumPy ints)."""
    size = t.element_size()
    return t.detach().contiguous().view(INT_VIEW[size]).reshape(-1).numpy().view(UINT[size])


def logical_values(t):
    """x's values in logical order in the compute type: float64 for float64, float32 otherwise."""
    wide = torch.float64 if t.dtype == torch.float64 else torch.float32
    return t.detach().to(wide).contiguous().reshape(-1).numpy()


def is_nan_bits(bits, dtype):
    if dtype == torch.float64:
        return (bits & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)
    if dtype == torch.float32:
        return (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if dtype == torch.float16:
        return (bits & np.uint16(0x7FFF)) > np.uint16(0x7C00)
    return (bits & np.uint16(0x7FFF)) > np.uint16(0x7F80)


def assert_same_bits(got, want, dtype, what):
    """Bitwise equality; NaN must meet NaN (the payload of a NaN is not part of the contract)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    nan_got, nan_want = is_nan_bits(got, dtype), is_nan_bits(want, dtype)
    bad = (nan_got != nan_want) | (~nan_want & (got != want))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements differ; first at logical index {i}: "
            f"got {int(got[i]):#x}, want {int(want[i]):#x}"
        )


def snapshot(*tensors):
    """Raw copies of whole storages, to prove later that nothing in them changed."""
    return [(t, t.detach().clone()) for t in tensors]


def assert_untouched(snap):
    for t, before in snap:
        size = t.element_size()
        assert torch.equal(t.detach().view(INT_VIEW[size]), before.view(INT_VIEW[size])), "an input was written to"


def assert_fresh(out, *inputs):
    """out owns new memory, exactly as large as its elements, and shares none with any input."""
    storage = out.untyped_storage()
    for t in inputs:
        assert storage.data_ptr() != t.untyped_storage().data_ptr() or out.numel() == 0
    if out.numel():
        assert storage.nbytes() == out.numel() * out.element_size()
        assert out.storage_offset() == 0


# ---- the ops ----------------------------------------------------------------------------------------------


@PROFILE
@given(size=shapes(max_numel=5000), st_=states(), dtype=st.sampled_from(INT_DTYPES + [None]))
@REUSES_KEYS
def test_bits_equal_reference(size, st_, dtype):
    seed, offset, state, holder = st_
    snap = snapshot(holder)
    out = F.bits(size, state) if dtype is None else F.bits(size, state, dtype=dtype)
    dtype = torch.int32 if dtype is None else dtype
    assert out.dtype == dtype and list(out.shape) == size and out.is_contiguous()
    assert_fresh(out, holder)
    assert_untouched(snap)
    want = ref.bits_ref(size, (seed, offset), str(dtype).split(".")[1])
    np.testing.assert_array_equal(logical_bits(out), want.reshape(-1).view(UINT[out.element_size()]))


@PROFILE
@given(
    xb=tensors(specials=False),
    st_=states(),
    out_dtype=st.one_of(st.none(), st.sampled_from(FLOAT_DTYPES)),
    low=st.one_of(st.floats(-1e4, 1e4), st.sampled_from([0.0, -0.5, -1e30, 1e-30, 5e-324, 60000.0])),
    width=st.one_of(st.floats(0.0, 1e4), st.sampled_from([0.0, 1.0, 2.0**-20, 1e30])),
)
@REUSES_KEYS
def test_uniform_equals_reference(xb, st_, out_dtype, low, width):
    like, buffer = xb
    seed, offset, state, holder = st_
    high = low + width
    snap = snapshot(buffer, holder)
    dtype = like.dtype if out_dtype is None else out_dtype
    if dtype != torch.float64:
        lo, hi = ref.dtype_value(low, NAME[dtype]), ref.dtype_value(high, NAME[dtype])
        if not np.isfinite([lo, hi, ref.dtype_value(np.float32(hi - lo), NAME[dtype])]).all():
            with pytest.raises(ValueError, match="must be finite in"):
                F.uniform(like, state, low, high, dtype=out_dtype)
            assert_untouched(snap)
            return
    out = F.uniform(like, state, low, high, dtype=out_dtype)
    assert out.dtype == dtype and out.shape == like.shape
    assert out.stride() == torch.empty_like(like, dtype=dtype).stride()
    assert_fresh(out, buffer, holder)
    assert_untouched(snap)
    want = ref.uniform_ref(like.shape, (seed, offset), NAME[dtype], low, high)
    assert_same_bits(logical_bits(out), want, dtype, f"uniform {NAME[dtype]} [{low}, {high})")


@PROFILE
@given(
    xb=tensors(),
    st_=states(),
    half=st.one_of(st.floats(0.0, 1e3), st.sampled_from([0.0, 0.5, 2.0**-30, 1e20])),
    grad=st.booleans(),
)
@REUSES_KEYS
def test_quantize_noise_equals_reference(xb, st_, half, grad):
    x, buffer = xb
    seed, offset, state, holder = st_
    if grad:
        x = x.detach().requires_grad_()
    snap = snapshot(buffer, holder)
    out = F.quantize_noise(x, state, half)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert out.stride() == torch.empty_like(x).stride()
    assert_fresh(out, buffer, holder)
    assert_untouched(snap)
    want = ref.quantize_noise_ref(logical_values(x), (seed, offset), NAME[x.dtype], half)
    assert_same_bits(logical_bits(out), want, x.dtype, f"quantize_noise half={half}")
    if grad:  # d/dx = 1: the incoming gradient passes through bit for bit
        g = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed % 1000)).to(x.dtype)
        out.backward(g)
        assert_same_bits(logical_bits(x.grad), logical_bits(g), x.dtype, "quantize_noise backward")
        assert_untouched(snap)


@PROFILE
@given(xb=tensors(), st_=states(), p=probabilities)
@REUSES_KEYS
def test_dropout_equals_reference(xb, st_, p):
    x, buffer = xb
    seed, offset, state, holder = st_
    snap = snapshot(buffer, holder)
    out = F.dropout(x, state, p)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert out.stride() == torch.empty_like(x).stride()
    assert_fresh(out, buffer, holder)
    assert_untouched(snap)
    want = ref.dropout_ref(logical_values(x), (seed, offset), NAME[x.dtype], p)
    assert_same_bits(logical_bits(out), want, x.dtype, f"dropout p={p!r}")


@PROFILE
@given(xb=tensors(specials=False), st_=states(), data=st.data())
@REUSES_KEYS
def test_dropout_keeps_an_element_whose_u_equals_p(xb, st_, data):
    """The boundary: keep iff u >= p, so p set to one element's own u keeps that element."""
    x, _ = xb
    assume(x.numel() > 0)
    seed, offset, state, _ = st_
    name = NAME[x.dtype]
    j = data.draw(st.integers(0, x.numel() - 1))
    p = float(ref.op_u(ref.element_words(x.shape, (seed, offset), 2 if name == "float64" else 1), name)[j])
    out = F.dropout(x, state, p)
    want = ref.dropout_ref(logical_values(x), (seed, offset), name, p)
    assert_same_bits(logical_bits(out), want, x.dtype, f"p={p!r}")
    assert logical_values(out)[j] != 0 or logical_values(x)[j] == 0, "the element whose u equals p was dropped"


@PROFILE
@given(data=st.data(), st_=states(), p=probabilities)
@REUSES_KEYS
def test_dropout_backward_equals_reference(data, st_, p):
    """The gradient is dropout of the incoming gradient under the same mask, recomputed from the state."""
    x, buffer = data.draw(tensors(specials=False))
    g, g_buffer = data.draw(tensors(dtype=x.dtype, shape=list(x.shape)))
    seed, offset, state, holder = st_
    x = x.detach().requires_grad_()
    out = F.dropout(x, state, p)
    snap = snapshot(buffer, holder, g_buffer)
    out.backward(g)
    assert_untouched(snap)
    assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
    want = ref.dropout_ref(logical_values(g), (seed, offset), NAME[x.dtype], p)
    assert_same_bits(logical_bits(x.grad), want, x.dtype, f"dropout backward p={p!r}")
    # The forward's mask and the backward's are the same mask.
    kept = ref.dropout_mask_ref(x.shape, (seed, offset), NAME[x.dtype], p)
    if x.numel() and p < 1:
        grad_nonzero = logical_values(x.grad) != 0
        assert not (grad_nonzero & ~kept).any(), "backward let a gradient through where forward dropped"


def test_dropout_backward_rejects_a_state_changed_after_forward():
    """The saved state is the caller's tensor: changing it in place before backward must not silently
    give another mask; autograd's version counter refuses."""
    state = torch.tensor([3, 0], dtype=torch.int64)
    x = torch.randn(100, requires_grad=True)
    out = torch_rngx.functional.dropout(x, state, 0.5)
    state[1] += 4
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ---- Generators: a sequence of calls is the functional ops at consecutive offsets -------------------------

calls = st.lists(
    st.tuples(
        st.sampled_from(["rand_like", "uniform_like", "quantize", "dropout"]),
        st.sampled_from(FLOAT_DTYPES),
        st.lists(st.integers(0, 7), min_size=0, max_size=3),
    ),
    min_size=1,
    max_size=6,
)


@PROFILE
@given(seed=seeds, start=offsets, seq=calls)
@REUSES_KEYS
def test_generator_sequence_equals_functional_at_consecutive_offsets(seed, start, seq):
    g = torch_rngx.Generator(seed)
    g.set_state(torch.tensor([signed(seed), signed(start)], dtype=torch.int64))
    offset = start
    for kind, dtype, shape in seq:
        x = torch.randn(shape, generator=torch.Generator().manual_seed(len(shape))).to(dtype)
        s = torch.tensor([signed(seed), signed(offset)], dtype=torch.int64)
        if kind == "rand_like":
            got, want = torch_rngx.rand_like(x, generator=g), F.uniform(x, s)
        elif kind == "uniform_like":
            got, want = torch_rngx.uniform_like(x, -2.0, 3.0, generator=g), F.uniform(x, s, -2.0, 3.0)
        elif kind == "quantize":
            got, want = torch_rngx.quantize(x, "noise", generator=g), F.quantize_noise(x, s, 0.5)
        else:
            got, want = torch_rngx.dropout(x, 0.25, generator=g), F.dropout(x, s, 0.25)
        assert torch.equal(logical_bits_t(got), logical_bits_t(want)), kind
        offset = (offset + ref.blocks_used(x.numel(), NAME[dtype])) % U64
        assert int(g.state[1]) % U64 == offset
        assert int(g.state[0]) % U64 == seed


def logical_bits_t(t):
    return t.contiguous().view(INT_VIEW[t.element_size()])


# ---- bigger tensors: several parallel tasks, odometer runs across batches ----------------------------------


@settings(PROFILE, max_examples=6)
@given(xb=tensors(shape=[3, 257, 97], specials=False), st_=states(), p=probabilities)
@REUSES_KEYS
def test_multi_task_tensors_equal_reference(xb, st_, p):
    """74,787 elements: more than two of the kernel's parallel tasks, in a strided layout."""
    x, buffer = xb
    seed, offset, state, holder = st_
    snap = snapshot(buffer, holder)
    name = NAME[x.dtype]
    out = F.uniform(x, state, -1.0, 1.0)
    assert_same_bits(logical_bits(out), ref.uniform_ref(x.shape, (seed, offset), name, -1.0, 1.0), x.dtype, "uniform")
    out = F.dropout(x, state, p)
    assert_same_bits(logical_bits(out), ref.dropout_ref(logical_values(x), (seed, offset), name, p), x.dtype, "dropout")
    out = F.quantize_noise(x, state, 0.5)
    want = ref.quantize_noise_ref(logical_values(x), (seed, offset), name, 0.5)
    assert_same_bits(logical_bits(out), want, x.dtype, "quantize_noise")
    assert_untouched(snap)


# ---- batched states: each element takes its key and local index by the broadcast/event rule --------------


@st.composite
def batched_states(draw, shape):
    """A (*B, 2) state for an output of `shape` (each B_d is 1 or shape[d]), int64 or uint64, with random keys
    whose offsets sometimes sit just below the wrap at 2^64."""
    # A zero-size batch dim (B_d == shape[d] == 0) is tested in a child process in test_keys.py, where a crash
    # fails one test instead of ending the run.
    B = [draw(st.sampled_from([1, n])) if n else 1 for n in shape]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    keys = rng.integers(0, 2**64 - 1, size=B + [2], dtype=np.uint64, endpoint=True)
    if draw(st.booleans()):
        keys[..., 1] = np.uint64(U64 - 3) + rng.integers(0, 3, size=B, dtype=np.uint64)
    state = torch.from_numpy(keys.view(np.int64).copy())
    return keys, (state.view(torch.uint64) if draw(st.booleans()) else state)


@PROFILE
@given(data=st.data(), op=st.sampled_from(["bits", "uniform", "quantize_noise", "dropout"]))
@REUSES_KEYS
def test_batched_states_equal_reference(data, op):
    x, buffer = data.draw(tensors(specials=False))
    keys, state = data.draw(batched_states(list(x.shape)))
    name = NAME[x.dtype]
    snap = snapshot(buffer, state)
    if op == "bits":
        dtype = data.draw(st.sampled_from(INT_DTYPES))
        out = F.bits(list(x.shape), state, dtype=dtype)
        want = ref.bits_ref(tuple(x.shape), keys, str(dtype).split(".")[1]).reshape(-1).view(UINT[out.element_size()])
        np.testing.assert_array_equal(logical_bits(out), want)
    elif op == "uniform":
        out = F.uniform(x, state, -1.0, 2.0)
        assert_same_bits(logical_bits(out), ref.uniform_ref(x.shape, keys, name, -1.0, 2.0), x.dtype, "uniform")
    elif op == "quantize_noise":
        out = F.quantize_noise(x, state, 0.5)
        want = ref.quantize_noise_ref(logical_values(x).reshape(x.shape), keys, name, 0.5)
        assert_same_bits(logical_bits(out), want, x.dtype, "quantize_noise")
    else:
        out = F.dropout(x, state, 0.4)
        want = ref.dropout_ref(logical_values(x).reshape(x.shape), keys, name, 0.4)
        assert_same_bits(logical_bits(out), want, x.dtype, "dropout")
    if op != "bits":
        assert out.stride() == torch.empty_like(x).stride()
    assert_untouched(snap)
