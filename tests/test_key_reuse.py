"""The key-reuse checker (torch_rngx.debug.key_reuse; docs/guide.md, "Catching key reuse"): each listed mistake
is reported with both call sites, and none of the intended reuses is."""
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.utils.checkpoint

import torch_rngx
import torch_rngx.functional as F
from torch_rngx._engine import reuse as _reuse
from torch_rngx.debug import KeyReuseError, KeyReuseWarning, key_reuse

HERE = os.path.abspath(__file__)


def line():
    """The caller's line number, to find it in a report."""
    return sys._getframe(1).f_lineno


def reported(draws):
    """Runs draws() (which returns the lines of the two clashing draws) under the checker; the report's text."""
    with key_reuse("raise"), pytest.raises(KeyReuseError) as error:
        lines = []
        draws(lines)
    first, second = lines
    assert f"{HERE}:{first}" in str(error.value) and f"{HERE}:{second}" in str(error.value), str(error.value)
    return str(error.value)


# ---- the mistakes ----

def test_same_key_to_two_ops():
    key = F.key(7)

    def draws(lines):
        lines.append(line()); F.uniform(torch.empty(10), key)  # noqa: E702
        lines.append(line()); F.dropout(torch.ones(10), key, 0.5)  # noqa: E702

    assert "seed 7" in reported(draws) and "[7, 0]" in reported(draws)


def test_hand_made_key_overlapping_an_earlier_draw():
    def draws(lines):
        lines.append(line()); F.uniform(torch.empty(8), F.key(3))  # noqa: E702  blocks 0 and 1
        F.uniform(torch.empty(8), torch.tensor([3, 2]))  # blocks 2 and 3: no overlap
        lines.append(line()); F.normal(torch.empty(1), torch.tensor([3, 1]))  # noqa: E702  block 1 again

    assert "blocks [1, 2)" in reported(draws)


def test_wide_dtypes_count_their_words():
    """float64 takes 2 words per element: 2 elements fill block 0, so a key at block 1 is free, block 0 is not."""
    with key_reuse("raise"):
        F.uniform(torch.empty(2, dtype=torch.float64), F.key(3))
        F.bits([4], torch.tensor([3, 1]), dtype=torch.int32)
        with pytest.raises(KeyReuseError):
            F.uniform(torch.empty(1), F.key(3))


def test_parent_drawn_after_split():
    key = F.key(11)

    def draws(lines):
        lines.append(line()); F.split(key, 4)  # noqa: E702  the children are blocks 0..3 of the parent
        lines.append(line()); F.uniform(torch.empty(3), key)  # noqa: E702

    reported(draws)


def test_split_child_drawn_twice_and_fold_in_meeting_split():
    key = F.key(12)

    def child_twice(lines):
        child = F.split(key, 2)[1]
        lines.append(line()); F.uniform(torch.empty(3), child)  # noqa: E702
        lines.append(line()); F.bernoulli(torch.empty(3), child)  # noqa: E702

    def fold_meets_split(lines):
        lines.append(line()); F.split(key, 3)  # noqa: E702
        lines.append(line()); F.fold_in(key, 2)  # noqa: E702  fold_in(k, 2) == split(k, 3)[2]

    reported(child_twice)
    reported(fold_meets_split)
    with key_reuse("raise"):  # distinct data: distinct blocks
        F.fold_in(key, 0), F.fold_in(key, 1), F.fold_in(key.expand(2, 2).contiguous(), torch.tensor([2, 3]))


def test_batched_key_with_two_equal_rows():
    key = F.key(5)
    with key_reuse("raise"):
        F.uniform(torch.empty(2, 3), torch.stack([key, F.key(6)]).view(2, 1, 2))
        F.uniform(torch.empty(2, 3), F.key(4).expand(1, 1, 2))  # a broadcast key: one run, read once
    with key_reuse("raise"), pytest.raises(KeyReuseError, match=f"{HERE}:{line() + 1}"):
        F.uniform(torch.empty(2, 3), torch.stack([key, key]).view(2, 1, 2))


