"""Per-call cost of every public stateful function against torch's equivalent, on one thread at 2^10 and 2^14
float32 elements, eager and compiled (`make bench` runs it; results/perf-log.md, "Per call").

Targets: the training step's rows (issue 32: eager rand_like, quantize noise, dropout forward and dropout fwd+bwd,
and a compiled fullgraph dropout step, at 2^10) <= 1.3x torch's time; every other eager row <= 1.5x, every other
compiled step <= 1.1x. A time is the best of several rounds in which ours and torch's take turns; compare the
ratios, not the absolute times, and the spread of the ratio over the rounds says how quiet the machine was.

    python3 benchmarks/per_call.py            every row, with the machine it ran on
    python3 benchmarks/per_call.py --step     the training step's rows alone, at 2^10
"""
import timeit

import machine
import torch
import torch.nn.functional as F

import torch_rngx

EAGER_TARGET, COMPILED_TARGET, STEP_TARGET = 1.5, 1.1, 1.3


def best(fn, budget):
    """Seconds per call: the best of 5 repeats of about budget/20 seconds each."""
    fn()
    n = max(1, int(budget / 20 / max(timeit.timeit(fn, number=1), 1e-7)))
    return min(timeit.repeat(fn, number=n, repeat=5)) / n


def _fwd_bwd(f, x):
    def run():
        f(x).sum().backward()

    return run


def _cases(numel):
    x = torch.randn(numel)
    xg = torch.randn(numel, requires_grad=True)
    g, tg = torch_rngx.Generator(1), torch.Generator().manual_seed(1)
    ours_drop, torch_drop = torch_rngx.nn.Dropout(0.1, seed=3), torch.nn.Dropout(0.1)
    return [
        ("rand_like(x, generator=g)", "torch.rand(x.shape, generator=tg)",
         lambda: torch_rngx.rand_like(x, generator=g), lambda: torch.rand(x.shape, generator=tg)),
        ("uniform_like(x, -1, 1, generator=g)", "torch.empty_like(x).uniform_(-1, 1, generator=tg)",
         lambda: torch_rngx.uniform_like(x, -1.0, 1.0, generator=g),
         lambda: torch.empty_like(x).uniform_(-1.0, 1.0, generator=tg)),
        ('quantize(x, "noise")', "x + torch.empty_like(x).uniform_(-.5, .5)",
         lambda: torch_rngx.quantize(x, "noise"), lambda: x + torch.empty_like(x).uniform_(-0.5, 0.5)),
        ('quantize(x, "noise") fwd+bwd', "the same, fwd+bwd",
         _fwd_bwd(lambda t: torch_rngx.quantize(t, "noise"), xg),
         _fwd_bwd(lambda t: t + torch.empty_like(t).uniform_(-0.5, 0.5), xg)),
        ("dropout(x, 0.1)", "F.dropout(x, 0.1)", lambda: torch_rngx.dropout(x, 0.1), lambda: F.dropout(x, 0.1)),
        ("dropout(x, 0.1) fwd+bwd", "F.dropout fwd+bwd",
         _fwd_bwd(lambda t: torch_rngx.dropout(t, 0.1), xg), _fwd_bwd(lambda t: F.dropout(t, 0.1), xg)),
        ("nn.Dropout(0.1, seed=3)(x)", "nn.Dropout(0.1)(x)", lambda: ours_drop(x), lambda: torch_drop(x)),
        ("randn_like(x, generator=g)", "torch.randn(x.shape, generator=tg)",
         lambda: torch_rngx.randn_like(x, generator=g), lambda: torch.randn(x.shape, generator=tg)),
        ("normal_like(x, 1, 2, generator=g)", "torch.empty_like(x).normal_(1, 2, generator=tg)",
         lambda: torch_rngx.normal_like(x, 1.0, 2.0, generator=g),
         lambda: torch.empty_like(x).normal_(1.0, 2.0, generator=tg)),
        ("bernoulli_like(x, 0.3, generator=g)", "torch.bernoulli(torch.full_like(x, 0.3), generator=tg)",
         lambda: torch_rngx.bernoulli_like(x, 0.3, generator=g),
         lambda: torch.bernoulli(torch.full_like(x, 0.3), generator=tg)),
        ("randint_like(x, 10, generator=g)", "torch.randint(10, x.shape, generator=tg)",
         lambda: torch_rngx.randint_like(x, 10, generator=g), lambda: torch.randint(10, x.shape, generator=tg)),
    ]


