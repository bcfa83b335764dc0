"""The pieces of one Generator step through `rngx::take_` from Python (docs/performance.md, "The samplers' one-call
path"): the whole op, its Python kernel's body, the C++ step, the state check and the checkpoint test. Best of 5
alternating rounds, 1 thread. `python3 benchmarks/take_step.py`"""
import timeit

import torch

from torch_rngx import _ops, _replay

torch.set_num_threads(1)
state = torch.tensor([1, 0])
PIECES = {
    "torch.ops.rngx.take_(s, 3), the whole op": lambda: torch.ops.rngx.take_(state, 3),
    "its Python kernel's body (_ops._take)": lambda: _ops._take(state, 3),
    "rngx::step_, the C++ step": lambda: torch.ops.rngx.step_(state, 3),
    "the Python state check (_check_take)": lambda: _ops._check_take(state, 3),
    "the checkpoint test (_replay.plain_eager)": _replay.plain_eager,
}

if __name__ == "__main__":
    import machine

    print(machine.line())
    best = {name: float("inf") for name in PIECES}
    for _ in range(5):
        for name, piece in PIECES.items():
            best[name] = min(best[name], min(timeit.repeat(piece, number=5000, repeat=3)) / 5000)
    for name, seconds in best.items():
        print(f"{name:45s} {seconds * 1e6:6.2f} us")
