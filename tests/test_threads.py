"""Threads: Python threads running ops at once give what serial calls give; the intra-op thread count does
not change a bit of any op of tests/ops_table.py; a Generator shared by threads hands every eager call its own blocks (docs/guarantees.md)."""
import sys
import threading

import pytest
import torch
from ops_table import draws

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare thread counts")

THREADS = 8


@pytest.fixture
def busy_switching():
    """Make the interpreter switch threads as often as it can, so interleavings actually happen."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_concurrently(fns):
    """Runs each fn on its own thread, all released at once; returns their results, re-raising any error."""
    barrier = threading.Barrier(len(fns))
    results, errors = [None] * len(fns), []

    def body(i):
        try:
            barrier.wait()
            results[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001  (reported below, on the main thread)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def inputs(i):
    """Thread i's tensors: several dtypes and layouts, some large enough for several intra-op tasks."""
    gen = torch.Generator().manual_seed(i)
    big = torch.randn(40, 3, 700, generator=gen)  # 84,000 elements: three parallel tasks
    return [
        big.transpose(0, 2),
        torch.randn(17, 33, generator=gen).to(torch.float16),
        torch.randn(5, 6, 7, 8, generator=gen).to(torch.bfloat16).to(memory_format=torch.channels_last),
        torch.randn(3000, generator=gen, dtype=torch.float64)[::3],
    ]


def program(i):
    """A fixed sequence of calls on thread i's own Generator plus stateless calls with its own state."""
    g = torch_rngx.Generator(1000 + i)
    out = []
    for rep in range(2):
        for x in inputs(i):
            out.append(torch_rngx.rand_like(x, generator=g))
            out.append(torch_rngx.quantize(x, generator=g))
            out.append(torch_rngx.dropout(x, 0.3, generator=g))
            state = torch.tensor([i, rep * 7 + 1], dtype=torch.int64)
            out.append(F.uniform(x, state, -2.0, 5.0))
            out.append(F.bits([x.numel()], state))
            per_row = torch.stack([state + k for k in range(x.shape[0])])  # a key per index of dim 0
            out.append(F.uniform(x, per_row.view([-1] + [1] * (x.dim() - 1) + [2])))
    out.append(g.get_state())
    return out


def assert_bitwise_equal(a, b):
    assert len(a) == len(b)
    for j, (u, v) in enumerate(zip(a, b)):
        assert u.dtype == v.dtype and u.shape == v.shape and u.stride() == v.stride(), j
        as_bytes = lambda t: t.contiguous().reshape(-1).view(torch.uint8)  # noqa: E731  (bitwise, NaN-safe)
        assert torch.equal(as_bytes(u), as_bytes(v)), j


@REUSES_KEYS
def test_threads_with_their_own_generators_equal_serial(busy_switching):
    serial = [program(i) for i in range(THREADS)]
    concurrent = run_concurrently([lambda i=i: program(i) for i in range(THREADS)])
    for i in range(THREADS):
        assert_bitwise_equal(concurrent[i], serial[i])


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@REUSES_KEYS
def test_intra_op_thread_count_does_not_change_values(threads):
    x = torch.randn(70, 5, 401).transpose(0, 1)[:, ::2]  # 70,350 elements, strided: three tasks
    state = torch.tensor([12345, 3], dtype=torch.int64)
    batched = torch.stack([state * (k + 1) for k in range(35)]).view(1, 35, 1, 2)  # dim 0 broadcast: values repeat
    ops = lambda: [*draws(x, state).values(), *draws(x, batched, view=True, channels=False).values()]  # noqa: E731
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        want = ops()
        torch.set_num_threads(threads)
        got = ops()
    finally:
        torch.set_num_threads(old)
    assert_bitwise_equal(got, want)


@pytest.mark.parametrize("threads", [2, 4])
@REUSES_KEYS
def test_shared_generator_gives_every_eager_call_its_own_blocks(busy_switching, threads):
    """A Generator shared by threads: each eager call takes a distinct, whole range of the stream, and the
    offset ends at the total consumed. Which thread gets which range depends on scheduling."""
    calls = 150
    g = torch_rngx.Generator(77)
    x = torch.empty(1000)  # each call consumes exactly 250 blocks

    def worker():
        return [torch_rngx.rand_like(x, generator=g) for _ in range(calls)]

    outs = [o for chunk in run_concurrently([worker] * threads) for o in chunk]
    total = threads * calls
    assert int(g.state[1]) == total * 250 and int(g.state[0]) == 77
    got = sorted(o.numpy().tobytes() for o in outs)
    want = sorted(F.uniform(x, torch.tensor([77, k * 250], dtype=torch.int64)).numpy().tobytes() for k in range(total))
    assert len(set(got)) == total, "two calls drew the same blocks"
    assert got == want, "calls drew blocks outside the ranges the offsets handed out"


def test_take_and_fused_steps_share_one_lock(busy_switching):
    """The C++ steps of a state, called directly (no Python lock): take_ and the fused uniform_from_ and
    quantize_noise_from_ move one state under one lock, so no step is lost and no key is handed out twice."""
    calls, ops = 2000, torch.ops.rngx
    state = torch.tensor([5, 0], dtype=torch.int64)
    x = torch.empty(8)  # 8 float32 elements: 2 blocks per fused call

    def taker():
        return [int(ops.take_(state, 3)[1]) for _ in range(calls)]

    def uniform():
        for _ in range(calls):
            ops.uniform_from_(state, x, 0.0, 1.0, None)

    def noise():
        for _ in range(calls):
            ops.quantize_noise_from_(state, x, 0.5)

    taken = run_concurrently([taker, taker, uniform, noise])
    offsets = taken[0] + taken[1]
    assert int(state[1]) == calls * (3 + 3 + 2 + 2), "a step was lost"
    assert len(set(offsets)) == len(offsets), "take_ handed out one key twice"


def test_step_and_take_share_the_one_lock(busy_switching):
    """rngx::step_ (the C++ step take_'s Python kernel calls for a CPU state), called directly, take_ and a one-call
    op step one state under one lock: the offset ends at the sum of every call's blocks."""
    calls, ops = 2000, torch.ops.rngx
    state = torch.tensor([5, 0], dtype=torch.int64)
    x = torch.empty(8)

    def stepper():
        for _ in range(calls):
            ops.step_(state, 5)

    def taker():
        for _ in range(calls):
            ops.take_(state, 3)

    def uniform():
        for _ in range(calls):
            ops.uniform_from_(state, x, 0.0, 1.0, None)

    run_concurrently([stepper, stepper, taker, uniform])
    assert int(state[1]) == calls * (5 + 5 + 3 + 2), "a step was lost"
