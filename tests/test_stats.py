"""A quick statistical quality gate with fixed seeds: bucket counts (chi-square), means and variances of
uniform and noise, per-bit frequencies, lag-1 correlation, and dropout's keep rate against 1 - p.

Thresholds sit about 5 standard deviations out (a false alarm about once in three million runs per check),
so a correct generator passes with these fixed seeds every time, while a biased one fails: the last tests
feed the same gates deliberately bad data to prove they can. `make stats` runs the longer independence tests.
"""
import math

import numpy as np
import pytest
import torch

from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare one stream cut in different ways")

N = 1 << 20
Z = 5.0  # standard deviations


def state(seed, offset=0):
    return torch.tensor([seed, offset], dtype=torch.int64)


def chi2_bounds(df, z=Z):
    """Wilson-Hilferty: chi-square(df) quantiles at +-z standard normal deviations."""
    a = 2.0 / (9.0 * df)
    return df * (1 - a - z * math.sqrt(a)) ** 3, df * (1 - a + z * math.sqrt(a)) ** 3


def chi2_uniform_ok(labels, buckets):
    """Counts of integer labels in [0, buckets) against equal expected counts: neither too lumpy nor too even."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=buckets)
    assert counts.size == buckets, "labels out of range"
    expected = len(labels) / buckets
    stat = float(((counts - expected) ** 2).sum() / expected)
    lo, hi = chi2_bounds(buckets - 1)
    return lo < stat < hi, f"chi2={stat:.1f}, df={buckets - 1}, bounds=({lo:.1f}, {hi:.1f})"


def mean_ok(v, mu, var):
    m = float(np.mean(v, dtype=np.float64))
    return abs(m - mu) < Z * math.sqrt(var / len(v)), f"mean={m!r}, want {mu} +- {Z * math.sqrt(var / len(v)):.2g}"


def var_ok(v, var, mu4):
    """Sample variance against var; mu4 is the 4th central moment (sets the variance of the estimate)."""
    s2 = float(np.var(np.asarray(v, dtype=np.float64)))
    sd = math.sqrt((mu4 - var**2) / len(v))
    return abs(s2 - var) < Z * sd, f"var={s2!r}, want {var} +- {Z * sd:.2g}"


def binomial_ok(successes, n, p):
    sd = math.sqrt(n * p * (1 - p))
    return abs(successes - n * p) < Z * sd + 1, f"{successes} of {n}, want {n * p:.0f} +- {Z * sd:.0f}"


def uniform_moments_ok(u, low=0.0, high=1.0):
    w = high - low
    ok1, m1 = mean_ok(u, (low + high) / 2, w * w / 12)
    ok2, m2 = var_ok(u, w * w / 12, w**4 / 80)
    return ok1 and ok2, m1 + "; " + m2


def lag1_ok(u):
    r = float(np.corrcoef(u[:-1], u[1:])[0, 1])
    return abs(r) < Z / math.sqrt(len(u)), f"lag-1 correlation {r:.2g}"


def assert_ok(result):
    ok, msg = result
    assert ok, msg


# ---- the generator's output ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 0x5EED])
def test_bits_every_bit_is_a_fair_coin(seed):
    w = F.bits([N], state(seed), dtype=torch.uint32).numpy().astype(np.uint64)
    for b in range(32):
        assert_ok(binomial_ok(int(((w >> np.uint64(b)) & np.uint64(1)).sum()), N, 0.5))
    assert_ok(chi2_uniform_ok(w & np.uint64(0xFF), 256))  # low byte
    assert_ok(chi2_uniform_ok(w >> np.uint64(22), 1024))  # top 10 bits
    assert_ok(lag1_ok(w.astype(np.float64)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_uniform_moments_buckets_and_lag(dtype):
    u = F.uniform(torch.empty(N, dtype=dtype), state(42, 3)).numpy().astype(np.float64)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert_ok(uniform_moments_ok(u))
    assert_ok(chi2_uniform_ok(np.floor(u * 1024), 1024))
    assert_ok(lag1_ok(u))
    if dtype == torch.float64:  # bits below float32's 24: the second word is really used
        assert_ok(chi2_uniform_ok(np.floor(u * 2.0**32) % 256, 256))


@pytest.mark.parametrize("dtype,bits", [(torch.float16, 11), (torch.bfloat16, 8)])
def test_16_bit_uniform_hits_every_value_equally(dtype, bits):
    """float16 and bfloat16 u take 2^11 and 2^8 exact values: each must come up equally often."""
    u = F.uniform(torch.empty(N, dtype=dtype), state(7)).float().numpy()
    m = u * 2.0**bits
    assert (m == np.floor(m)).all() and m.max() < 2**bits
    assert_ok(chi2_uniform_ok(m, 2**bits))


@pytest.mark.parametrize("low,high", [(-0.5, 0.5), (-3.0, 5.0), (100.0, 101.0)])
def test_uniform_range_moments(low, high):
    u = F.uniform(torch.empty(N, dtype=torch.float64), state(11), low, high).numpy()
    assert low <= u.min() and u.max() < high
    assert_ok(uniform_moments_ok(u, low, high))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("half", [0.5, 2.0])
def test_quantize_noise_moments(dtype, half):
    x = torch.zeros(N, dtype=dtype)
    noise = F.quantize_noise(x, state(5, 1), half).double().numpy()
    assert -half <= noise.min() and noise.max() <= half
    if dtype == torch.bfloat16:  # rounding to 8 significand bits blurs the variance; the mean must hold
        assert_ok(mean_ok(noise, 0.0, (2 * half) ** 2 / 12))
    else:
        assert_ok(uniform_moments_ok(noise, -half, half))
        assert_ok(chi2_uniform_ok(np.floor((noise + half) / (2 * half) * 512), 512))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.01, 0.1, 0.5, 0.9])
def test_dropout_keep_rate_is_one_minus_p(dtype, p):
    x = torch.ones(N, dtype=dtype)
    out = F.dropout(x, state(99, 17), p)
    kept = out != 0
    assert_ok(binomial_ok(int(kept.sum()), N, 1 - p))
    assert torch.equal(out[kept], torch.full_like(out[kept], 1 / (1 - p)))  # one rounding of x / (1 - p)
    # The mask is spread evenly: each of 64 contiguous chunks keeps about its share.
    per_chunk = kept.view(64, -1).sum(1).numpy()
    for c in per_chunk:
        assert_ok(binomial_ok(int(c), N // 64, 1 - p))


@REUSES_KEYS
def test_dropout_masks_of_different_dtypes_agree_and_different_seeds_differ():
    a = F.dropout(torch.ones(N), state(3), 0.5) != 0
    assert torch.equal(a, F.dropout(torch.ones(N, dtype=torch.float16), state(3), 0.5) != 0)
    b = F.dropout(torch.ones(N), state(4), 0.5) != 0
    both = int((a & b).sum())  # independent masks overlap on about a quarter
    assert_ok(binomial_ok(both, N, 0.25))


# ---- the gates can fail --------------------------------------------------------------------------------


def test_gates_reject_bad_generators():
    rng = np.random.default_rng(0)
    good = rng.random(N)
    assert uniform_moments_ok(good)[0] and chi2_uniform_ok(np.floor(good * 1024), 1024)[0] and lag1_ok(good)[0]
    # A slight power bias: mean 1/2.02 instead of 1/2.
    assert not uniform_moments_ok(good**1.02)[0]
    # A stuck significand bit (bit 23 of the 24 forced to 0) halves the range.
    stuck = (np.floor(good * 2**24).astype(np.int64) & ~(1 << 23)) * 2.0**-24
    assert not uniform_moments_ok(stuck)[0]
    assert not chi2_uniform_ok(np.floor(stuck * 1024), 1024)[0]
    # A counter is perfectly even: too good to be random.
    assert not chi2_uniform_ok(np.arange(N) % 1024, 1024)[0]
    # Lumpy buckets: one bucket a little too popular.
    lumpy = np.floor(good * 1024)
    lumpy[: N // 200] = 0
    assert not chi2_uniform_ok(lumpy, 1024)[0]
    # Neighbours that follow each other.
    assert not lag1_ok((good[:-1] + 0.02 * good[1:]) / 1.02)[0]
    # A keep rate off by a 1% relative error.
    assert not binomial_ok(int(N * 0.5 * 1.01), N, 0.5)[0]
    # A variance off by 1%.
    assert not var_ok((good - 0.5) * 1.005 + 0.5, 1 / 12, 1 / 80)[0]
