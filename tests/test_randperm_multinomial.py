"""Guarantee: randperm and multinomial give docs/stream.md's values (the independent NumPy reference,
tests/reference.py): randperm sorts range(n) by the int64 keys of bits(), ties by index; multinomial runs the
exponential race (argmin of E / p, the smallest ones in order without replacement). Batched keys give each row its
own key; vmap over keys gives eager's values; the stateful versions follow torch.manual_seed and advance a Generator
by blocks_used. Compiled, exported, threaded and on every Philox path, both run with every other op of
tests/ops_table.py (test_compile, test_simd_paths, test_threads). Statistics: each position of randperm is uniform (chi-square), multinomial's frequencies match the
weights with and without replacement (chi-square; without replacement against the exact first-two-draws law)."""
import itertools

import numpy as np
import pytest
import torch
from conftest import make_state, np_state
from reference import multinomial_ref, randperm_ref
from scipy import stats

import torch_rngx
from torch_rngx import functional as F

STATE = make_state(0xDEADBEEFCAFEF00D, 2**64 - 1)
WEIGHTS = torch.tensor([[0.1, 0.0, 2.0, 0.7, 1.2, 0.0, 3.3], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                        [0.0, 0.0, 5.0, 0.0, 1e-3, 0.0, 2.0]])
P_MIN = 1e-6


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 4099])
def test_randperm_equals_reference(n):
    out = F.randperm(n, STATE)
    assert out.dtype == torch.int64 and out.shape == (n,)
    np.testing.assert_array_equal(out.numpy(), randperm_ref(n, np_state(STATE)))
    assert sorted(out.tolist()) == list(range(n))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.float16, torch.bfloat16,
                                   torch.float32, torch.float64])
def test_randperm_dtypes_are_the_int64_permutation(dtype):
    n = 100
    out = F.randperm(n, STATE, dtype=dtype)
    assert out.dtype == dtype and torch.equal(out.long(), F.randperm(n, STATE))


def test_randperm_batched_keys_give_each_row_its_key():
    keys = torch.stack([make_state(7 + i, 3 * i) for i in range(4)]).view(2, 2, 2)
    out = F.randperm(50, keys)
    assert out.shape == (2, 2, 50)
    for i, j in itertools.product(range(2), range(2)):
        assert torch.equal(out[i, j], F.randperm(50, keys[i, j]))
        np.testing.assert_array_equal(out[i, j].numpy(), randperm_ref(50, np_state(keys[i, j])))


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("num_samples", [1, 2, 3])
def test_multinomial_equals_reference(replacement, num_samples):
    for probs in (WEIGHTS, WEIGHTS[0], WEIGHTS.double(), WEIGHTS.half(), WEIGHTS.T.contiguous().T):
        out = F.multinomial(probs, STATE, num_samples, replacement)
        assert out.dtype == torch.int64 and out.shape == (*probs.shape[:-1], num_samples)
        want = multinomial_ref(probs.double().numpy(), np_state(STATE), num_samples, replacement)
        np.testing.assert_array_equal(out.numpy(), want)
        assert bool((probs.double().gather(-1, out) > 0).all())  # a zero weight never wins


def test_multinomial_without_replacement_is_distinct_and_ordered_by_score():
    out = F.multinomial(WEIGHTS[1], STATE, 7)
    assert sorted(out.tolist()) == list(range(7))
    # the first sample of the draw without replacement is the draw with replacement's first sample
    assert int(out[0]) == int(F.multinomial(WEIGHTS[1], STATE, 1, True)[0])


def test_multinomial_batched_keys_give_each_row_its_key():
    keys = torch.stack([make_state(40 + i, i) for i in range(3)])
    for replacement in (False, True):
        out = F.multinomial(WEIGHTS, keys, 2, replacement)
        for r in range(3):
            assert torch.equal(out[r], F.multinomial(WEIGHTS[r], keys[r], 2, replacement))


def test_multinomial_ties_go_to_the_lowest_index():
    """With a single positive weight left in reach, zero weights (score +inf) tie among themselves: lowest first."""
    w = torch.tensor([0.0, 0.0, 1.0, 0.0])
    assert F.multinomial(w, STATE, 1).tolist() == [2]
    assert F.multinomial(w, STATE, 8, True).tolist() == [2] * 8


