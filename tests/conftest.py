import contextlib
import os

# tests/test_triton.py runs Triton kernels on the CPU through Triton's interpreter. @triton.jit reads this when a
# function is defined, and importing torch._dynamo (below) imports triton.language, so it is set first.
os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import torch_rngx  # noqa: F401,E402  (loads the ops)
from torch_rngx import debug  # noqa: E402

# Compiling a function per layout would hit dynamo's default recompile limit in parametrized tests.
torch._dynamo.config.cache_size_limit = 64
torch._dynamo.config.accumulated_cache_size_limit = 1024

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.uint64]
INT_VIEW = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def make_state(seed, offset, dtype=torch.int64):
    """[seed, offset] (offset in Philox blocks) as int64 bit patterns of the unsigned values, or as uint64."""
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    if dtype == torch.uint64:
        return torch.tensor([signed(seed), signed(offset)], dtype=torch.int64).view(torch.uint64)
    return torch.tensor([signed(seed), signed(offset)], dtype=torch.int64)


def np_state(state):
    """A state tensor (int64 or uint64, any shape (*B, 2)) as the uint64 NumPy array the reference takes."""
    return state.detach().cpu().contiguous().view(torch.int64).numpy().view(np.uint64)


def raw_bits(t):
    """A tensor's elements in logical row-major order as unsigned NumPy bit patterns (NaN-safe comparisons)."""
    size = t.element_size()
    return t.detach().contiguous().view(INT_VIEW[size]).reshape(-1).numpy().view(UINT[size])


def from_bits(bits, dtype, shape):
    """Reference bit patterns (unsigned NumPy ints, logical order) -> a contiguous tensor of dtype and shape."""
    size = torch.empty((), dtype=dtype).element_size()
    ints = np.ascontiguousarray(bits).astype(UINT[size]).view(np.dtype(f"i{size}"))
    return torch.from_numpy(ints.copy()).view(dtype).reshape(shape)


def layouts(shape=(2, 3, 4, 5), dtype=torch.float32):
    """name -> tensor with the same logical values in different memory layouts."""
    base = torch.randn(shape, generator=torch.Generator().manual_seed(11)).to(dtype)
    wide = torch.randn(shape[0], shape[1] + 1, shape[2] * 2, shape[3] + 2, generator=torch.Generator().manual_seed(12))
    sliced = wide[:, 1:, ::2, 1:-1].to(dtype)
    sliced.copy_(base)
    return {
        "contiguous": base,
        "channels_last": base.to(memory_format=torch.channels_last),
        "transposed": base.transpose(0, 3).contiguous().transpose(0, 3),
        "sliced": sliced,
    }


@pytest.fixture
def rng():
    return np.random.default_rng(1234)

# test_compile takes each output's gradient separately (retain_graph=True), which donated buffers forbid.
torch._functorch.config.donated_buffer = False


# make test runs the suite under the key-reuse checker (RNGX_DEBUG_KEY_REUSE=raise, docs/guide.md "Catching key
# reuse"): each module and each test is its own program with a fresh history. A test that recomputes a draw to compare
# two ways of making it (layouts, eager and compiled, threads, a reference path) makes the second one inside
# recompute(), so all its other draws stay checked. A test whose every draw is such a comparison, or that draws in a
# process of its own, says why instead: @pytest.mark.key_reuse_ok(why), and the checker is off for it.
KEY_REUSE = os.environ.get(debug.ENV, "")

# Modules the checker leaves alone, as nothing in them draws through our code but on keys the test makes itself: the
# reference, known-answer, property, statistics and bad-input tests, and those of the build and the docs;
# test_opcheck_all (torch.library.opcheck calls torch.ops.rngx directly, below the Python functions the checker
# hooks); and those whose ranks or packages run in processes of their own.
UNCHECKED = {f"test_{name}.py" for name in """opcheck_all ops stream kat properties stats dist_stats bad_input_harness
    simd_paths aoti cpp_extension triton load_library api_doc docs_check import_cycles torch_private device_api_doc
    cuda_checks cuda_build interop compressai_mode huge distributed""".split()}


def recompute():
    """The checker off for the draws inside: they read words that the test drew before, on purpose, to compare."""
    return debug.key_reuse("off")


def pytest_configure(config):
    config.addinivalue_line("markers", "key_reuse_ok(why): reuses keys on purpose; the key-reuse checker is off")
    config.addinivalue_line("markers", "slow(why): seconds of CPU or more; make test-quick leaves it out")


# The modules that take longest, heaviest first (in `make test` on a 2-core EPYC with Inductor's cache empty, as in
# CI, pytest's --durations summed by module: 148, 77, 57, 45, 44 and 42 s of a worker; opcheck's every sample is make
# opcheck's, the Hugging Face models compiled with Inductor make inductor-models', test_aoti.py make aoti-cpp's).
# xdist's loadfile hands each worker the next whole module in collection order, so a long module collected last leaves
# the other worker idle for its length; started first, they run beside the short ones.
SLOWEST_FIRST = ["test_compile.py", "test_training.py", "test_dropout_family.py", "test_compressai.py", "test_data.py",
                 "test_third_party.py"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each module's own order kept


def _checker_for(node):
    """The checker for a module or test: a fresh one, or off for key_reuse_ok and UNCHECKED; none when the run is not
    checked."""
    marker = node.get_closest_marker("key_reuse_ok")
    if marker is not None and not marker.args:
        raise ValueError(f"{node.nodeid}: key_reuse_ok needs a reason")
    if not KEY_REUSE:
        return contextlib.nullcontext()
    if marker is not None or node.path.name in UNCHECKED:
        return _unchecked()
    return debug.key_reuse(KEY_REUSE)


@contextlib.contextmanager
def _unchecked():
    """The checker off here and in the processes the test starts."""
    saved = os.environ.pop(debug.ENV, None)  # None inside a module that is off already
    try:
        with debug.key_reuse("off"):
            yield
    finally:
        if saved is not None:
            os.environ[debug.ENV] = saved


@pytest.fixture(autouse=True, scope="module")
def _key_reuse_per_module(request):  # module-scoped fixtures run under this one
    with _checker_for(request.node):
        yield


@pytest.fixture(autouse=True)
def _key_reuse_per_test(request):
    with _checker_for(request.node):
        yield
