"""normal, truncated normal, bernoulli and randint against torch, float32, 2^24 elements (`--log2 N`: 2^N) on 2 threads (`make bench` runs it;
results/perf-log.md, "Distributions"). torch.func._random.normal is timed too where torch has it (2.14+).
Each round times every candidate in turn; a time is the best round. Ratio = torch's time / ours (> 1: faster)."""
import sys
import time

import machine
import torch

import torch_rngx

N = 1 << 24


def _interleaved(fns, budget):
    """Best seconds per call of each fn, the fns taking turns round by round."""
    for fn in fns.values():
        fn()  # warm-up
    best = {name: float("inf") for name in fns}
    deadline = time.perf_counter() + budget * len(fns)
    rounds = 0
    while rounds < 5 or time.perf_counter() < deadline:
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
        rounds += 1
        if rounds >= 60:
            break
    return best


def _func_random_normal(n):
    """torch.func._random.normal on n float32 elements, or None where torch has no CPU kernel for it (< 2.14)."""
    try:
        from torch.func._random import key, normal
        k = key(0)
        normal(k, (4,))
    except (ImportError, NotImplementedError, RuntimeError):
        return None
    return lambda: normal(k, (n,))


def run(budget=0.6, numel=N):
    x = torch.empty(numel)
    g = torch_rngx.Generator(2024)
    rows = []

    def add(what, ours, against, target):
        times = _interleaved({"ours": ours, **against}, budget)
        for name, theirs in against.items():
            rows.append({"what": what, "against": name, "ours_ms": times["ours"] * 1e3, "theirs_ms": times[name] * 1e3,
                         "ratio": times[name] / times["ours"], "target": target[name]})

    against = {"torch.randn_like": lambda: torch.randn_like(x)}
    targets = {"torch.randn_like": 3.0}
    rnd = _func_random_normal(numel)
    if rnd is not None:
        against["torch.func._random.normal"] = rnd
        targets["torch.func._random.normal"] = 5.0
    add("randn_like", lambda: torch_rngx.randn_like(x, generator=g), against, targets)
    add("bernoulli_like(p=0.3)", lambda: torch_rngx.bernoulli_like(x, 0.3, generator=g),
        {"torch.bernoulli": lambda: torch.bernoulli(x, 0.3)}, {"torch.bernoulli": 6.0})
    # torch >= 2.13 samples trunc_normal_ by rejection: std=1 on [-2, 2] redraws the whole tensor until no value is
    # outside (several full draws); std=0.02 (timm's initializers) is one normal_ and a bounds check.
    add("nn.init.trunc_normal_", lambda: torch_rngx.nn.init.trunc_normal_(x, generator=g),
        {"torch.nn.init.trunc_normal_": lambda: torch.nn.init.trunc_normal_(x)}, {"torch.nn.init.trunc_normal_": 2.0})
    add("nn.init.trunc_normal_(std=.02)", lambda: torch_rngx.nn.init.trunc_normal_(x, std=0.02, generator=g),
        {"torch.nn.init.trunc_normal_": lambda: torch.nn.init.trunc_normal_(x, std=0.02)},
        {"torch.nn.init.trunc_normal_": 2.0})
    add("randint_like(0, 1000), int64", lambda: torch_rngx.randint_like(x, 0, 1000, generator=g, dtype=torch.int64),
        {"torch.randint_like": lambda: torch.randint_like(x, 0, 1000, dtype=torch.int64)}, {"torch.randint_like": 2.0})
    return rows


def print_table(rows, numel=N):
    print(f"\ndistributions, float32 2^{numel.bit_length() - 1} elements, {torch.get_num_threads()} threads "
          "(ratio = torch's time / ours; > 1 is faster)")
    print(f"{'what':32s} {'against':28s} {'ours ms':>8s} {'torch ms':>9s} {'ratio':>6s}  target")
    for r in rows:
        print(f"{r['what']:32s} {r['against']:28s} {r['ours_ms']:8.2f} {r['theirs_ms']:9.2f} {r['ratio']:6.2f}  "
              f">= {r['target']} {'met' if r['ratio'] >= r['target'] else 'MISSED'}")


if __name__ == "__main__":
    torch.set_num_threads(min(2, torch.get_num_threads()))
    print(machine.line())
    numel = 1 << int(sys.argv[sys.argv.index("--log2") + 1]) if "--log2" in sys.argv else N  # e.g. --log2 22
    print_table(run(numel=numel), numel)
