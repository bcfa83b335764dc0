"""Global view (docs/stream.md, "Global view"; docs/guarantees.md, "Sharding invariance"): every elementwise op of
tests/ops_table.py on a block of a
global tensor, given global_shape and global_start, returns exactly that block of the op on the global tensor:
on any dims, uneven blocks, any layout of the block, batched keys, every thread count, with dropout's backward;
eager, compiled (fullgraph, static and dynamic) and exported; under vmap; and stateful calls advance a Generator
by the global tensor's blocks. Bad views are rejected by name, in Python and in C++. CPU only."""
import itertools

import pytest
import torch
from conftest import FLOAT_DTYPES, recompute
from ops_table import ROWS, draws

import torch_rngx
from torch_rngx import functional as F
from torch_rngx import ops

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("draws every op from one key, whole and in blocks, to compare them")


KEY = torch.tensor([0x0123456789ABCDEF, -9], dtype=torch.int64)  # an offset just below the wrap at 2^64


def blocks(shape):
    """Blocks of a global shape: uneven chunks along each dim (torch.tensor_split into 1 to 4 pieces, so some are
    empty when a dim has fewer indices than pieces), and one block cut on every dim at once."""
    for d, n in enumerate(shape):
        for pieces in (2, 3, 4):
            for idx in torch.tensor_split(torch.arange(n), pieces):
                start = [0] * len(shape)
                size = list(shape)
                start[d] = int(idx[0]) if len(idx) else n // 2
                size[d] = len(idx)
                yield start, size
    yield [n // 3 for n in shape], [n - n // 3 - n // 4 for n in shape]


def cut(t, start, size):
    return t[tuple(slice(s, s + n) for s, n in zip(start, size))]


def local_like(start, size, layout, dtype=torch.float32, x=None):
    """The block (of x, or empty) in a layout: contiguous, transposed (dims reversed), a strided slice, or
    channels_last (4-dim blocks; others stay contiguous)."""
    base = torch.empty(size, dtype=dtype) if x is None else cut(x, start, size).clone()
    if layout == "channels_last" and base.dim() == 4:
        return base.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":
        return base.permute(*reversed(range(base.dim()))).contiguous().permute(*reversed(range(base.dim())))
    if layout == "sliced":
        wide = torch.zeros([2 * n + 1 for n in size], dtype=dtype)
        view = wide[tuple(slice(1, 2 * n + 1, 2) for n in size)]
        return view.copy_(base)
    return base


SHAPES = [(11,), (7, 5), (3, 6, 5), (2, 3, 4, 5)]
LAYOUTS = ["contiguous", "transposed", "sliced", "channels_last"]


def ops_on(x, key, dtype, view, channels=True):
    """(name, output) of every elementwise op of tests/ops_table.py on x (its shape) with `view` (a dict of the
    global arguments, or empty); channel dropout only where asked (its keys may vary along (N, C) only); bits once."""
    for name, out in draws(x, key, view=True, channels=channels, **view).items():
        if name != "bits" or dtype == torch.float32:
            yield name, out


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@ONE_KEY_FOR_ALL
def test_block_equals_slice_of_global(shape, dtype):
    g = torch.randn(shape).to(dtype)
    whole = dict(ops_on(g, KEY, dtype, {}))
    for (start, size), layout in itertools.product(blocks(shape), LAYOUTS):
        x = local_like(start, size, layout, dtype, g)
        view = dict(global_shape=shape, global_start=start)
        for name, out in ops_on(x, KEY, dtype, view):
            want = cut(whole[name], start, size)
            assert out.shape == want.shape and torch.equal(out.contiguous().view(-1).view(torch.uint8),
                                                           want.contiguous().view(-1).view(torch.uint8)), \
                (name, start, size, layout)
            if ROWS[name].view and ROWS[name].spec == name != "bits":  # a kernel's output follows x's layout
                assert out.stride() == torch.empty_like(x).stride(), (name, layout)


@ONE_KEY_FOR_ALL
def test_expanded_input():
    """An input with stride 0 (constant along dim 1 of the global tensor, so its block is too)."""
    shape, start, size = (4, 6, 5), [1, 2, 1], [2, 3, 4]
    g = torch.randn(4, 1, 5).expand(shape)
    x = cut(g, start, size)
    assert x.stride()[1] == 0
    view = dict(global_shape=shape, global_start=start)
    for name, out in ops_on(x, KEY, torch.float32, view):
        assert torch.equal(out, cut(dict(ops_on(g, KEY, torch.float32, {}))[name], start, size)), name


@pytest.mark.parametrize("state_shape", [(3, 1, 1, 2), (1, 6, 1, 2), (3, 6, 5, 2), (3, 1, 5, 2)], ids=str)
@ONE_KEY_FOR_ALL
def test_batched_state_spans_the_global_tensor(state_shape):
    shape = (3, 6, 5)
    key = torch.randint(-2**62, 2**62, state_shape, dtype=torch.int64)
    g = torch.randn(shape)
    channels = state_shape[2] == 1
    whole = dict(ops_on(g, key, torch.float32, {}, channels))
    for start, size in blocks(shape):
        x = cut(g, start, size)
        for name, out in ops_on(x, key, torch.float32, dict(global_shape=shape, global_start=start), channels):
            assert torch.equal(out, cut(whole[name], start, size)), (name, start, size)


@ONE_KEY_FOR_ALL
def test_dropout_backward_is_the_block_of_the_global_backward():
    shape = (4, 6, 5)
    g = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    up = torch.randn(shape, dtype=torch.float64)
    for fn in (F.dropout, F.feature_dropout, F.alpha_dropout, F.feature_alpha_dropout, F.quantize_noise):
        (want,) = torch.autograd.grad(fn(g, KEY, 0.3), g, up)
        for start, size in blocks(shape):
            x = cut(g, start, size).detach().requires_grad_()
            out = fn(x, KEY, 0.3, global_shape=shape, global_start=start)
            (got,) = torch.autograd.grad(out, x, cut(up, start, size))
            assert torch.equal(got, cut(want, start, size)), (fn.__name__, start, size)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_any_thread_count(threads):
    shape, start, size = (6, 40000), [1, 7], [4, 39990]  # > 2^15 elements: split over threads
    want = cut(F.uniform(torch.empty(shape), KEY), start, size)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with recompute():
            got = F.uniform(torch.empty(size), KEY, global_shape=shape, global_start=start)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(got, want)


@pytest.mark.parametrize("name", [n for n, row in ROWS.items() if row.view and row.stateful and row.stateful_view])
def test_stateful_calls_advance_by_the_global_blocks(name):
    shape, fn = (5, 7), ROWS[name].stateful
    g = torch.randn(shape)
    ref_gen = torch_rngx.Generator(3)
    want = [fn(g, ref_gen) for _ in range(2)]
    for start, size in blocks(shape):
        gen = torch_rngx.Generator(3)
        for w in want:
            got = fn(cut(g, start, size), gen, global_shape=shape, global_start=start)
            assert torch.equal(got, cut(w, start, size)), (start, size)
        assert torch.equal(gen.get_state(), ref_gen.get_state())


def test_checkpointing_recomputes_the_same_block():
    """A checkpointed region drawing with a global view: recomputation replays the same key (and view), so outputs,
    gradients and the Generator's end state equal the un-checkpointed run."""
    shape, start = (6, 8), [2, 3]

    def block(x, gen):
        return torch_rngx.dropout(x * 2, 0.4, generator=gen, global_shape=shape, global_start=start).sin()

    runs = []
    for wrap in (lambda f, x, gen: f(x, gen), lambda f, x, gen: torch.utils.checkpoint.checkpoint(
            f, x, gen, use_reentrant=False)):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).requires_grad_()
        gen = torch_rngx.Generator(9)
        out = wrap(block, x, gen)
        out.sum().backward()
        runs.append((out.detach(), x.grad, gen.get_state()))
    for a, b in zip(*runs):
        assert torch.equal(a, b)


