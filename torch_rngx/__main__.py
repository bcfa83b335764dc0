"""`python -m torch_rngx [--json]`: what a bug report needs, then a self-check of a few seconds.

It prints the package, stream and torch versions, the torch the library was built against and its ABI, the Philox
path in use and why, whether the CUDA kernels are built, loaded and registered and which GPUs are visible, and
Triton's version; then checks known answers of stream 1.0 on every Philox path this CPU runs and on every visible GPU,
and that a compiled dropout gives eager's values and step. The exit status is 1 when a check fails. --json prints
the same as one JSON object."""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import time
import traceback
from typing import Callable

import torch

import torch_rngx
import torch_rngx.functional as rf

from . import _C  # type: ignore[attr-defined]  # the compiled library, which mypy cannot read
from ._engine.torch_private import TESTED_ON, has_kernel
from ._version import STREAM, __version__

_U64 = 1 << 64


def _key(*pairs: int) -> list:
    """[seed, offset] as the int64 values of the same bits."""
    return [v - _U64 if v >= 1 << 63 else v for v in pairs]


# Known answers of stream 1.0, each a case of tests/kat/stream-1.0.json by its name (tests/test_main.py checks that
# the bits are the file's): (the call on a device, the bits as hex). Keys at the 2^32 carry and the 2^64 wrap,
# batched keys and a global view; 7 elements run the kernels' tails, so "uniform/float32/4099" adds a draw long
# enough for every vector loop, as the SHA-256 of its bytes (tests/test_main.py computes it from the reference).
def _like(shape: list, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=device)


def _state(pairs: list, device: str) -> torch.Tensor:
    return torch.tensor(pairs, dtype=torch.int64, device=device)


KNOWN: dict[str, tuple[Callable[[str], torch.Tensor], str]] = {
    "bits/int32/carry": (
        lambda d: rf.bits([7], _state(_key(_U64 - 1, (1 << 32) - 1), d), dtype=torch.int32),
        "c25672de 7c03af71 c1b7863e 1d02bb96 85af3999 f0ea2a5e 1c58f27c",
    ),
    "uniform/float32/wrap": (
        lambda d: rf.uniform(_like([7], torch.float32, d), _state(_key(1 << 32, _U64 - 1), d), -2.0, 3.0),
        "3f7045bc 3fd187ac bb269200 3fea4768 4015cd8e 3eef7720 3f049d60",
    ),
    "normal/float64/batched": (
        lambda d: rf.normal(
            _like([2, 5], torch.float64, d), _state([[_key(5, 9)], [_key(_U64 - 3, 1 << 40)]], d), 0.25, 1.5
        ),
        "3ff73e925f4fe402 bfdcc85f409e781a 3ff66d091097e2b1 3fed40b4f45b8de0 bfe3e88930b407ad "
        "3fe62d7d449930a3 3ff5313127a95874 40061f41622fecb4 3fc5d3faab2daaf0 bfc2e113c3040608",
    ),
    "randint/int64/global": (
        lambda d: rf.randint(
            _like([2, 3], torch.float32, d),
            _state(_key(123456789, 17), d),
            3,
            103,
            dtype=torch.int64,
            global_shape=[4, 5],
            global_start=[1, 1],
        ),
        "0000000000000053 000000000000004a 0000000000000036 0000000000000013 000000000000005c 0000000000000023",
    ),
    "bernoulli/bfloat16/zero": (
        lambda d: rf.bernoulli(_like([7], torch.bfloat16, d), _state(_key(0, 0), d), 0.3),
        "3f80 0000 0000 3f80 0000 0000 0000",
    ),
    "truncated_normal/float16/carry": (
        lambda d: rf.truncated_normal(
            _like([7], torch.float16, d), _state(_key(_U64 - 1, (1 << 32) - 1), d), 0.5, 2.0, -1.0, 3.3
        ),
        "3142 29cc 3ba1 af58 b888 3450 bbf5",
    ),
    "exponential/float32/zero": (
        lambda d: rf.exponential(_like([7], torch.float32, d), _state(_key(0, 0), d), 1.5),
        "3f1cc9a1 3dadba72 3e51855e 3eab41e5 3c99be73 3f2d5f93 3e796f49",
    ),
    "uniform/float32/4099": (
        lambda d: rf.uniform(_like([4099], torch.float32, d), _state(_key(5, 9), d)),
        "sha256:",  # + the digest, below
    ),
}
LONG_DRAW_SHA256 = "adaa574a279796a06d2ab70142821e68b1ea6c9147f13056ae2cae0d2d9ff2f7"  # the reference's (test_main)
_INT_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits_of(t: torch.Tensor) -> str:
    """A tensor's values as their bit patterns in hex, row-major, or for the long draw the SHA-256 of its bytes."""
    flat = t.detach().contiguous().view(-1).view(_INT_OF_WIDTH[t.element_size()]).cpu()
    if flat.numel() > 16:
        return "sha256:" + hashlib.sha256(bytes(flat.clone().untyped_storage())).hexdigest()  # no NumPy needed
    width = 8 * t.element_size()
    return " ".join(f"{int(v) % (1 << width):0{width // 4}x}" for v in flat.tolist())


