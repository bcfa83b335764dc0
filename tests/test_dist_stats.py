"""Guarantee: normal, truncated normal, bernoulli and randint have the distributions they claim, at fixed seeds
(a quick gate in `make test`; `make stats` runs longer versions, tests/stats_dists.py).

- normal, every dtype, 2^20 samples: Kolmogorov-Smirnov and Anderson-Darling (known parameters) on the
  probability integral transform, randomized within each value's rounding interval for the 16-bit types, whose
  values are discrete; mean, variance, skewness and kurtosis; float32 tail counts |z| > 4 and |z| > 5 (2^24 samples);
  the paired outputs: the cosine (even) and sine (odd) elements each pass KS and Anderson-Darling, and the two of
  a pair are uncorrelated, as are their squares (independent normals: Box-Muller's pair is);
- truncated normal: KS against the truncated CDF;
- bernoulli (float and tensor p) and randint (small, odd and 2^62-sized ranges): chi-square.

Thresholds sit about 5 standard deviations out (p about 1e-6), as in tests/test_stats.py; the last test feeds
the gates biased samples to prove they can fail.
"""
import math

import numpy as np
import pytest
import torch
from scipy import special, stats
from test_stats import Z, assert_ok, binomial_ok, chi2_uniform_ok, mean_ok, var_ok

from torch_rngx import functional as F

N = 1 << 20
P_MIN = 1e-6  # KS p-value floor, about 5 standard deviations


def key(seed):
    return torch.tensor([seed, 0], dtype=torch.int64)


def phi(x):
    return special.ndtr(np.asarray(x, dtype=np.float64))


def neighbours(x, dtype):
    """The dtype's values just below and above each value of x (float64 arrays)."""
    if dtype == torch.float16:
        h = x.astype(np.float16)
        return (np.nextafter(h, np.float16(-np.inf)).astype(np.float64), np.nextafter(h, np.float16(np.inf)).astype(np.float64))
    b = torch.from_numpy(x.astype(np.float32)).bfloat16().view(torch.int16).numpy().astype(np.int32) & 0xFFFF
    up = np.where(b >> 15 == 0, b + 1, np.where(b == 0x8000, 1, b - 1))
    down = np.where(b >> 15 == 1, b + 1, np.where(b == 0, 0x8001, b - 1))
    as_f = lambda v: torch.from_numpy((v & 0xFFFF).astype(np.uint16).view(np.int16)).view(torch.bfloat16).double().numpy()  # noqa: E731
    return as_f(down), as_f(up)


def pit(z, dtype, rng):
    """Uniform(0, 1) under the hypothesis: Phi(z), or for the 16-bit types a uniform point of Phi over the interval
    of reals that round to z (as float32 values do: the neighbours' midpoints)."""
    if dtype in (torch.float32, torch.float64):
        return phi(z)
    lo, hi = neighbours(z, dtype)
    a, b = phi((lo + z) / 2), phi((z + hi) / 2)
    return a + rng.random(len(z)) * (b - a)


def anderson_darling_uniform(u):
    """A^2 of uniforms against U(0, 1) (known parameters). Its 1e-6 upper point is about 10 (Marsaglia & Marsaglia)."""
    u = np.sort(np.clip(u, 1e-300, 1 - 1e-16))
    n = len(u)
    i = np.arange(1, n + 1)
    return float(-n - np.mean((2 * i - 1) * (np.log(u) + np.log1p(-u[::-1]))))


def ks_ad_ok(u):
    ks = stats.kstest(u, "uniform")
    a2 = anderson_darling_uniform(u)
    return ks.pvalue > P_MIN and a2 < 10.0, f"KS p={ks.pvalue:.3g}, A^2={a2:.3g}"


def moments_ok(z):
    n = len(z)
    skew, kurt = float(stats.skew(z)), float(stats.kurtosis(z, fisher=False))
    ok1, m1 = mean_ok(z, 0.0, 1.0)
    ok2, m2 = var_ok(z, 1.0, 3.0)
    ok3 = abs(skew) < Z * math.sqrt(6 / n) and abs(kurt - 3) < Z * math.sqrt(24 / n)
    return ok1 and ok2 and ok3, f"{m1}; {m2}; skew={skew:.3g}, kurtosis={kurt:.4g}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("seed", [1, 0x5EED])
