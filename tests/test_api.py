"""The public stateful API: Generator, rand_like, uniform_like, quantize, dropout, nn.Dropout."""
import os

import pytest
import torch
from conftest import make_state, recompute

import torch_rngx
from torch_rngx import _C
from torch_rngx import functional as F

ONE_KEY_FOR_ALL = pytest.mark.key_reuse_ok("draws one key in every layout, dtype, Philox path and thread count")


class TestGenerator:
    def test_seed_offset_and_accessors(self):
        g = torch_rngx.Generator(2**64 - 1)
        assert g.initial_seed() == 2**64 - 1 and g.state.tolist() == [-1, 0] and g.device == torch.device("cpu")
        assert g.state.dtype == torch.int64 and g.state.shape == (2,)
        torch_rngx.rand_like(torch.empty(5), generator=g)  # 5 words: 2 blocks
        assert g.state.tolist() == [-1, 2] and g.initial_seed() == 2**64 - 1

    def test_get_set_state_replays(self):
        g = torch_rngx.Generator(7)
        saved = g.get_state()
        a = torch_rngx.rand_like(torch.empty(10), generator=g)
        saved.add_(100)  # get_state is a copy: changing it does not touch g
        g.set_state(saved.sub_(100))
        assert torch.equal(torch_rngx.rand_like(torch.empty(10), generator=g), a)

    def test_manual_seed_restarts(self):
        g = torch_rngx.Generator(3)
        a = torch_rngx.rand_like(torch.empty(4), generator=g)
        assert g.manual_seed(3) is g and torch.equal(torch_rngx.rand_like(torch.empty(4), generator=g), a)

    def test_clone_is_independent(self):
        g = torch_rngx.Generator(11)
        torch_rngx.rand_like(torch.empty(3), generator=g)
        h = g.clone()
        a = torch_rngx.rand_like(torch.empty(6), generator=g)
        with recompute():  # the clone's stream is g's
            assert torch.equal(torch_rngx.rand_like(torch.empty(6), generator=h), a)
        assert torch.equal(g.state, h.state) and g.state.data_ptr() != h.state.data_ptr()

    def test_seed_none_follows_torch_manual_seed(self):
        torch.manual_seed(5)
        a = torch_rngx.Generator().initial_seed()
        torch.manual_seed(5)
        assert torch_rngx.Generator().initial_seed() == a and torch_rngx.Generator().initial_seed() != a

    def test_state_tensor_is_advanced_in_place(self):
        g = torch_rngx.Generator(1)
        state = g.state
        torch_rngx.dropout(torch.ones(9, dtype=torch.float64), 0.5, generator=g)
        assert g.state is state and state.tolist() == [1, torch_rngx.blocks_used(9, torch.float64)] == [1, 5]


def test_version():
    """0.3.0 carries stream 1.0, final (docs/stream.md, tests/kat/stream-1.0.json). The version is set once
    (torch_rngx/_version.py): the installed metadata says the same, and CHANGELOG.md has its section with the stream;
    stream.md's opening says the same."""
    import os
    import re
    from importlib.metadata import version

    from torch_rngx import _version
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert version("torch-rngx") == torch_rngx.__version__ == _version.__version__ == "0.3.0"
    assert _version.STREAM == "1.0"
    with open(os.path.join(root, "pyproject.toml")) as f:
        assert not re.search(r"^version = \"", f.read(), re.M), "the version is set in torch_rngx/_version.py only"
    with open(os.path.join(root, "CHANGELOG.md")) as f:
        section = f.read().split(f"\n## [{torch_rngx.__version__}] - ", 1)[1].split("\n## ", 1)[0]
    assert f"**Stream {_version.STREAM}**" in section.split("\n\n")[1], "the release's first line names its stream"
    with open(os.path.join(root, "docs", "stream.md")) as f:
        opening = " ".join(f.read().split("\n## ")[0].split())
    assert opening.startswith("# The torch-rngx stream, version 1.0 ") and "release candidate" not in opening
    assert f"Stream 1.0 is final: torch-rngx {torch_rngx.__version__} is the first package that carries it" in opening


