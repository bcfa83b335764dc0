"""The dropout family against torch, side by side in one run (`make bench` runs it; results/perf-log.md,
"Dropout family"): channel dropout forward + backward against F.dropout2d, and a training step of an
nn.TransformerEncoder before and after torch_rngx.nn.convert, eager and torch.compile'd. Ratio = torch's time / ours
(> 1: faster than torch)."""
import copy

import torch
import torch.nn.functional as F
from per_call import best

import torch_rngx


def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)


def _step(model, x, opt):
    def run():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()

    return run


def run(budget=0.6):
    rows = []
    x = torch.randn(32, 64, 32, 32, requires_grad=True)
    grad = torch.ones_like(x)
    ours = best(lambda: torch_rngx.dropout2d(x, 0.2).backward(grad), budget)
    theirs = best(lambda: F.dropout2d(x, 0.2).backward(grad), budget)
    rows.append({"what": "dropout2d fwd+bwd, (32, 64, 32, 32) float32", "against": "F.dropout2d",
                 "ours_ms": ours * 1e3, "theirs_ms": theirs * 1e3, "ratio": theirs / ours, "target": 2.0})
    tokens = torch.randn(16, 128, 256)
    for compiled in (False, True):
        original = _encoder()
        converted = copy.deepcopy(original)
        torch_rngx.nn.convert(converted, seed=0)
        times = []
        for model in (converted, original):
            torch._dynamo.reset()
            stepped = torch.compile(model, fullgraph=True) if compiled else model
            times.append(best(_step(stepped, tokens, torch.optim.SGD(model.parameters(), lr=1e-3)), budget))
        rows.append({"what": f"TransformerEncoder(4 x 256) training step, {'compiled' if compiled else 'eager'}",
                     "against": "the unconverted model", "ours_ms": times[0] * 1e3, "theirs_ms": times[1] * 1e3,
                     "ratio": times[1] / times[0], "target": 1.0})
    return rows


def print_table(rows):
    print("\ndropout family (ratio = torch's time / ours; > 1 is faster)")
    print(f"{'what':58s} {'ours ms':>8s} {'torch ms':>9s} {'ratio':>6s}  target")
    for r in rows:
        print(f"{r['what']:58s} {r['ours_ms']:8.2f} {r['theirs_ms']:9.2f} {r['ratio']:6.2f}  > {r['target']} "
              f"{'met' if r['ratio'] > r['target'] else 'MISSED'}")


if __name__ == "__main__":
    import machine

    print(machine.line())
    torch.set_num_threads(min(2, torch.get_num_threads()))
    print_table(run())
