"""A call that raises leaves every state as it was (docs/guarantees.md, "Nothing but the output is written"): a
torch_rngx.Generator, an nn.RNG, a module's own stream, a mode's stream and torch's default generator. Calls refused
by a check raise before they draw; a call that fails after its draw (here: an allocation of 2^52 bytes and more, past
any machine's address space) gives the blocks back, and the next call draws them as if the failed one had not been
made. Issue 43, item 5.
"""
import contextlib
import threading
import warnings

import pytest
import torch
import torch.nn.functional as TF

import torch_rngx
from torch_rngx import _C, nn
from torch_rngx._engine import step as _step

HUGE = 2**50  # elements: 4 PiB of float32, an allocation that fails at once


def huge(*shape):
    """A float tensor of HUGE elements in one stored value: every output laid out like it fails to allocate."""
    return torch.ones(*[1] * len(shape)).expand(*shape)


def expanded():
    """A small tensor whose elements share memory: torch refuses to write it in place."""
    return torch.ones(1, 3, 1, 1).expand(2, 3, 4, 4)


# ---- the streams a call draws from: each gives the call's generator= and reads every state it may move ----


class Stream:
    def __init__(self, name, generator, states):
        self.name, self.generator, self.states = name, generator, states

    def snapshot(self):
        return [s().clone() for s in self.states]


def streams():
    g, rng, module = torch_rngx.Generator(7), nn.RNG(7), nn.Dropout(seed=7)
    torch_gen = torch.default_generator.get_state
    return [
        Stream("Generator", g, [lambda: g.state, torch_gen]),
        Stream("nn.RNG", rng, [lambda: rng.state, torch_gen]),
        # what an nn module passes for its own buffer (nn.Dropout(seed=)): the router's Owned
        Stream("module", torch_rngx._engine.router.Owned(module.rng_state), [lambda: module.rng_state, torch_gen]),
        Stream("torch's generator", None, [torch_gen]),
    ]


STREAMS = [s.name for s in streams()]


def _stream(name):
    return next(s for s in streams() if s.name == name)


def raises_leaving_states(stream, call, match=None):
    before = stream.snapshot()
    with pytest.raises((RuntimeError, ValueError, TypeError), match=match):
        call()
    for b, a in zip(before, stream.snapshot()):
        assert torch.equal(a, b), f"{stream.name}: a state moved"


# ---- issue 43's cases, each with every stream ----

OVERLAP = "more than one element of the written-to tensor"
CASES = {
    "multinomial, a NaN weight": (lambda g: torch_rngx.multinomial(torch.tensor([1.0, float("nan")]), 1, generator=g),
                                  "finite"),
    "dropout in place, a leaf that requires grad": (
        lambda g: torch_rngx.dropout(torch.ones(4, requires_grad=True), 0.5, inplace=True, generator=g), "leaf"),
    "dropout in place, a view of one": (
        lambda g: torch_rngx.dropout(torch.ones(4, requires_grad=True)[1:], 0.5, inplace=True, generator=g), "leaf"),
    "dropout in place, an inference tensor": (
        lambda g: torch_rngx.dropout(_inference(), 0.5, inplace=True, generator=g), "inference"),
    "dropout in place, expanded": (lambda g: torch_rngx.dropout(expanded(), 0.5, inplace=True, generator=g), OVERLAP),
    "dropout2d in place, expanded": (lambda g: torch_rngx.dropout2d(expanded(), 0.5, inplace=True, generator=g),
                                     OVERLAP),
    "alpha_dropout in place, expanded": (
        lambda g: torch_rngx.alpha_dropout(expanded(), 0.5, True, inplace=True, generator=g), OVERLAP),
    "feature_alpha_dropout in place, expanded": (
        lambda g: torch_rngx.feature_alpha_dropout(expanded(), 0.5, True, inplace=True, generator=g), OVERLAP),
    "nn.init.trunc_normal_, expanded": (
        lambda g: nn.init.trunc_normal_(torch.empty(1).expand(4), generator=g), OVERLAP),
    "rand_like of a 2^50 expanded view": (lambda g: torch_rngx.rand_like(huge(HUGE), generator=g), None),
    # 2^45 int64 keys: 256 TiB, past the address space even where the kernel overcommits memory
    "randperm(2^45)": (lambda g: torch_rngx.randperm(2**45, generator=g), None),
}


def _inference():
    with torch.inference_mode():
        return torch.ones(4)


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("case", CASES)
def test_a_refused_call_leaves_every_state(case, stream):
    call, match = CASES[case]
    s = _stream(stream)
    raises_leaving_states(s, lambda: call(s.generator), match)


def test_a_dropout_module_on_its_own_buffer_is_refused():
    """nn.Dropout(inplace=True, seed=) given a view of its own stream's state would write the mask over the stream's
    [seed, offset]: refused, naming the argument, the state as it was."""
    m = nn.Dropout(inplace=True, seed=3)
    before = m.rng_state.clone()
    with pytest.raises(ValueError, match="input shares memory with the state"):
        m(m.rng_state.view(torch.float64))
    assert torch.equal(m.rng_state, before)


