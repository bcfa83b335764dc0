"""stochastic_round against the cast it replaces and against torchao (docs/performance.md, "Stochastic rounding"),
every figure a ratio of times taken side by side in one run (each round times every candidate in turn; a time is the
best round):

- float32 -> bfloat16 at 2^24 elements (`--log2 N`: 2^N), 2 threads: ours (a Generator's call, and one on an explicit
  key) against x.to(torch.bfloat16), the copy line (target: at least 0.8 of its speed), and against torchao's
  _fp32_to_bf16_sr, eager (target: at least 5x its speed). torchao is imported where it is installed (`make
  bench-sround` installs it over the CPU torch); without it, its two lines (torch.randint for 16 bits, then a select on
  the float32 bits) run in its place, and the table says which ran.
- per call at 2^10 elements, 1 thread: ours against x.to(torch.bfloat16) plus a torch.rand_like(x) (target: at most
  1.3x their time).
- an optimizer step (AdamW, and SGD with momentum) on 2^22 parameters in 4 tensors, on 1 and on 2 threads: bfloat16
  weights with torch_rngx.optim.stochastic_rounding against the same optimizer on float32 weights (target: at most
  1.3x its time). AdamW takes the fused step (rngx::adam_sround_); its row with fused=False, and SGD's, step float32
  copies (3 more ops per parameter than the optimizer's own).

    .venv/bin/python benchmarks/sround.py            # about a minute on 2 cores
    .venv/bin/python benchmarks/sround.py --cpu-time # only AdamW on 1 thread, in CPU time (which the load moves less)
"""
import argparse
import time

import machine
import torch
from dists import _interleaved

import torch_rngx
import torch_rngx.functional as rf


def torchao_sr():
    """torchao's stochastic rounding to bfloat16 and what ran: the package's function, or its two lines."""
    try:
        from torchao.optim.quant_utils import _fp32_to_bf16_sr

        import torchao

        return _fp32_to_bf16_sr, f"torchao {torchao.__version__} _fp32_to_bf16_sr"
    except ImportError:

        def equivalent(x):  # torchao 0.18's _fp32_to_bf16_sr, line for line (16 random bits from torch.randint)
            r, b = torch.randint(0, 1 << 16, x.shape, dtype=torch.int32), x.view(torch.int32)
            return torch.where(r < (b & 0xFFFF), (b & 0xFFFF0000) + 0x10000, b & 0xFFFF0000).view(x.dtype).bfloat16()

        return equivalent, "torchao's _fp32_to_bf16_sr (its two lines: torchao not installed)"


def cast_rows(log2, budget):
    torch.set_num_threads(2)
    x, g, key = torch.randn(1 << log2), torch_rngx.Generator(7), rf.key(7)
    ao, ao_name = torchao_sr()
    times = _interleaved({
        "ours, generator": lambda: torch_rngx.stochastic_round(x, torch.bfloat16, generator=g),
        "ours, key": lambda: rf.stochastic_round(x, key, torch.bfloat16),
        "x.to(torch.bfloat16)": lambda: x.to(torch.bfloat16),
        ao_name: lambda: ao(x),
    }, budget)
    ours = times["ours, generator"]
    return [
        (f"2^{log2} float32 -> bfloat16, 2 threads", "x.to(torch.bfloat16) (copy line)", ours,
         times["x.to(torch.bfloat16)"], times["x.to(torch.bfloat16)"] / ours, ">= 0.8 (speed)"),
        ("the same", ao_name, ours, times[ao_name], times[ao_name] / ours, ">= 5 (speed)"),
        ("the same, explicit key", "x.to(torch.bfloat16)", times["ours, key"], times["x.to(torch.bfloat16)"],
         times["x.to(torch.bfloat16)"] / times["ours, key"], ""),
    ]


