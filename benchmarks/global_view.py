"""The cost of a global view (results/perf-log.md, "Global view"): a block of a (4096, 4096) float32 tensor, as
DTensor's Shard(0), Shard(1) and a (2, 2) mesh cut it, against the same op on a tensor of the block's shape without
a view (the same words, made in one run) and against torch's own op on that block. Ratio = their time / ours
(1: a view costs nothing)."""
import torch
from per_call import best

from torch_rngx import functional as F

GLOBAL = (4096, 4096)
BLOCKS = {"Shard(0) of 2": ((2048, 4096), (2048, 0)), "Shard(1) of 2": ((4096, 2048), (0, 2048)),
          "(2, 2) mesh": ((2048, 2048), (2048, 2048)), "Shard(1) of 3, uneven": ((4096, 1365), (0, 2731))}


def run(budget=0.6):
    rows = []
    key = F.key(7)
    for name, (size, start) in BLOCKS.items():
        x = torch.randn(size)
        for op, ours, plain, torch_op in (
                ("dropout", lambda: F.dropout(x, key, 0.1, global_shape=GLOBAL, global_start=start),
                 lambda: F.dropout(x, key, 0.1), lambda: torch.nn.functional.dropout(x, 0.1)),
                ("uniform", lambda: F.uniform(x, key, global_shape=GLOBAL, global_start=start),
                 lambda: F.uniform(x, key), lambda: torch.rand_like(x))):
            t_ours, t_plain, t_torch = best(ours, budget), best(plain, budget), best(torch_op, budget)
            rows.append({"block": name, "op": op, "ours_ms": t_ours * 1e3, "no_view_ratio": t_plain / t_ours,
                         "torch_ratio": t_torch / t_ours})
    return rows


def print_table(rows):
    print(f"\n**Global view: a block of a {GLOBAL} float32 tensor, {torch.get_num_threads()} threads**\n")
    print("| block | op | ours (ms) | vs the same op without a view | vs torch on the block |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['block']} | {r['op']} | {r['ours_ms']:.2f} | {r['no_view_ratio']:.2f}x | {r['torch_ratio']:.2f}x |")


if __name__ == "__main__":
    import machine

    print(machine.line())
    print_table(run())
