"""Keys (stream v2, docs/stream.md): key, split and fold_in (functional and Generator) against the independent
reference; batched (*B, 2) states on every op by the broadcast/event rule, in any layout, with dropout's backward
per key; int64 and uint64 states alike; bits in every integer dtype; the key ops compiled (fullgraph, static
and dynamic) and exported; and bad keys, nums and data rejected by name without touching any state. CPU only."""
import re
import subprocess
import sys

import numpy as np
import pytest
import reference as ref
import torch
from conftest import (
    DTYPE_NAMES,
    FLOAT_DTYPES,
    INT_DTYPES,
    UINT,
    from_bits,
    layouts,
    make_state,
    np_state,
    raw_bits,
    recompute,
)

import torch_rngx
from torch_rngx import functional as F

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("derives and draws several ops from one key, each compared with eager")

U64 = 1 << 64
SEEDS = [0, 5, 2**63, 2**64 - 1, 0x0123456789ABCDEF]


def u64_list(t):
    """A state tensor's values as unsigned Python ints, whatever its dtype."""
    return [v % U64 for v in t.view(torch.int64).reshape(-1).tolist()]


def keys(shape, seed=0x5EED, dtype=torch.int64):
    """A batched state (*shape, 2) of distinct keys, some offsets just below the wrap at 2^64."""
    n = int(np.prod(shape))
    return torch.cat([make_state(seed + i, (U64 - 3 + 7 * i) % U64, dtype) for i in range(n)]).view(*shape, 2)


# ---- key ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_key(seed):
    k = F.key(seed)
    assert k.dtype == torch.int64 and k.shape == (2,) and u64_list(k) == [seed, 0]
    ku = F.key(seed, dtype=torch.uint64)
    assert ku.dtype == torch.uint64 and ku.tolist() == [seed, 0]
    assert torch.equal(k, torch_rngx.Generator(seed).state)
    assert F.key(seed, device="cpu").device == torch.device("cpu")


# ---- split and fold_in --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
@pytest.mark.parametrize("num", [1, 2, 5])
@pytest.mark.parametrize("seed,offset", [(0, 0), (2**63, 7), (2**64 - 1, 2**64 - 2), (0x0123456789ABCDEF, 2**32 - 1)])
def test_split_equals_reference(seed, offset, num, dtype):
    state = make_state(seed, offset, dtype)
    before = state.clone()
    kids = F.split(state, num)
    assert kids.shape == (num, 2) and kids.dtype == dtype and kids.device == state.device
    np.testing.assert_array_equal(np_state(kids), ref.split_ref((seed, offset), num))
    assert torch.equal(state, before)
    with recompute():
        assert torch.equal(F.split(state), F.split(state, 2))  # num defaults to 2


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_split_batched(dtype):
    state = keys((2, 3), dtype=dtype)
    kids = F.split(state, 4)
    assert kids.shape == (4, 2, 3, 2) and kids.dtype == dtype
    np.testing.assert_array_equal(np_state(kids), ref.split_ref(np_state(state), 4))
    with recompute():
        for i in range(2):
            for j in range(3):  # each key splits on its own
                assert torch.equal(kids[:, i, j], F.split(state[i, j], 4))


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
@pytest.mark.parametrize("data", [0, 1, 6, 2**32, 2**63, 2**64 - 1])
def test_fold_in_int_equals_reference(data, dtype):
    state = make_state(2**64 - 5, 2**64 - 3, dtype)
    out = F.fold_in(state, data)
    assert out.shape == (2,) and out.dtype == dtype
    np.testing.assert_array_equal(np_state(out), ref.fold_in_ref(np_state(state), data))


def test_fold_in_is_split_at_d():
    state = make_state(77, 2**64 - 2)
    kids = F.split(state, 6)
    with recompute():
        for d in range(6):
            assert torch.equal(F.fold_in(state, d), kids[d])
            assert torch.equal(F.fold_in(state, torch.tensor(d)), kids[d])


