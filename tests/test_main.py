"""`python -m torch_rngx` (issue 45): the report a bug report needs and its self-check. Its known answers are stream
1.0's (tests/kat/stream-1.0.json, and the NumPy reference for its long draw); it passes here and exits 1, naming
the case, when one is broken."""
import hashlib
import json
import os
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest
import reference as ref
import torch
from kat import kat

import torch_rngx
from torch_rngx import __main__ as main

BY_NAME = {c["name"]: c for c in kat.load()["cases"]}


@pytest.mark.key_reuse_ok("the known answers share keys: each is compared with the file")
def test_known_answers_are_the_kat_files():
    for name, (_, bits) in main.KNOWN.items():
        if name == "uniform/float32/4099":
            out = np.asarray(ref.uniform_ref((4099,), np.array([5, 9], dtype=np.uint64), "float32"))
            assert main.expected(name) == "sha256:" + hashlib.sha256(out.astype("<u4").tobytes()).hexdigest()
        else:
            assert bits.split() == BY_NAME[name]["bits"], name
            assert main.bits_of(main.KNOWN[name][0]("cpu")) == bits, name


def test_report_names_what_a_bug_report_needs():
    info = main.report()
    assert info["torch_rngx"] == {"version": torch_rngx.__version__, "stream": "1.0",
                                  "location": os.path.dirname(torch_rngx.__file__)}
    assert info["torch"]["version"] == str(torch.__version__)
    assert info["build"]["torch"] == str(torch.__version__)  # make build builds against this venv's torch
    assert info["build"]["stable_abi"].startswith("torch >= 2.10") and "abi3" in info["build"]["python_abi"]
    assert info["philox"]["path"] == torch_rngx._C.simd() and info["philox"]["path"] in info["philox"]["paths"]
    assert info["cuda"]["kernels_registered"] == (torch.version.cuda is not None and info["cuda"]["kernels_loaded"])
    assert set(info) >= {"triton", "python", "platform"}
    text = main._text(info, [{"name": "x", "ok": False, "detail": "wrong: y", "seconds": 0.1}])
    for label in ("torch_rngx ", "torch ", "built against", "Philox path", "CUDA kernels", "Triton", "FAIL  x"):
        assert label in text


def test_philox_why_names_rngx_simd(monkeypatch):
    monkeypatch.setenv("RNGX_SIMD", torch_rngx._C.simd())
    assert main.philox()["why"] == f"RNGX_SIMD={torch_rngx._C.simd()} asks for it"


@pytest.mark.slow("python -m torch_rngx in a fresh process: imports torch, compiles one op (about 15 s)")
def test_python_m_torch_rngx_json_passes(tmp_path):
    run = subprocess.run([sys.executable, "-m", "torch_rngx", "--json"], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert out["ok"] and out["torch_rngx"]["version"] == version("torch-rngx")
    names = [c["name"] for c in out["checks"]]
    assert [f"known answers, CPU, {p} Philox" for p in torch_rngx._C.simd_paths()] == names[:-1]
    assert names[-1].startswith("torch.compile == eager")


NO_NUMPY = """
import sys
sys.modules["numpy"] = None  # torch then has no NumPy: torch 2.13.0's CPU wheel does not install it
import torch_rngx.__main__ as m
m._compiled_differs = lambda: []  # this test is about the known answers
sys.exit(m.main([]))
"""


def test_the_self_check_passes_without_numpy(tmp_path):
    """torch's wheels do not depend on NumPy, so a user's venv may lack it: the self-check must not need it."""
    run = subprocess.run([sys.executable, "-c", NO_NUMPY], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "FAIL" not in run.stdout


BREAK = """
import sys
import torch_rngx.__main__ as m
call, bits = m.KNOWN["bits/int32/carry"]
m.KNOWN["bits/int32/carry"] = (call, "c25672df" + bits[8:])  # one bit of stream 1.0 changed
m._compiled_differs = lambda: []  # this test is about the known answers
sys.exit(m.main(sys.argv[1:]))
"""


@pytest.mark.slow("a fresh process importing torch (about 5 s)")
def test_a_broken_known_answer_exits_1_and_names_it(tmp_path):
    run = subprocess.run([sys.executable, "-c", BREAK], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "FAIL  known answers, CPU" in run.stdout and "wrong: bits/int32/carry" in run.stdout
    assert "A CHECK FAILED" in run.stdout.splitlines()[-1]