def _step_cases(numel):
    """The training step's rows (issue 32), each with its target."""
    x, xg = torch.randn(numel), torch.randn(numel, requires_grad=True)
    g, tg = torch_rngx.Generator(1), torch.Generator().manual_seed(1)
    t = torch.randn(numel, requires_grad=True)
    ours_step = _fwd_bwd(torch.compile(lambda v: torch_rngx.dropout(v * 2, 0.1, generator=g) + 1, fullgraph=True), t)
    torch_step = _fwd_bwd(torch.compile(lambda v: F.dropout(v * 2, 0.1) + 1, fullgraph=True), t)
    return [
        ("rand_like(x, generator=g)", "torch.rand(x.shape, generator=tg)",
         lambda: torch_rngx.rand_like(x, generator=g), lambda: torch.rand(x.shape, generator=tg)),
        ('quantize(x, "noise")', "x + torch.empty_like(x).uniform_(-.5, .5)",
         lambda: torch_rngx.quantize(x, "noise"), lambda: x + torch.empty_like(x).uniform_(-0.5, 0.5)),
        ("dropout(x, 0.1)", "F.dropout(x, 0.1)", lambda: torch_rngx.dropout(x, 0.1), lambda: F.dropout(x, 0.1)),
        ("dropout(x, 0.1) fwd+bwd", "F.dropout fwd+bwd",
         _fwd_bwd(lambda v: torch_rngx.dropout(v, 0.1), xg), _fwd_bwd(lambda v: F.dropout(v, 0.1), xg)),
        ("dropout(x, 0.1, generator=g) fwd+bwd", "F.dropout fwd+bwd",
         _fwd_bwd(lambda v: torch_rngx.dropout(v, 0.1, generator=g), xg), _fwd_bwd(lambda v: F.dropout(v, 0.1), xg)),
        ("compiled dropout(x * 2, generator=g) + 1, fwd+bwd", "the same with F.dropout", ours_step, torch_step),
    ]


def _compiled_cases(numel):
    x = torch.randn(numel, requires_grad=True)
    g = torch_rngx.Generator(1)
    steps = [
        ("compiled dropout(x * 2, generator=g) + 1, fwd+bwd", "the same with F.dropout",
         lambda t: torch_rngx.dropout(t * 2, 0.1, generator=g) + 1, lambda t: F.dropout(t * 2, 0.1) + 1),
        ('compiled quantize(x * 2, "noise", generator=g), fwd+bwd', "the same with uniform_",
         lambda t: torch_rngx.quantize(t * 2, "noise", generator=g),
         lambda t: t * 2 + torch.empty_like(t).uniform_(-0.5, 0.5)),
        ("compiled x * rand_like(x, generator=g), fwd+bwd", "the same with torch.rand_like",
         lambda t: t * torch_rngx.rand_like(t, generator=g), lambda t: t * torch.rand_like(t)),
    ]
    return [(a, b, _fwd_bwd(torch.compile(f, fullgraph=True), x), _fwd_bwd(torch.compile(h, fullgraph=True), x))
            for a, b, f, h in steps]


def _rows(cases, target, log2, budget, rounds):
    rows = []
    for ours_name, torch_name, ours, theirs in cases:
        t_ours, t_torch, ratios = float("inf"), float("inf"), []
        for _ in range(rounds):  # the two alternate: noise only ever adds time
            a, b = best(ours, budget), best(theirs, budget)
            t_ours, t_torch = min(t_ours, a), min(t_torch, b)
            ratios.append(a / b)
        ratio = t_ours / t_torch
        rows.append({"call": ours_name, "against": torch_name, "numel": f"2^{log2}",
                     "ours_us": round(t_ours * 1e6, 2), "torch_us": round(t_torch * 1e6, 2),
                     "ratio": round(ratio, 2), "spread": (round(min(ratios), 2), round(max(ratios), 2)),
                     "target": target, "met": ratio <= target})
    return rows


def run(budget=0.4, sizes=(10, 14), compiled=True, rounds=2, step_only=False):
    """Rows of {call, against, numel, ours_us, torch_us, ratio, spread, target, met}: the training step's rows at
    2^10 first, then (unless step_only) every function at each size."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = _rows(_step_cases(1 << 10), STEP_TARGET, 10, budget, rounds)
        for log2 in () if step_only else sizes:
            rows += _rows(_cases(1 << log2), EAGER_TARGET, log2, budget, rounds)
            if compiled:
                rows += _rows(_compiled_cases(1 << log2), COMPILED_TARGET, log2, budget, rounds)
    finally:
        torch.set_num_threads(threads)
    return rows


def print_table(rows):
    print(f"\nper call, 1 thread; {machine.line()}")
    print("(ratio = ours / torch's time, each the best of its rounds; spread: the ratio's range over the rounds)")
    print(f"{'call':58s} {'numel':>5s} {'ours us':>8s} {'torch us':>8s} {'ratio':>6s} {'spread':>11s}  target")
    for r in rows:
        spread = f"{r['spread'][0]:.2f}-{r['spread'][1]:.2f}"
        print(f"{r['call']:58s} {r['numel']:>5s} {r['ours_us']:8.1f} {r['torch_us']:8.1f} {r['ratio']:6.2f} "
              f"{spread:>11s}  <= {r['target']} {'met' if r['met'] else 'MISSED'}")


if __name__ == "__main__":
    import sys

    if "--step" in sys.argv:
        print_table(run(step_only=True, rounds=5))
    else:
        print_table(run(sizes=(10,)) if "--small" in sys.argv else run())
