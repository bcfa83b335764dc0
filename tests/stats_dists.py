"""`make stats`, part two: the distribution checks of tests/test_dist_stats.py at 16 times the samples and more
seeds (a minute or two): normal KS and Anderson-Darling per dtype on 2^24 samples, moments and tail counts
(|z| > 4, 5, 6 on 2^26 float32 samples), truncated normal KS on 2^22, bernoulli and randint chi-square on 2^24.
Prints every statistic; exits 1 if any gate fails."""
import sys

import numpy as np
import torch
from scipy import stats
from test_dist_stats import key, ks_ad_ok, moments_ok, phi, pit
from test_stats import binomial_ok, chi2_uniform_ok

from torch_rngx import functional as F

failures = []


def report(name, result):
    ok, msg = result
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {msg}")
    if not ok:
        failures.append(name)


def main():
    n = 1 << 24
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for seed in (2, 3, 0xC0FFEE):
            z = F.normal(torch.empty(n, dtype=dtype), key(seed)).double().numpy()
            report(f"normal {dtype} seed {seed} KS/AD", ks_ad_ok(pit(z, dtype, np.random.default_rng(seed))))
            if dtype in (torch.float32, torch.float64):
                report(f"normal {dtype} seed {seed} moments", moments_ok(z))
    z = np.abs(F.normal(torch.empty(1 << 26), key(17)).numpy())
    for t in (4.0, 5.0, 6.0):
        report(f"normal float32 |z| > {t}", binomial_ok(int((z > t).sum()), len(z), 2 * float(phi(-t))))
    for mean, std, a, b in ((0.0, 1.0, -2.0, 2.0), (0.0, 1.0, 3.0, 8.0), (2.0, 0.5, -1.0, 1.0)):
        for dtype in (torch.float32, torch.float64):
            v = F.truncated_normal(torch.empty(1 << 22, dtype=dtype), key(int(21 + 10 * a)), mean, std, a, b).double().numpy()
            res = stats.kstest(v, stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std).cdf)
            report(f"truncated_normal {dtype} ({mean}, {std}, [{a}, {b}]) KS", (res.pvalue > 1e-6, f"p={res.pvalue:.3g}"))
    for p in (1e-4, 0.3, 0.5):
        b = F.bernoulli(torch.empty(n), key(31), p).numpy()
        report(f"bernoulli p={p}", binomial_ok(int(b.sum()), n, p))
    for dtype, low, high, buckets in ((torch.int64, 0, 7, 7), (torch.int64, -2**63, 2**63 - 1, 256),
                                      (torch.int64, 0, 3 * 2**30, 3000), (torch.int16, -2**15, 2**15, 65536)):
        v = F.randint(torch.empty(n), key(41), low, high, dtype=dtype).numpy()
        labels = np.floor((v.astype(np.float64) - low) / ((high - low) / buckets)).astype(np.int64)
        report(f"randint {dtype} [{low}, {high})", chi2_uniform_ok(np.minimum(labels, buckets - 1), buckets))
    print(f"{len(failures)} failed" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
