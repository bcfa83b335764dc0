"""The shared library alone defines and runs the ops: a process that never imports torch_rngx loads
torch_rngx/_C.abi3.so with torch.ops.load_library and gets torch_rngx's bits from every op the library defines
(csrc/library.cpp's schema table), including take_'s step of a state in place. seed_state, defined in Python,
is absent there. A second copy of the library, loaded from another path, neither crashes nor breaks the ops."""
import os
import subprocess
import sys

import pytest
import torch

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare the library alone against the package")

ALONE = r"""
import sys
import pytest
import torch
torch.ops.load_library(sys.argv[1])
assert "torch_rngx" not in sys.modules
ops, key = torch.ops.rngx, torch.tensor([2**40 + 3, 11])
like = torch.empty(3, 5, dtype=torch.float32).t()  # a transposed layout: outputs follow its strides
x = torch.arange(15, dtype=torch.float64).reshape(3, 5) / 7
generator_state = torch.tensor([77, 5])
taken = ops.take_(generator_state, 9)
fast_state = torch.tensor([5, 1])
out = {
    "bits": ops.bits([4, 3], key, torch.int64),
    "uniform": ops.uniform(like, key, -1.0, 2.0, torch.float16),
    "quantize_noise": ops.quantize_noise(x, key, 0.5),
    "dropout": ops.dropout(x, key, 0.3),
    "split": ops.split(key, 3),
    "fold_in": ops.fold_in(key, torch.tensor([8])),
    "normal": ops.normal(like, key, 1.0, 2.0, None),
    "truncated_normal": ops.truncated_normal(x, key, 0.0, 1.0, -0.5, 1.5, None),
    "bernoulli": ops.bernoulli(x, key, 0.25),
    "bernoulli_tensor": ops.bernoulli_tensor(x, key, torch.full((1, 5), 0.75, dtype=torch.float64).expand(3, 5)),
    "randint": ops.randint(like, key, -5, 1000, torch.int32),
    "global view": ops.dropout(x, key, 0.3, [9, 5], [4, 0]),
    "exponential": ops.exponential(like, key, 2.0, None),
    "race": ops.race(x, key, 2, 1),
    "take_": (taken, generator_state),
    "uniform_from_": (ops.uniform_from_(fast_state, like, 0.0, 1.0, None), fast_state.clone()),
    "quantize_noise_from_": (ops.quantize_noise_from_(fast_state, x, 0.5), fast_state),
    "has_seed_state": hasattr(ops, "seed_state"),
}
torch.save(out, sys.argv[2])
"""


def same_size_ints(t):
    """The tensor's bit patterns: a bitwise comparison (NaN-safe, -0.0 != 0.0)."""
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@REUSES_KEYS
def test_ops_from_the_library_alone(tmp_path):
    lib = os.path.realpath(torch_rngx._C.__file__)
    subprocess.run([sys.executable, "-c", ALONE, lib, str(tmp_path / "out.pt")], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": ""})
    got = torch.load(tmp_path / "out.pt")
    key = torch.tensor([2**40 + 3, 11])
    like = torch.empty(3, 5, dtype=torch.float32).t()
    x = torch.arange(15, dtype=torch.float64).reshape(3, 5) / 7
    expected = {
        "bits": F.bits([4, 3], key, dtype=torch.int64),
        "uniform": F.uniform(like, key, -1.0, 2.0, dtype=torch.float16),
        "quantize_noise": F.quantize_noise(x, key, 0.5),
        "dropout": F.dropout(x, key, 0.3),
        "split": F.split(key, 3),
        "fold_in": F.fold_in(key, 8),
        "normal": F.normal(like, key, 1.0, 2.0),
        "truncated_normal": F.truncated_normal(x, key, 0.0, 1.0, -0.5, 1.5),
        "bernoulli": F.bernoulli(x, key, 0.25),
        "bernoulli_tensor": F.bernoulli(x, key, torch.full((1, 5), 0.75, dtype=torch.float64)),
        "randint": F.randint(like, key, -5, 1000, dtype=torch.int32),
        "global view": F.dropout(x, key, 0.3, global_shape=(9, 5), global_start=(4, 0)),
        "exponential": F.exponential(like, key, 2.0),
        "race": torch_rngx.ops.race(x, key, 2, 1),
        "take_": (torch.tensor([77, 5]), torch.tensor([77, 14])),
    }
    for name, want in expected.items():
        for g, w in zip(got[name], want) if isinstance(want, tuple) else [(got[name], want)]:
            assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride(), name
            assert torch.equal(same_size_ints(g), same_size_ints(w)), name
    # The fast path's step is a Generator's: the same numbers as generator= calls from [5, 1].
    g = torch_rngx.Generator(5).set_state(torch.tensor([5, 1]))
    assert torch.equal(got["uniform_from_"][0], torch_rngx.uniform_like(like, generator=g))
    assert torch.equal(got["uniform_from_"][1], g.state)
    assert torch.equal(got["quantize_noise_from_"][0], torch_rngx.quantize(x, "noise", generator=g))
    assert torch.equal(got["quantize_noise_from_"][1], g.state)
    assert got["has_seed_state"] is False


TWO_COPIES = r"""
import sys
import pytest
import torch
torch.ops.load_library(sys.argv[1])
import torch_rngx

print(torch_rngx.rand_like(torch.empty(3), generator=torch_rngx.Generator(1)).tolist())
"""


def test_a_second_copy_of_the_library_does_not_crash(tmp_path):
    """Another installation's library loaded first: importing torch_rngx keeps its definitions and still works."""
    copy = tmp_path / "_C.abi3.so"
    copy.write_bytes(open(torch_rngx._C.__file__, "rb").read())
    run = subprocess.run([sys.executable, "-c", TWO_COPIES, str(copy)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "already defined" in run.stderr
    assert run.stdout.strip() == str(torch_rngx.rand_like(torch.empty(3), generator=torch_rngx.Generator(1)).tolist())
