"""CPU speed of torch_rngx against torch, side by side in one run (`make bench`; results/perf-log.md).

For each op, float32 at 2^10 ... 2^26 elements (and float16/bfloat16 at one size): torch_rngx, the torch eager
equivalent, the torch.compile'd equivalent (Inductor's own fused random) and x.clone(), the memory-bandwidth
limit. Then 1 against 2 threads at 2^24, the same again with freed memory reused (no page faults on fresh
outputs), the bytes autograd saves for dropout's backward, the targets, the per-call cost of every public
stateful function on small tensors (per_call.py), the dropout family against torch (dropout_family.py) and
normal, bernoulli and randint against torch (dists.py), and the key-reuse checker off against on
(key_reuse.py). Prints the tables and writes
benchmarks/out/bench.json and bench.png.

A time is the best of several rounds, the candidates taking turns in each round, because other processes on a
shared machine only ever add time. Compare ratios within one run.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import dists
import dropout_family
import global_view
import key_reuse
import machine
import mode
import per_call
import torch
import torch.nn.functional as F

import torch_rngx
from torch_rngx import _C

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
OPS = ("rand", "quantize_noise", "dropout fwd+bwd")
OURS, CLONE = "torch_rngx", "x.clone()"


def fwd_bwd(f):
    """f's forward and the backward to x, the gradient given (as a training step does)."""
    def step(x, grad):
        return torch.autograd.grad(f(x), x, grad)
    return step


def candidates(op):
    """name -> fn(x, grad). One torch_rngx Generator per op, as a model holds one."""
    g = torch_rngx.Generator(2024)
    clone = lambda x, grad: x.clone()  # noqa: E731
    if op == "rand":
        return {
            OURS: lambda x, grad: torch_rngx.rand_like(x, generator=g),
            "eager empty_like().uniform_()": lambda x, grad: torch.empty_like(x).uniform_(),
            "eager rand_like": lambda x, grad: torch.rand_like(x),
            "compiled rand_like": _compiled(lambda x: torch.rand_like(x)),
            CLONE: clone,
        }
    if op == "quantize_noise":
        return {
            OURS: lambda x, grad: torch_rngx.quantize(x, "noise", generator=g),
            "eager x + uniform_(-.5, .5)": lambda x, grad: x + torch.empty_like(x).uniform_(-0.5, 0.5),
            "compiled x + (rand_like - .5)": _compiled(lambda x: x + (torch.rand_like(x) - 0.5)),
            CLONE: clone,
        }
    compiled = torch.compile(lambda x: F.dropout(x, 0.5, training=True))
    return {
        OURS: fwd_bwd(lambda x: torch_rngx.dropout(x, 0.5, generator=g)),
        "eager F.dropout": fwd_bwd(lambda x: F.dropout(x, 0.5, training=True)),
        "compiled F.dropout": fwd_bwd(compiled),
        CLONE: clone,
    }


def _compiled(f):
    c = torch.compile(f)
    return lambda x, grad: c(x)


def measure(fns, x, grad, budget, min_rounds):
    """Best seconds per call of each fn. Each round runs every fn in turn, enough calls to last ~2 ms."""
    est = {}
    for name, fn in fns.items():
        fn(x, grad)  # warm-up: compiles, faults in the allocator's pages
        t0 = time.perf_counter()
        fn(x, grad)
        est[name] = max(time.perf_counter() - t0, 1e-7)
    calls = {n: max(1, math.ceil(2e-3 / t)) for n, t in est.items()}
    rounds = max(min_rounds, min(30, int(budget / sum(est[n] * calls[n] for n in fns))))
    best = dict(est)
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                fn(x, grad)
            best[name] = min(best[name], (time.perf_counter() - t0) / calls[name])
    return best


def inputs(numel, dtype, op):
    x = torch.randn(numel).to(dtype)
    if op == "dropout fwd+bwd":
        x.requires_grad_(True)
    return x, torch.ones_like(x)


def philox_paths(numel=2**18):
    """G elements/s of F.uniform on one thread per Philox path, at a size that stays in cache: the kernel alone."""
    torch.set_num_threads(1)
    x, state, before = torch.empty(numel), torch.tensor([1, 0]), _C.simd()
    rates = {}
    try:
        for path in _C.simd_paths():
            _C.set_simd(path)
            t = measure({path: lambda x, grad: torch_rngx.functional.uniform(x, state)}, x, None, 0.3, 10)[path]
            rates[path] = numel / t / 1e9
    finally:
        _C.set_simd(before)
    return rates


def saved_bytes(fn, x):
    """Bytes of every tensor autograd saves for backward while fn(x) runs: what it holds, not an estimate."""
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return total


