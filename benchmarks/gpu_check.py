"""The GPU check (docs/cuda.md): one prepared command for a CUDA machine, about 5 minutes on an H200.

It builds the CUDA extension in place (skipped while the build is newer than csrc/ and setup.py), then checks the
stream 1.0 contract (docs/stream.md; a state [seed, offset] counts its offset in 128-bit Philox blocks):

0. stream 1.0's known answers (tests/kat/stream-1.0.json), every case on the device.
1. CUDA == CPU, bit for bit: bits (all 8 integer dtypes), uniform (4 float dtypes, [0, 1) and other bounds),
   quantize_noise, dropout and its backward, stochastic_round (to a 16-bit and, saturating, to a float8 type),
   normal with tensor mean and std, alpha and feature alpha dropout, rrelu, cauchy, log_normal, geometric,
   split, fold_in (int and tensor data), optim.stochastic_rounding's fused Adam step, batched states ((N,1,1,1,2)
   per sample, broadcast ones) and a Generator(device="cuda"); layouts contiguous, channels_last, transposed,
   sliced and 1-D; the state on the CPU and on the GPU; float32 uniform and dropout at 2^size-log2 elements.
2. words == cuRAND: bits of the state [seed, o] are cuRAND's Philox4_32_10 words from curand_init(seed, 0, 4*o)
   (benchmarks/curand_words.cu, compiled with nvcc at run time).
3. torch.func._random interop (keys, split, fold_in, uniform) where this torch has it on the device.
4. torch.compile(fullgraph=True) == eager, grads and states included; mode="reduce-overhead" (CUDA graphs) and a
   hand-captured torch.cuda.CUDAGraph advance a CUDA Generator exactly as eager steps do.
5. speed side by side in this run (CUDA events, warmup, median of rounds in which the two take turns), float32 at
   2^size-log2 elements: ratio = torch's time / ours, so > 1 means faster than torch.
6. torch_rngx.triton compiled for the GPU == our ops there (enable_fp_fusion off, and on for the functions that
   need not care), and the fused dropout example forward and backward (docs/device_api.md).
7. kernels per eager draw at 2^16 (profiler): ours with a Generator on the device, the op alone on an explicit
   key, torch's dropout and rand_like, with device time; and AOTInductor packages run on device states.

Prints one table and writes benchmarks/results/gpu_check_<gpu>.json: `checks` (name -> "pass", "fail" or
"skip: why"), `details`, `speed` (name -> {ratio, ours_ms, theirs_ms, target, met}), `launches` (name -> {kernels,
names, device_us}) and `meta`; with $OUT set it
copies the JSON and the table (gpu_check.txt) there. The exit status is 1 iff a check fails: a missed speed target
is reported in the JSON and the table but never changes the exit status.

    python3 benchmarks/gpu_check.py                              # on the GPU machine
    python3 benchmarks/gpu_check.py --device cpu --size-log2 14  # dry run of this script on the CPU: no build,
                                                                 # CPU vs CPU, CUDA-only parts skip with a reason
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import traceback

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "gpu")
U64, M32 = 1 << 64, (1 << 32) - 1
T0 = time.time()
DEV = "cuda"  # --device cpu: the whole script on the CPU, to test the script itself
rngx = F = None  # torch_rngx and torch_rngx.functional, imported after the build
ROWS, CHECKS, DETAILS, SPEED, LAUNCHES = [], {}, {}, {}, {}
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32, torch.uint64)


# ---- bookkeeping ----
def record(section, name, result, detail=""):
    """One check: result is "pass", "fail" or "skip: why"."""
    key = f"{section}/{name}"
    CHECKS[key] = result
    if detail:
        DETAILS[key] = detail
    if result.startswith("skip: "):  # the table shows the reason as the detail
        result, detail = "skip", result[len("skip: "):]
    ROWS.append((section, name, result, detail))
    print(f"[{time.time() - T0:6.1f}s] {section} | {name} | {result} | {detail}", flush=True)


class Tally:
    """The comparisons behind one check: how many, and the first few that failed."""

    def __init__(self):
        self.total, self.bad, self.notes = 0, [], []

    def add(self, ok, what):
        self.total += 1
        if not ok:
            self.bad.append(what)

    def record(self, section, name):
        detail = f"{self.total - len(self.bad)}/{self.total} ok" + "".join(f"; {n}" for n in self.notes)
        if self.bad:
            detail += "; first failures: " + ", ".join(self.bad[:3])
        record(section, name, "pass" if self.total and not self.bad else "fail", detail)


def same(got, want, strides=True):
    """Bit for bit: dtype, shape, strides and every element's bits (through same-size signed integer views, so
    -0.0 != 0.0, NaNs compare by payload, and unsigned dtypes need no comparison kernels)."""
    if got.dtype != want.dtype or got.shape != want.shape or (strides and got.stride() != want.stride()):
        return False
    signed = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    return torch.equal(got.detach().cpu().view(signed), want.detach().cpu().view(signed))


def where_states():
    """Where the state lives for a CUDA input: CPU and GPU (only the CPU in a dry run)."""
    return list(dict.fromkeys(("cpu", DEV)))


def state(seed, offset, dtype=torch.int64, device="cpu"):
    """The key [seed, offset], both taken mod 2^64, as int64 bit patterns (or viewed as uint64)."""
    signed = [v % U64 - U64 if v % U64 >= 1 << 63 else v % U64 for v in (seed, offset)]
    return torch.tensor(signed, dtype=torch.int64, device=device).view(dtype)


def as_uints(t):
    """A tensor's elements as Python ints, read as unsigned (uint32/uint64 without their own kernels)."""
    bits = 8 * t.element_size()
    signed = {4: torch.int32, 8: torch.int64}[t.element_size()]
    return [v % (1 << bits) for v in t.cpu().view(signed).tolist()]


# Offsets count blocks: at 0, odd, across the carry into the counter's high word, and wrapping past 2^64.
STATES = {
    "offset 0": (0x0123_4567_89AB_CDEF, 0, torch.int64),
    "offset 7 (uint64 state)": (0xFEDC_BA98_7654_3210, 7, torch.uint64),
    "offset 2^32-2": (42, (1 << 32) - 2, torch.int64),
    "offset 2^64-10": (5, U64 - 10, torch.int64),
}


def dropout_grad(x, st):
    x = x.detach().requires_grad_()
    y = F.dropout(x, st, 0.3)
    return torch.autograd.grad(y, x, torch.full_like(y, 1.25))[0]


# stochastic_round's targets below each float dtype
ROUND_TO = {torch.float16: torch.bfloat16, torch.bfloat16: torch.float8_e5m2, torch.float32: torch.bfloat16,
            torch.float64: torch.float16}
ROUND_TO_FLOAT8 = {torch.float16: torch.float8_e5m2, torch.bfloat16: torch.float8_e4m3fn,
                   torch.float32: torch.float8_e4m3fn, torch.float64: torch.float8_e5m2}