def per_call_rows(budget):
    torch.set_num_threads(1)
    x, g = torch.randn(1 << 10), torch_rngx.Generator(7)
    times = _interleaved({
        "ours": lambda: torch_rngx.stochastic_round(x, torch.bfloat16, generator=g),
        "cast + rand_like": lambda: (x.to(torch.bfloat16), torch.rand_like(x)),
    }, budget)
    return [("2^10 per call, 1 thread", "x.to(torch.bfloat16) + torch.rand_like(x)", times["ours"],
             times["cast + rand_like"], times["ours"] / times["cast + rand_like"], "<= 1.3 (time)")]


def cpu_time_rows(rounds=25, log2=22):
    """AdamW on 1 thread, as optimizer_rows, timed in CPU time (time.process_time): the best of `rounds` steps each,
    taking turns."""
    torch.set_num_threads(1)
    steps = {}
    for name, dtype, fused in (("ours", torch.bfloat16, True), ("ours, fused=False", torch.bfloat16, False),
                               ("float32", torch.float32, None)):
        params = [torch.nn.Parameter(torch.randn(1 << (log2 - 2)).to(dtype)) for _ in range(4)]
        for p in params:
            p.grad = (torch.randn(1 << (log2 - 2)) * 1e-2).to(dtype)
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
        if fused is not None:
            torch_rngx.optim.stochastic_rounding(opt, seed=0, fused=fused)
        steps[name] = opt.step
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(rounds):
        for name, step in steps.items():
            t0 = time.process_time()
            step()
            best[name] = min(best[name], time.process_time() - t0)
    return [(f"AdamW 2^{log2}, 1 thread, CPU time", "AdamW on float32 weights", best["ours"], best["float32"],
             best["ours"] / best["float32"], "<= 1.3 (time)"),
            ("the same, fused=False", "AdamW on float32 weights", best["ours, fused=False"], best["float32"],
             best["ours, fused=False"] / best["float32"], "")]


def optimizer_rows(budget, threads, log2=22):
    torch.set_num_threads(threads)
    shape = (4, (1 << log2) // 4)
    rows = []

    def optimizer(make, dtype, fused=True):
        params = [torch.nn.Parameter(torch.randn(shape[1]).to(dtype)) for _ in range(shape[0])]
        for p in params:
            p.grad = (torch.randn(shape[1]) * 1e-2).to(dtype)
        opt = make(params)
        if dtype == torch.bfloat16:
            torch_rngx.optim.stochastic_rounding(opt, seed=0, fused=fused)
        return opt

    for name, make in (("AdamW", lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01)),
                       ("SGD, momentum 0.9", lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9))):
        steps = {"ours": optimizer(make, torch.bfloat16).step, "float32": optimizer(make, torch.float32).step}
        if name == "AdamW":
            steps["fused=False"] = optimizer(make, torch.bfloat16, fused=False).step
        times = _interleaved(steps, budget)
        where = f"{name}, 2^{log2} params, {threads} thread{'s' * (threads > 1)}"
        rows.append((where, f"{name} on float32 weights", times["ours"], times["float32"],
                     times["ours"] / times["float32"], "<= 1.3 (time)" if name == "AdamW" else ""))
        if name == "AdamW":
            rows.append(("the same, fused=False", f"{name} on float32 weights", times["fused=False"], times["float32"],
                         times["fused=False"] / times["float32"], ""))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, default=24)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed rounds per candidate")
    ap.add_argument("--cpu-time", action="store_true", help="only AdamW on 1 thread, timed in CPU time")
    args = ap.parse_args()
    print(machine.line())
    if args.cpu_time:
        rows = cpu_time_rows()
    else:
        rows = cast_rows(args.log2, args.budget) + per_call_rows(args.budget)
        rows += optimizer_rows(args.budget, 1) + optimizer_rows(args.budget, 2)
    print(f"{'what':46s} {'against':58s} {'ours ms':>9s} {'theirs ms':>10s} {'ratio':>6s}  target")
    for what, against, ours, theirs, ratio, target in rows:
        print(f"{what:46s} {against:58s} {ours * 1e3:9.3f} {theirs * 1e3:10.3f} {ratio:6.2f}  {target}")
    print("ratio: theirs / ours for speed targets, ours / theirs for time targets")


if __name__ == "__main__":
    main()