def sweep(results, ops, sizes, dtypes, threads, budget, key):
    """Times every candidate of every op; the targets' size `key` gets more rounds, as the ratios rest on it."""
    torch.set_num_threads(threads)
    for op in ops:
        fns = candidates(op)
        for dtype in dtypes:
            for numel in sizes:
                x, grad = inputs(numel, dtype, op)
                more = numel == key
                for name, s in measure(fns, x, grad, budget * (4 if more else 1), 7 if more else 3).items():
                    results.append({"op": op, "dtype": str(dtype).replace("torch.", ""), "numel": numel,
                                    "threads": threads, "candidate": name, "seconds": s})
                del x, grad
                print(f"  {op:16s} {str(dtype):15s} 2^{int(math.log2(numel)):<2d} threads={threads} done", flush=True)


def lookup(results, **key):
    rows = [r for r in results if all(r[k] == v for k, v in key.items())]
    return {r["candidate"]: r["seconds"] for r in rows}


def table(results, threads):
    lines = []
    for op in OPS:
        for dtype in ("float32", "float16", "bfloat16"):
            sizes = sorted({r["numel"] for r in results if r["op"] == op and r["dtype"] == dtype and r["threads"] == threads})
            if not sizes:
                continue
            names = list(lookup(results, op=op, dtype=dtype, numel=sizes[0], threads=threads))
            others = [n for n in names if n != OURS]
            lines.append(f"\n{op}, {dtype}, {threads} threads: G elements/s (and torch_rngx's speed-up over each)")
            lines.append("| elements | " + " | ".join(names) + " | " + " | ".join(f"vs {n}" for n in others) + " |")
            lines.append("|---" * (1 + len(names) + len(others)) + "|")
            for numel in sizes:
                t = lookup(results, op=op, dtype=dtype, numel=numel, threads=threads)
                rate = [f"{numel / t[n] / 1e9:.3f}" for n in names]
                ratio = [f"{t[n] / t[OURS]:.2f}x" for n in others]
                lines.append(f"| 2^{int(math.log2(numel))} | " + " | ".join(rate + ratio) + " |")
    return "\n".join(lines)


def thread_table(results, numel, how):
    lines = [f"\n1 vs 2 threads, {how}, float32, 2^{int(math.log2(numel))} elements: G elements/s",
             "| op | candidate | 1 thread | 2 threads | 2 / 1 |", "|---|---|---|---|---|"]
    for op in OPS:
        one, two = lookup(results, op=op, dtype="float32", numel=numel, threads=1), lookup(results, op=op, dtype="float32", numel=numel, threads=2)
        for name in one:
            if name in two:
                lines.append(f"| {op} | {name} | {numel / one[name] / 1e9:.3f} | {numel / two[name] / 1e9:.3f} | {one[name] / two[name]:.2f}x |")
    return "\n".join(lines)


def targets(results, numel):
    """The issue's targets, as measured ratios (float32, numel elements, 2 threads)."""
    t = {op: lookup(results, op=op, dtype="float32", numel=numel, threads=2) for op in OPS}
    one = {op: lookup(results, op=op, dtype="float32", numel=numel, threads=1) for op in OPS}
    rows = [
        ("rand_like >= 8x torch eager uniform_", t["rand"]["eager empty_like().uniform_()"] / t["rand"][OURS], 8.0),
        ("rand_like >= 1.5x compiled torch.rand_like", t["rand"]["compiled rand_like"] / t["rand"][OURS], 1.5),
        ("quantize_noise >= 0.8x x.clone() throughput", t["quantize_noise"][CLONE] / t["quantize_noise"][OURS], 0.8),
        ("quantize_noise >= 1.5x compiled x + (rand_like - .5)",
         t["quantize_noise"]["compiled x + (rand_like - .5)"] / t["quantize_noise"][OURS], 1.5),
        ("dropout fwd+bwd >= 2x F.dropout fwd+bwd", t["dropout fwd+bwd"]["eager F.dropout"] / t["dropout fwd+bwd"][OURS], 2.0),
    ] + [(f"{op}: 2 threads >= 1.7x 1 thread", one[op][OURS] / t[op][OURS], 1.7) for op in OPS if OURS in one[op]]
    return [{"target": name, "measured": round(r, 3), "wanted": want, "met": r >= want} for name, r, want in rows]


def plot(results, threads, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(OPS), figsize=(6 * len(OPS), 4.5))
    for ax, op in zip(axes, OPS):
        rows = [r for r in results if r["op"] == op and r["dtype"] == "float32" and r["threads"] == threads]
        for name in dict.fromkeys(r["candidate"] for r in rows):
            pts = sorted((r["numel"], r["numel"] / r["seconds"] / 1e9) for r in rows if r["candidate"] == name)
            style = {"linewidth": 2.5, "color": "black"} if name == OURS else {"linestyle": ":" if name == CLONE else "-"}
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements (float32)")
        ax.set_ylabel("G elements / s")
        ax.set_title(f"{op}, {threads} threads")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# glibc hands allocations over 32 MiB straight back to the OS on free, so every call's fresh output is faulted
# in page by page (zeroed by the kernel) - on this VM that alone costs about as much as x.clone()'s copy. These
# tunables keep freed memory in the heap for reuse, as a caching allocator would: the kernels' speed without it.
REUSE_MEMORY = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776"