def test_normal_ks_ad_and_moments(dtype, seed):
    z = F.normal(torch.empty(N, dtype=dtype), key(seed)).double().numpy()
    assert_ok(ks_ad_ok(pit(z, dtype, np.random.default_rng(seed))))
    if dtype in (torch.float32, torch.float64):  # the 16-bit types' rounding moves the variance by a few 1e-6
        assert_ok(moments_ok(z))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normal_pair_halves_and_their_independence(dtype):
    z = F.normal(torch.empty(2 * N, dtype=dtype), key(11)).double().numpy()
    c, s = z[0::2], z[1::2]
    for half in (c, s):
        assert_ok(ks_ad_ok(phi(half)))
    bound = Z / math.sqrt(N)  # a sample correlation of independent variables has standard deviation 1/sqrt(n)
    for a, b, what in ((c, s, "z"), (c * c, s * s, "z^2")):
        r = float(np.corrcoef(a, b)[0, 1])
        assert_ok((abs(r) < bound, f"corr({what}) = {r:.3g}, bound {bound:.3g}"))


def test_normal_tails_float32():
    z = np.abs(F.normal(torch.empty(1 << 24), key(7)).numpy())
    for t in (4.0, 5.0):
        assert_ok(binomial_ok(int((z > t).sum()), len(z), 2 * float(phi(-t))))
    assert float(z.max()) <= math.sqrt(64 * math.log(2)) + 1e-6  # the largest |z| the method can give


def test_normal_mean_std_scale_the_standard_values():
    z = F.normal(torch.empty(N, dtype=torch.float64), key(3), -2.0, 0.5).numpy()
    assert_ok(mean_ok(z, -2.0, 0.25))
    assert_ok(var_ok(z, 0.25, 3 * 0.25**2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.3), (0.0, 1.0, 2.5, 3.5),
                                          (1.0, 0.1, -5.0, 0.85), (0.0, 1.0, -7.0, -6.0)])
def test_truncated_normal_ks(dtype, mean, std, a, b):
    v = F.truncated_normal(torch.empty(N // 4, dtype=dtype), key(11), mean, std, a, b).double().numpy()
    assert v.min() >= a and v.max() <= b
    al, be = (a - mean) / std, (b - mean) / std
    res = stats.kstest(v, stats.truncnorm(al, be, loc=mean, scale=std).cdf)
    assert res.pvalue > P_MIN, f"KS p={res.pvalue:.3g}"


@pytest.mark.parametrize("p", [0.001, 0.1, 0.5, 0.9])
def test_bernoulli_rate_and_pairs(p):
    b = F.bernoulli(torch.empty(N), key(5), p).numpy().astype(np.int64)
    assert_ok(binomial_ok(int(b.sum()), N, p))
    pairs = 2 * b[:-1:2] + b[1::2]  # consecutive elements independent: chi-square against p's pair frequencies
    expected = np.array([(1 - p) ** 2, (1 - p) * p, p * (1 - p), p * p]) * len(pairs)
    stat = float(((np.bincount(pairs, minlength=4) - expected) ** 2 / expected).sum())
    assert stat < stats.chi2.ppf(1 - P_MIN, 3), f"pairs chi2={stat:.3g}"


def test_bernoulli_tensor_p_per_column():
    p = torch.linspace(0.05, 0.95, 16)
    b = F.bernoulli(torch.empty(N // 16, 16), key(6), p).numpy()
    for j in range(16):
        assert_ok(binomial_ok(int(b[:, j].sum()), b.shape[0], float(p[j])))


@pytest.mark.parametrize("dtype,low,high,buckets", [(torch.int64, 0, 6, 6), (torch.int8, -100, 27, 127),
                                                    (torch.int32, 5, 5 + 1000, 1000), (torch.uint8, 0, 256, 256),
                                                    (torch.int64, 0, 3 << 60, 48), (torch.int32, -2**31, 2**31, 64)])
def test_randint_chi_square(dtype, low, high, buckets):
    v = F.randint(torch.empty(N), key(9), low, high, dtype=dtype).numpy().astype(np.float64)
    assert v.min() >= low and v.max() < high
    labels = np.floor((v - low) / ((high - low) / buckets)).astype(np.int64)  # equal-width buckets of the range
    assert_ok(chi2_uniform_ok(labels, buckets))


def test_gates_reject_biased_samples():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(N) * 1.01  # 1% too wide
    assert not ks_ad_ok(phi(z))[0] or not moments_ok(z)[0]
    assert not ks_ad_ok(phi(rng.standard_t(50, N)))[0]  # heavier tails
    biased = rng.integers(0, 1000, N)
    biased[:3000] = 7  # one value 3x too often
    assert not chi2_uniform_ok(biased, 1000)[0]