# ---- the general rule: a failure after the draw gives the blocks back, for every function that draws ----

AFTER_THE_DRAW = {
    "rand_like": lambda g: torch_rngx.rand_like(huge(HUGE), generator=g),
    "uniform_like": lambda g: torch_rngx.uniform_like(huge(HUGE), -1.0, 1.0, generator=g),
    "randn_like": lambda g: torch_rngx.randn_like(huge(HUGE), generator=g),
    "normal_like": lambda g: torch_rngx.normal_like(huge(HUGE), 1.0, 2.0, generator=g),
    "bernoulli_like": lambda g: torch_rngx.bernoulli_like(huge(HUGE), 0.3, generator=g),
    "randint_like": lambda g: torch_rngx.randint_like(huge(HUGE), 0, 10, generator=g, dtype=torch.int64),
    "randint_like, wide range": lambda g: torch_rngx.randint_like(huge(HUGE), 0, 2**40, generator=g,
                                                                  dtype=torch.int64),
    "randint_like to float": lambda g: torch_rngx.randint_like(huge(HUGE), 0, 10, generator=g),
    "exponential_like": lambda g: torch_rngx.exponential_like(huge(HUGE), generator=g),
    "quantize": lambda g: torch_rngx.quantize(huge(HUGE), generator=g),
    "dropout": lambda g: torch_rngx.dropout(huge(HUGE), 0.5, generator=g),
    "dropout, global view": lambda g: torch_rngx.dropout(huge(HUGE), 0.5, generator=g, global_shape=[HUGE * 2],
                                                         global_start=[HUGE]),
    "dropout1d": lambda g: torch_rngx.dropout1d(huge(2, 3, HUGE), 0.5, generator=g),
    "dropout2d": lambda g: torch_rngx.dropout2d(huge(2, 3, 2**24, 2**24), 0.5, generator=g),
    "dropout3d": lambda g: torch_rngx.dropout3d(huge(2, 3, 2**16, 2**16, 2**16), 0.5, generator=g),
    "alpha_dropout": lambda g: torch_rngx.alpha_dropout(huge(HUGE), 0.5, True, generator=g),
    "feature_alpha_dropout": lambda g: torch_rngx.feature_alpha_dropout(huge(2, 3, HUGE), 0.5, True, generator=g),
    "randperm": lambda g: torch_rngx.randperm(2**45, generator=g),
    "multinomial": lambda g: torch_rngx.multinomial(torch.ones(2, 4), 2**48, True, generator=g),
    "nn.Dropout": lambda g: _module(nn.Dropout(0.5), g)(huge(HUGE)),
}


def _module(m, g):
    if isinstance(g, torch_rngx._engine.router.Owned):  # the module's own stream: its buffer
        m = type(m)(m.p, seed=0)
        m.rng_state = g.state
    elif g is not None:
        m = type(m)(m.p, generator=g)
    return m


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("fn", AFTER_THE_DRAW)
def test_a_failure_after_the_draw_gives_the_blocks_back(fn, stream, monkeypatch):
    """Each of these allocates its output after it drew its key: the blocks come back, and the next call draws what
    it would have drawn without the failed one. With give_back disabled the state would have moved: each call does
    fail after its draw."""
    call, s = AFTER_THE_DRAW[fn], _stream(stream)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # randint_like to float32 past 2^24
        raises_leaving_states(s, lambda: call(s.generator))
        with monkeypatch.context() as patched:
            patched.setattr(_step, "give_back", lambda mark, owner: None)
            moved = _stream(stream)
            before = moved.snapshot()
            with pytest.raises(RuntimeError):
                call(moved.generator)
            assert any(not torch.equal(b, a) for b, a in zip(before, moved.snapshot()))


@pytest.mark.parametrize("stream", ["Generator", "torch's generator"])
def test_after_a_failed_call_the_stream_goes_on_as_without_it(stream):
    """The same seed: a failed draw, then good ones, gives the values of the good ones alone."""
    x = torch.empty(2**21)  # past the size from which torch's generator is saved

    def run(fail):
        torch.manual_seed(5)
        g = torch_rngx.Generator(5) if stream == "Generator" else None
        if fail:
            with pytest.raises(RuntimeError):
                torch_rngx.dropout(huge(HUGE), 0.5, generator=g)
        return [torch_rngx.rand_like(x, generator=g), torch_rngx.dropout(torch.ones(8), 0.5, generator=g)]

    for a, b in zip(run(True), run(False)):
        assert torch.equal(a, b)


# ---- the same under torch_rngx.mode: torch's calls, routed ----