def test_default_generator_follows_manual_seed():
    shape, start, size = (4, 9), [1, 2], [2, 5]
    torch.manual_seed(11)
    want = torch_rngx.rand_like(torch.empty(shape))
    torch.manual_seed(11)
    got = torch_rngx.rand_like(torch.empty(size), global_shape=shape, global_start=start)
    assert torch.equal(got, cut(want, start, size))


@pytest.mark.parametrize("dynamic", [False, True])
@ONE_KEY_FOR_ALL
def test_compiled_and_exported(dynamic):
    shape, start = (6, 8), (2, 3)

    def f(x, key):
        y = F.dropout(x, key, 0.25, global_shape=shape, global_start=start)
        return F.quantize_noise(y, key, 0.5, global_shape=shape, global_start=start) + F.uniform(
            x, key, global_shape=shape, global_start=start)

    x = torch.randn(3, 4)
    eager = f(x, KEY)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(f, fullgraph=True, dynamic=dynamic)(x, KEY), eager)

    class M(torch.nn.Module):
        def forward(self, x, key):
            return f(x, key)

    assert torch.equal(torch.export.export(M(), (x, KEY)).module()(x, KEY), eager)


@ONE_KEY_FOR_ALL
def test_vmap_rows_are_blocks_too():
    shape, start = (5, 9), [1, 2]
    xs = torch.randn(3, 2, 4)
    got = torch.func.vmap(lambda x: F.dropout(x, KEY, 0.5, global_shape=shape, global_start=start))(xs)
    want = torch.stack([F.dropout(x, KEY, 0.5, global_shape=shape, global_start=start) for x in xs])
    assert torch.equal(got, want)
    keys = torch.stack([KEY, KEY + 1, KEY + 2])
    got = torch.func.vmap(lambda x, k: F.uniform(x, k, global_shape=shape, global_start=start))(xs, keys)
    want = torch.stack([F.uniform(x, k, global_shape=shape, global_start=start) for x, k in zip(xs, keys)])
    assert torch.equal(got, want)