def test_generator_state_copied_by_hand():
    g = torch_rngx.Generator(21)
    copy = torch_rngx.Generator(22)
    copy.state.copy_(g.state)

    def draws(lines):
        lines.append(line()); torch_rngx.rand_like(torch.empty(5), generator=g)  # noqa: E702
        lines.append(line()); torch_rngx.dropout(torch.ones(5), 0.5, generator=copy)  # noqa: E702

    def cloned(lines):
        clone = g.clone()
        lines.append(line()); torch_rngx.randn_like(torch.empty(5), generator=clone)  # noqa: E702
        lines.append(line()); torch_rngx.randn_like(torch.empty(5), generator=g)  # noqa: E702

    reported(draws)
    reported(cloned)


def test_an_empty_batched_key_draws_nothing():
    with key_reuse("raise"):
        assert F.uniform(torch.empty(0, 3), torch.zeros(0, 1, 2, dtype=torch.int64)).shape == (0, 3)
        assert F.bits([2, 0, 3], torch.zeros(2, 0, 1, 2, dtype=torch.int64)).shape == (2, 0, 3)
        assert not _reuse.active.seeds


def test_warn_reports_and_goes_on():
    key = F.key(9)
    with key_reuse("warn"), pytest.warns(KeyReuseWarning, match="seed 9"):
        a = F.uniform(torch.empty(4), key)
        b = F.uniform(torch.empty(4), key)
    assert torch.equal(a, b)


def test_off_by_default_and_off_inside_a_block():
    key = F.key(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with key_reuse("off"):
            F.uniform(torch.empty(4), key), F.uniform(torch.empty(4), key)
    with pytest.raises(ValueError, match="action"):
        with key_reuse("loud"):
            pass


def test_a_generator_stream_is_one_range():
    """Memory: ranges that touch merge, so a Generator's thousand draws keep one range."""
    g = torch_rngx.Generator(31)
    with key_reuse("raise"):
        for i in range(1000):
            torch_rngx.dropout(torch.ones(3 + i % 5), 0.5, generator=g)
        assert len(_reuse.active.seeds[31].starts) == 1


def test_adjacent_draws_of_one_key_are_one_range():
    """Memory: a key's draws at consecutive offsets merge into one range; a gap keeps two."""
    with key_reuse("raise"):
        for i in range(100):
            F.uniform(torch.empty(8), torch.tensor([32, 2 * i]))  # 8 float32 elements: blocks 2i and 2i + 1
        assert len(_reuse.active.seeds[32].starts) == 1
        F.uniform(torch.empty(4), torch.tensor([32, 201]))  # block 200 left out
        assert len(_reuse.active.seeds[32].starts) == 2


# ---- intended reuse: quiet ----

def test_backward_recomputes_masks():
    keys, g = F.split(F.key(40)), torch_rngx.Generator(41)
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    with key_reuse("raise"):
        F.dropout(x, keys[0], 0.3).sum().backward()
        F.feature_dropout(x, keys[1], 0.3).sum().backward()
        torch_rngx.dropout2d(x, 0.3, generator=g).sum().backward()
        (torch_rngx.dropout(x, 0.3, generator=g) ** 2).sum().backward(create_graph=True)


def test_checkpoint_replay():
    g = torch_rngx.Generator(42)
    x = torch.randn(4, 8, requires_grad=True)

    def block(t):
        return torch_rngx.dropout(t.sin(), 0.5, generator=g) * F.dropout(t, F.key(43), 0.5)

    with key_reuse("raise"):
        torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False).sum().backward()


def test_vmap_randomness_same():
    g, key = torch_rngx.Generator(44), F.key(45)
    xs = torch.randn(3, 6)
    with key_reuse("raise"):
        same = torch.func.vmap(lambda x: torch_rngx.rand_like(x, generator=g), randomness="same")(xs)
        torch.func.vmap(lambda x: F.dropout(x, key, 0.5))(xs)  # an unbatched key: every row the same
        torch.func.vmap(lambda x: torch_rngx.rand_like(x, generator=g), randomness="different")(xs)
    assert torch.equal(same[0], same[2])


