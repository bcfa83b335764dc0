"""The GPU check (docs/cuda.md): one command on a CUDA machine, a few minutes. Builds the CUDA extension in
place (skipped when it is newer than every source), then prints one table:

1. every op, dtype and layout: the CUDA result torch.equal the CPU result, with the state on the CPU or GPU;
2. the raw words equal cuRAND's Philox4_32_10 (curand_init(seed, 0, offset), curand()), through
   benchmarks/curand_words.cu;
3. torch.compile(fullgraph=True) equals eager on CUDA, grads included; mode="reduce-overhead" (CUDA graphs)
   gives eager's sequence over 5 replays; a hand-captured torch.cuda.CUDAGraph too;
4. throughput at 2^28 float32 elements against torch eager, torch.compile and x.clone().

Usage: python benchmarks/gpu_check.py [--size-log2 28]. Writes the table to $OUT/gpu_check.txt too when $OUT
is set. Exit status 1 when any check fails or a throughput target is missed.
"""
import argparse
import glob
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "gpu")
T0 = time.time()
ROWS = []  # (section, check, result, detail)
NOTES = []
DEV = "cuda"  # --device cpu runs the same script on the CPU: a smoke test of the script itself, no GPU needed


def row(section, check, result, detail=""):
    ROWS.append((section, check, result, detail))
    print(f"[{time.time() - T0:6.1f}s] {section} | {check} | {result} | {detail}", flush=True)


def newest(paths):
    return max(os.path.getmtime(p) for p in paths)


def build_extension():
    """USE_CUDA=1 in-place build, unless torch_rngx/_C.abi3.so is newer than csrc/, setup.py and this file."""
    so = os.path.join(ROOT, "torch_rngx", "_C.abi3.so")
    sources = glob.glob(os.path.join(ROOT, "csrc", "**", "*"), recursive=True) + [os.path.join(ROOT, "setup.py")]
    if os.path.exists(so) and os.path.getmtime(so) > newest(sources):
        return "cached"
    cmd = [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--force", "--build-temp", BUILD]
    subprocess.run(cmd, cwd=ROOT, env={**os.environ, "USE_CUDA": "1"}, check=True)
    return "built"


def curand_include(torch):
    """Where curand_kernel.h lives: the toolkit, or the nvidia-curand wheel that torch's CUDA build pulls in."""
    import torch.utils.cpp_extension as tce

    site = os.path.dirname(os.path.dirname(torch.__file__))
    dirs = [os.path.join(h, "include") for h in ("/usr/local/cuda", tce.CUDA_HOME or "") if h]
    dirs += glob.glob(os.path.join(site, "nvidia", "*", "include"))
    return next((d for d in dirs if os.path.exists(os.path.join(d, "curand_kernel.h"))), None)


def nvcc_path():
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    return "nvcc"


def u64_state(torch, seed, offset, device):
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    return torch.tensor([signed(seed), signed(offset)], dtype=torch.int64, device=device)


# ---- 1. CUDA == CPU ----
def check_equal(torch, rngx):
    F = rngx.functional
    gen = torch.Generator().manual_seed(0)
    DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]

    def layouts(dtype):
        """name -> (CPU tensor, CUDA tensor with the same values and strides)."""
        base = torch.randn(3, 40, 17, 19, generator=gen).to(dtype)
        wide = torch.randn(3, 41, 34, 21, generator=gen).to(dtype)
        dense = {  # .to() keeps the strides of a dense tensor
            "contiguous": base,
            "channels_last": base.contiguous(memory_format=torch.channels_last),
            "transposed": base.transpose(1, 3),
            "long": torch.randn(2**20 + 3, generator=gen).to(dtype),
        }
        pairs = {k: (v, v.to(DEV)) for k, v in dense.items()}
        pairs["sliced"] = (wide[:, 1:, ::2, 1:-1], wide.to(DEV)[:, 1:, ::2, 1:-1])
        return pairs

    states = [(0x0123_4567_89AB_CDEF, 0), (0xFEDC_BA98_7654_3210, 7), (5, (1 << 64) - 10)]  # aligned, not, wrap

    def dropout_grad(x, st):
        x = x.detach().requires_grad_()
        y = F.dropout(x, st, 0.3)
        g = torch.ones_like(y) * 1.25
        return torch.autograd.grad(y, x, g)[0]

    ops = {
        "uniform": lambda x, st: F.uniform(x, st, -1.5, 2.0),
        "quantize_noise": lambda x, st: F.quantize_noise(x, st, 0.5),
        "dropout": lambda x, st: F.dropout(x, st, 0.3),
        "dropout backward": dropout_grad,
    }
    for name, fn in ops.items():
        total, bad = 0, []
        for dtype in DTYPES:
            for lname, (x, xc) in layouts(dtype).items():
                assert xc.stride() == x.stride()
                for seed, offset in states:
                    want = fn(x, u64_state(torch, seed, offset, "cpu"))
                    for where in ("cpu", DEV):
                        got = fn(xc, u64_state(torch, seed, offset, where))
                        total += 1
                        if got.stride() != want.stride() or not torch.equal(got.cpu(), want):
                            bad.append(f"{str(dtype)[6:]} {lname} offset={offset} state on {where}")
        row("1 CUDA == CPU", name, "PASS" if not bad else "FAIL", f"{total - len(bad)}/{total} equal" + (f"; first: {bad[0]}" if bad else ""))

    total, bad = 0, []
    for size in ([3, 40, 17, 19], [2**20 + 3], [0], []):
        for seed, offset in states:
            want = F.bits(size, u64_state(torch, seed, offset, "cpu"))
            got = F.bits(size, u64_state(torch, seed, offset, DEV))
            total += 1
            if got.device.type != DEV or not torch.equal(got.cpu(), want):
                bad.append(f"size={size} offset={offset}")
    row("1 CUDA == CPU", "bits", "PASS" if not bad else "FAIL", f"{total - len(bad)}/{total} equal" + (f"; first: {bad[0]}" if bad else ""))

    # The stateful API: a CUDA Generator follows a CPU one word for word.
    gc, gg = rngx.Generator(123), rngx.Generator(123, device=DEV)
    x = torch.randn(64, 33, generator=gen)
    same = all(torch.equal(rngx.quantize(x, generator=gc), rngx.quantize(x.to(DEV), generator=gg).cpu()) for _ in range(3))
    same = same and torch.equal(gc.state, gg.state.cpu())
    row("1 CUDA == CPU", "Generator(device='cuda')", "PASS" if same else "FAIL", "3 calls, values and state")

    if DEV == "cpu":
        return
    try:
        F.quantize_noise(torch.ones(3), u64_state(torch, 1, 0, DEV))
        row("1 CUDA == CPU", "CUDA state with CPU x", "FAIL", "no error raised")
    except ValueError as e:
        row("1 CUDA == CPU", "CUDA state with CPU x", "PASS", f"ValueError: {e}")