def test_opcheck_with_a_global_view():
    x = torch.randn(3, 4, requires_grad=True)
    view = ([6, 9], [2, 5])
    torch.library.opcheck(ops.uniform.default, (x, KEY, 0.0, 1.0, None, *view))
    torch.library.opcheck(ops.quantize_noise.default, (x, KEY, 0.5, *view))
    torch.library.opcheck(ops.dropout.default, (x, KEY, 0.3, *view))
    torch.library.opcheck(ops.bits.default, ([3, 4], KEY, torch.int32, *view))


BAD_VIEWS = [
    (dict(global_shape=(6, 8)), ValueError, "global_shape and global_start go together"),
    (dict(global_start=(0, 0)), ValueError, "global_shape and global_start go together"),
    (dict(global_shape=(6, 8, 1), global_start=(0, 0, 0)), ValueError, "global_shape needs one entry per dim"),
    (dict(global_shape=(6, 8), global_start=(0,)), ValueError, "global_start needs one entry per dim"),
    (dict(global_shape=(6, 8), global_start=(4, 0)), ValueError, r"dim 0 \(size 3\) starting at global_start\[0\]=4"),
    (dict(global_shape=(2, 8), global_start=(0, 0)), ValueError, r"ends past global_shape\[0\]=2"),
    (dict(global_shape=(6, 8), global_start=(-1, 0)), ValueError, "global_start must hold non-negative"),
    (dict(global_shape=(6, 8.0), global_start=(0, 0)), TypeError, "global_shape must be a sequence of ints"),
    (dict(global_shape=5, global_start=(0, 0)), ValueError, "global_shape needs one entry per dim"),
]


@pytest.mark.parametrize("kwargs,exc,match", BAD_VIEWS)
def test_bad_views_are_rejected_by_name(kwargs, exc, match):
    x = torch.randn(3, 4)
    gen = torch_rngx.Generator(1)
    before = gen.get_state()
    calls = [lambda: F.uniform(x, KEY, **kwargs), lambda: F.quantize_noise(x, KEY, **kwargs),
             lambda: F.dropout(x, KEY, 0.1, **kwargs), lambda: F.feature_dropout(x, KEY, 0.1, **kwargs),
             lambda: F.alpha_dropout(x, KEY, 0.1, **kwargs), lambda: F.bits([3, 4], KEY, **kwargs),
             lambda: torch_rngx.rand_like(x, generator=gen, **kwargs),
             lambda: torch_rngx.quantize(x, generator=gen, **kwargs),
             lambda: torch_rngx.dropout(x, 0.2, generator=gen, **kwargs),
             lambda: torch_rngx.dropout1d(x, 0.2, generator=gen, **kwargs)]
    for call in calls:
        with pytest.raises(exc, match=match):
            call()
    assert torch.equal(gen.get_state(), before)


def test_batched_state_must_match_the_global_shape():
    x = torch.randn(3, 4)
    local_keys = torch.zeros(3, 1, 2, dtype=torch.int64)  # the local block's rows, not the global tensor's
    with pytest.raises(ValueError, match="state of shape"):
        F.uniform(x, local_keys, global_shape=(6, 4), global_start=(0, 0))


@pytest.mark.parametrize("view", [([6], [0]), ([6, 8], [4, 0]), ([6, -8], [0, 0]), ([2**62, 2**62], [0, 0])],
                         ids=["short", "outside", "negative", "overflow"])
def test_direct_op_calls_are_checked_in_cpp(view):
    x = torch.randn(3, 4)
    for call in (lambda: ops.uniform(x, KEY, 0.0, 1.0, None, *view), lambda: ops.quantize_noise(x, KEY, 0.5, *view),
                 lambda: ops.dropout(x, KEY, 0.5, *view), lambda: ops.bits([3, 4], KEY, torch.int32, *view)):
        with pytest.raises(RuntimeError, match="rngx: .*global_shape"):
            call()