FLOAT_OPS = {  # name -> fn(x, state)
    "uniform [0,1)": lambda x, st: F.uniform(x, st),
    "uniform [-1.5,2)": lambda x, st: F.uniform(x, st, -1.5, 2.0),
    "quantize_noise": lambda x, st: F.quantize_noise(x, st, 0.5),
    "dropout": lambda x, st: F.dropout(x, st, 0.3),
    "dropout backward": dropout_grad,
    "normal": lambda x, st: F.normal(x, st, 0.25, 1.5),
    "truncated_normal": lambda x, st: F.truncated_normal(x, st, 0.5, 2.0, -1.0, 3.3),
    "bernoulli": lambda x, st: F.bernoulli(x, st, 0.3),
    "bernoulli, tensor p": lambda x, st: F.bernoulli(x, st, torch.linspace(0, 1, x.shape[-1], device=x.device)
                                                     if x.dim() else torch.tensor(0.4, device=x.device)),
    "randint int64": lambda x, st: F.randint(x, st, -7, 2**62 + 5),
    "randint int8": lambda x, st: F.randint(x, st, -100, 27, dtype=torch.int8),
    "exponential": lambda x, st: F.exponential(x, st, 1.5),
    "stochastic_round": lambda x, st: F.stochastic_round(x, st, ROUND_TO[x.dtype]),
    "stochastic_round float8, saturate": lambda x, st: F.stochastic_round(x * 300, st, ROUND_TO_FLOAT8[x.dtype], True),
    # issue 43's ops: mean and std read from x (a second input through each walk), the closed forms, the affines
    "normal, tensor mean and std": lambda x, st: F.normal(x, st, x, x.abs()),
    "alpha_dropout": lambda x, st: F.alpha_dropout(x, st, 0.3),
    "feature_alpha_dropout": lambda x, st: F.feature_alpha_dropout(x if x.dim() >= 2 else x.view(1, -1), st, 0.3),
    "rrelu": lambda x, st: F.rrelu(x, st, 0.125, 1 / 3),
    "cauchy": lambda x, st: F.cauchy(x, st, 0.5, 2.0),
    "log_normal": lambda x, st: F.log_normal(x, st, 0.25, 1.5),
    "geometric": lambda x, st: F.geometric(x, st, 0.3),
}


# ---- 0. build ----
def newest(paths):
    return max(os.path.getmtime(p) for p in paths)


