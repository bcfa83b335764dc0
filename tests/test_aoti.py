"""AOTInductor: torch._inductor.aoti_compile_and_package of exported models that use the rngx ops gives eager's
bytes, whether the package is loaded in a fresh Python process (aoti_load_package) or run by a C++ program
without Python (examples/aoti_cpp). Both with the state as a model input and with module-owned state (a seeded
nn.Dropout's buffer, advanced in place by each call as in eager).

The C++ test needs the program that `make aoti-cpp` builds (build/aoti_cpp/rngx_aoti); it skips without it. `make
aoti-cpp` (CI's deploy-check) runs this module; `make test` leaves it out."""
import copy
import os
import subprocess
import sys

import pytest
import torch

import torch_rngx
from torch_rngx import functional as F

pytestmark = [pytest.mark.slow("compiles AOTInductor packages"), pytest.mark.key_reuse_ok("recomputes draws on purpose (module fixture): eager calls against packaged ones")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPP = os.environ.get("RNGX_AOTI_CPP", os.path.join(ROOT, "build", "aoti_cpp", "rngx_aoti"))
ROWS, COLS, CALLS = 4, 8, 3
STATE = (2**40 + 3, 5)


def make_x():
    """(i mod 17 - 8) / 4: exact in float32, so the C++ program builds the same input."""
    return torch.arange(ROWS * COLS, dtype=torch.float32).remainder(17).sub(8).div(4).reshape(ROWS, COLS)


class Explicit(torch.nn.Module):
    """The state is an input: quantize noise, then dropout at the next stream position."""

    def forward(self, x, state):
        y = F.quantize_noise(x, state)
        advanced = state + torch.tensor([0, torch_rngx.blocks_used(x.numel(), x.dtype)])
        return F.dropout(torch.relu(y), advanced, 0.25)


class Owned(torch.nn.Module):
    """Module-owned state: the exported graph steps the dropout's rng_state buffer (rngx::take_)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(COLS, COLS)
        self.drop = torch_rngx.nn.Dropout(0.5, seed=1234)
        with torch.no_grad():  # multiples of 1/8 and 1/16: every product and sum with make_x() is exact in float32,
            # so Inductor's matmul gives eager's bits in any order of adding, on any CPU; the draws are the test
            self.lin.weight.copy_(torch.arange(COLS * COLS).remainder(9).sub(4).div(8).view(COLS, COLS))
            self.lin.bias.copy_(torch.arange(COLS).remainder(5).sub(2).div(16))

    def forward(self, x):
        return self.drop(self.lin(x))


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """{name: (package path, whether the state is an input, eager outputs of CALLS calls)}."""
    folder = tmp_path_factory.mktemp("aoti")
    x, state = make_x(), torch.tensor(STATE)
    torch.manual_seed(0)
    owned = Owned().train()
    eager_owned = copy.deepcopy(owned)  # its own buffer: export and packaging must not move the packaged one
    models = {"explicit": (Explicit(), (x, state)), "owned": (owned, (x,))}
    eager = {"explicit": [Explicit()(x, state) for _ in range(CALLS)], "owned": [eager_owned(x) for _ in range(CALLS)]}
    out = {}
    for name, (model, args) in models.items():
        ep = torch.export.export(model, args)
        path = torch._inductor.aoti_compile_and_package(ep, package_path=str(folder / f"{name}.pt2"))
        out[name] = (path, len(args) == 2, eager[name])
    graph = str(torch.export.export(Owned(), (x,)).graph)
    assert "rngx.take_" in graph and "rngx.dropout" in graph
    return out


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.int32), b.view(torch.int32))


FRESH = r"""
import sys
import torch
import torch._inductor.codecache  # noqa: F401  (torch 2.10's aoti_load_package uses it without importing it)
import torch_rngx  # noqa: F401  (the ops)
x = torch.arange(%d, dtype=torch.float32).remainder(17).sub(8).div(4).reshape(%d, %d)
runner = torch._inductor.aoti_load_package(sys.argv[1])
args = (x, torch.tensor(%r)) if sys.argv[2] == "1" else (x,)
torch.save([runner(*args) for _ in range(%d)], sys.argv[3])
"""


@pytest.mark.parametrize("name", ["explicit", "owned"])
def test_package_in_a_fresh_python_process(packages, name, tmp_path):
    path, with_state, eager = packages[name]
    script = FRESH % (ROWS * COLS, ROWS, COLS, STATE, CALLS)
    subprocess.run([sys.executable, "-c", script, path, str(int(with_state)), str(tmp_path / "out.pt")], check=True)
    got = torch.load(tmp_path / "out.pt")
    assert len(got) == CALLS and all(same_bits(g, e) for g, e in zip(got, eager))
    if name == "owned":
        assert not torch.equal(got[0], got[1])  # the packaged buffer advanced between calls


@pytest.mark.skipif(not os.path.exists(CPP), reason=f"{CPP} is not built (make aoti-cpp builds and runs it)")
@pytest.mark.parametrize("name", ["explicit", "owned"])
def test_package_in_cpp(packages, name, tmp_path):
    path, with_state, eager = packages[name]
    out = tmp_path / "out.bin"
    cmd = [CPP, os.path.realpath(torch_rngx._C.__file__), path, str(out), str(CALLS), str(ROWS), str(COLS)]
    subprocess.run(cmd + ([str(v) for v in STATE] if with_state else []), check=True)
    got = torch.frombuffer(bytearray(out.read_bytes()), dtype=torch.float32).reshape(CALLS, ROWS, COLS)
    assert all(same_bits(g, e) for g, e in zip(got, eager))
