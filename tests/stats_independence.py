"""`make stats`: a longer statistical run (a minute or two) on independence across positions and seeds.

  * words at lags 1..8 within a stream (lag 4 is the same lane of the next Philox block), and consecutive
    calls (a Generator's next call starts where the last ended);
  * seeds next to each other (s, s+1), seeds one key bit apart (avalanche over all 64 bits), and the first
    words of a run of consecutive seeds 0, 1, 2, ...;
  * dropout masks of consecutive calls and of neighbouring seeds;
  * Kolmogorov-Smirnov of float32 and float64 uniform.

Each check prints a p-value. The run fails if any p-value is below ALPHA / checks (Bonferroni), or, for the
chi-square checks, above 1 - that: too lumpy or too regular. SciPy gives exact chi-square and KS p-values; without it the
chi-square p-values come from the Wilson-Hilferty normal approximation and KS is skipped.
"""
import math
import sys
import time

import numpy as np
import torch

from torch_rngx import functional as F

try:
    from scipy import stats as scipy_stats
except ImportError:  # pragma: no cover
    scipy_stats = None

ALPHA = 1e-3
U64 = 1 << 64
results = []  # (name, statistic text, p-value, whether a p-value near 1 (too regular) also fails)


def state(seed, offset=0):
    s = lambda v: v - U64 if v >= 1 << 63 else v  # noqa: E731
    return torch.tensor([s(seed % U64), s(offset % U64)], dtype=torch.int64)


def words(seed, n, offset=0):
    """n words of key (seed, offset); the offset counts 4-word Philox blocks."""
    return F.bits([n], state(seed, offset), dtype=torch.uint32).numpy()


def weak_words(seed, n, offset=0):
    """--weak: a Weyl sequence, seed + golden-ratio steps. Uniform on its own, but it fails independence
    badly; running the checks on it shows that they can fail."""
    i = np.arange(4 * offset, 4 * offset + n, dtype=np.uint64)
    return ((np.uint64(seed % U64) + i * np.uint64(0x9E3779B9)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def two_sided_normal(z):
    return math.erfc(abs(z) / math.sqrt(2))


def chi2_p(stat, df):
    """Upper-tail p-value of chi-square(df)."""
    if scipy_stats is not None:
        return float(scipy_stats.chi2.sf(stat, df))
    z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def record(name, stat_text, p, too_regular_fails=False):
    results.append((name, stat_text, p, too_regular_fails))


def pair_chi2(name, a, b, bits=6):
    """2-D chi-square on the top `bits` bits of paired 32-bit words: 4^bits cells."""
    cells = 1 << (2 * bits)
    idx = (a.astype(np.int64) >> (32 - bits)) << bits | (b.astype(np.int64) >> (32 - bits))
    counts = np.bincount(idx, minlength=cells)
    expected = len(a) / cells
    stat = float(((counts - expected) ** 2).sum() / expected)
    record(name + " (pairs chi2)", f"chi2={stat:.0f} df={cells - 1}", chi2_p(stat, cells - 1), True)


def correlation(name, a, b):
    r = float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])
    record(name + " (correlation)", f"r={r:+.2e}", two_sided_normal(r * math.sqrt(len(a))))


def binomial(name, k, n, p):
    z = (k - n * p) / math.sqrt(n * p * (1 - p))
    record(name, f"{k}/{n} vs {p:.4f} (z={z:+.2f})", two_sided_normal(z))


def lags():
    n = 1 << 24
    w = words(0x5EED, n + 8)
    for lag in (1, 2, 3, 4, 5, 8):
        a, b = w[:n], w[lag : lag + n]
        pair_chi2(f"stream lag {lag}", a, b)
        correlation(f"stream lag {lag}", a, b)


def consecutive_calls():
    """What a Generator hands out: call k+1 starts at offset (k+1) * blocks_used."""
    n = 1 << 23
    first, second = words(7, n, 0), words(7, n, n // 4)
    pair_chi2("consecutive calls", first, second)
    correlation("consecutive calls", first, second)
    p = 0.5
    a = F.dropout(torch.ones(n), state(7, 0), p) != 0
    b = F.dropout(torch.ones(n), state(7, n // 4), p) != 0
    binomial("consecutive dropout masks overlap", int((a & b).sum()), n, (1 - p) ** 2)


def neighbouring_seeds():
    n = 1 << 22
    for base in (0, 0x1234_5678_9ABC_DEF0, 0xFFFF_FFFF, U64 - 1):
        for delta, label in ((1, "s+1"), (1 << 32, "s+2^32")):
            a, b = words(base, n), words(base + delta, n)
            pair_chi2(f"seed {base:#x} vs {label}", a, b)
            correlation(f"seed {base:#x} vs {label}", a, b)
    a = F.dropout(torch.ones(n), state(1), 0.3) != 0
    b = F.dropout(torch.ones(n), state(2), 0.3) != 0
    binomial("dropout masks of seeds 1 and 2 overlap", int((a & b).sum()), n, 0.7 * 0.7)


def avalanche():
    """Flipping any one key bit flips each output bit with probability 1/2."""
    n, base = 1 << 16, 0x0F1E_2D3C_4B5A_6978
    ref = words(base, n)
    for k in range(64):
        other = words(base ^ (1 << k), n)
        diff = np.unpackbits((ref ^ other).view(np.uint8)).sum()
        binomial(f"avalanche, key bit {k:2d}", int(diff), 32 * n, 0.5)


def consecutive_seed_starts():
    """Users seed with 0, 1, 2, ...: the first words of consecutive seeds must look random."""
    seeds = 1 << 16
    first = np.array([int(words(s, 1)[0]) for s in range(seeds)], dtype=np.uint32)
    counts = np.bincount(first >> 22, minlength=1024)
    stat = float(((counts - seeds / 1024) ** 2).sum() / (seeds / 1024))
    record("first word of seeds 0..65535 (chi2)", f"chi2={stat:.0f} df=1023", chi2_p(stat, 1023), True)
    correlation("first words of seeds s and s+1", first[:-1], first[1:])


def ks():
    if scipy_stats is None:
        print("SciPy is not installed: the Kolmogorov-Smirnov checks are skipped.")
        return
    for dtype in (torch.float32, torch.float64):
        u = F.uniform(torch.empty(1 << 22, dtype=dtype), state(2024)).double().numpy()
        r = scipy_stats.kstest(u, "uniform")
        record(f"KS uniform {str(dtype)[6:]}", f"D={r.statistic:.2e}", float(r.pvalue))


def main():
    global words
    if "--weak" in sys.argv:
        words = weak_words
    t0 = time.time()
    for check in (lags, consecutive_calls, neighbouring_seeds, avalanche, consecutive_seed_starts, ks):
        check()
    limit = ALPHA / len(results)
    failed = 0
    for name, text, p, two_tailed in results:
        bad = p < limit or (two_tailed and p > 1 - limit)
        failed += bad
        print(f"{'FAIL' if bad else 'ok  '}  p={p:.3g}  {name}: {text}")
    print(f"{len(results) - failed} passed, {failed} failed (p >= {limit:.1g}, and for chi-square <= 1 - that); "
          f"{time.time() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