def expected(name: str) -> str:
    want = KNOWN[name][1]
    return want + LONG_DRAW_SHA256 if want == "sha256:" else want


# ---- the report ----


def philox() -> dict:
    """The Philox path in use, the paths this CPU and build run, and why this one."""
    active, paths = _C.simd(), list(_C.simd_paths())
    asked = os.environ.get("RNGX_SIMD")
    if asked:
        why = f"RNGX_SIMD={asked} asks for it" if asked == active else f"RNGX_SIMD={asked} is not a path of {paths}"
    elif active == "scalar":
        why = "this CPU has neither AVX2 nor AVX-512F"
    else:
        why = f"the fastest path this CPU and build run ({', '.join(paths)})"
    return {"path": active, "paths": paths, "why": why}


def cuda() -> dict:
    """Whether the CUDA kernels are built (_C_cuda beside _C), loaded (under torch's CUDA build only), registered
    for the ops, and which GPUs torch sees."""
    import importlib.util

    built = importlib.util.find_spec("torch_rngx._C_cuda") is not None
    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    )
    return {
        "torch_cuda": torch.version.cuda,
        "kernels_built": built,
        "kernels_loaded": "torch_rngx._C_cuda" in sys.modules,
        "kernels_registered": has_kernel("rngx::uniform", "CUDA"),
        "gpus": gpus,
    }


def torch_info() -> dict:
    release = str(torch.__version__).split("+")[0]
    newest = max(TESTED_ON, key=lambda v: tuple(int(p) for p in v.split(".")))
    tested = release in TESTED_ON
    newer = tuple(int(p) for p in release.split(".")[:2]) > tuple(int(p) for p in newest.split(".")[:2])
    note = "tested" if tested else "newer than torch_rngx was tested on" if newer else "not among the tested"
    return {"version": str(torch.__version__), "tested_on": list(TESTED_ON), "note": note}


def build() -> dict:
    info = dict(_C.build())
    target = int(info["torch_target_version"], 16)
    info["stable_abi"] = f"torch >= {target >> 56}.{(target >> 48) & 0xFF} (TORCH_TARGET_VERSION)"
    api = int(info["py_limited_api"], 16)
    info["python_abi"] = f"abi3, CPython >= {api >> 24}.{(api >> 16) & 0xFF} (Py_LIMITED_API)"
    info["library"] = str(_C.__file__)
    return info


