"""Builds rngx_draw.cpp (a C++ extension that draws through torch_rngx's installed header) with
torch.utils.cpp_extension and checks it against our ops. The build goes to build/cpp_extension and is reused
while the sources are unchanged.

    python examples/cpp_extension/draw.py
"""
import os
import sys

import torch
import torch.utils.cpp_extension

import torch_rngx
import torch_rngx.functional as F
import torch_rngx.params as P

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", "build", "cpp_extension")


def build(verbose=False):
    """Compiles and loads the extension: torch.ops.rngx_example.draw."""
    os.makedirs(BUILD, exist_ok=True)
    # load() runs ninja from PATH; pip installs it next to the interpreter, which need not be on PATH.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    torch.utils.cpp_extension.load(
        "rngx_draw", [os.path.join(HERE, "rngx_draw.cpp")], extra_include_paths=[torch_rngx.include_dir()],
        extra_cflags=["-O2", "-ffp-contract=off"], build_directory=BUILD, is_python_module=False, verbose=verbose)


def draw(op, x, state, params):
    return torch.ops.rngx_example.draw(op, x, state, params)


if __name__ == "__main__":
    build()
    keys = F.split(F.key(7), 12).view(4, 3, 2)  # a key of its own for each draw: two from one key are correlated
    for dtype, (k1, k2, k3) in zip((torch.float16, torch.bfloat16, torch.float32, torch.float64), keys):
        x = torch.randn(1000).to(dtype)
        pairs = {
            "uniform": (draw("uniform", x, k1, P.uniform_params(dtype, -1, 3)), F.uniform(x, k1, -1, 3)),
            "dropout": (draw("dropout", x, k2, P.dropout_params(dtype, 0.2)), F.dropout(x, k2, 0.2)),
            "normal": (draw("normal", x, k3, P.normal_params(dtype, 1, 2)), F.normal(x, k3, 1, 2)),
        }
        print(dtype, {op: torch.equal(a, b) for op, (a, b) in pairs.items()})
