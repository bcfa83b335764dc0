"""Where dropout's fwd+bwd time goes at 2^10 (results/perf-log.md, "Per ISA"): the backward pass alone of one node,
torch.autograd.grad(y, x, g, retain_graph=True), for torch's dropout node, our node, and Python nodes that differ
from each other in one thing each, so that each difference is one cost. Best of 5 alternating rounds, 1 thread.
`taskset -c 1 python3 benchmarks/backward_node.py`"""

import functools
import timeit

import torch
import torch.nn.functional as F

from torch_rngx._engine import functions as _functions


class _Saved(torch.autograd.Function):
    """The node of our shape (a saved key and three params), whose backward returns the gradient it was given."""

    @staticmethod
    def forward(ctx, x, key, p, shape, start):
        ctx.save_for_backward(key)
        ctx.params = (p, shape, start)
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        _ = ctx.saved_tensors  # unpacked, as our node unpacks its key
        return grad, None, None, None, None


class _Fresh(_Saved):
    """The same, returning a new tensor made in Python (torch.empty_like)."""

    @staticmethod
    def backward(ctx, grad):
        _ = ctx.saved_tensors
        return torch.empty_like(grad), None, None, None, None


class _Scaled(_Saved):
    """The same, returning grad * 1.1: one native op in the Python backward."""

    @staticmethod
    def backward(ctx, grad):
        _ = ctx.saved_tensors
        return grad * 1.1, None, None, None, None


def nodes(numel=1 << 10):
    x, key = torch.randn(numel, requires_grad=True), torch.tensor([5, 7])
    ours = super(torch.autograd.Function, _functions.NODE["dropout"]).apply  # as the eager route calls it
    return x, {
        "torch's dropout node (C++)": F.dropout(x, 0.1),
        "torch's mul node (C++): x * 1.1": x * 1.1,
        "Python node returning its grad": _Saved.apply(x, key, 0.1, None, None),
        "Python node returning empty_like(grad)": _Fresh.apply(x, key, 0.1, None, None),
        "Python node returning grad * 1.1": _Scaled.apply(x, key, 0.1, None, None),
        "our dropout node (rngx::dropout on grad)": ours(x, key, 0.1, None, None),
    }


if __name__ == "__main__":
    import machine

    torch.set_num_threads(1)
    print(machine.line())
    (x, outputs), grad = nodes(), torch.ones(1 << 10)
    best = {name: float("inf") for name in outputs}
    for _ in range(5):
        for name, y in outputs.items():
            run = functools.partial(torch.autograd.grad, y, x, grad, retain_graph=True)
            best[name] = min(best[name], min(timeit.repeat(run, number=2000, repeat=3)) / 2000)
    base = best["torch's dropout node (C++)"]
    for name, seconds in best.items():
        print(f"{name:44s} {seconds * 1e6:7.2f} us  {seconds / base:5.2f}x torch's dropout node")
