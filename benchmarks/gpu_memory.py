"""Peak memory and step time of a transformer training step, torch's dropout against torch_rngx's.

torch's dropout saves a mask for backward; ours saves nothing (backward redraws the mask from the key). The
model is a pre-LN transformer with dropout on the attention probabilities, after attention and in the MLP. Two
attentions: "softmax" (the probabilities materialised, their dropout an nn.Dropout module, so
`torch_rngx.nn.convert` replaces every dropout) and "sdpa" (BERT-style: F.scaled_dot_product_attention with
dropout_p, where torch runs its fused flash or memory-efficient kernel and the converted model, under
torch_rngx.mode, runs math attention with our dropout on the (L x L) probabilities). Each variant is measured in a fresh allocator
state: `torch.cuda.max_memory_allocated` over one training step (forward, backward, SGD step) after warmup, and
the median step time over `--steps` steps (CUDA events).

    python3 benchmarks/gpu_memory.py                                  # the GPU run: 12 layers, d=768, seq 1024, bf16
    python3 benchmarks/gpu_memory.py --device cpu --layers 2 --d 64 --heads 4 --seq 32 --batch 2 --steps 2 --dtype float32  # dry run

Prints a markdown table (results/perf-log.md) and, with --json, writes the figures there.
"""
import argparse
import copy
import json
import math
import statistics
import sys
import time

import torch
from torch import nn

import torch_rngx


class Block(nn.Module):
    def __init__(self, d, heads, p, attention):
        super().__init__()
        self.heads, self.sdpa, self.p = heads, attention == "sdpa", p
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.attn_drop, self.resid_drop1 = nn.Dropout(p), nn.Dropout(p)
        self.mlp_drop, self.resid_drop2 = nn.Dropout(p), nn.Dropout(p)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        else:
            probs = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
            a = self.attn_drop(probs) @ v
        a = a.transpose(1, 2).reshape(b, s, d)
        x = x + self.resid_drop1(self.proj(a))
        h = self.mlp_drop(torch.nn.functional.gelu(self.fc1(self.ln2(x))))
        return x + self.resid_drop2(self.fc2(h))


def make_model(args, attention):
    blocks = [Block(args.d, args.heads, args.p, attention) for _ in range(args.layers)]
    return nn.Sequential(*blocks).to(args.device, args.dtype)


def measure(model, args, compiled):
    """(peak bytes of one step or None off CUDA, median step ms)."""
    forward = torch.compile(model, fullgraph=True) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.d, device=args.device, dtype=args.dtype)
    cuda = args.device == "cuda"

    def step():
        opt.zero_grad(set_to_none=True)
        forward(x).float().square().mean().backward()
        opt.step()

    for _ in range(3):  # compile, autotune, allocator warmup
        step()
    times = []
    for _ in range(args.steps):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    peak = None
    if cuda:
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    return peak, statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    args.dtype = getattr(torch, args.dtype)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: use --device cpu for a dry run")
    rows = []
    for attention in ("softmax", "sdpa"):
        torch.manual_seed(0)
        base = make_model(args, attention)
        for name in ("torch", "torch_rngx (convert)"):
            for compiled in (False, True):
                model = copy.deepcopy(base)
                if name.startswith("torch_rngx"):
                    torch_rngx.nn.convert(model, seed=0)
                torch._dynamo.reset()
                peak, ms = measure(model, args, compiled)
                rows.append({"attention": attention, "dropout": name, "mode": "compiled" if compiled else "eager",
                             "peak_GiB": None if peak is None else peak / 2**30, "step_ms": ms})
                del model
                if args.device == "cuda":
                    torch.cuda.empty_cache()
    shape = f"{args.layers} layers, d={args.d}, seq {args.seq}, batch {args.batch}, {str(args.dtype)[6:]}, p={args.p}"
    print(f"| {shape}: attention | dropout | mode | peak memory (GiB) | step (ms) |\n|---|---|---|---|---|")
    for r in rows:
        peak = "n/a (CPU)" if r["peak_GiB"] is None else f"{r['peak_GiB']:.2f}"
        print(f"| {r['attention']} | {r['dropout']} | {r['mode']} | {peak} | {r['step_ms']:.1f} |")
    if args.json:
        meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                "shape": shape, "command": " ".join(sys.argv)}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