MODE_CASES = {
    "torch.multinomial, a NaN weight": lambda: torch.multinomial(torch.tensor([1.0, float("nan")]), 1),
    "F.dropout in place, a leaf": lambda: TF.dropout(torch.ones(4, requires_grad=True), 0.5, inplace=True),
    "F.dropout in place, expanded": lambda: TF.dropout(expanded(), 0.5, inplace=True),
    "F.dropout2d in place, expanded": lambda: TF.dropout2d(expanded(), 0.5, inplace=True),
    "F.alpha_dropout in place, expanded": lambda: TF.alpha_dropout(expanded(), 0.5, True, inplace=True),
    "Tensor.uniform_, expanded": lambda: torch.empty(1).expand(4).uniform_(),
    "Tensor.normal_, a leaf": lambda: torch.empty(4, requires_grad=True).normal_(),
    "nn.init.trunc_normal_, expanded": lambda: torch.nn.init.trunc_normal_(torch.empty(1).expand(4)),
    "torch.rand_like of a 2^50 view": lambda: torch.rand_like(huge(HUGE)),
    "torch.randperm(2^45)": lambda: torch.randperm(2**45),
    "F.dropout of a 2^50 view": lambda: TF.dropout(huge(HUGE), 0.5),
    "SDPA, value of the wrong length": lambda: TF.scaled_dot_product_attention(
        torch.ones(1, 2, 4, 8), torch.ones(1, 2, 5, 8), torch.ones(1, 2, 6, 8), dropout_p=0.5),
    "nn.LSTM, dropout then a failed layer": lambda: _failing_lstm(),
}


def _failing_lstm():
    """torch.lstm (nn.LSTM's op) over two layers whose second layer's weights are float64: the route runs layer 0
    and draws its dropout, then layer 1 raises."""
    weights = [torch.ones(16, 4), torch.ones(16, 4), torch.ones(16), torch.ones(16)]
    weights += [w.double() for w in weights]
    state = (torch.zeros(2, 1, 4), torch.zeros(2, 1, 4))
    return torch.lstm(torch.ones(2, 1, 4), state, weights, True, 2, 0.5, True, False, False)


def _mode(which, rng):
    return {"seed": lambda: torch_rngx.mode(seed=3), "generator": lambda: torch_rngx.mode(generator=rng),
            "torch's generator": lambda: torch_rngx.mode()}[which]()


LSTM = "nn.LSTM, dropout then a failed layer"
# torch's own recurrent op draws layer 0's dropout from torch's generator before layer 1 fails: routed through a mode
# that draws from torch's generator, the call moves it as torch's op does (test below).
MODE_PARAMS = [(c, w) for c in MODE_CASES for w in ("seed", "generator", "torch's generator")
               if (c, w) != (LSTM, "torch's generator")]


@pytest.mark.parametrize("case, which", MODE_PARAMS)
def test_a_refused_call_under_the_mode_leaves_every_state(case, which):
    rng = nn.RNG(3)
    mode = _mode(which, rng)
    states = [torch.default_generator.get_state] + ([lambda: mode.generator.state] if mode.generator is not None else [])
    with mode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_leaving_states(Stream(which, None, states), MODE_CASES[case])


def test_a_failed_recurrent_op_moves_torchs_generator_as_torchs_own_op_does():
    def moved(mode):
        before = torch.default_generator.get_state()
        with mode, pytest.raises(RuntimeError):
            _failing_lstm()
        return not torch.equal(before, torch.default_generator.get_state())

    assert moved(contextlib.nullcontext()) and moved(torch_rngx.mode())


# ---- threads: blocks another thread drew since are never given back ----


def test_a_failed_call_gives_back_only_while_no_one_drew_after_it():
    """A step, another thread's step past it, then the give back of the first: the state stays where the other
    thread left it, so no block is drawn twice. The give back of the newest step works, and the older one's after
    it."""
    g = torch_rngx.Generator(11)
    mark = _C.steps_made()
    torch.ops.rngx.step_(g.state, 3)  # ours
    other = threading.Thread(target=lambda: torch.ops.rngx.step_(g.state, 5))
    other.start()
    other.join()
    _step.give_back(mark, g.state)
    assert g.state.tolist() == [11, 8]

    mark = _C.steps_made()
    torch.ops.rngx.step_(g.state, 2)
    torch.ops.rngx.step_(g.state, 4)
    _step.give_back(mark, g.state)
    assert g.state.tolist() == [11, 8]
    _step.give_back(mark, g.state)  # twice: nothing more to give
    assert g.state.tolist() == [11, 8]


def test_the_key_reuse_checker_forgets_blocks_given_back():
    """Under the checker, the blocks of a failed call drawn again by the next call are no reuse; a draw over blocks
    drawn before the failed one still is."""
    g = torch_rngx.Generator(12)
    with torch_rngx.debug.key_reuse("raise"):
        torch_rngx.rand_like(torch.empty(8), generator=g)  # blocks [0, 2)
        with pytest.raises(RuntimeError):
            torch_rngx.rand_like(huge(HUGE), generator=g)
        torch_rngx.rand_like(torch.empty(8), generator=g)  # blocks [2, 4), as the failed call's first
        g.state[1] = 1
        with pytest.raises(torch_rngx.debug.KeyReuseError):
            torch_rngx.rand_like(torch.empty(8), generator=g)
