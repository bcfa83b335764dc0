"""Every Philox path (scalar, AVX2, AVX-512: those this CPU runs) under 1, 2 and 3 intra-op threads gives the
bits of the scalar path on one thread, for every op of tests/ops_table.py (and dropout's backward, and bits in 32- and
64-bit dtypes),
dtype and layout, including the tiled walk of long strided rows (channels_last), offsets (in blocks) across the
counter's 32-bit carry and the wrap at 2^64, batched per-row states (events that start mid-vector), and global
views (runs that start mid-block).
tests/c/test_simd.c checks the same word for word in C; this checks the whole stack the user calls."""
import os
import subprocess
import sys

import numpy as np
import pytest
import reference
import torch
from conftest import make_state
from ops_table import draws

from torch_rngx import _C
from torch_rngx import functional as F

pytestmark = pytest.mark.key_reuse_ok("recomputes draws on purpose (module fixture): SIMD against scalar paths")

PATHS = _C.simd_paths()
STATES = [make_state(0x0123456789ABCDEF, 0), make_state(7, 2**32 - 5), make_state(2**64 - 1, 2**64 - 6, torch.uint64),
          "batched"]


def per_row_state(x):
    """A (rows, 1, ..., 1, 2) state: one key per index of dim 0 (arbitrary 64-bit seeds and offsets)."""
    keys = torch.arange(2 * x.shape[0], dtype=torch.int64).view(x.shape[0], 2) * 0x9E3779B97F4A7C15 - 3
    return keys.view([x.shape[0]] + [1] * (x.dim() - 1) + [2])


@pytest.fixture
def restore_path():
    before = _C.simd()
    yield
    _C.set_simd(before)


def inputs():
    """(name, tensor): large ones span several parallel tasks (grain 2^15 elements), small ones every dtype."""
    g = torch.Generator().manual_seed(5)
    big = [
        ("contiguous", torch.randn(2**16 + 5, generator=g)),
        ("channels_last", torch.randn(2, 32, 30, 41, generator=g).to(memory_format=torch.channels_last)),
        ("transposed", torch.randn(300, 257, generator=g).t()),
        ("sliced", torch.randn(3, 200, 300, generator=g)[:, ::3, 1:-1]),
        ("expanded", torch.randn(1, 5000, generator=g).expand(14, 5000)),
    ]
    small = [
        (f"{dtype}-{name}", x.to(dtype))
        for dtype in (torch.float16, torch.bfloat16, torch.float64)
        for name, x in [("channels_last", torch.randn(2, 8, 30, 30, generator=g).to(memory_format=torch.channels_last)),
                        ("sliced", torch.randn(500, 7, generator=g)[::2, 1:])]
    ]
    return big + small


def global_view_of(x, per_row):
    """x as a block of a larger tensor (docs/stream.md, "Global view"): 3 more indices in each dim, x starting at 1
    (dim 0 left whole under a per-row state, whose batch dim must be the global one's)."""
    lead = 0 if per_row else 3
    return dict(global_shape=[x.shape[0] + lead] + [n + 3 for n in x.shape[1:]],
                global_start=[lead // 3] + [1] * (x.dim() - 1))


def outputs(x, state):
    """Every kernel's result on x, under a global view too, bits in 32 bits, and dropout's gradient (the mask
    recomputed in backward)."""
    view = global_view_of(x, isinstance(state, str))
    if isinstance(state, str):
        state = per_row_state(x)
    xg = x.detach().clone().requires_grad_(True)
    y = F.dropout(xg, state, 0.3)
    y.backward(torch.arange(y.numel(), dtype=y.dtype).view(y.shape))
    return [y.detach(), xg.grad, F.bits(x.shape, state), *draws(x, state, composite=False).values(),
            *draws(x, state, composite=False, **view).values()]


def composites():
    """The composites (torch's arithmetic around the kernels above) once, on an input large enough to split."""
    x = torch.randn(40, 3000, generator=torch.Generator().manual_seed(6))
    return [*draws(x, STATES[0], composite=True).values(), *draws(x, STATES[2], composite=True).values()]


def run_all(path, threads):
    _C.set_simd(path)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {**{(name, s): outputs(x, state) for name, x in inputs() for s, state in enumerate(STATES)},
                "composites": composites()}
    finally:
        torch.set_num_threads(old)


def as_bytes(t):
    return t.contiguous().view(-1).view(torch.uint8) if t.dim() else t.view(1).view(torch.uint8)


@pytest.fixture(scope="module")
def scalar_one_thread():
    before = _C.simd()
    try:
        return run_all("scalar", 1)
    finally:
        _C.set_simd(before)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("path", PATHS)
def test_path_and_thread_count_do_not_change_a_bit(path, threads, scalar_one_thread, restore_path):
    got = run_all(path, threads)
    for key, want in scalar_one_thread.items():
        for j, (g, w) in enumerate(zip(got[key], want)):
            assert g.stride() == w.stride(), (key, j)
            assert torch.equal(as_bytes(g), as_bytes(w)), f"{path}, {threads} threads: {key}, output {j}"


@pytest.mark.parametrize("path", PATHS)
def test_words_match_the_independent_reference(path, restore_path):
    _C.set_simd(path)
    for seed, first, count in [(3, 0, 4099), (2**64 - 1, 5, 1000), (11, 2**64 - 9, 300), (1, 2**32 - 6, 64)]:
        got = F.bits([count], make_state(seed, first), dtype=torch.uint32).numpy().astype(np.uint64)
        np.testing.assert_array_equal(got, reference.words(seed, first, count))


def test_all_paths_are_offered_where_the_cpu_has_them():
    assert PATHS[0] == "scalar"
    if sys.platform == "linux" and os.uname().machine == "x86_64":
        flags = open("/proc/cpuinfo").read().split()
        assert ("avx2" in PATHS) == ("avx2" in flags)
        assert ("avx512" in PATHS) == ("avx512f" in flags)
    chosen = os.environ.get("RNGX_SIMD")
    assert _C.simd() == (chosen if chosen in PATHS else PATHS[-1])  # RNGX_SIMD's choice, else the fastest


def simd_in_a_new_process(value):
    env = dict(os.environ, RNGX_SIMD=value)
    return subprocess.run([sys.executable, "-c", "from torch_rngx import _C; print(_C.simd())"], env=env,
                          capture_output=True, text=True, check=True)


def test_environment_variable_picks_the_path():
    assert simd_in_a_new_process("scalar").stdout.strip() == "scalar"  # not the default where SIMD exists
    unknown = simd_in_a_new_process("sse9")
    assert unknown.stdout.strip() == PATHS[-1] and "RNGX_SIMD=sse9" in unknown.stderr


def test_unsupported_path_is_refused(restore_path):
    with pytest.raises(ValueError, match="neon"):
        _C.set_simd("neon")
    assert _C.simd() in PATHS