class TestRandLike:
    def test_dtype_strides_and_values(self):
        x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
        u = torch_rngx.rand_like(x, generator=torch_rngx.Generator(9), dtype=torch.float64)
        assert u.dtype == torch.float64 and u.stride() == torch.empty_like(x, dtype=torch.float64).stride()
        with recompute():
            assert torch.equal(u, F.uniform(x, make_state(9, 0), dtype=torch.float64))

    def test_uniform_like_range(self):
        u = torch_rngx.uniform_like(torch.empty(10000), -3.0, -1.0, generator=torch_rngx.Generator(0))
        assert float(u.min()) >= -3.0 and float(u.max()) < -1.0

    def test_generator_none_follows_manual_seed_and_is_fresh(self):
        x = torch.empty(50)
        torch.manual_seed(32)
        a, b = torch_rngx.rand_like(x), torch_rngx.rand_like(x)
        torch.manual_seed(32)
        assert torch.equal(torch_rngx.rand_like(x), a) and torch.equal(torch_rngx.rand_like(x), b)
        assert not torch.equal(a, b)

    def test_generator_none_draws_its_seed_past_torch_function_modes(self):
        """The fresh seed skips its mode guard only where no mode is pushed: under torch.device (a torch function
        mode) it is still a CPU draw from torch's generator, on every path (one call, a node, a large tensor)."""
        for x in (torch.ones(50), torch.ones(50, requires_grad=True), torch.ones(1 << 16)):  # no NaN to compare
            torch.manual_seed(5)
            want = torch_rngx.dropout(x, 0.5), torch_rngx.rand_like(x)
            torch.manual_seed(5)
            with torch.device("meta"):
                got = torch_rngx.dropout(x, 0.5), torch_rngx.rand_like(x)
            assert all(g.is_cpu and torch.equal(g, w) for g, w in zip(got, want))


class TestQuantize:
    x = torch.tensor([[-1.7, -0.5, 0.49, 2.5, 3.2]]).view(1, 5, 1, 1)
    means = torch.tensor([0.3, -0.2, 0.0, 0.1, 1.0]).view(1, 5, 1, 1)

    def test_noise_is_quantize_noise_at_the_generators_state(self):
        g = torch_rngx.Generator(4)
        noisy = torch_rngx.quantize(self.x, generator=g)
        with recompute():
            assert torch.equal(noisy, F.quantize_noise(self.x, make_state(4, 0), 0.5))

    def test_dequantize_and_symbols_match_compressai(self):
        expected = torch.round(self.x - self.means)
        assert torch.equal(torch_rngx.quantize(self.x, "dequantize", self.means), expected + self.means)
        symbols = torch_rngx.quantize(self.x, "symbols", self.means)
        assert symbols.dtype == torch.int32 and torch.equal(symbols, expected.int())
        assert torch.equal(torch_rngx.quantize(self.x, "dequantize"), torch.round(self.x))

    def test_deterministic_modes_draw_nothing(self):
        g = torch_rngx.Generator(4)
        torch_rngx.quantize(self.x, "dequantize", self.means, generator=g)
        torch_rngx.quantize(self.x, "symbols", generator=g)
        assert g.state.tolist() == [4, 0]

    @pytest.mark.parametrize("mode", ["round", "NOISE", None])
    def test_unknown_mode(self, mode):
        with pytest.raises(ValueError, match="mode"):
            torch_rngx.quantize(self.x, mode)


class TestDropout:
    def test_eval_is_identity_and_draws_nothing(self):
        g = torch_rngx.Generator(2)
        drop = torch_rngx.nn.Dropout(0.5, generator=g).eval()
        x = torch.randn(10)
        assert drop(x) is x and torch_rngx.dropout(x, 0.5, training=False, generator=g) is x
        assert g.state.tolist() == [2, 0]

    def test_module_matches_function(self):
        x = torch.randn(4, 6)
        drop = torch_rngx.nn.Dropout(0.25, generator=torch_rngx.Generator(8))
        dropped = drop(x)
        with recompute():
            assert torch.equal(dropped, F.dropout(x, make_state(8, 0), 0.25))
        assert "p=0.25" in repr(drop)

    def test_keep_rate_close_to_one_minus_p(self):
        kept = (torch_rngx.dropout(torch.ones(100_000), 0.3, generator=torch_rngx.Generator(1)) != 0).float().mean()
        assert abs(float(kept) - 0.7) < 0.01


# ---- the eager fast path: a CPU Generator's step and the op in one call (rngx::uniform_from_ and friends) ----

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("numel", [1, 7, 1024, (1 << 15) + 3])  # the last one takes the two-call path
def test_fast_path_equals_step_then_op(dtype, numel):
    x = torch.randn(numel).to(dtype).as_strided((numel,), (1,))
    for offset in (0, (1 << 64) - 3):
        g, twin = torch_rngx.Generator(5), torch_rngx.Generator(5)
        for gen in (g, twin):
            gen.set_state(torch.tensor([5, offset - (1 << 64) if offset >= 1 << 63 else offset]))
        key = torch.ops.rngx.step_(twin.state, torch_rngx.blocks_used(numel, dtype))
        got = torch_rngx.uniform_like(x, -2.0, 3.0, generator=g)
        with recompute():  # twin's key is g's
            assert torch.equal(got, F.uniform(x, key, -2.0, 3.0))
        assert torch.equal(g.state, twin.state)
        key = torch.ops.rngx.step_(twin.state, torch_rngx.blocks_used(numel, dtype))
        got = torch_rngx.quantize(x, generator=g)
        with recompute():
            assert torch.equal(got, F.quantize_noise(x, key, 0.5))
        assert torch.equal(g.state, twin.state)


