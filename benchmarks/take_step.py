"""The pieces of one Generator step (results/perf-log.md, "The samplers' one-call path"): rngx::take_ as a compiled
graph calls it (C++, which asks in C whether a checkpoint journal may be open, csrc/journal.h), the bare C++ step
(rngx::step_), and the same question asked from Python. Best of 5 alternating rounds, 1 thread.
`python3 benchmarks/take_step.py`"""
import timeit

import torch

import torch_rngx  # noqa: F401  (the ops and their journal)
from torch_rngx._engine import journal as _replay

torch.set_num_threads(1)
state = torch.tensor([1, 0])
take, step = torch.ops.rngx.take_.default, torch.ops.rngx.step_.default
PIECES = {
    "rngx::take_(s, 3), as a compiled graph calls it": lambda: take(state, 3),
    "rngx::step_(s, 3), the bare C++ step": lambda: step(state, 3),
    "the journal test from Python (_replay.plain_eager)": _replay.plain_eager,
}

if __name__ == "__main__":
    import machine

    print(machine.line())
    best = {name: float("inf") for name in PIECES}
    for _ in range(5):
        for name, piece in PIECES.items():
            best[name] = min(best[name], min(timeit.repeat(piece, number=5000, repeat=3)) / 5000)
    for name, seconds in best.items():
        print(f"{name:52s} {seconds * 1e6:6.2f} us")