@pytest.mark.parametrize("data_dtype", [torch.int64, torch.uint64])
def test_fold_in_tensor_data(data_dtype):
    state = keys((2, 3))
    # one value for every key; the tensor's bits are read as uint64, as the state's are
    d = torch.tensor(-1, dtype=torch.int64).view(data_dtype)
    first = F.fold_in(state, d)
    with recompute():
        assert torch.equal(first, F.fold_in(state, 2**64 - 1))
    # one value per key, and broadcast along a batch dim
    per_key = torch.tensor([[0, 1, 2], [2**40, 5, 2**62]], dtype=torch.int64).view(data_dtype)
    out = F.fold_in(state, per_key)
    assert out.shape == state.shape and out.dtype == state.dtype
    np.testing.assert_array_equal(np_state(out), ref.fold_in_ref(np_state(state), np_state(per_key)))
    rows = torch.tensor([[3], [9]], dtype=torch.int64).view(data_dtype)
    with recompute():
        np.testing.assert_array_equal(np_state(F.fold_in(state, rows)), ref.fold_in_ref(np_state(state), [[3], [9]]))
        for i in range(2):
            for j in range(3):
                assert torch.equal(out[i, j], F.fold_in(state[i, j], int(per_key.view(torch.int64)[i, j]) % U64))


def test_uint64_state_gives_uint64_keys_with_the_same_bits():
    s = make_state(2**63 + 9, 2**64 - 1)
    su = s.view(torch.uint64)
    kids, folded = F.split(su, 3), F.fold_in(su, 4)
    with recompute():
        assert torch.equal(kids.view(torch.int64), F.split(s, 3))
        assert torch.equal(folded.view(torch.int64), F.fold_in(s, 4))


# ---- Generator.split / fold_in ------------------------------------------------------------------------------


def test_generator_split_and_fold_in_derive_without_advancing():
    g = torch_rngx.Generator(2**64 - 1)
    torch_rngx.rand_like(torch.empty(9), generator=g)  # offset 3
    before = g.state.clone()
    kids = g.split(3)
    assert isinstance(kids, list) and len(kids) == 3 and all(isinstance(k, torch_rngx.Generator) for k in kids)
    assert torch.equal(g.state, before), "split must not advance the parent"
    with recompute():
        want = F.split(before, 3)
    for k, w in zip(kids, want):
        assert k.state.dtype == torch.int64 and k.state.shape == (2,) and torch.equal(k.state, w)
    f = g.fold_in(2**64 - 1)
    with recompute():
        assert torch.equal(g.state, before) and torch.equal(f.state, F.fold_in(before, 2**64 - 1))
        assert torch.equal(g.fold_in(1).state, kids[1].state)


@pytest.mark.key_reuse_ok("draws from a Generator after splitting it, to show that parent and children differ")
def test_generator_children_are_independent():
    g = torch_rngx.Generator(3)
    a, b = g.split(2)
    c = g.fold_in(5)
    states = [t.state for t in (g, a, b, c)]
    assert len({s.data_ptr() for s in states}) == 4, "children must own their state"
    x = torch.empty(100)
    ua = torch_rngx.rand_like(x, generator=a)
    assert int(a.state[1]) % U64 == (u64_list(F.split(g.state, 2)[0])[1] + 25) % U64
    assert torch.equal(b.state, F.split(g.state, 2)[1]) and torch.equal(g.state, torch.tensor([3, 0]))
    ub, uc, ug = (torch_rngx.rand_like(x, generator=t) for t in (b, c, g))
    draws = [ua, ub, uc, ug]
    assert all(not torch.equal(draws[i], draws[j]) for i in range(4) for j in range(i + 1, 4))


# ---- batched states on the ops ------------------------------------------------------------------------------