def build_extension():
    """USE_CUDA=1 in-place build, unless torch_rngx/_C.abi3.so and _C_cuda.abi3.so are newer than csrc/ and
    setup.py."""
    libraries = [os.path.join(ROOT, "torch_rngx", f"{name}.abi3.so") for name in ("_C", "_C_cuda")]
    sources = glob.glob(os.path.join(ROOT, "csrc", "**", "*"), recursive=True) + [os.path.join(ROOT, "setup.py")]
    if all(os.path.exists(so) and os.path.getmtime(so) > newest(sources) for so in libraries):
        return "cached"
    cmd = [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--force", "--build-temp", BUILD]
    subprocess.run(cmd, cwd=ROOT, env={**os.environ, "USE_CUDA": "1"}, check=True)
    return "built"


# ---- 1. CUDA == CPU ----
def layouts(dtype, gen):
    """name -> (CPU tensor, device tensor with the same values and strides)."""
    base = torch.randn(3, 40, 17, 19, generator=gen).to(dtype)
    wide = torch.randn(3, 41, 34, 21, generator=gen).to(dtype)
    dense = {  # .to() keeps the strides of a dense tensor
        "contiguous": base,
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "transposed": base.transpose(1, 3),
        "1-D 2^20+3": torch.randn(2**20 + 3, generator=gen).to(dtype),
    }
    pairs = {k: (v, v.to(DEV)) for k, v in dense.items()}
    pairs["sliced"] = (wide[:, 1:, ::2, 1:-1], wide.to(DEV)[:, 1:, ::2, 1:-1])
    return pairs


def check_float_ops():
    gen = torch.Generator().manual_seed(0)
    xs = {dtype: layouts(dtype, gen) for dtype in FLOAT_DTYPES}
    for name, fn in FLOAT_OPS.items():
        t = Tally()
        for dtype, pairs in xs.items():
            for lname, (x, xd) in pairs.items():
                for sname, (seed, offset, sdtype) in STATES.items():
                    want = fn(x, state(seed, offset, sdtype))
                    for where in where_states():
                        got = fn(xd, state(seed, offset, sdtype, where))
                        t.add(got.device == xd.device and same(got, want), f"{dtype} {lname} {sname} state on {where}")
        t.record("cuda==cpu", name)


def check_known_answers():
    """Stream 1.0's known answers (tests/kat/stream-1.0.json), every case computed on the device."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "kat"))
    import kat

    t = Tally()
    for c in kat.load()["cases"]:
        t.add(kat.rngx_bits(*kat.case_of(c), DEV) == [int(b, 16) for b in c["bits"]], c["name"])
    t.record("stream 1.0", "known answers (tests/kat/stream-1.0.json)")


def check_bits():
    t = Tally()
    for dtype in INT_DTYPES:
        for size in ([3, 40, 17, 19], [2**20 + 3], [0], []):
            for sname, (seed, offset, sdtype) in STATES.items():
                want = F.bits(size, state(seed, offset, sdtype), dtype=dtype)
                got = F.bits(size, state(seed, offset, sdtype, DEV), dtype=dtype)  # made on the state's device
                t.add(got.device.type == DEV and same(got, want), f"{dtype} size={size} {sname}")
    st = state(7, 3, device=DEV)
    t.add(same(F.bits([99], st), F.bits([99], st, dtype=torch.int32)), "default dtype is not int32")
    t.notes.append("8 integer dtypes, state on the GPU vs on the CPU")
    t.record("cuda==cpu", "bits")


def check_split_fold_in():
    keys = {name: state(seed, offset, sdtype) for name, (seed, offset, sdtype) in STATES.items()}
    keys["batched (2,3,2)"] = F.split(state(9, 4), 6).view(2, 3, 2)
    ts, ti, tt = Tally(), Tally(), Tally()
    for name, st in keys.items():
        sd = st.to(DEV)
        for num in (1, 2, 5):
            got = F.split(sd, num)
            ts.add(got.device == sd.device and got.shape == (num, *st.shape) and same(got, F.split(st, num)),
                   f"{name} num={num}")
        for data in (0, 7, 1 << 63, U64 - 1):
            got = F.fold_in(sd, data)
            ok = got.device == sd.device and same(got, F.fold_in(st, data))
            if data < 8:  # fold_in(s, d) == split(s, d + 1)[d]
                ok = ok and same(got, F.split(sd, data + 1)[data])
            ti.add(ok, f"{name} data={data}")
    # Tensor data: one datum per key, broadcast to the batch shape; each equals fold_in with that int.
    st = keys["batched (2,3,2)"]
    datas = {"(2,1) int64": torch.tensor([[3], [-1]]), "(3,) uint64": torch.tensor([0, -1, 1 << 62]).view(torch.uint64),
             "() int64": torch.tensor(11)}
    for name, data in datas.items():
        got = F.fold_in(st.to(DEV), data.to(DEV))
        ok = same(got, F.fold_in(st, data))
        flat = torch.broadcast_to(data.view(torch.int64), st.shape[:-1]).reshape(-1).tolist()
        ok = ok and all(same(got.view(-1, 2)[i], F.fold_in(st.view(-1, 2)[i].to(DEV), d % U64)) for i, d in enumerate(flat))
        tt.add(ok, name)
    tt.add(same(F.fold_in(keys["offset 0"].to(DEV), torch.tensor(5, device=DEV)), F.fold_in(keys["offset 0"], 5)), "unbatched")
    ts.record("cuda==cpu", "split")
    ti.record("cuda==cpu", "fold_in (int data)")
    tt.record("cuda==cpu", "fold_in (tensor data)")


def check_batched():
    """Batched states on (N,C,H,W): CUDA == CPU; out[n] is the op on x[n] with key n; broadcast dims repeat."""
    N, C, H, W = 4, 6, 9, 11
    keys = F.split(state(0xB47C, 3), N * C)  # (N*C, 2): distinct keys
    shapes = {"(N,1,1,1,2)": (N, 1, 1, 1), "(1,C,1,1,2) broadcast over N": (1, C, 1, 1), "(N,C,1,1,2)": (N, C, 1, 1),
              "(1,1,1,1,2)": (1, 1, 1, 1)}
    batched = {name: keys[: torch.Size(b).numel()].reshape(*b, 2) for name, b in shapes.items()}
    gen = torch.Generator().manual_seed(1)
    t, cpu_state = Tally(), Tally()
    for dtype in FLOAT_DTYPES:
        base, wide = torch.randn(N, C, H, W, generator=gen).to(dtype), torch.randn(N, C, 2 * H, W + 2, generator=gen).to(dtype)
        xs = {"contiguous": base, "channels_last": base.contiguous(memory_format=torch.channels_last),
              "sliced": wide[:, :, ::2, 1:-1]}
        for lname, x in xs.items():
            xd = x.to(DEV) if lname != "sliced" else wide.to(DEV)[:, :, ::2, 1:-1]
            for sname, st in batched.items():
                for op, fn in FLOAT_OPS.items():
                    want = fn(x, st)
                    t.add(same(fn(xd, st.to(DEV)), want), f"{op} {dtype} {lname} {sname}")
                    if DEV != "cpu":
                        cpu_state_outcome(cpu_state, lambda: fn(xd, st), want, f"{op} {dtype} {lname} {sname}")
    for dtype in (torch.int32, torch.int64, torch.uint16):
        for sname, st in batched.items():
            t.add(same(F.bits([N, C, H, W], st.to(DEV), dtype=dtype), F.bits([N, C, H, W], st, dtype=dtype)), f"bits {dtype} {sname}")
    t.record("cuda==cpu", "batched states, state on the GPU")
    if DEV == "cpu":
        record("cuda==cpu", "batched states, CPU state with CUDA x", "skip: needs a GPU")
    else:
        cpu_state.record("cuda==cpu", "batched states, CPU state with CUDA x")
    check_batched_semantics(keys.to(DEV), N, C, H, W)


def check_global_view():
    """A block of a global tensor (global_shape, global_start), as Shard(0), Shard(1) and a 2-D mesh would cut it, in
    several layouts, with one key and with batched keys over the global dims: CUDA == the CPU block == the block of
    the CPU op on the whole tensor; dropout's backward too."""
    G = (6, 10, 7)
    blocks = {"rows": ([2, 10, 7], [2, 0, 0]), "columns, uneven": ([6, 3, 7], [0, 7, 0]),
              "2-d mesh": ([3, 5, 7], [3, 5, 0]), "inner cut": ([2, 4, 3], [1, 2, 4])}
    keys = {"one key": state(0x61, 5), "(6,1,1,2)": F.split(state(0x62, 1), 6).view(6, 1, 1, 2),
            "(6,10,1,2)": F.split(state(0x63, 2), 60).view(6, 10, 1, 2)}
    gen = torch.Generator().manual_seed(3)
    t = Tally()
    for dtype in FLOAT_DTYPES:
        g = torch.randn(G, generator=gen).to(dtype)
        for kname, st in keys.items():
            whole = {op: fn(g, st) for op, fn in FLOAT_OPS.items() if op != "dropout backward"}
            for bname, (size, start) in blocks.items():
                cut = tuple(slice(s, s + n) for s, n in zip(start, size))
                view = dict(global_shape=G, global_start=start)
                for lname, x in (("contiguous", g[cut].contiguous()), ("transposed", g[cut].transpose(0, 2).contiguous().transpose(0, 2))):
                    xd = x.to(DEV)
                    for op, fn in (("uniform", lambda a, k: F.uniform(a, k, -1.5, 2.0, **view)),
                                   ("quantize_noise", lambda a, k: F.quantize_noise(a, k, 0.5, **view)),
                                   ("dropout", lambda a, k: F.dropout(a, k, 0.3, **view))):
                        want = whole["uniform [-1.5,2)" if op == "uniform" else op][cut]
                        got = fn(xd, st.to(DEV))
                        t.add(same(got.cpu().contiguous(), want.contiguous(), strides=False) and same(got, fn(x, st)),
                              f"{op} {dtype} {kname} {bname} {lname}")
                    xg = xd.detach().requires_grad_()
                    grad = torch.autograd.grad(F.dropout(xg, st.to(DEV), 0.3, **view), xg, torch.ones_like(xg))[0]
                    t.add(same(grad.cpu(), torch.autograd.grad(F.dropout(x.requires_grad_(), st, 0.3, **view), x,
                                                               torch.ones_like(x))[0]), f"dropout backward {dtype} {kname} {bname}")
    for bname, (size, start) in blocks.items():
        want = F.bits(list(G), keys["one key"], dtype=torch.int64)[tuple(slice(s, s + n) for s, n in zip(start, size))]
        got = F.bits(size, keys["one key"].to(DEV), dtype=torch.int64, global_shape=G, global_start=start)
        t.add(same(got, want.contiguous()), f"bits int64 {bname}")
    t.record("cuda==cpu", "global view (blocks of a global tensor)")


def cpu_state_outcome(t, call, want, what):
    """A batched CPU state with a CUDA x: either the CPU's values, or a ValueError that says why."""
    try:
        t.add(same(call(), want), what)
    except ValueError as e:
        clear = "batched state" in str(e) and "CPU" in str(e)
        t.add(clear, f"{what}: unclear ValueError {e}")
        if clear and not t.notes:
            t.notes.append(f"rejected: ValueError: {e}")
    except Exception as e:
        t.add(False, f"{what}: {type(e).__name__} {e}"[:200])


def check_batched_semantics(keys, N, C, H, W):
    """On the device: per-sample keys give out[n] == op(x[n], key n); a (1,C,1,1,2) state repeats along N."""
    t = Tally()
    x = torch.randn(N, C, H, W, device=DEV).contiguous(memory_format=torch.channels_last)
    per_sample, per_channel = keys[:N].reshape(N, 1, 1, 1, 2), keys[:C].reshape(1, C, 1, 1, 2)
    for dtype in (torch.float32, torch.float64):
        u = F.uniform(x, per_sample, dtype=dtype)
        t.add(all(same(u[n], F.uniform(x[n], per_sample[n, 0, 0, 0], dtype=dtype), strides=False) for n in range(N)),
              f"uniform {dtype} per sample")
        u = F.uniform(x, per_channel, dtype=dtype)
        t.add(all(same(u[n, c], F.uniform(x[0, c], per_channel[0, c, 0, 0], dtype=dtype), strides=False)
                  for n in range(N) for c in range(C)), f"uniform {dtype} broadcast over N")
    b = F.bits([N, C, H, W], per_sample, dtype=torch.int64)
    t.add(all(same(b[n], F.bits([C, H, W], per_sample[n, 0, 0, 0], dtype=torch.int64)) for n in range(N)), "bits int64 per sample")
    t.record("cuda==cpu", "batched semantics on the device")


def check_generator():
    """A CUDA Generator follows a CPU one: values, states (offset = sum of blocks_used), split and fold_in."""
    gc, gd = rngx.Generator(123), rngx.Generator(123, device=DEV)
    x = torch.randn(64, 33)
    calls = [(torch.float32, lambda x, g: rngx.quantize(x, generator=g)),
             (torch.float64, lambda x, g: rngx.rand_like(x, generator=g, dtype=torch.float64)),
             (torch.float16, lambda x, g: rngx.dropout(x.half(), 0.2, generator=g))]
    t, blocks = Tally(), 0
    for dtype, fn in calls:
        t.add(same(fn(x.to(DEV), gd), fn(x, gc)), f"{dtype} values")
        blocks += rngx.blocks_used(x.numel(), dtype)
    t.add(same(gd.state, gc.state) and int(gc.state[1]) == blocks, f"state {gd.state.tolist()}, want offset {blocks}")
    for name, derive in (("split(3)", lambda g: g.split(3)), ("fold_in(5)", lambda g: [g.fold_in(5)])):
        before = gd.state.clone()
        kc, kd = derive(gc), derive(gd)
        t.add(same(gd.state, before), f"{name} advanced the parent")
        t.add(all(a.device.type == DEV and same(a.state, b.state) for a, b in zip(kd, kc)), f"{name} states")
        t.add(same(rngx.rand_like(x.to(DEV), generator=kd[-1]), rngx.rand_like(x, generator=kc[-1])), f"{name} values")
    t.record("cuda==cpu", "Generator(device='cuda')")


def check_adam_step():
    """torch_rngx.optim.stochastic_rounding's fused AdamW step (rngx::adam_sround_) on the device: weights and
    moments are the CPU's, bit for bit, over 3 steps of bfloat16 and float16 weights, Adam with L2 and maximize too."""
    t = Tally()
    for dtype in (torch.bfloat16, torch.float16):
        for kind, options in ((torch.optim.AdamW, dict(weight_decay=0.1)),
                              (torch.optim.Adam, dict(weight_decay=0.05, maximize=True, betas=(0.3, 0.9)))):
            runs = []
            for device in ("cpu", DEV):
                torch.manual_seed(4)
                w = torch.nn.Parameter(torch.randn(3001, 7).to(dtype).to(device))
                opt = kind([w], lr=1e-2, **options)
                rngx.optim.stochastic_rounding(opt, seed=8)
                for _ in range(3):
                    w.grad = (torch.randn(3001, 7) * 0.1).to(dtype).to(device)
                    opt.step()
                runs.append([w.detach().cpu(), opt.state[w]["exp_avg"].cpu(), opt.state[w]["exp_avg_sq"].cpu()])
            t.add(all(same(a, b) for a, b in zip(*runs)), f"{kind.__name__} {dtype}")
    t.record("cuda==cpu", "optim.stochastic_rounding fused Adam step")


def check_errors():
    if DEV == "cpu":
        record("cuda==cpu", "CUDA state with CPU x", "skip: needs a GPU")
        return
    try:
        F.quantize_noise(torch.ones(3), state(1, 0, device=DEV))
        record("cuda==cpu", "CUDA state with CPU x", "fail", "no error raised")
    except ValueError as e:
        record("cuda==cpu", "CUDA state with CPU x", "pass", f"ValueError: {e}")


def check_big(log2):
    """float32 uniform and dropout at 2^log2 elements; the offset wraps past 2^64 halfway through."""
    n = 1 << log2
    xd = torch.randn(n, device=DEV)
    x = xd.cpu()
    st = state(0xB16, U64 - (n >> 3))
    for name, fn in (("uniform", lambda x, s: F.uniform(x, s)), ("dropout", lambda x, s: F.dropout(x, s, 0.1))):
        t = time.time()
        want = fn(x, st)
        cpu_s = time.time() - t
        ok = same(fn(xd, st.to(DEV)), want)
        record("cuda==cpu", f"{name} float32 2^{log2}", "pass" if ok else "fail", f"CPU side {cpu_s:.1f} s; wraps at 2^64")
        del want


# ---- 2. cuRAND ----
def curand_include():
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
    return shutil.which("nvcc")


def curand_words_exe():
    exe, src = os.path.join(BUILD, "curand_words"), os.path.join(ROOT, "benchmarks", "curand_words.cu")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(BUILD, exist_ok=True)
        subprocess.run([nvcc_path(), "-O2", "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                        "arch=compute_80,code=compute_80", f"-I{curand_include()}", src, "-o", exe], check=True)
    return exe


def check_curand():
    """bits of [seed, o] == cuRAND's words from curand_init(seed, 0, 4*o): 32-bit dtypes one word each, 64-bit
    dtypes two, first word high."""
    if DEV != "cuda":
        record("curand", "words", "skip: needs a GPU")
        return
    if curand_include() is None or nvcc_path() is None:
        record("curand", "words", "skip: nvcc or curand_kernel.h not found")
        return
    compare_curand(curand_words_exe())


def compare_curand(exe):
    """exe SEED BLOCK COUNT prints cuRAND's words; ours come from a state on the CPU and on the GPU."""
    cases = [(0, 0, 64), (0x0123_4567_89AB_CDEF, 3, 1001), (U64 - 1, (1 << 34) + 1, 257), (42, (1 << 62) + 5, 300),
             (7, U64 - 3, 40)]  # the last one wraps past block 2^64 - 1 to block 0
    t32, t64 = Tally(), Tally()
    for seed, block, count in cases:
        out = subprocess.run([exe, str(seed), str(block), str(2 * count)], capture_output=True, text=True, check=True)
        words = [int(w, 16) for w in out.stdout.split()]
        pairs = [(words[2 * i] << 32) | words[2 * i + 1] for i in range(count)]
        for where in where_states():
            st, what = state(seed, block, device=where), f"seed={seed:#x} block={block} state on {where}"
            t32.add(as_uints(F.bits([count], st, dtype=torch.uint32)) == words[:count], f"uint32 {what}")
            t32.add([w & M32 for w in F.bits([count], st, dtype=torch.int32).tolist()] == words[:count], f"int32 {what}")
            t64.add(as_uints(F.bits([count], st, dtype=torch.uint64)) == pairs, f"uint64 {what}")
            t64.add(as_uints(F.bits([count], st, dtype=torch.int64)) == pairs, f"int64 {what}")
    t32.notes.append(f"{len(cases)} (seed, block) cases incl. block >= 2^62 and the wrap at 2^64")
    t32.record("curand", "bits uint32/int32 == curand() words")
    t64.record("curand", "bits uint64/int64 == (w0 << 32) | w1")


# ---- 3. torch.func._random ----
def func_random():
    """torch.func._random where this torch has its kernels on the device (from torch 2.13 on), else None."""
    if torch.__version__ < "2.13":
        return None
    try:
        import torch.func._random as R

        return R if torch._C._dispatch_has_kernel_for_dispatch_key("aten::_philox_uniform_", DEV.upper()) else None
    except (ImportError, RuntimeError):  # RuntimeError: no such operator
        return None


def check_func_random():
    """Keys from torch.func._random work in rngx and derive the same children and uniforms as torch's."""
    R = func_random()
    if R is None:
        record("torch.func._random", "interop", f"skip: torch.func._random not available in torch {torch.__version__} on {DEV}")
        return
    t = Tally()
    root = R.key(0x5EED_0123_4567, device=DEV)
    t.add(same(F.key(0x5EED_0123_4567, device=DEV, dtype=torch.uint64), root), "key")
    t.add(same(F.key(0x5EED_0123_4567, device=DEV).view(torch.uint64), root), "key int64")
    k = R.split(root, 2)[1]  # a key with a random 64-bit offset
    kb = R.split(k, 6).view(2, 3, 2)
    for name, key in (("key", k), ("batched key", kb)):
        for num in (1, 3):
            t.add(same(F.split(key, num), R.split(key, num)), f"split {name} num={num}")
        for data in (0, 5, 1 << 40):
            t.add(same(F.fold_in(key, data), R.fold_in(key, data)), f"fold_in {name} data={data}")
    for dtype in FLOAT_DTYPES:  # [0, 1) only: torch computes low + u * (high - low) its own way
        for name, key, shape in (("key", k, (3, 1001)), ("batched key", kb.view(2, 3, 1, 2), (2, 3, 501))):
            try:
                theirs = R.uniform(key, shape, dtype=dtype)
            except RuntimeError as e:  # an older torch takes single keys only
                note = f"torch rejects a {name}: {str(e)[:100]}"
                t.notes += [note] if note not in t.notes else []
                continue
            t.add(same(F.uniform(torch.empty(shape, dtype=dtype, device=DEV), key), theirs), f"uniform {dtype} {name}")
    t.record("torch.func._random", "keys, split, fold_in, uniform == torch's")


# ---- 4. torch.compile and CUDA graphs ----
def check_compile():
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
        ok = all(same(a, b) for a, b in zip(eo, co)) and same(eg, cg) and same(es, cs) and not same(eo[0], eo[1])
        ok = ok and int(cs[1]) == 4 * rngx.blocks_used(x0.numel(), x0.dtype)
        record("compile", f"fullgraph == eager, Generator ({layout})", "pass" if ok else "fail", "outputs, x.grad, state; 2 calls")

    def keyed(x, key):  # stateless: split into per-sample keys, fold_in, a batched dropout, int64 bits, float64
        per_sample = F.split(key, x.shape[0]).view(x.shape[0], 1, 1, 1, 2)
        y = F.dropout(F.quantize_noise(x, F.fold_in(key, 1), 0.5), per_sample, 0.2)
        return y, F.bits(x.shape, per_sample, dtype=torch.int64), F.uniform(x, F.fold_in(key, 2), dtype=torch.float64)

    x0 = torch.randn(8, 3, 10, 10, device=DEV).contiguous(memory_format=torch.channels_last)
    results = []
    for fn in (keyed, torch.compile(keyed, fullgraph=True)):
        x = x0.clone().requires_grad_()
        outs = fn(x, F.key(77, device=DEV))
        results.append((*outs, torch.autograd.grad((outs[0] * outs[0]).sum(), x)[0]))
    ok = all(same(a, b) for a, b in zip(*results))
    record("compile", "fullgraph == eager, batched keys", "pass" if ok else "fail", "split, fold_in, dropout grad, bits int64, float64")

    def noise(x):  # generator=None follows torch.manual_seed in both modes
        return rngx.quantize(x, "noise")

    x = torch.randn(1000, device=DEV)
    torch.manual_seed(32)
    eager = noise(x)
    torch.manual_seed(32)
    ok = same(torch.compile(noise, fullgraph=True)(x), eager)
    record("compile", "generator=None after torch.manual_seed", "pass" if ok else "fail", "CPU-drawn state")


def check_permutations():
    """randperm and multinomial: the device's values equal the CPU's for one key and batched keys."""
    t = Tally()
    for sname, (seed, offset, sdtype) in STATES.items():
        key = state(seed, offset, sdtype)
        for n in (1, 7, 1000):
            t.add(same(F.randperm(n, key.to(DEV)), F.randperm(n, key)), f"randperm {n} {sname}")
        w = torch.rand(5, 40, generator=torch.Generator().manual_seed(seed % 1000)) * (torch.arange(40) % 3 != 0)
        for replacement in (False, True):
            want = F.multinomial(w, key, 9, replacement)
            t.add(same(F.multinomial(w.to(DEV), key.to(DEV), 9, replacement), want), f"multinomial {replacement} {sname}")
    keys = F.split(F.key(3), 4)
    t.add(same(F.randperm(50, keys.to(DEV)), F.randperm(50, keys)), "randperm, batched keys")
    t.record("cuda==cpu", "randperm and multinomial")


def check_mode():
    """torch_rngx.mode on the device: torch's own random calls equal the torch_rngx functions on the mode's stream,
    and compiled (fullgraph) equals eager."""
    x = torch.randn(4, 8, 16, 16, device=DEV)

    def routed(x):
        a = torch.rand(x.shape, device=x.device) + torch.randn_like(x)
        b = torch.empty_like(x).uniform_(-0.5, 0.5) + torch.nn.functional.dropout(x, 0.2)
        q = x.flatten(2).transpose(1, 2)
        att = torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        return a, b, att, torch.randint_like(x, 10), torch.empty_like(x).exponential_(2.0)

    def ours(x, g):
        return rngx.uniform_like(x, generator=g) + rngx.randn_like(x, generator=g)

    with rngx.mode(seed=5):
        eager = routed(x)
    g = rngx.Generator(5, device=DEV)
    want = ours(x, g)
    record("mode", "routed == torch_rngx functions", "pass" if same(eager[0], want) else "fail",
           "torch.rand + torch.randn_like under mode(seed=5) == uniform_like + randn_like on Generator(5)")
    compiled = torch.compile(routed, fullgraph=True)
    with rngx.mode(seed=5):
        got = compiled(x)
    ok = all(same(a, b) for a, b in zip(eager, got))
    record("mode", "fullgraph == eager under mode", "pass" if ok else "fail",
           "rand, randn_like, uniform_, F.dropout, SDPA dropout_p, randint_like, exponential_")
    cpu = [t.cpu() for t in eager]
    with rngx.mode(seed=5):
        on_cpu = routed(x.cpu())
    ok = all(same(a, b) for a, b in zip(cpu[:2], on_cpu[:2])) and same(cpu[3], on_cpu[3]) and same(cpu[4], on_cpu[4])
    record("mode", "device == CPU under mode", "pass" if ok else "fail", "elementwise routed calls (SDPA's matmuls excluded)")


def check_cuda_graphs(steps=5):
    """State after k replays == eager state after k steps == [seed, k * blocks per step]."""
    from torch._dynamo.utils import counters

    def drop(x, g):
        return rngx.dropout(rngx.quantize(x, "noise", generator=g), 0.5, generator=g)

    counters.clear()
    x = torch.randn(4096, device=DEV)
    per_step = 2 * rngx.blocks_used(x.numel(), x.dtype)
    cg = torch.compile(drop, mode="reduce-overhead", fullgraph=True)
    g1, g2 = rngx.Generator(77, device=DEV), rngx.Generator(77, device=DEV)
    t, firsts = Tally(), set()
    for k in range(1, steps + 1):
        got = cg(x, g1).clone()  # a replay's output is overwritten by the next replay
        t.add(same(got, drop(x, g2)), f"values at step {k}")
        t.add(same(g1.state, g2.state) and int(g1.state[1]) == k * per_step, f"state {g1.state.tolist()} at step {k}")
        firsts.add(tuple(got[:8].tolist()))
    t.add(len(firsts) == steps, "a replay repeated values")
    skips = counters["inductor"]["cudagraph_skips"]  # bumped whenever Inductor falls back from CUDA graphs
    t.add(not skips or DEV == "cpu", f"{skips} cudagraph skips")
    t.record("compile", f'mode="reduce-overhead", {steps} steps')

    if DEV == "cpu":
        record("compile", "torch.cuda.CUDAGraph replays", "skip: needs a GPU")
        return
    g1, g2 = rngx.Generator(99, device=DEV), rngx.Generator(99, device=DEV)
    x = torch.randn(1 << 16, device=DEV)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        rngx.quantize(x, generator=rngx.Generator(0, device=DEV))  # warm-up on a side stream, as torch advises
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = rngx.quantize(x, generator=g1)
    t = Tally()
    t.add(int(g1.state[1]) == 0, "capture advanced the state")
    for k in range(1, 4):
        graph.replay()
        t.add(same(out, rngx.quantize(x, generator=g2)), f"values at replay {k}")
        t.add(same(g1.state, g2.state) and int(g1.state[1]) == k * rngx.blocks_used(x.numel(), x.dtype), f"state at replay {k}")
    t.record("compile", "torch.cuda.CUDAGraph, 3 replays")


# ---- 5. speed ----
def time_ms(fn, iters):
    """Milliseconds per call over `iters` back-to-back calls: CUDA events on the GPU, the wall clock on the CPU."""
    if DEV == "cpu":
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t) * 1e3 / iters
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


def race(ours, theirs, rounds=7, iters=10):
    """Median ms per call of each; the two take turns each round, so a busy moment hits both."""
    for fn in (ours, theirs):
        for _ in range(3):
            fn()  # warmup: allocator, lazy init, autotuning
    mine, others = [], []
    for _ in range(rounds):
        mine.append(time_ms(ours, iters))
        others.append(time_ms(theirs, iters))
    return statistics.median(mine), statistics.median(others)


def check_speed(log2):
    import torch.nn.functional as tF

    n = 1 << log2
    x = torch.randn(n, device=DEV)
    xg, grad = x.clone().requires_grad_(), torch.randn(n, device=DEV)
    g = rngx.Generator(1, device=DEV)
    R = func_random()
    key = R.key(1, device=DEV) if R else None

    def fwd_bwd(fn):
        return lambda: torch.autograd.grad(fn(xg), xg, grad)

    cases = {  # name -> (ours, theirs, target ratio) or a reason to skip
        "rand_like vs torch.rand_like": (lambda: rngx.rand_like(x, generator=g), lambda: torch.rand_like(x), 1.0),
        "rand_like vs torch.func._random.uniform": (
            (lambda: rngx.rand_like(x, generator=g), lambda: R.uniform(key, x.shape), None) if R
            else f"torch.func._random not available in torch {torch.__version__} on {DEV}"),
        "quantize_noise vs x.clone()": (lambda: rngx.quantize(x, "noise", generator=g), lambda: x.clone(), 0.9),
        "quantize_noise vs x + empty_like(x).uniform_()": (
            lambda: rngx.quantize(x, "noise", generator=g), lambda: x + torch.empty_like(x).uniform_(-0.5, 0.5), None),
        "dropout fwd+bwd vs F.dropout": (fwd_bwd(lambda t: rngx.dropout(t, 0.5, generator=g)),
                                         fwd_bwd(lambda t: tF.dropout(t, 0.5, training=True)), 1.0),
        "randn_like vs torch.randn_like": (lambda: rngx.randn_like(x, generator=g), lambda: torch.randn_like(x), 1.0),
        "randn_like vs torch.func._random.normal": (
            (lambda: rngx.randn_like(x, generator=g), lambda: R.normal(key, x.shape), 4.0) if R and hasattr(R, "normal")
            else f"torch.func._random.normal not available in torch {torch.__version__} on {DEV}"),
        "bernoulli_like vs torch.bernoulli": (lambda: rngx.bernoulli_like(x, 0.3, generator=g),
                                              lambda: torch.bernoulli(x, 0.3), 2.0),
        "randint_like vs torch.randint_like (int64)": (lambda: rngx.randint_like(x, 0, 1000, generator=g),
                                                       lambda: torch.randint_like(x, 0, 1000, dtype=torch.int64), 2.0),
    }
    for name, case in cases.items():
        if isinstance(case, str):
            SPEED[name] = {"ratio": None, "ours_ms": None, "theirs_ms": None, "target": None, "met": None, "skip": case}
            print(f"[{time.time() - T0:6.1f}s] speed | {name} | skip: {case}", flush=True)
            continue
        ours, theirs, target = case
        ours_ms, theirs_ms = race(ours, theirs)
        ratio = theirs_ms / ours_ms
        SPEED[name] = {"ratio": round(ratio, 3), "ours_ms": round(ours_ms, 4), "theirs_ms": round(theirs_ms, 4),
                       "target": target, "met": None if target is None else ratio >= target, "size": f"2^{log2} float32"}
        print(f"[{time.time() - T0:6.1f}s] speed | {name} | {ratio:.2f}x (target {target})", flush=True)


# ---- 6. torch_rngx.triton natively (docs/device_api.md) ----
def check_triton(log2):
    """The Triton device functions compiled for this GPU equal our ops on it, launched with enable_fp_fusion=False
    (as the docs require); with fusion on, the ops without a multiply-add pair (bits, dropout, bernoulli) must still
    be equal, and the others' differing elements are counted. Then the fused dropout example, forward and backward,
    and its speed against the same ops unfused."""
    try:
        import triton  # noqa: F401
    except ImportError as e:
        record("triton", "device functions", f"skip: triton not importable ({e})")
        return
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "examples")]
    from triton_draw import draw
    from triton_fused_dropout import fused_dropout_add

    import torch_rngx.triton as rt

    n = (1 << min(log2, 20)) + 3 if DEV == "cuda" else 1003  # a masked tail; the interpreter is slow
    keys = {"0": (0, 0), "2^32 carry": (123, 2**32 - 3), "2^64 wrap": (U64 - 1, U64 - 2)}
    gen = torch.Generator().manual_seed(6)
    cases = [("bits32", torch.int32, None, lambda x, s: F.bits(x.shape, s)),
             ("bits64", torch.int64, None, lambda x, s: F.bits(x.shape, s, dtype=torch.int64))]
    for dt in FLOAT_DTYPES:
        cases += [("uniform", dt, rt.uniform_params(dt, -3.0, 7.3, DEV), lambda x, s: F.uniform(x, s, -3.0, 7.3)),
                  ("noise", dt, rt.noise_params(dt, 0.37, DEV), lambda x, s: F.quantize_noise(x, s, 0.37)),
                  ("dropout", dt, rt.dropout_params(dt, 0.3, DEV), lambda x, s: F.dropout(x, s, 0.3)),
                  ("bernoulli", dt, rt.dropout_params(dt, 0.3, DEV), lambda x, s: F.bernoulli(x, s, 0.3)),
                  ("normal", dt, rt.normal_params(dt, 0.25, 3.0, DEV), lambda x, s: F.normal(x, s, 0.25, 3.0)),
                  ("stochastic_round", dt, None, lambda x, s: F.stochastic_round(x, s, ROUND_TO[x.dtype])),
                  ("stochastic_round_saturate", dt, None,
                   lambda x, s: F.stochastic_round(x, s, ROUND_TO_FLOAT8[x.dtype], True))]
    fusion_safe = ("bits32", "bits64", "dropout", "bernoulli", "stochastic_round", "stochastic_round_saturate")
    exact, fused, fused_diff = Tally(), Tally(), {}
    for op, dt, params, ref in cases:
        x = (torch.randn(n, generator=gen) * 30).to(dt).to(DEV)
        for kname, (seed, offset) in keys.items():
            st = state(seed, offset, device=DEV)
            want = ref(x, st)
            for block in (128, 1024):
                got = draw(op, torch.empty_like(want), st, x=x, params=params, block=block)
                exact.add(same(got, want), f"{op} {dt} key {kname} BLOCK={block}")
            got = draw(op, torch.empty_like(want), st, x=x, params=params, block=1024, fusion=True)
            if op in fusion_safe:
                fused.add(same(got, want), f"{op} {dt} key {kname}")
            else:
                signed = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
                diff = int((got.cpu().view(signed) != want.cpu().view(signed)).sum())
                fused_diff[f"{op} {dt}"] = fused_diff.get(f"{op} {dt}", 0) + diff
    gshape, start = (6, 8, 10), (2, 3, 5)
    xs = torch.randn(3, 5, 4, generator=gen).to(DEV)
    for batched in (False, True):
        st = (torch.stack([torch.arange(6) + 11, torch.arange(6) * 3], -1).reshape(6, 1, 1, 2).to(DEV) if batched
              else state(99, 2**32 - 1, device=DEV))
        for op, params, ref in (("normal", rt.normal_params(torch.float32, device=DEV), F.normal),
                                ("uniform", rt.uniform_params(torch.float32, device=DEV), F.uniform)):
            got = draw(op, torch.empty_like(xs), st, params=params, global_shape=gshape, global_start=start)
            exact.add(same(got, ref(xs, st, global_shape=gshape, global_start=start)),
                      f"{op} global view{' batched keys' if batched else ''}")
    exact.notes.append(f"{n} elements, BLOCK 128 and 1024, enable_fp_fusion=False")
    exact.record("triton", "device functions == ops")
    fused.notes.append("enable_fp_fusion=True; elements that differ there for the others: "
                       + (", ".join(f"{k} {v}" for k, v in fused_diff.items() if v) or "none"))
    fused.record("triton", "fusion-safe functions == ops with FMA contraction on")

    t = Tally()
    for dt in FLOAT_DTYPES:
        x, res, grad = (torch.randn(64, 3, 257, generator=gen).to(dt).to(DEV) for _ in range(3))
        bias, st = torch.randn(257, generator=gen).to(dt).to(DEV), state(5, 2**32 - 2, device=DEV)
        outs = []
        for fn in (fused_dropout_add, lambda a, b, r, s, p: F.dropout(a + b, s, p) + r):
            leaves = [v.clone().requires_grad_() for v in (x, bias, res)]
            out = fn(*leaves, st, 0.3)
            outs.append([out, *torch.autograd.grad(out, leaves, grad)])
        t.add(all(same(a, b) for a, b in zip(*outs)), f"{dt}")
    t.record("triton", "fused dropout(x + bias) + residual, forward and backward")

    if DEV == "cuda":
        m = 1 << log2
        x, res = torch.randn(m // 4096, 4096, device=DEV), torch.randn(m // 4096, 4096, device=DEV)
        bias, st = torch.randn(4096, device=DEV), state(1, 0, device=DEV)
        ours_ms, theirs_ms = race(lambda: fused_dropout_add(x, bias, res, st, 0.1),
                                  lambda: F.dropout(x + bias, st, 0.1) + res)
        SPEED["triton fused dropout(x + bias) + residual vs the ops"] = {
            "ratio": round(theirs_ms / ours_ms, 3), "ours_ms": round(ours_ms, 4), "theirs_ms": round(theirs_ms, 4),
            "target": None, "met": None, "size": f"2^{log2} float32"}
        print(f"[{time.time() - T0:6.1f}s] speed | triton fused | {theirs_ms / ours_ms:.2f}x", flush=True)


# ---- 7. launches per draw, and AOTInductor on device states ----
def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def kernels_of(fn, runs=5):
    """(kernel names of one call, device microseconds per call) from the profiler over `runs` calls after a
    warmup. On the CPU (dry run) the top-level aten/rngx ops stand in for kernels and their CPU time for device
    time."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA if DEV == "cuda" else ProfilerActivity.CPU]) as prof:
        for _ in range(runs):
            fn()
        sync()
    if DEV == "cuda":
        events = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
        us = sum(getattr(e, "device_time", None) or e.cuda_time for e in events)
    else:
        events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith(("aten::", "rngx::"))]
        us = sum(e.cpu_time for e in events)
    return [e.name for e in events[: len(events) // runs]], us / runs


def check_launches(log2=16):
    """Kernels per eager draw at 2^log2 float32 elements: a CUDA Generator steps its state on the device (clone and
    add) before the op, where torch's dropout is one kernel. The step's share of the device time says whether a
    one-launch draw is worth it (results/perf-log.md, "GPU")."""
    import torch.nn.functional as tF

    x = torch.randn(1 << log2, device=DEV)
    g, key = rngx.Generator(3, device=DEV), state(3, 0, device=DEV)
    cases = {
        "torch_rngx.dropout, Generator on the device": lambda: rngx.dropout(x, 0.1, generator=g),
        "functional.dropout, explicit key (the op alone)": lambda: F.dropout(x, key, 0.1),
        "torch.nn.functional.dropout": lambda: tF.dropout(x, 0.1),
        "torch_rngx.rand_like, Generator on the device": lambda: rngx.rand_like(x, generator=g),
        "torch.rand_like": lambda: torch.rand_like(x),
    }
    found = {}
    for name, fn in cases.items():
        names, us = kernels_of(fn)
        found[name] = {"kernels": len(names), "names": names, "device_us": round(us, 2)}
    LAUNCHES.update(found)
    draw, op = found["torch_rngx.dropout, Generator on the device"], found["functional.dropout, explicit key (the op alone)"]
    detail = (f"2^{log2} float32: our draw {draw['kernels']} kernels {draw['device_us']} us (the op alone "
              f"{op['kernels']}, {op['device_us']} us), torch's dropout {found['torch.nn.functional.dropout']['kernels']}"
              f" kernels {found['torch.nn.functional.dropout']['device_us']} us")
    record("launches", "kernels per eager draw", "pass" if draw["kernels"] >= op["kernels"] >= 1 else "fail", detail)


def check_aoti():
    """AOTInductor packages on the device: a module whose dropout owns its stream (rng_state on the device) and a
    model taking an explicit device state, packaged, loaded back and called 3 times: eager's values, and the owned
    state advanced between calls as eager's."""
    import copy

    class Owned(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)
            self.drop = rngx.nn.Dropout(0.5, seed=1234)

        def forward(self, x):
            return self.drop(self.lin(x))

    class Explicit(torch.nn.Module):
        def forward(self, x, st):
            step = torch.tensor([0, rngx.blocks_used(x.numel(), x.dtype)], device=st.device)
            return F.dropout(torch.relu(F.quantize_noise(x, st)), st + step, 0.25)

    folder = os.path.join(BUILD, "aoti")
    os.makedirs(folder, exist_ok=True)
    x, st = torch.randn(16, 64, device=DEV), state(2**40 + 3, 5, device=DEV)
    torch.manual_seed(0)
    owned = Owned().to(DEV).train()
    models = {"owned state": (owned, (x,), copy.deepcopy(owned)), "explicit state": (Explicit(), (x, st), Explicit())}
    t = Tally()
    for name, (model, args, twin) in models.items():
        eager = [twin(*args) for _ in range(3)]
        path = torch._inductor.aoti_compile_and_package(
            torch.export.export(model, args), package_path=os.path.join(folder, name.replace(" ", "_") + ".pt2"))
        runner = torch._inductor.aoti_load_package(path)
        got = [runner(*args) for _ in range(3)]
        t.add(all(same(a, b) for a, b in zip(got, eager)), f"{name}: 3 calls == eager")
        if name == "owned state":
            t.add(not same(got[0], got[1]), f"{name}: the packaged state did not advance")
    t.notes.append(f"state on {DEV}")
    t.record("aoti", "packages on device states == eager")


# ---- report ----
def git_commit():
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def table():
    head = ("section", "check", "result")
    widths = [max(len(str(r[i])) for r in ROWS + [head]) for i in range(3)]
    fmt = " | ".join(f"{{:<{w}}}" for w in widths) + " | {}"
    lines = [fmt.format(*head, "detail"), "-" * (sum(widths) + 20)] + [fmt.format(*r) for r in ROWS]
    lines += ["", f"{'speed (ratio = torch ms / ours ms)':<50} {'ours ms':>9} {'theirs ms':>9} {'ratio':>7} {'target':>7}"]
    for name, s in SPEED.items():
        if s.get("skip"):
            lines.append(f"{name:<50} skip: {s['skip']}")
        else:
            verdict = "" if s["target"] is None else ("  met" if s["met"] else "  MISSED")
            lines.append(f"{name:<50} {s['ours_ms']:9.3f} {s['theirs_ms']:9.3f} {s['ratio']:7.2f} {s['target'] or '-':>7}{verdict}")
    if LAUNCHES:
        lines += ["", f"{'kernels per call (profiler)':<50} {'kernels':>9} {'device us':>9}"]
        lines += [f"{name:<50} {v['kernels']:9d} {v['device_us']:9.2f}" for name, v in LAUNCHES.items()]
    return "\n".join(lines)


def report(meta, complete=True):
    """Writes the JSON (and, with $OUT, the table) so far; complete=False after each section, so a run cut short
    by the device's time limit still brings back what it checked."""
    meta["total_s"], meta["complete"] = round(time.time() - T0, 1), complete
    failed = [k for k, v in CHECKS.items() if v == "fail"]
    text = f"{table()}\n\n{len(CHECKS)} checks, {len(failed)} failed; {meta['total_s']} s"
    if complete:
        print("\n" + text)
    result = {"checks": CHECKS, "details": DETAILS, "speed": SPEED, "launches": LAUNCHES, "meta": meta}
    slug = re.sub(r"[^a-z0-9]+", "-", (meta.get("gpu") or DEV).lower()).strip("-")
    path = os.path.join(ROOT, "benchmarks", "results", f"gpu_check_{slug}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    if complete:
        print(f"wrote {path}")
    if os.environ.get("OUT"):
        shutil.copy(path, os.environ["OUT"])
        with open(os.path.join(os.environ["OUT"], "gpu_check.txt"), "w") as f:
            f.write(text + "\n")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-log2", type=int, default=28, help="elements in the big and speed tensors, as a power of 2")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: dry-run this script on the CPU with whatever torch_rngx is built (no build)")
    ap.add_argument("--opcheck", action="store_true", help="also run torch_rngx.testing.opcheck_all on the device (~1 min)")
    args = ap.parse_args()
    global DEV, rngx, F
    DEV = args.device
    if DEV == "cpu":  # the Triton section then runs under Triton's interpreter, set before anything imports triton
        os.environ["TRITON_INTERPRET"] = "1"
    meta = {"device": DEV, "torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
            "gpu": None, "commit": git_commit(), "size_log2": args.size_log2,
            "command": shlex.join([os.path.basename(sys.executable)] + sys.argv),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if DEV == "cuda":
        meta["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        try:
            record("setup", "build", "pass", f"{build_extension()}: USE_CUDA=1 setup.py build_ext --inplace")
        except Exception as e:
            record("setup", "build", "fail", f"{type(e).__name__}: {e}")
            return report(meta)
    sys.path.insert(0, ROOT)  # the in-place build, ahead of any installed copy
    import torch_rngx

    rngx, F = torch_rngx, torch_rngx.functional
    meta["torch_rngx"] = getattr(rngx, "__version__", None)
    ready = DEV == "cpu" or (torch.cuda.is_available() and torch._C._dispatch_has_kernel_for_dispatch_key("rngx::uniform", "CUDA"))
    record("setup", "device and CUDA kernels", "pass" if ready else "fail", f"torch {torch.__version__}, {meta['gpu'] or DEV}")
    sections = [("stream 1.0", check_known_answers), ("cuda==cpu", check_float_ops), ("cuda==cpu", check_bits), ("cuda==cpu", check_split_fold_in),
                ("cuda==cpu", check_batched), ("cuda==cpu", check_global_view), ("cuda==cpu", check_generator), ("cuda==cpu", check_adam_step), ("cuda==cpu", check_errors),
                ("cuda==cpu", lambda: check_big(args.size_log2)), ("curand", check_curand),
                ("torch.func._random", check_func_random), ("compile", check_compile), ("compile", check_cuda_graphs),
                ("cuda==cpu", check_permutations), ("mode", check_mode)]
    if args.opcheck:
        sections.append(("compile", lambda: record("compile", f"opcheck_all({DEV!r})", "pass", f"{rngx.testing.opcheck_all(DEV)} samples")))
    sections += [("launches", check_launches), ("aoti", check_aoti)]
    sections.append(("triton", lambda: check_triton(args.size_log2)))
    sections.append(("speed", lambda: check_speed(args.size_log2)))
    for section, fn in sections if ready else []:
        try:
            fn()
        except Exception as e:  # one broken section must not hide the others
            traceback.print_exc()
            record(section, f"{getattr(fn, '__name__', 'section')} crashed", "fail", f"{type(e).__name__}: {e}"[:300])
        report(meta, complete=False)
    return report(meta)


if __name__ == "__main__":
    sys.exit(main())