def triton() -> str | None:
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def report() -> dict:
    return {
        "torch_rngx": {"version": __version__, "stream": STREAM, "location": os.path.dirname(torch_rngx.__file__)},
        "torch": torch_info(),
        "build": build(),
        "philox": philox(),
        "cuda": cuda(),
        "triton": triton(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


# ---- the self-check ----


def _known_answers(device: str) -> list[str]:
    """The names of the known answers that `device` (and, on the CPU, the current Philox path) gets wrong."""
    return [name for name, (call, _) in KNOWN.items() if bits_of(call(device)) != expected(name)]


def check_known_answers() -> list[dict]:
    """Every known answer on every Philox path this CPU runs, then on every GPU."""
    out = []
    active = _C.simd()
    try:
        for path in _C.simd_paths():
            _C.set_simd(path)
            out.append(_outcome(f"known answers, CPU, {path} Philox", lambda: _known_answers("cpu")))
    finally:
        _C.set_simd(active)
    if has_kernel("rngx::uniform", "CUDA") and torch.cuda.is_available():
        for device in (f"cuda:{i}" for i in range(torch.cuda.device_count())):
            out.append(_outcome(f"known answers, {device}", functools.partial(_known_answers, device)))
    return out


def _outcome(name: str, wrong: Callable[[], list[str]]) -> dict:
    start = time.perf_counter()
    try:
        bad = wrong()
        detail = "all match" if not bad else "wrong: " + ", ".join(bad)
    except Exception:
        bad, detail = ["raised"], traceback.format_exc(limit=3).strip().splitlines()[-1]
    return {"name": name, "ok": not bad, "detail": detail, "seconds": round(time.perf_counter() - start, 3)}


def _compiled_differs() -> list[str]:
    """A dropout with a Generator under torch.compile(fullgraph=True) against eager: values and the step."""

    def step(x, g):
        return torch_rngx.dropout(x, 0.5, generator=g)

    x = torch.randn(4, 33)
    g_eager, g_compiled = torch_rngx.Generator(7), torch_rngx.Generator(7)
    want = [step(x, g_eager) for _ in range(2)]
    compiled = torch.compile(step, fullgraph=True)
    got = [compiled(x, g_compiled) for _ in range(2)]
    bad = [f"call {i}" for i, (a, b) in enumerate(zip(got, want)) if not torch.equal(a, b)]
    return bad + ([] if torch.equal(g_eager.state, g_compiled.state) else ["the Generator's step"])


def self_check() -> list[dict]:
    # The known answers share keys, and compiled and eager draw the same words on purpose: the key-reuse checker
    # (RNGX_DEBUG_KEY_REUSE in the environment) is off for them.
    with torch_rngx.debug.key_reuse("off"):
        return check_known_answers() + [_outcome("torch.compile == eager (dropout, Generator)", _compiled_differs)]


# ---- output ----


def _text(info: dict, checks: list[dict]) -> str:
    b, p, c = info["build"], info["philox"], info["cuda"]
    gpus = ", ".join(c["gpus"]) or "none visible"
    lines = [
        f"torch_rngx     {info['torch_rngx']['version']} (stream {info['torch_rngx']['stream']}) in "
        f"{info['torch_rngx']['location']}",
        f"torch          {info['torch']['version']} ({info['torch']['note']}: {', '.join(info['torch']['tested_on'])})",
        f"built against  torch {b['torch']}; stable ABI {b['stable_abi']}; {b['python_abi']}; "
        f"C compiler {b['compiler']}",
        f"library        {b['library']}",
        f"Philox path    {p['path']}: {p['why']}",
        f"CUDA kernels   built: {_yes(c['kernels_built'])}, loaded: {_yes(c['kernels_loaded'])}, registered: "
        f"{_yes(c['kernels_registered'])}; torch CUDA {c['torch_cuda'] or 'none (CPU build)'}; GPUs: {gpus}",
        f"Triton         {info['triton'] or 'not installed'}",
        f"Python         {info['python']} on {info['platform']}",
        "",
        "self-check:",
    ]
    lines += [f"  {'PASS' if r['ok'] else 'FAIL'}  {r['name']}: {r['detail']} ({r['seconds']} s)" for r in checks]
    ok = all(r["ok"] for r in checks)
    lines.append("all checks passed" if ok else "A CHECK FAILED: paste this whole output into your bug report")
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_rngx", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the report and the checks as one JSON object")
    args = parser.parse_args(argv)
    info = report()
    checks = self_check()
    ok = all(r["ok"] for r in checks)
    if args.json:
        print(json.dumps({**info, "checks": checks, "ok": ok}, indent=2))
    else:
        print(_text(info, checks))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