def _layouts_for_fast_path(dtype):
    base = torch.randn(2, 3, 8, 9, generator=torch.Generator().manual_seed(3)).to(dtype)
    return {"contiguous": base, "channels_last": base.to(memory_format=torch.channels_last),
            "transposed": base.transpose(1, 3), "sliced": base[:, 1:, ::2, 2:7],
            "expanded": base[:, :1].expand(2, 3, 8, 9)}


# Every one-call op (rngx::*_from_): (its op, the stateful call, the functional op on the same key).
_ONE_CALL_OPS = [
    ("uniform", lambda x, g: torch_rngx.uniform_like(x, -1.0, 2.0, generator=g),
     lambda x, k: F.uniform(x, k, -1.0, 2.0)),
    ("quantize_noise", lambda x, g: torch_rngx.quantize(x, generator=g), lambda x, k: F.quantize_noise(x, k, 0.5)),
    ("normal", lambda x, g: torch_rngx.normal_like(x, -1.0, 3.0, generator=g), lambda x, k: F.normal(x, k, -1.0, 3.0)),
    ("bernoulli", lambda x, g: torch_rngx.bernoulli_like(x, 0.3, generator=g), lambda x, k: F.bernoulli(x, k, 0.3)),
    ("randint", lambda x, g: torch_rngx.randint_like(x, -3, 100, generator=g, dtype=torch.int32),
     lambda x, k: F.randint(x, k, -3, 100, dtype=torch.int32)),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("path", _C.simd_paths())
@ONE_KEY_FOR_ALL
def test_fast_path_in_every_layout_path_and_thread_count(path, threads):
    """Every one-call op equals the two-call path (key, then the functional op) computed on the scalar path and one
    thread, in every layout, dtype, Philox path and thread count, and is the op the call takes."""
    before_path, before_threads = _C.simd(), torch.get_num_threads()
    try:
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            for name, x in _layouts_for_fast_path(dtype).items():
                _C.set_simd("scalar")
                torch.set_num_threads(1)
                key = torch.tensor([77, 5])
                wants = [functional(x, key) for _, _, functional in _ONE_CALL_OPS]
                _C.set_simd(path)
                torch.set_num_threads(threads)
                g = torch_rngx.Generator(77)
                for (op, stateful, _), want in zip(_ONE_CALL_OPS, wants):
                    g.set_state(key)
                    calls, got = _rngx_calls(lambda stateful=stateful: stateful(x, g))
                    assert calls == [f"rngx::{op}_from_"], (op, calls)
                    assert got.stride() == want.stride() and torch.equal(got, want), (op, name, dtype)
    finally:
        _C.set_simd(before_path)
        torch.set_num_threads(before_threads)


def test_fast_path_ops_check_before_they_step():
    g = torch_rngx.Generator(5)
    with pytest.raises(RuntimeError, match="finite"):
        torch_rngx.ops.uniform_from_(g.state, torch.zeros(3), 0.0, float("inf"), None)
    with pytest.raises(RuntimeError, match="Generator's"):
        torch_rngx.ops.quantize_noise_from_(g.state.float(), torch.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="std"):
        torch_rngx.ops.normal_from_(g.state, torch.zeros(3), 0.0, -1.0, None)
    with pytest.raises(RuntimeError, match="p must be in"):
        torch_rngx.ops.bernoulli_from_(g.state, torch.zeros(3), 1.5)
    with pytest.raises(RuntimeError, match="low"):
        torch_rngx.ops.randint_from_(g.state, torch.zeros(3), 5, 5, torch.int64)
    assert g.state.tolist() == [5, 0]


# The samplers' small-tensor path: (stateful call, the functional op with the same params), per output dtype.
_SAMPLERS_ONE_CALL = {
    "randn_like": (lambda x, g, d: torch_rngx.randn_like(x, generator=g, dtype=d),
                   lambda x, k, d: F.normal(x, k, 0.0, 1.0, dtype=d)),
    "normal_like": (lambda x, g, d: torch_rngx.normal_like(x, -1.0, 3.0, generator=g, dtype=d),
                    lambda x, k, d: F.normal(x, k, -1.0, 3.0, dtype=d)),
    "bernoulli_like": (lambda x, g, d: torch_rngx.bernoulli_like(x.to(d), 0.3, generator=g),
                       lambda x, k, d: F.bernoulli(x.to(d), k, 0.3)),
}


@pytest.mark.parametrize("name", sorted(_SAMPLERS_ONE_CALL) + ["randint_like"])
@pytest.mark.parametrize("numel", [1, 7, 1024, (1 << 15) + 3])  # the last one takes the two-call path
@pytest.mark.key_reuse_ok("checks the one-call path, which the checker leaves to read each key")
def test_sampler_fast_path_equals_step_then_op(name, numel):
    """normal, bernoulli and randint with a CPU Generator: the one-call path gives the two-call path's values and
    moves the Generator as far, at every dtype and at the offset's wrap."""
    x = torch.randn(2, numel).t()  # transposed: the output follows x's strides
    if name == "randint_like":
        cases = [(d, "randint", lambda x, g, d: torch_rngx.randint_like(x, -3, 100, generator=g, dtype=d),
                  lambda x, k, d: F.randint(x, k, -3, 100, dtype=d)) for d in (torch.int8, torch.int32, torch.int64)]
    else:
        op = "normal" if "normal" in name or "randn" in name else "bernoulli"
        cases = [(d, op, *_SAMPLERS_ONE_CALL[name]) for d in (torch.float16, torch.bfloat16, torch.float32,
                                                               torch.float64)]
    for dtype, op, stateful, functional in cases:
        for offset in (0, (1 << 64) - 3):
            start = torch.tensor([5, offset - (1 << 64) if offset >= 1 << 63 else offset])
            g, twin = torch_rngx.Generator().set_state(start), torch_rngx.Generator().set_state(start)
            calls, got = _rngx_calls(lambda: stateful(x, g, dtype))
            with recompute():  # twin's stream is g's
                key = torch.ops.rngx.step_(twin.state, torch_rngx.blocks_used(x.numel(), dtype, op, range=103 if op == "randint" else None))
                want = functional(x, key, dtype)
            assert got.stride() == want.stride() and torch.equal(got, want), (name, dtype, offset)
            assert torch.equal(g.state, twin.state), (name, dtype, offset)
            one_call = numel <= 1 << 15
            assert calls == [f"rngx::{op}_from_"] if one_call else calls[-1] == f"rngx::{op}", calls


def _rngx_calls(fn):
    """The rngx ops fn() calls, in order, and its result."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn()
    return [e.name for e in prof.events() if e.name.startswith("rngx::")], out


def test_help_shows_types_that_are_defined():
    """help() of a function prints its annotations: real types, never a name in quotes that the reader cannot look
    up (help(torch_rngx.dropout) once showed `generator: 'Stream'`)."""
    import inspect
    import pydoc

    for module in (torch_rngx, F, torch_rngx.nn.init):
        for name in module.__all__:
            fn = getattr(module, name)
            if not inspect.isfunction(fn):
                continue
            sig = inspect.signature(fn)
            annotations = [p.annotation for p in sig.parameters.values()] + [sig.return_annotation]
            assert not any(isinstance(a, str) for a in annotations), (f"{module.__name__}.{name}", sig)
    assert "generator: Union[torch_rngx.generator.Generator, torch_rngx.generator.RNG, NoneType]" in pydoc.render_doc(
        torch_rngx.dropout)


def _package_frames(call):
    """(function, file) of every Python frame of torch_rngx that one call enters, in order (sys.setprofile)."""
    import sys

    package = os.path.dirname(torch_rngx.__file__) + os.sep
    frames = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            frames.append((frame.f_code.co_name, os.path.basename(frame.f_code.co_filename)))

    call()  # warm: caches filled
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return frames


@pytest.mark.parametrize("grad", [False, True])
def test_a_stateful_call_crosses_few_frames(grad):
    """torch_rngx.dropout(x, 0.1, generator=g) goes from the public function through its check and the router to the
    op (and the node with a gradient): at most 5 frames of the package in 3 files, 7 in 4 with a gradient (issues 31,
    46)."""
    x = torch.randn(64, requires_grad=grad)
    g = torch_rngx.Generator(0)
    with torch_rngx.debug.key_reuse("off"):  # the default path: the checker make test runs under adds frames
        frames = _package_frames(lambda: torch_rngx.dropout(x, 0.1, generator=g))
    files = {f for _, f in frames}
    assert len(frames) <= (7 if grad else 5) and len(files) <= (4 if grad else 3), frames
