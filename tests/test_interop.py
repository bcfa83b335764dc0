"""Interop with torch.func._random (torch >= 2.14): a torch key is a torch_rngx state and vice versa, and with
the same key both give bitwise the same uniform values (float32, float16, bfloat16, float64), split and fold_in
keys, batched-key values and, where torch has it (2.15), bits. `make interop` runs this under torch 2.14.1 and under
torch 2.15.0, there with RNGX_REQUIRE_BITS=1, so that bits cannot skip; under older torch (`make test`) the whole
module skips.

Bounds that are not values of the output dtype (e.g. [0.1, 0.7)) agree too: both round low and high to the dtype
and their difference, in float32, to the dtype again (docs/stream.md, "uniform"). float64 computes
low + u * (high - low) in double, with no fused multiply-add on either side."""
import os

import pytest
import torch

TORCH = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
if TORCH < (2, 14):
    pytest.skip(f"torch.func._random needs torch >= 2.14, this is {torch.__version__} (`make interop`)",
                allow_module_level=True)
try:
    import torch.func._random as R  # not an attribute of torch.func until imported
except ImportError as e:
    pytest.skip(f"torch {torch.__version__} has no torch.func._random: {e}", allow_module_level=True)
try:
    R.uniform(R.key(0), 1)
except (RuntimeError, NotImplementedError) as e:
    pytest.skip(f"torch.func._random has no CPU kernels in torch {torch.__version__}: {e}", allow_module_level=True)

if os.environ.get("RNGX_REQUIRE_BITS") == "1" and not hasattr(R, "bits"):
    raise ImportError(f"RNGX_REQUIRE_BITS=1, but torch {torch.__version__} has no torch.func._random.bits")

from torch_rngx import functional as F  # noqa: E402

U64 = 1 << 64
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INT_VIEW = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def tkey(seed, offset=0):
    """torch's key for seed, moved to `offset` (a key is a plain uint64 tensor [seed, offset])."""
    k = R.key(seed)
    k[1] = offset
    return k


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    size = a.element_size()
    return torch.equal(a.contiguous().view(INT_VIEW[size]), b.contiguous().view(INT_VIEW[size]))


KEYS = [(0, 0), (5, 3), (2**63, 2**32 - 1), (2**64 - 1, 2**64 - 2), (0x0123456789ABCDEF, 2**64 - 1)]


def test_keys_are_states():
    for seed in (0, 42, 2**63, 2**64 - 1):
        k = R.key(seed)
        assert k.dtype == torch.uint64 and k.shape == (2,)
        assert torch.equal(F.key(seed, dtype=torch.uint64), k)
        assert torch.equal(F.key(seed).view(torch.uint64), k)
    k = tkey(7, 2**64 - 1)
    assert k.tolist() == [7, 2**64 - 1]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("seed,offset", KEYS)
def test_uniform_unit_interval(seed, offset, dtype):
    k = tkey(seed, offset)
    shape = (3, 37)
    want = R.uniform(k, *shape, dtype=dtype)
    assert same_bits(F.uniform(torch.empty(shape, dtype=dtype), k), want)  # a torch key, as is
    assert same_bits(F.uniform(torch.empty(shape, dtype=dtype), k.view(torch.int64)), want)  # the same bits, int64


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("low,high", [(-2.5, 3.0), (0.5, 4.5), (-64.0, -0.25), (3.0, 3.0)])
def test_uniform_bounds_in_the_dtype(low, high, dtype):
    """low, high and high - low are values of every dtype here: both compute the same."""
    k = tkey(0x9E3779B97F4A7C15, 11)
    want = R.uniform(k, 4096, low=low, high=high, dtype=dtype)
    assert same_bits(F.uniform(torch.empty(4096, dtype=dtype), k, low, high), want)


