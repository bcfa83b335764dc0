"""What the key-reuse checker costs per call (`make bench` runs it; results/perf-log.md, "Key-reuse checker"):
three of per_call.py's calls at 2^10 float32 elements on one thread, with torch_rngx.debug.key_reuse off and on,
side by side: rounds in which the two take turns, each time the best of per_call.best's repeats.

`python3 benchmarks/key_reuse.py --base DIR` adds a third column: the same calls with the torch_rngx of the
checkout DIR (built in place: `python setup.py build_ext --inplace`), e.g. commit 173d202, the last one without the
checker. It runs in a child process that takes its turn in each round.
"""
import argparse
import os
import subprocess
import sys

import per_call
import torch

CALLS = ("rand_like(x, generator=g)", 'quantize(x, "noise")', "dropout(x, 0.1) fwd+bwd")
NUMEL = 1 << 10


def _calls():
    return {name: ours for name, _, ours, _ in per_call._cases(NUMEL) if name in CALLS}


def _serve(budget):
    """The child: for each call name read from stdin, its seconds per call on stdout."""
    torch.set_num_threads(1)
    calls = _calls()
    print(os.path.dirname(sys.modules["torch_rngx"].__file__), flush=True)
    for name in sys.stdin:
        print(per_call.best(calls[name.rstrip("\n")], budget), flush=True)


def _child(base, budget):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([base, os.environ.get("PYTHONPATH", "")])}
    env.pop("RNGX_DEBUG_KEY_REUSE", None)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", str(budget)], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    loaded = child.stdout.readline().strip()
    if os.path.realpath(loaded) != os.path.realpath(os.path.join(base, "torch_rngx")):
        child.kill()
        raise SystemExit(f"--base {base}: the child imported torch_rngx from {loaded}; build DIR in place first")
    return child


def run(budget=0.4, rounds=5, base=None):
    """Rows of {call, off_us, on_us, on_ratio} (and base_us, off_vs_base when base is given)."""
    from torch_rngx import debug

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    calls = _calls()
    child = _child(base, budget) if base else None
    times = {(name, mode): [] for name in calls for mode in ("off", "on", "base")}
    try:
        for _ in range(rounds):  # interleaved, so load on the machine hits every column alike
            for name, call in calls.items():
                for mode, action in (("off", "off"), ("on", "raise")):
                    with debug.key_reuse(action):
                        times[name, mode].append(per_call.best(call, budget))
                if child:
                    child.stdin.write(name + "\n")
                    child.stdin.flush()
                    times[name, "base"].append(float(child.stdout.readline()))
    finally:
        torch.set_num_threads(threads)
        if child:
            child.stdin.close()
            child.wait()
    rows = []
    for name in calls:
        off, on = min(times[name, "off"]) * 1e6, min(times[name, "on"]) * 1e6
        row = {"call": name, "off_us": off, "on_us": on, "on_ratio": on / off}
        if child:
            row["base_us"] = min(times[name, "base"]) * 1e6
            row["off_vs_base"] = off / row["base_us"]
        rows.append(row)
    return rows


def print_table(rows):
    base = "base_us" in rows[0]
    print(f"\nkey-reuse checker, per call, float32 2^{NUMEL.bit_length() - 1}, 1 thread (best of interleaved rounds):")
    head = f"{'call':<28} {'off us':>8} {'on us':>8} {'on/off':>7}"
    print(head + (f" {'base us':>8} {'off/base':>8}" if base else ""))
    for r in rows:
        print(f"{r['call']:<28} {r['off_us']:8.2f} {r['on_us']:8.2f} {r['on_ratio']:7.2f}"
              + (f" {r['base_us']:8.2f} {r['off_vs_base']:8.3f}" if base else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=0.4, help="seconds of timed repeats per call and turn")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of turns (default 5)")
    ap.add_argument("--base", metavar="DIR", help="a checkout built in place, measured in a child process")
    ap.add_argument("--serve", type=float, metavar="BUDGET", help=argparse.SUPPRESS)  # the child of --base
    args = ap.parse_args()
    if args.serve is not None:
        _serve(args.serve)
        return
    import machine

    print(machine.line())
    print_table(run(args.budget, args.rounds, args.base))


if __name__ == "__main__":
    main()