def test_vmap_over_keys_sees_each_row():
    keys = F.split(F.key(46), 3)
    with key_reuse("raise"):
        torch.func.vmap(F.uniform)(torch.empty(3, 4), keys)
        with pytest.raises(KeyReuseError):
            torch.func.vmap(F.uniform)(torch.empty(2, 4), keys[1:])


def test_global_view_blocks():
    """Ranks drawing their blocks of one global tensor: disjoint words, even where a block boundary splits one
    Philox block; a block drawn twice is reported."""
    key, shape = F.key(47), [6, 10]
    with key_reuse("raise"):
        for start in (0, 3, 5):  # column blocks of widths 3, 2 and 5
            width = {0: 3, 3: 2, 5: 5}[start]
            F.uniform(torch.empty(6, width), key, global_shape=shape, global_start=[0, start])
        with pytest.raises(KeyReuseError):
            F.uniform(torch.empty(2, 2), key, global_shape=shape, global_start=[4, 4])
    g = torch_rngx.Generator(48)
    with key_reuse("raise"):  # stateful: each rank's Generator restarts the stream on purpose
        for start in (0, 3):
            g.manual_seed(48)
            torch_rngx.dropout(torch.ones(3, 4), 0.5, generator=g, global_shape=[6, 4], global_start=[start, 0])


def test_restarts_on_purpose():
    x = torch.ones(16)
    with key_reuse("raise"):
        g = torch_rngx.Generator(50)
        for _ in range(2):  # two epochs
            g.manual_seed(50)
            torch_rngx.dropout(x, 0.5, generator=g)
        saved = g.get_state()
        torch_rngx.rand_like(x, generator=g)
        g.set_state(saved)
        torch_rngx.rand_like(x, generator=g)
        model = torch_rngx.nn.Dropout(0.5, seed=51)
        snapshot = {k: v.clone() for k, v in model.state_dict().items()}
        model(x)
        model.load_state_dict(snapshot)
        model(x)
        torch_rngx.Generator(50).manual_seed(50)
        torch.manual_seed(0)
        torch_rngx.dropout(x, 0.5)
        torch.manual_seed(0)
        torch_rngx.dropout(x, 0.5)


# ---- torch.compile: the same key node feeding two draws of one graph, at trace time ----

def test_compile_reports_a_key_node_drawn_twice():
    torch._dynamo.reset()

    def twice(x, k):
        return F.uniform(x, k) + F.dropout(x, k, 0.5)

    def split_first(x, k):
        a, b = F.split(k).unbind(0)
        return F.uniform(x, a) + F.dropout(x, b, 0.5)

    x, k = torch.randn(8), F.key(60)
    with key_reuse("raise"):
        torch.compile(split_first, fullgraph=True)(x, k)
        with pytest.raises(Exception) as error:
            torch.compile(twice, fullgraph=True)(x, k)
    chain = [error.value]  # dynamo wraps what it raises
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    assert any(isinstance(e, KeyReuseError) for e in chain), chain
    text = str(error.value)
    assert "traced by torch.compile" in text and f"{HERE}:{twice.__code__.co_firstlineno + 1}" in text, text
    torch._dynamo.reset()


def test_environment_variable():
    code = ("import torch, torch_rngx.functional as F\n"
            "k = F.key(1)\nF.uniform(torch.empty(2), k)\nF.uniform(torch.empty(2), k)\n")
    env = {**os.environ, "RNGX_DEBUG_KEY_REUSE": "raise"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "KeyReuseError" in run.stderr and "<string>:4" in run.stderr, run.stderr
    env["RNGX_DEBUG_KEY_REUSE"] = "loud"
    run = subprocess.run([sys.executable, "-c", "import torch_rngx"], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "RNGX_DEBUG_KEY_REUSE" in run.stderr, run.stderr
