"""bfloat16 weights trained with round-to-nearest stall where stochastic rounding tracks float32 (docs/training.md,
"bfloat16 weights without a float32 master copy"). A small MLP learns a fixed random teacher MLP on synthetic data,
three ways, from the same initial weights and the same batches: float32 weights; bfloat16 weights under plain
AdamW (every update rounded to nearest, so one below half a bfloat16 step is lost); bfloat16 weights under the same
AdamW with torch_rngx.optim.stochastic_rounding (the update in float32, rounded back stochastically). Prints the
loss every few hundred steps and writes the plot.

    .venv/bin/python benchmarks/sround_training.py                 # docs/stochastic_rounding.png
    .venv/bin/python benchmarks/sround_training.py --steps 600 --out /tmp/sr.png
"""
import argparse
import time

import torch

import torch_rngx


def teacher_data(n, d_in, d_out, seed):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.nn.Sequential(torch.nn.Linear(d_in, 128), torch.nn.Tanh(), torch.nn.Linear(128, d_out))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        x = torch.randn(n, d_in, generator=g)
        return x, teacher(x)


def run(mode, x, y, steps, batch, lr, seed):
    torch.manual_seed(seed)  # the same initial weights and batches for every mode
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 128), torch.nn.Tanh(), torch.nn.Linear(128, y.shape[1]))
    dtype = torch.float32 if mode == "float32" else torch.bfloat16
    model = model.to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    if mode == "bfloat16, stochastic rounding":
        torch_rngx.optim.stochastic_rounding(opt, seed=seed)
    order = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch,), generator=order)
        loss = ((model(x[idx].to(dtype)).float() - y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        full = float(((model(x.to(dtype)).float() - y) ** 2).mean())
    return losses, full


def smooth(v, k=50):
    out, acc = [], 0.0
    for i, a in enumerate(v):
        acc += a - (v[i - k] if i >= k else 0.0)
        out.append(acc / min(i + 1, k))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs/stochastic_rounding.png")
    args = ap.parse_args()
    torch.set_num_threads(2)
    x, y = teacher_data(8192, 32, 8, seed=123)
    results = {}
    for mode in ("float32", "bfloat16, round to nearest", "bfloat16, stochastic rounding"):
        start = time.perf_counter()
        results[mode] = run(mode, x, y, args.steps, args.batch, args.lr, args.seed)
        print(f"{mode:32s} final loss on all data {results[mode][1]:.5f}  ({time.perf_counter() - start:.1f} s)")
    marks = sorted({0, args.steps // 10, args.steps // 4, args.steps // 2, args.steps - 1})
    print("step     " + "  ".join(f"{m:>30s}" for m in results))
    for s in marks:
        print(f"{s:<8d} " + "  ".join(f"{smooth(r[0])[s]:30.5f}" for r in results.values()))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    styles = {"float32": dict(color="black", linestyle="--", linewidth=1.2), "bfloat16, round to nearest":
              dict(color="tab:orange"), "bfloat16, stochastic rounding": dict(color="tab:green", alpha=0.8)}
    for mode, (losses, _) in results.items():
        ax.plot(smooth(losses), label=mode, **styles[mode])
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean of 50 steps)")
    ax.set_title(f"AdamW lr={args.lr}: bfloat16 weights without a float32 master copy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