def key_size_runs(threads, key, budget):
    """float32 at the targets' size, on `threads` and (with 2) on 1 thread."""
    results = []
    sweep(results, OPS, [key], [torch.float32], threads, budget, key)
    if threads == 2:
        sweep(results, OPS, [key], [torch.float32], 1, budget, key)
    return results


def reused_memory_runs(args):
    """key_size_runs in a child process with REUSE_MEMORY (the tunables apply only from process start)."""
    path = os.path.join(args.out, "reused_memory.json")
    env = dict(os.environ, GLIBC_TUNABLES=REUSE_MEMORY)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--max-log2", str(args.max_log2), "--budget",
                    str(args.budget), "--key-size-only", path], env=env, check=True)
    with open(path) as f:
        return json.load(f)


def print_targets(results, key, how):
    goals = targets(results, key)
    print(f"\ntargets, {how} (float32, 2^{int(math.log2(key))} elements, torch_rngx's speed-up, 2 threads):")
    for g in goals:
        print(f"  {'met ' if g['met'] else 'MISS'} {g['target']}: {g['measured']:.2f}x")
    return goals


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-log2", type=int, default=26, help="largest size, 2^N elements (default 26)")
    ap.add_argument("--budget", type=float, default=0.6, help="seconds of timed rounds per op and size (default 0.6)")
    ap.add_argument("--out", default=OUT, help=f"folder for bench.json and bench.png (default {OUT})")
    ap.add_argument("--key-size-only", metavar="JSON", help=argparse.SUPPRESS)  # the child of reused_memory_runs
    args = ap.parse_args()
    threads = min(2, os.cpu_count() or 1)
    key = 2 ** min(24, args.max_log2)
    if args.key_size_only:
        with open(args.key_size_only, "w") as f:
            json.dump(key_size_runs(threads, key, args.budget), f)
        return
    os.makedirs(args.out, exist_ok=True)
    sizes = [2**n for n in range(10, args.max_log2 + 1, 2)]
    print(machine.line(), flush=True)

    paths = philox_paths()
    results = []
    sweep(results, OPS, sizes, [torch.float32], threads, args.budget, key)
    sweep(results, OPS, [2**min(22, args.max_log2)], [torch.float16, torch.bfloat16], threads, args.budget, key)
    if threads == 2:
        sweep(results, OPS, [key], [torch.float32], 1, args.budget, key)
    print("freed memory reused (no page faults):", flush=True)
    reused = reused_memory_runs(args)

    x = torch.randn(key, requires_grad=True)
    saved = {
        OURS: saved_bytes(lambda x: torch_rngx.dropout(x, 0.5, generator=torch_rngx.Generator(0)), x),
        "F.dropout": saved_bytes(lambda x: F.dropout(x, 0.5, training=True), x),
    }

    print("\nPhilox paths, float32 uniform, 2^18 elements (in cache), 1 thread: "
          + ", ".join(f"{p} {r:.3f} G elements/s" for p, r in paths.items()))
    print(table(results, threads))
    if threads == 2:
        print(thread_table(results, key, "default allocator"))
        print(thread_table(reused, key, "freed memory reused (no page faults)"))
    print(f"\nautograd saves for dropout's backward, float32, 2^{int(math.log2(key))} elements: "
          + ", ".join(f"{n}: {b:,} bytes" for n, b in saved.items()))
    goals = {}
    if threads == 2:
        goals["default allocator"] = print_targets(results, key, "default allocator")
        goals["freed memory reused"] = print_targets(reused, key, "freed memory reused (no page faults)")
    calls = per_call.run(budget=args.budget)
    per_call.print_table(calls)
    torch.set_num_threads(threads)  # the sections below are measured on the machine's 2 threads
    family = dropout_family.run(budget=args.budget)
    dropout_family.print_table(family)
    distributions = dists.run(budget=args.budget)
    dists.print_table(distributions)
    views = global_view.run(budget=args.budget)
    global_view.print_table(views)
    mode_rows = mode.run(budget=args.budget)
    mode.print_table(mode_rows)
    reuse_rows = key_reuse.run(budget=args.budget)
    key_reuse.print_table(reuse_rows)

    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump({"machine": machine.describe(), "torch": torch.__version__, "simd": _C.simd(), "cpus": os.cpu_count(),
                   "threads": threads,
                   "philox_paths": paths, "results": results, "reused_memory_results": reused,
                   "dropout_saved_bytes": saved, "targets": goals, "per_call": calls,
                   "dropout_family": family, "distributions": distributions, "global_view": views,
                   "mode": mode_rows, "key_reuse": reuse_rows}, f, indent=1)
    plot(results, threads, os.path.join(args.out, "bench.png"))
    print(f"\n{machine.line()}\nwrote {os.path.join(args.out, 'bench.json')} and bench.png")


if __name__ == "__main__":
    main()