# ---- 2. cuRAND ----
def check_curand(torch, rngx):
    inc = curand_include(torch) if DEV == "cuda" else None
    if inc is None:
        row("2 cuRAND", "Philox4_32_10 words", "SKIP", "curand_kernel.h not found")
        return
    exe = os.path.join(BUILD, "curand_words")
    src = os.path.join(ROOT, "benchmarks", "curand_words.cu")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(BUILD, exist_ok=True)
        subprocess.run([nvcc_path(), "-O2", "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                        "arch=compute_80,code=compute_80", f"-I{inc}", src, "-o", exe], check=True)
    cases = [(0, 0, 64), (0x0123_4567_89AB_CDEF, 3, 1001), ((1 << 64) - 1, (1 << 34) + 1, 257), (42, (1 << 40) - 2, 300)]
    bad = []
    for seed, offset, count in cases:
        out = subprocess.run([exe, str(seed), str(offset), str(count)], capture_output=True, text=True, check=True).stdout
        theirs = [int(w, 16) for w in out.split()]
        ours = rngx.functional.bits([count], u64_state(torch, seed, offset, DEV)).tolist()
        if ours != theirs:
            bad.append(f"seed={seed:#x} offset={offset}")
    words = sum(c for _, _, c in cases)
    row("2 cuRAND", "Philox4_32_10 words", "PASS" if not bad else "FAIL",
        f"{len(cases)} (seed, offset) cases, {words} words" + (f"; first mismatch: {bad[0]}" if bad else ""))


# ---- 3. torch.compile and CUDA graphs ----
def check_compile(torch, rngx):
    def step(x, g):
        y = rngx.quantize(x, "noise", generator=g)
        return rngx.dropout(y, 0.3, generator=g)

    compiled = torch.compile(step, fullgraph=True)
    for layout in ("contiguous", "channels_last"):
        x0 = torch.randn(8, 16, 12, 12, device=DEV)
        if layout == "channels_last":
            x0 = x0.contiguous(memory_format=torch.channels_last)
        results = []
        for fn in (step, compiled):
            g = rngx.Generator(2024, device=DEV)
            x = x0.clone().requires_grad_()
            outs = [fn(x, g) for _ in range(2)]
            (gx,) = torch.autograd.grad(sum((o * o).sum() for o in outs), x)
            results.append((outs, gx, g.state.clone()))
        (eo, eg, es), (co, cg, cs) = results
        ok = all(torch.equal(a, b) for a, b in zip(eo, co)) and torch.equal(eg, cg) and torch.equal(es, cs)
        ok = ok and not torch.equal(eo[0], eo[1])
        row("3 compile", f"fullgraph == eager ({layout})", "PASS" if ok else "FAIL", "outputs, x.grad, state; 2 fresh calls")

    # generator=None follows torch.manual_seed in both modes.
    def noise(x):
        return rngx.quantize(x, "noise")

    x = torch.randn(1000, device=DEV)
    torch.manual_seed(32)
    eager = noise(x)
    torch.manual_seed(32)
    comp = torch.compile(noise, fullgraph=True)(x)
    row("3 compile", "generator=None after torch.manual_seed", "PASS" if torch.equal(eager, comp) else "FAIL", "CPU-drawn state, CUDA x")

    # CUDA graphs through Inductor: the state is a static input advanced in place by every replay.
    from torch._dynamo.utils import counters

    def drop(x, g):
        return rngx.dropout(rngx.quantize(x, "noise", generator=g), 0.5, generator=g)

    counters.clear()
    cg = torch.compile(drop, mode="reduce-overhead", fullgraph=True)
    x = torch.randn(4096, device=DEV)
    g1, g2 = rngx.Generator(77, device=DEV), rngx.Generator(77, device=DEV)
    got = [cg(x, g1).clone() for _ in range(5)]
    want = [drop(x, g2) for _ in range(5)]
    skips = counters["inductor"]["cudagraph_skips"]  # bumped whenever Inductor falls back from CUDA graphs
    ok = all(torch.equal(a, b) for a, b in zip(got, want)) and torch.equal(g1.state, g2.state)
    fresh = len({tuple(t[:8].tolist()) for t in got}) == 5
    graphs_ok = not skips or DEV == "cpu"  # on the CPU there are no CUDA graphs to skip
    row("3 compile", 'mode="reduce-overhead", 5 replays', "PASS" if ok and fresh and graphs_ok else "FAIL",
        f"same sequence as eager: {ok}; fresh each call: {fresh}; cudagraph skips: {skips}")

    # A hand-made capture: replays read the GPU state when they run.
    if DEV == "cpu":
        return
    g1, g2 = rngx.Generator(99, device=DEV), rngx.Generator(99, device=DEV)
    x = torch.randn(1 << 16, device=DEV)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        rngx.quantize(x, generator=rngx.Generator(0, device=DEV))  # warm-up on a side stream, as torch advises
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = rngx.quantize(x, generator=g1)
    got = []
    for _ in range(3):
        graph.replay()
        got.append(out.clone())
    want = [rngx.quantize(x, generator=g2) for _ in range(3)]
    ok = all(torch.equal(a, b) for a, b in zip(got, want)) and torch.equal(g1.state, g2.state)
    row("3 compile", "torch.cuda.CUDAGraph, 3 replays", "PASS" if ok else "FAIL", "capture advances nothing; replays do")


# ---- 4. throughput ----
def bench(torch, fn, iters=20, reps=3):
    """Milliseconds per call, best of `reps` runs of `iters` back-to-back calls (CUDA events)."""
    for _ in range(3):
        fn()
    if DEV == "cpu":
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t) * 1e3 / iters
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b) / iters)
    return best