def run_op(op, x, state):
    if op == "bits":
        return F.bits(x.shape, state, dtype=torch.int64)
    if op == "uniform":
        return F.uniform(x, state, -2.0, 3.0)
    if op == "quantize_noise":
        return F.quantize_noise(x, state, 0.5)
    return F.dropout(x, state, 0.4)


def ref_op(op, x, state):
    """The reference's value for run_op, as a tensor shaped like x."""
    s = np_state(state)
    if op == "bits":
        return torch.from_numpy(ref.bits_ref(tuple(x.shape), s, "int64"))
    name = DTYPE_NAMES[x.dtype]
    xs = x.detach().to(torch.float64 if x.dtype == torch.float64 else torch.float32).contiguous().numpy()
    if op == "uniform":
        bits = ref.uniform_ref(x.shape, s, name, -2.0, 3.0)
    elif op == "quantize_noise":
        bits = ref.quantize_noise_ref(xs, s, name, 0.5)
    else:
        bits = ref.dropout_ref(xs, s, name, 0.4)
    return from_bits(bits, x.dtype, x.shape)


OPS = ["bits", "uniform", "quantize_noise", "dropout"]
X = torch.randn(4, 3, 5, 6, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("B", [(4, 1, 1, 1), (1, 3, 1, 1), (4, 3, 1, 1), (1, 3, 1, 6), (4, 3, 5, 6), (1, 1, 5, 1)])
def test_batched_equals_reference(op, dtype, B):
    x = X.to(dtype)
    state = keys(B, dtype=torch.uint64 if B[0] == 1 else torch.int64)
    np.testing.assert_array_equal(raw_bits(run_op(op, x, state)), raw_bits(ref_op(op, x, state)))


@pytest.mark.parametrize("op", OPS)
def test_per_sample_keys(op):
    """(N, 1, 1, 1, 2) on (N, C, H, W): sample n is the op on x[n] with key n."""
    state = keys((4, 1, 1, 1))
    out = run_op(op, X, state)
    with recompute():
        for n in range(4):
            assert torch.equal(out[n], run_op(op, X[n], state[n, 0, 0, 0]))


@pytest.mark.parametrize("op", OPS)
def test_broadcast_dims_repeat_values(op):
    """(1, 3, 1, 1, 2): dim 0 reuses the keys, so every sample gets the same values (from its own x)."""
    state = keys((1, 3, 1, 1))
    x = X[:1].expand(4, 3, 5, 6) if op != "bits" else X
    out = run_op(op, x, state)
    for n in range(1, 4):
        assert torch.equal(out[n], out[0])
    with recompute():
        for c in range(3):  # each channel is an event of 5 * 6 elements with its own key
            assert torch.equal(out[0, c], run_op(op, x[0, c], state[0, c, 0, 0]))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("ndim", [1, 2, 4])
def test_all_ones_batch_is_the_unbatched_key(op, ndim):
    x = X.reshape(X.shape[:ndim - 1] + (-1,)) if ndim > 1 else X.reshape(-1)
    state = make_state(2**64 - 1, 2**64 - 7)
    want = run_op(op, x, state)
    with recompute():
        assert torch.equal(run_op(op, x, state.view([1] * ndim + [2])), want)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", ["channels_last", "transposed", "sliced"])
@pytest.mark.key_reuse_ok("every batch shape's keys(B) starts at the same seeds")
def test_batched_any_layout(op, name):
    x = layouts((4, 3, 5, 6))[name]
    for B in [(4, 1, 1, 1), (1, 3, 1, 1), (4, 1, 5, 6), (1, 1, 1, 6)]:
        state = keys(B)
        out = run_op(op, x, state)
        if op != "bits":
            assert out.stride() == torch.empty_like(x).stride()
        assert torch.equal(out, run_op(op, x.contiguous(), state)), B


# Every public function that takes a key, on x (4, 3, 5) with a batched key (4, 3, 1, 2) or a plain key (2,).
KEYED = {
    "bits": lambda k: F.bits((4, 3, 5), k), "uniform": lambda k: F.uniform(X3, k),
    "quantize_noise": lambda k: F.quantize_noise(X3, k), "dropout": lambda k: F.dropout(X3, k, 0.4),
    "normal": lambda k: F.normal(X3, k), "truncated_normal": lambda k: F.truncated_normal(X3, k),
    "bernoulli": lambda k: F.bernoulli(X3, k), "bernoulli_tensor": lambda k: F.bernoulli(X3, k, X3.sigmoid()),
    "randint": lambda k: F.randint(X3, k, 0, 9), "exponential": lambda k: F.exponential(X3, k),
    "feature_dropout": lambda k: F.feature_dropout(X3, k, 0.4),
    "alpha_dropout": lambda k: F.alpha_dropout(X3, k, 0.4),
    "feature_alpha_dropout": lambda k: F.feature_alpha_dropout(X3, k, 0.4),
    "split": lambda k: F.split(k, 3), "fold_in": lambda k: F.fold_in(k, 7),
    "randperm": lambda k: F.randperm(6, k[:, 0, 0]), "multinomial": lambda k: F.multinomial(torch.ones(4, 6), k[:, 0, 0], 2),
}
X3 = torch.randn(4, 3, 5, generator=torch.Generator().manual_seed(6))


def strided_keys():
    """Batched keys (4, 3, 1, 2) that are not contiguous, as torch.func._random accepts them."""
    base = F.split(F.key(11), 24)
    return {"expanded": F.split(F.key(12), 3).view(1, 3, 1, 2).expand(4, 3, 1, 2),
            "transposed": base[:12].view(3, 4, 1, 2).transpose(0, 1), "sliced": base.view(4, 6, 1, 2)[:, ::2],
            "key_column": F.split(F.key(13), 24).view(4, 3, 1, 2, 2)[..., 1]}


@pytest.mark.parametrize("layout", ["expanded", "transposed", "sliced", "key_column"])
@pytest.mark.parametrize("name", KEYED)
@pytest.mark.key_reuse_ok("an expanded key repeats its rows on purpose, which the checker reports as reuse")
def test_keys_of_any_strides_give_their_contiguous_copys_values(name, layout):
    key = strided_keys()[layout]
    assert not key.is_contiguous()
    got = KEYED[name](key)
    with recompute():
        assert torch.equal(got, KEYED[name](key.contiguous()))


def test_device_view_reads_keys_at_their_strides():
    from torch_rngx.params import view

    keys = strided_keys()
    key = keys["expanded"]
    assert torch.equal(view((4, 3, 5), key)[:, 3], torch.tensor([0, 2, 0]))  # key strides in int64 elements
    assert torch.equal(view((4, 3, 5), key.contiguous())[:, 3], torch.tensor([6, 2, 0]))
    with pytest.raises(ValueError, match="pairs must be adjacent"):
        view((4, 3, 5), keys["key_column"])


@pytest.mark.key_reuse_ok("draws one strided key eagerly, through backward and compiled, each against its copy")
def test_strided_keys_compiled_and_through_backward():
    key = strided_keys()["expanded"]
    x = X3.clone().requires_grad_()
    F.dropout(x, key, 0.4).sum().backward()
    assert torch.equal(x.grad, F.dropout(torch.ones_like(X3), key.contiguous(), 0.4))
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, k: F.dropout(x, k, 0.4) + F.uniform(x, F.fold_in(k, 1)), fullgraph=True)
    assert torch.equal(compiled(X3, key), F.dropout(X3, key.contiguous(), 0.4) + F.uniform(X3, F.fold_in(key.contiguous(), 1)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batched_dropout_backward_recomputes_each_keys_mask(dtype):
    state = keys((4, 1, 1, 1))
    x = X.to(dtype).detach().clone().requires_grad_()
    g = torch.randn(X.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = F.dropout(x, state, 0.3)
    assert [tuple(t.shape) for t in saved] == [(4, 1, 1, 1, 2)], "backward must keep only the state"
    y.backward(g)
    with recompute():
        assert torch.equal(x.grad, F.dropout(g, state, 0.3))
    for n in range(4):
        with recompute():
            kept = F.dropout(torch.ones_like(g[n]), state[n, 0, 0, 0], 0.3) != 0
        assert torch.equal(x.grad[n] != 0, kept & (g[n] != 0))


@pytest.mark.parametrize("op", OPS)
def test_int64_and_uint64_states_give_identical_bits(op):
    for state in (make_state(2**63 + 1, 2**64 - 2), keys((4, 1, 5, 1))):
        a = run_op(op, X, state)
        with recompute():
            np.testing.assert_array_equal(raw_bits(a), raw_bits(run_op(op, X, state.view(torch.uint64))))


def test_empty_batched_state_gives_an_empty_output():
    """B_d == out.shape[d] == 0 is a valid batch dim. Run in a child process: a crash fails only this test."""
    code = """
import torch, torch_rngx
from torch_rngx import functional as F
for op in ("bits", "uniform", "quantize_noise", "dropout", "split", "fold_in"):
    for shape, B in [((0, 3), (0, 1)), ((0,), (0,)), ((2, 0, 3), (2, 0, 1)), ((3, 0), (3, 0))]:
        print(op, shape, B, flush=True)
        s, x = torch.zeros(B + (2,), dtype=torch.int64), torch.empty(shape)
        out = {"bits": lambda: F.bits(shape, s), "uniform": lambda: F.uniform(x, s),
               "quantize_noise": lambda: F.quantize_noise(x, s), "dropout": lambda: F.dropout(x, s, 0.5),
               "split": lambda: F.split(s, 3)[0], "fold_in": lambda: F.fold_in(s, 1)}[op]()
        assert out.shape == (s.shape if op in ("split", "fold_in") else shape), (op, out.shape, shape)
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    last = r.stdout.strip().splitlines()[-1:] or ["(nothing)"]
    assert r.returncode == 0 and last == ["ok"], f"rc {r.returncode} at: {last[0]} {r.stderr[-1500:]}"


# ---- bits dtypes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("state", [make_state(2**64 - 1, 2**64 - 1), keys((3, 1))], ids=["key", "batched"])
def test_bits_dtypes_equal_reference(dtype, state):
    out = F.bits([3, 11], state, dtype=dtype)
    assert out.dtype == dtype and out.shape == (3, 11)
    want = ref.bits_ref((3, 11), np_state(state), str(dtype).split(".")[1])
    np.testing.assert_array_equal(raw_bits(out), want.reshape(-1).view(UINT[out.element_size()]))


def test_bits_default_is_int32_and_narrow_dtypes_take_low_bits():
    s = make_state(9, 4)
    w = F.bits([64], s)
    assert w.dtype == torch.int32
    words = w.to(torch.int64) & 0xFFFFFFFF
    with recompute():
        for dtype in INT_DTYPES[:6]:
            mask = (1 << (8 * torch.empty((), dtype=dtype).element_size())) - 1
            assert torch.equal(F.bits([64], s, dtype=dtype).to(torch.int64) & mask, words & mask), dtype
        wide = F.bits([32], s, dtype=torch.int64)  # two words each, the first high
        assert torch.equal(wide, (words[0::2] << 32) | words[1::2])
        assert torch.equal(F.bits([32], s, dtype=torch.uint64).view(torch.int64), wide)


@pytest.mark.parametrize("dtype,numel,blocks", [(torch.int64, 5, 3), (torch.uint64, 2, 1), (torch.uint8, 5, 2),
                                                (torch.int32, 8, 2), (torch.float64, 4, 2)])
def test_blocks_used_for_bits_dtypes(dtype, numel, blocks):
    assert torch_rngx.blocks_used(numel, dtype) == blocks


# ---- compile and export -------------------------------------------------------------------------------------


def derive_and_draw(state, x):
    kids = F.split(state, 3)
    per_key = F.fold_in(kids, torch.arange(3))
    batched = per_key.view(3, 1, 2)  # a key per row of x
    y = F.dropout(x, batched, 0.5)
    return kids, F.fold_in(state, 7), per_key, F.uniform(x, batched, -1.0, 1.0), F.bits(x.shape, batched), y


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("state_dtype", [torch.int64, torch.uint64])
@ONE_KEY_FOR_ALL
def test_compiled_key_ops_equal_eager(dynamic, state_dtype):
    compiled = torch.compile(derive_and_draw, fullgraph=True, dynamic=dynamic)
    for cols, seed in [(5, 1), (7, 2**64 - 1)]:
        state = make_state(seed, 2**64 - 1, state_dtype)
        x = torch.randn(3, cols, generator=torch.Generator().manual_seed(cols))
        outs = []
        for fn in (derive_and_draw, compiled):
            xg = x.clone().requires_grad_()
            res = fn(state, xg)
            (grad,) = torch.autograd.grad(res[-1], xg, torch.linspace(-1, 1, x.numel()).view(x.shape))
            outs.append([r.detach() for r in res] + [grad])
        for e, c in zip(*outs):
            assert e.dtype == c.dtype and e.shape == c.shape and torch.equal(e, c)


class DeriveModule(torch.nn.Module):
    def forward(self, x, state):
        kids = F.split(state, 4)
        u = F.uniform(x, kids.view(4, 1, 1, 2))
        return kids, F.fold_in(state, 2**64 - 1), F.fold_in(kids, torch.arange(4)), u


@ONE_KEY_FOR_ALL
def test_export_key_ops_and_batched_uniform():
    x = torch.empty(4, 3, 5)
    ep = torch.export.export(DeriveModule(), (x, make_state(1, 2)))
    targets = {str(n.target) for n in ep.graph.nodes}
    assert {"rngx.split.default", "rngx.fold_in.default", "rngx.uniform.default"} <= targets
    for s in (make_state(1, 2), make_state(2**64 - 1, 2**64 - 1)):
        got, want = ep.module()(x, s), DeriveModule()(x, s)
        assert all(torch.equal(a, b) for a, b in zip(got, want))


# ---- bad input ----------------------------------------------------------------------------------------------


def raises_naming(exc, name, fn):
    with pytest.raises(exc) as info:
        fn()
    assert re.search(rf"(?<![A-Za-z_]){name}(?![A-Za-z_])", str(info.value)), str(info.value)


X34 = torch.zeros(3, 4)
SAMPLERS = {
    "bits": lambda s: F.bits([3, 4], s),
    "uniform": lambda s: F.uniform(X34, s),
    "quantize_noise": lambda s: F.quantize_noise(X34, s),
    "dropout": lambda s: F.dropout(X34, s, 0.5),
}
KEY_OPS = {"split": lambda s: F.split(s, 2), "fold_in": lambda s: F.fold_in(s, 1)}

BAD_DTYPE = {"int32": torch.tensor([1, 2], dtype=torch.int32), "uint32": torch.tensor([1, 2], dtype=torch.uint32),
             "float64": torch.tensor([1.0, 2.0], dtype=torch.float64), "bool": torch.tensor([True, False])}
BAD_LAST_DIM = {"(3,)": torch.zeros(3, dtype=torch.int64), "(2, 3)": torch.zeros(2, 3, dtype=torch.int64),
                "(4, 1)": torch.zeros(4, 1, dtype=torch.uint64), "()": torch.tensor(5)}
NOT_BROADCASTING = {"(2, 2) on (3, 4)": torch.zeros(2, 2, dtype=torch.int64),  # too few batch dims
                    "(3, 2, 2)": torch.zeros(3, 2, 2, dtype=torch.int64),  # 2 is neither 1 nor 4
                    "(1, 3, 1, 2)": torch.zeros(1, 3, 1, 2, dtype=torch.uint64),  # too many batch dims
                    "(4, 1, 2)": torch.zeros(4, 1, 2, dtype=torch.int64)}  # 4 is neither 1 nor 3


@pytest.mark.parametrize("op", list(SAMPLERS) + list(KEY_OPS))
@pytest.mark.parametrize("kind", list(BAD_DTYPE))
def test_bad_state_dtype(op, kind):
    s = BAD_DTYPE[kind]
    before = s.clone()
    raises_naming(TypeError, "state", lambda: {**SAMPLERS, **KEY_OPS}[op](s))
    assert torch.equal(s, before)


@pytest.mark.parametrize("op", list(SAMPLERS) + list(KEY_OPS))
@pytest.mark.parametrize("kind", list(BAD_LAST_DIM))
def test_bad_state_last_dim(op, kind):
    raises_naming(ValueError, "state", lambda: {**SAMPLERS, **KEY_OPS}[op](BAD_LAST_DIM[kind]))


@pytest.mark.parametrize("op", list(SAMPLERS))
@pytest.mark.parametrize("kind", list(NOT_BROADCASTING))
def test_batched_state_not_broadcasting(op, kind):
    s = NOT_BROADCASTING[kind]
    before = s.clone()
    raises_naming(ValueError, "state", lambda: SAMPLERS[op](s))
    assert torch.equal(s, before)


@pytest.mark.parametrize("num", [0, -1, -(2**63)])
def test_bad_num(num):
    s = make_state(1, 2)
    raises_naming(ValueError, "num", lambda: F.split(s, num))
    g = torch_rngx.Generator(4)
    before = g.state.clone()
    raises_naming(ValueError, "n", lambda: g.split(num))
    assert torch.equal(g.state, before)


@pytest.mark.parametrize("data", [-1, 2**64, 2**70, -(2**63)])
def test_data_outside_uint64(data):
    s = make_state(1, 2)
    raises_naming(ValueError, "data", lambda: F.fold_in(s, data))
    g = torch_rngx.Generator(4)
    torch_rngx.rand_like(torch.empty(3), generator=g)
    before = g.state.clone()
    raises_naming(ValueError, "data", lambda: g.fold_in(data))
    assert torch.equal(g.state, before)


@pytest.mark.parametrize("data", [1.5, "3", None, torch.tensor(1.5), torch.tensor(3, dtype=torch.int32)])
def test_data_of_a_wrong_type(data):
    raises_naming(TypeError, "data", lambda: F.fold_in(make_state(1, 2), data))


def test_per_key_data_not_broadcasting():
    raises_naming(ValueError, "data", lambda: F.fold_in(keys((2, 3)), torch.zeros(3, 2, dtype=torch.int64)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.float64, torch.complex64])
def test_bits_rejects_non_integer_dtypes(dtype):
    raises_naming(TypeError, "dtype", lambda: F.bits([3], make_state(1, 2), dtype=dtype))


@pytest.mark.parametrize("seed,exc", [(-1, ValueError), (2**64, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_key_seed(seed, exc):
    raises_naming(exc, "seed", lambda: F.key(seed))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64, torch.uint32])
def test_bad_key_dtype(dtype):
    raises_naming(TypeError, "dtype", lambda: F.key(1, dtype=dtype))


def test_generator_keeps_its_state_on_a_bad_set_state():
    g = torch_rngx.Generator(6)
    before = g.state.clone()
    for bad in (torch.zeros(3, 2, dtype=torch.int64), torch.tensor([1, 2], dtype=torch.int32), torch.zeros(3)):
        with pytest.raises((TypeError, ValueError), match="new_state"):
            g.set_state(bad)
        assert torch.equal(g.state, before)
    g.set_state(make_state(2**64 - 1, 5, torch.uint64))  # a torch.func._random key is a fine state
    assert g.state.dtype == torch.int64 and u64_list(g.state) == [2**64 - 1, 5]