def test_stateful_follow_manual_seed_and_generator():
    fns = {"randperm": (lambda g: torch_rngx.randperm(30, generator=g), 30, torch.int64),
           "multinomial": (lambda g: torch_rngx.multinomial(WEIGHTS, 3, generator=g), WEIGHTS.numel(), torch.float32),
           "multinomial_repl": (lambda g: torch_rngx.multinomial(WEIGHTS, 4, True, generator=g), WEIGHTS.numel() * 4,
                                torch.float32)}
    for name, (fn, numel, dtype) in fns.items():
        torch.manual_seed(3)
        a, b = fn(None), fn(None)
        torch.manual_seed(3)
        assert torch.equal(a, fn(None)) and torch.equal(b, fn(None)), name
        g = torch_rngx.Generator(17)
        first = fn(g)
        op = "randperm" if name == "randperm" else "multinomial"
        assert int(g.state[1]) == torch_rngx.blocks_used(numel, dtype, op), name
        assert torch.equal(fn(torch_rngx.Generator(17)), first), name
    assert not torch.equal(torch_rngx.randperm(30), torch_rngx.randperm(30))
    assert torch.equal(torch_rngx.randperm(30, generator=torch_rngx.Generator(17)), F.randperm(30, make_state(17, 0)))
    assert torch_rngx.blocks_used(5, torch.int32, "randperm") == 3
    assert torch_rngx.blocks_used(5, torch.float16, "multinomial") == 3


def test_vmap_over_keys_equals_per_key_calls():
    keys = F.split(STATE, 3)
    out = torch.func.vmap(lambda k: F.multinomial(WEIGHTS, k, 2, True), randomness="different")(keys)
    perms = torch.func.vmap(lambda k: F.randperm(10, k), randomness="different")(keys)
    for i in range(3):
        assert torch.equal(out[i], F.multinomial(WEIGHTS, keys[i], 2, True))
        assert torch.equal(perms[i], F.randperm(10, keys[i]))


# ---- statistics ----

def _chi2_p(counts, expected):
    counts, expected = np.asarray(counts, float).reshape(-1), np.asarray(expected, float).reshape(-1)
    stat = float(((counts - expected) ** 2 / expected).sum())
    return stats.chi2.sf(stat, len(counts) - 1)


def test_randperm_positions_are_uniform():
    """Where value v lands, over 20000 permutations of 8 (one batched call): chi-square per value, 8 x 8 cells."""
    n, reps = 8, 20000
    perms = F.randperm(n, F.split(make_state(5, 0), reps)).numpy()
    counts = np.zeros((n, n))
    for pos in range(n):
        counts[:, pos] = np.bincount(perms[:, pos], minlength=n)
    assert _chi2_p(counts, np.full((n, n), reps / n)) > P_MIN


def test_multinomial_with_replacement_frequencies():
    w = np.array([0.1, 0.0, 2.0, 0.7, 1.2, 0.0, 3.3])
    out = F.multinomial(torch.tensor(w), make_state(8, 0), 200000, True).numpy()
    counts = np.bincount(out, minlength=7)
    assert counts[1] == 0 and counts[5] == 0
    keep = w > 0
    assert _chi2_p(counts[keep], len(out) * w[keep] / w.sum()) > P_MIN


def test_multinomial_without_replacement_first_two_draws():
    """P(first = i, second = j) = p_i / S * p_j / (S - p_i): chi-square over all ordered pairs, 50000 rows."""
    w = np.array([1.0, 2.0, 3.0, 4.0])
    rows = 50000
    out = F.multinomial(torch.tensor(w).expand(rows, 4), make_state(9, 0), 2).numpy()
    counts = np.zeros((4, 4))
    np.add.at(counts, (out[:, 0], out[:, 1]), 1)
    s = w.sum()
    expected = np.array([[w[i] / s * w[j] / (s - w[i]) if i != j else 0 for j in range(4)] for i in range(4)]) * rows
    off = ~np.eye(4, dtype=bool)
    assert counts[~off].sum() == 0
    assert _chi2_p(counts[off], expected[off]) > P_MIN


def test_statistics_gates_can_fail():
    w = np.array([1.0, 2.0, 3.0, 4.0])
    out = F.multinomial(torch.tensor(w), make_state(8, 0), 100000, True).numpy()
    wrong = np.array([1.0, 2.0, 3.0, 4.2])
    assert _chi2_p(np.bincount(out, minlength=4), len(out) * wrong / wrong.sum()) < P_MIN