def check_throughput(torch, rngx, log2):
    import torch.nn.functional as tF

    n = 1 << log2
    x = torch.randn(n, device=DEV)
    xg = x.clone().requires_grad_()
    grad = torch.randn(n, device=DEV)
    g = rngx.Generator(1, device=DEV)

    def dropout_fb(fn):
        return lambda: torch.autograd.grad(fn(xg), xg, grad)

    c_rand = torch.compile(lambda t: torch.rand_like(t))
    c_noise = torch.compile(lambda t: t + torch.empty_like(t).uniform_(-0.5, 0.5))
    c_drop = torch.compile(lambda t: tF.dropout(t, 0.5, training=True))
    gb = n * 4 / 1e9
    cases = [  # name, fn, GB moved (reads + writes), torch eager counterpart
        ("x.clone()", lambda: x.clone(), 2 * gb, None),
        ("torch.rand_like", lambda: torch.rand_like(x), gb, None),
        ("torch.compile(rand_like)", lambda: c_rand(x), gb, None),
        ("rngx.rand_like", lambda: rngx.rand_like(x, generator=g), gb, "torch.rand_like"),
        ("torch x + uniform_", lambda: x + torch.empty_like(x).uniform_(-0.5, 0.5), 2 * gb, None),
        ("torch.compile(x + uniform_)", lambda: c_noise(x), 2 * gb, None),
        ("rngx.quantize_noise", lambda: rngx.quantize(x, "noise", generator=g), 2 * gb, "torch x + uniform_"),
        ("F.dropout fwd+bwd", dropout_fb(lambda t: tF.dropout(t, 0.5, training=True)), 4 * gb, None),
        ("torch.compile(F.dropout) fwd+bwd", dropout_fb(c_drop), 4 * gb, None),
        ("rngx.dropout fwd+bwd", dropout_fb(lambda t: rngx.dropout(t, 0.5, generator=g)), 4 * gb, "F.dropout fwd+bwd"),
    ]
    ms = {}
    for name, fn, moved, rival in cases:
        ms[name] = t = bench(torch, fn)
        detail = f"{t:.3f} ms, {moved / (t * 1e-3):.0f} GB/s"
        if rival is None:
            row(f"4 2^{log2} f32", name, "info", detail)
        else:
            ok = t <= ms[rival]
            row(f"4 2^{log2} f32", name, "PASS" if ok else "FAIL", f"{detail}; {ms[rival] / t:.2f}x {rival}")
    ratio = ms["x.clone()"] / ms["rngx.quantize_noise"]
    row(f"4 2^{log2} f32", "quantize_noise vs clone (>= 90%)", "PASS" if ratio >= 0.9 else "FAIL", f"{100 * ratio:.1f}% of clone's throughput")
    NOTES.append("GB/s: the bytes one fused pass reads and writes (4 B/element for rand, 8 for clone and noise, "
                 "16 for dropout fwd+bwd), the same count for torch's rows, so equal GB/s means equal time.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-log2", type=int, default=28, help="elements in the throughput tensors, as a power of 2")
    ap.add_argument("--opcheck", action="store_true", help="also run torch_rngx.testing.opcheck_all on the device (~1 min)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: smoke-test this script without a GPU, using whatever torch_rngx imports (no build)")
    args = ap.parse_args()
    global DEV
    DEV = args.device

    if DEV == "cuda":
        try:
            row("0 setup", "build", build_extension(), "USE_CUDA=1 setup.py build_ext --inplace")
        except Exception as e:
            row("0 setup", "build", "FAIL", f"{type(e).__name__}: {e}")
            return report()
        sys.path.insert(0, ROOT)
    import torch

    import torch_rngx as rngx

    ready = DEV == "cpu" or (torch.cuda.is_available() and torch._C._dispatch_has_kernel_for_dispatch_key("rngx::uniform", "CUDA"))
    row("0 setup", "torch / device", "PASS" if ready else "FAIL",
        f"torch {torch.__version__}, {torch.cuda.get_device_name() if DEV == 'cuda' and torch.cuda.is_available() else DEV}")
    sections = [("1 CUDA == CPU", lambda: check_equal(torch, rngx)), ("2 cuRAND", lambda: check_curand(torch, rngx)),
                ("3 compile", lambda: check_compile(torch, rngx))]
    if args.opcheck:
        sections.append(("3 compile", lambda: row("3 compile", f"opcheck_all({DEV!r})", "PASS",
                                                  f"{rngx.testing.opcheck_all(DEV)} samples")))
    sections.append(("4 throughput", lambda: check_throughput(torch, rngx, args.size_log2)))
    for section, fn in sections if ready else []:
        try:
            fn()
        except Exception as e:  # one broken section must not hide the others
            traceback.print_exc()
            row(section, "(section)", "FAIL", f"{type(e).__name__}: {e}"[:200])

    return report()


def report():
    header = ("section", "check", "result")
    widths = [max(len(str(r[i])) for r in ROWS + [header]) for i in range(3)]
    lines = [f"GPU check, {time.time() - T0:.0f} s", ""]
    lines += [f"| {'section':<{widths[0]}} | {'check':<{widths[1]}} | {'result':<{widths[2]}} | detail"]
    lines += [f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 2)}|{'-' * (widths[2] + 2)}|-------"]
    lines += [f"| {s:<{widths[0]}} | {c:<{widths[1]}} | {r:<{widths[2]}} | {d}" for s, c, r, d in ROWS]
    table = "\n".join(lines + [""] + NOTES)
    print("\n" + table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "gpu_check.txt"), "w") as f:
            f.write(table + "\n")
    return 1 if any(r[2] == "FAIL" for r in ROWS) else 0


if __name__ == "__main__":
    sys.exit(main())