@pytest.mark.parametrize("low,high", [(-7.3, 1.1), (0.1, 0.7), (-1e4, 1e4), (1e-3, 1e-3 + 1e-6), (-1e300, 1e300)])
def test_uniform_float64_any_bounds(low, high):
    """float64: low + u * (high - low), each operation rounded, in both (torch 2.14.1 on the CPU uses no FMA)."""
    k = tkey(0x1234, 3)
    want = R.uniform(k, 1 << 16, low=low, high=high, dtype=torch.float64)
    assert same_bits(F.uniform(torch.empty(1 << 16, dtype=torch.float64), k, low, high), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("low,high", [(-7.3, 1.1), (0.1, 0.7), (-1e4, 1e4), (1e-3, 1e-3 + 1e-6), (-3e4, 3.2e4)])
def test_uniform_bounds_not_in_the_dtype(low, high, dtype):
    """Neither bound a value of the dtype: the same rounding on both sides, so the same bits."""
    k = tkey(0x1234, 3)
    n = 1 << 14
    assert same_bits(F.uniform(torch.empty(n, dtype=dtype), k, low, high), R.uniform(k, n, low=low, high=high, dtype=dtype))


def test_uniform_random_bounds():
    """300 random intervals over many magnitudes, every dtype, random keys."""
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        dtype = FLOAT_DTYPES[int(torch.randint(4, (), generator=gen))]
        scale = 10.0 ** int(torch.randint(-3, 3, (), generator=gen))
        low = float(torch.randn((), generator=gen, dtype=torch.float64)) * 100 * scale
        high = low + abs(float(torch.randn((), generator=gen, dtype=torch.float64))) * 50 * scale
        if dtype == torch.float16 and max(abs(low), abs(high)) > 6e4:
            continue
        k = tkey(int(torch.randint(1 << 62, (), generator=gen)), int(torch.randint(1 << 20, (), generator=gen)))
        got = F.uniform(torch.empty(2, 99, dtype=dtype), k, low, high)
        assert same_bits(got, R.uniform(k, 2, 99, low=low, high=high, dtype=dtype)), (dtype, low, high)


def test_torch_keys_drive_every_op():
    """Keys made by torch (uint64) go straight into every torch_rngx op and give what their int64 bits give."""
    kids = R.split(R.fold_in(R.key(2024), 3), 4)
    x = torch.randn(2, 3, 4, 5)
    for k in kids:
        ki = k.view(torch.int64)
        assert torch.equal(F.bits([9], k), F.bits([9], ki))
        assert torch.equal(F.uniform(x, k), F.uniform(x, ki)) and torch.equal(F.uniform(x, k), R.uniform(k, *x.shape))
        assert torch.equal(F.quantize_noise(x, k), F.quantize_noise(x, ki))
        assert torch.equal(F.dropout(x, k, 0.5), F.dropout(x, ki, 0.5))
    batched = kids.view(4, 1, 1, 1, 2)
    assert torch.equal(F.dropout(torch.ones(4, 3, 5, 6), batched, 0.5),
                       F.dropout(torch.ones(4, 3, 5, 6), batched.view(torch.int64), 0.5))


@pytest.mark.parametrize("num", [1, 2, 7])
@pytest.mark.parametrize("seed,offset", KEYS)
def test_split(seed, offset, num):
    k = tkey(seed, offset)
    want = R.split(k, num)
    assert torch.equal(F.split(k, num), want)
    assert torch.equal(F.split(k.view(torch.int64), num).view(torch.uint64), want)


def test_split_batched():
    keys = R.split(R.key(9), 6).view(2, 3, 2)
    assert torch.equal(F.split(keys, 4), R.split(keys, 4))


@pytest.mark.parametrize("data", [0, 1, 5, 2**32, 2**63, 2**64 - 1])
@pytest.mark.parametrize("seed,offset", KEYS)
def test_fold_in(seed, offset, data):
    k = tkey(seed, offset)
    want = R.fold_in(k, data)
    assert torch.equal(F.fold_in(k, data), want)
    assert torch.equal(F.fold_in(k.view(torch.int64), data).view(torch.uint64), want)
    d = torch.tensor(data - U64 if data >= 1 << 63 else data, dtype=torch.int64).view(torch.uint64)
    assert torch.equal(R.fold_in(k, d), want)  # torch's tensor data: one uint64 value
    assert torch.equal(F.fold_in(k, d), want)


def test_fold_in_batched():
    keys = R.split(R.key(10), 6).view(3, 2, 2)
    assert torch.equal(F.fold_in(keys, 12), R.fold_in(keys, 12))
    d = torch.tensor(12, dtype=torch.uint64)
    assert torch.equal(F.fold_in(keys, d), R.fold_in(keys, d))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,batch", [((3, 5), (3, 1)), ((2, 3, 5), (1, 3, 1)), ((4, 3, 6, 5), (4, 1, 1, 1)),
                                         ((4, 3, 6, 5), (1, 3, 1, 5)), ((3, 5), (1, 1)), ((2, 3, 4), (2, 3, 4))])
def test_batched_keys(shape, batch, dtype):
    """torch's batched keys (ndim = output ndim + 1) give the same values as ours: the same broadcast rule."""
    n = 1
    for b in batch:
        n *= b
    keys = R.split(R.fold_in(R.key(77), 2**64 - 1), n).view(*batch, 2)
    want = R.uniform(keys, *shape, dtype=dtype)
    assert same_bits(F.uniform(torch.empty(shape, dtype=dtype), keys), want)
    assert same_bits(F.uniform(torch.empty(shape, dtype=dtype).transpose(0, -1).contiguous().transpose(0, -1), keys),
                     want)


INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.uint64]


@pytest.mark.skipif(not hasattr(R, "bits"), reason=f"torch {torch.__version__} has no torch.func._random.bits (2.15)")
@pytest.mark.parametrize("dtype", INT_DTYPES + [None])
@pytest.mark.parametrize("seed,offset", KEYS[:3])
def test_bits(seed, offset, dtype):
    k = tkey(seed, offset)
    kwargs = {} if dtype is None else {"dtype": dtype}
    want = R.bits(k, 5, 7, **kwargs)
    assert torch.equal(F.bits([5, 7], k, **kwargs), want)
    keys = R.split(k, 5).view(5, 1, 2)
    assert torch.equal(F.bits([5, 7], keys, **kwargs), R.bits(keys, 5, 7, **kwargs))
