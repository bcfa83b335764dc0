"""What torch_rngx.mode costs (`make bench` runs it; results/perf-log.md, "torch_rngx.mode"): a small transformer's
training step (dropout 0.1 in its modules and in attention) with and without the mode, eager and torch.compile'd,
side by side in one run. Ratio = with / without (targets: eager <= 1.10, compiled <= 1.02). Then a 3-layer MLP's
whole eager step (forward, backward, Adam) inside the mode, by `uncovered` (no target: on a model this small the
per-call cost of any torch function mode shows, and under "warn" the net's). `python3 benchmarks/mode.py [threads]`
runs this section alone (2 threads unless told)."""
import contextlib
import sys

import torch
from per_call import best

import torch_rngx


def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.1, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _step(model, x, opt, stream):
    def run():
        opt.zero_grad()
        if stream is None:
            loss = model(x).square().mean()
        else:
            with torch_rngx.mode(generator=stream):
                loss = model(x).square().mean()
        loss.backward()
        opt.step()

    return run


def run(budget=0.6):
    tokens = torch.randn(8, 64, 128)
    rows = []
    for compiled in (False, True):
        model = _encoder()
        stepped = torch.compile(model, fullgraph=True) if compiled else model
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        steps = {"with": _step(stepped, tokens, opt, torch_rngx.Generator(0)),
                 "without": _step(stepped, tokens, opt, None)}
        times = {k: [] for k in steps}
        for _ in range(5):  # interleaved, so load on the machine hits both alike
            for k, f in steps.items():
                times[k].append(best(f, budget))
        with_mode, without = min(times["with"]), min(times["without"])
        rows.append({"what": f"TransformerEncoder(2 x 128) training step, {'compiled' if compiled else 'eager'}",
                     "with_ms": with_mode * 1e3, "without_ms": without * 1e3, "ratio": with_mode / without,
                     "target": 1.02 if compiled else 1.10})
    return rows + _mlp_rows(budget)


def _mlp_step(uncovered):
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 256), nn.ReLU(),
                          nn.Dropout(0.1), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    stream = torch_rngx.Generator(0)

    def run():
        with torch_rngx.mode(generator=stream, uncovered=uncovered) if uncovered else contextlib.nullcontext():
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    return run


def _mlp_rows(budget):
    steps = {u: _mlp_step(u) for u in (None, "warn", "ignore")}
    times = {u: [] for u in steps}
    for _ in range(5):  # interleaved
        for u, f in steps.items():
            times[u].append(best(f, budget))
    without = min(times[None])
    return [{"what": f"MLP eager step (fwd, bwd, Adam), uncovered={u!r}", "with_ms": min(times[u]) * 1e3,
             "without_ms": without * 1e3, "ratio": min(times[u]) / without, "target": None} for u in ("warn", "ignore")]


def print_table(rows):
    print("\ntorch_rngx.mode (ratio = time with the mode / without; < target is met)")
    print(f"{'what':52s} {'with ms':>8s} {'without':>8s} {'ratio':>6s}  target")
    for r in rows:
        target = "" if r["target"] is None else f"<= {r['target']} {'met' if r['ratio'] <= r['target'] else 'MISSED'}"
        print(f"{r['what']:52s} {r['with_ms']:8.2f} {r['without_ms']:8.2f} {r['ratio']:6.3f}  {target}")


if __name__ == "__main__":
    import machine

    print(machine.line())
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)  # threads: an optional first argument
    print_table(run())
