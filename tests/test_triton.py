"""torch_rngx.triton's device functions equal our ops bit for bit (docs/device_api.md). They run under Triton's
interpreter on the CPU (TRITON_INTERPRET=1, set in conftest.py before anything imports triton), which computes
with NumPy: every float step there is an IEEE operation rounded to its type, as on the GPU with
enable_fp_fusion=False (benchmarks/gpu_check.py runs the same kernels natively). stochastic_round takes integer
operations only."""
import math
import os
import sys

import pytest
import torch
import triton
import triton.language as tl
from conftest import FLOAT_DTYPES, make_state
from triton_draw import draw

import torch_rngx.functional as F
import torch_rngx.triton as rt
from torch_rngx._engine.checks import ROUND_TARGETS


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    mismatch = (a.contiguous().view(ints) != b.contiguous().view(ints)).nonzero()
    assert mismatch.numel() == 0, f"{len(mismatch)} elements differ, first at {mismatch[0].tolist()}"


# Keys next to the 2^32 carry of the block counter, its 2^64 wrap, and seeds with high bits set.
KEYS = [(0, 0), (123, 2**32 - 3), (2**64 - 1, 2**64 - 2), (0xDEADBEEF_01234567, 2**63 - 1), (5, 2**64 - 1)]
SHAPES = [(37,), (3, 50), (2, 3, 33)]  # none a multiple of a block: every launch ends in a masked tail
BLOCKS = [16, 64, 256]


@pytest.mark.parametrize("seed,offset", KEYS)
@pytest.mark.parametrize("block", BLOCKS)
def test_bits_equal_ops(seed, offset, block):
    for dtype, op in ((torch.int32, "bits32"), (torch.int64, "bits64")):
        state = make_state(seed, offset)
        out = draw(op, torch.empty(SHAPES[1], dtype=dtype), state, block=block)
        same_bits(out, F.bits(SHAPES[1], state, dtype=dtype))


def test_uint64_state_is_read_as_its_bits():
    state = make_state(2**64 - 7, 2**64 - 3)
    out = draw("bits32", torch.empty(40, dtype=torch.int32), state.view(torch.uint64))
    same_bits(out, F.bits((40,), state))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-3.0, 7.3), (0.1, 0.7)])
def test_uniform_equals_op(dtype, low, high):
    for (seed, offset), shape in zip(KEYS, SHAPES * 2):
        state = make_state(seed, offset)
        out = draw("uniform", torch.empty(shape, dtype=dtype), state, params=rt.uniform_params(dtype, low, high))
        same_bits(out, F.uniform(torch.empty(shape, dtype=dtype), state, low, high))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("half", [0.5, 0.37, 0.0])
def test_quantize_noise_equals_op(dtype, half):
    x = (torch.randn(3, 50, generator=torch.Generator().manual_seed(1)) * 40).to(dtype)
    x[0, :3] = torch.tensor([-0.0, float("inf"), float("nan")])
    for seed, offset in KEYS:
        state = make_state(seed, offset)
        out = draw("noise", torch.empty_like(x), state, x=x, params=rt.noise_params(dtype, half))
        same_bits(out, F.quantize_noise(x, state, half))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("p", [0.0, 1.0 / 3, 1.0])
def test_dropout_and_bernoulli_equal_ops(dtype, p):
    x = torch.randn(2, 3, 33, generator=torch.Generator().manual_seed(2)).to(dtype)
    x[0, 0, :3] = torch.tensor([float("nan"), float("-inf"), -0.0])  # dropped NaN gives 0, kept ones propagate
    for seed, offset in KEYS:
        state = make_state(seed, offset)
        params = rt.dropout_params(dtype, p)
        same_bits(draw("dropout", torch.empty_like(x), state, x=x, params=params), F.dropout(x, state, p))
        same_bits(draw("bernoulli", torch.empty_like(x), state, params=params), F.bernoulli(x, state, p))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.25, 3.0)])
def test_normal_equals_op(dtype, mean, std):
    for (seed, offset), shape in zip(KEYS, SHAPES * 2):
        state = make_state(seed, offset)
        out = draw("normal", torch.empty(shape, dtype=dtype), state, params=rt.normal_params(dtype, mean, std))
        same_bits(out, F.normal(torch.empty(shape, dtype=dtype), state, mean, std))


@pytest.mark.parametrize("batch", [(4, 1), (1, 6), (4, 6)])
def test_batched_keys(batch):
    seeds = torch.arange(24, dtype=torch.int64).reshape(4, 6)[: batch[0], : batch[1]]
    state = torch.stack([seeds * 1000 + 7, seeds + (2**32 - 2)], dim=-1).contiguous()
    for dtype, op, ref in (
        (torch.int64, "bits64", lambda s: F.bits((4, 6), s, dtype=torch.int64)),
        (torch.float16, "uniform", lambda s: F.uniform(torch.empty(4, 6, dtype=torch.float16), s, -1, 2)),
    ):
        params = rt.uniform_params(dtype, -1, 2) if op == "uniform" else None
        same_bits(draw(op, torch.empty(4, 6, dtype=dtype), state, params=params, block=16), ref(state))


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_global_view(batched, dtype):
    gshape, shard, start = (6, 8, 10), (3, 5, 4), (2, 3, 5)
    state = make_state(99, 2**32 - 1)
    if batched:  # one key per global row, broadcast along dim 1
        state = torch.stack([torch.arange(6) + 11, torch.arange(6) * 3], -1).reshape(6, 1, 1, 2).contiguous()
    x = torch.randn(shard, generator=torch.Generator().manual_seed(3)).to(dtype)
    view = dict(global_shape=gshape, global_start=start)
    same_bits(draw("dropout", torch.empty_like(x), state, x=x, params=rt.dropout_params(dtype, 0.4), **view),
              F.dropout(x, state, 0.4, **view))
    same_bits(draw("uniform", torch.empty_like(x), state, params=rt.uniform_params(dtype), **view),
              F.uniform(x, state, **view))
    # the shard starts at stream position 195: on a pair's sine output
    same_bits(draw("normal", torch.empty_like(x), state, params=rt.normal_params(dtype), **view),
              F.normal(x, state, **view))
    # the shard is, bit for bit, that block of the global tensor drawn whole
    whole = draw("uniform", torch.empty(gshape, dtype=dtype), state, params=rt.uniform_params(dtype))
    same_bits(F.uniform(x, state, **view), whole[2:5, 3:8, 5:9])


@triton.jit
def _round(out_ptr, x_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, rt.to_dtype(tl.load(x_ptr + i), out_ptr.dtype.element_ty))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_to_dtype_rounds_as_torch(dtype):
    """The interpreter's own bfloat16 cast truncates: to_dtype rounds to nearest even everywhere, ties and
    subnormals included."""
    g = torch.Generator().manual_seed(4)
    bits = torch.randint(-(2**31), 2**31, (1 << 14,), generator=g)
    bits[:4096] = (bits[:4096] & ~0xFFFF) | 0x8000  # bfloat16 ties
    bits[4096:8192] = (bits[4096:8192] & ~0x1FFF) | 0x1000  # float16 ties
    bits[8192:9216] = (bits[8192:9216] & 0x807FFFFF) | (0x66 << 23)  # float16 subnormals
    x = bits.to(torch.int32).view(torch.float32)
    x = x[~torch.isnan(x)]
    x = x[: len(x) // 64 * 64]
    out = torch.empty(x.shape, dtype=dtype)
    _round[(len(x) // 64,)](out, x, BLOCK=64)
    same_bits(out, x.to(dtype))


def test_params_name_bad_arguments():
    with pytest.raises(ValueError, match="p must be in"):
        rt.dropout_params(torch.float32, 1.5)
    with pytest.raises(TypeError, match="dtype"):
        rt.uniform_params(torch.int32)
    with pytest.raises(ValueError, match="low must be <= high"):
        rt.uniform_params(torch.float32, 2.0, 1.0)
    with pytest.raises(ValueError, match="half"):
        rt.noise_params(torch.float16, -1.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        rt.view((4, 6), torch.zeros(3, 6, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="global_shape and global_start"):
        rt.view((4, 6), make_state(1, 0), global_shape=(8, 6))


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from triton_fused_dropout import fused_dropout_add  # noqa: E402

pytestmark = [pytest.mark.slow("runs Triton kernels through its interpreter"), pytest.mark.key_reuse_ok("each test draws the same keys through Triton and through the ops, to compare them")]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("batched", [False, True])
def test_fused_example_forward_and_backward(dtype, batched):
    g = torch.Generator().manual_seed(5)
    x, residual = (torch.randn(5, 3, 70, generator=g).to(dtype) for _ in range(2))
    bias = torch.randn(70, generator=g).to(dtype)
    state = make_state(7, 2**32 - 2)
    if batched:  # one key per sample
        state = torch.stack([torch.arange(5) + 3, torch.arange(5) * 1000], -1).reshape(5, 1, 1, 2).contiguous()
    grad = torch.randn(x.shape, generator=g).to(dtype)
    results = []
    for fn in (fused_dropout_add, lambda x, b, r, s, p: F.dropout(x + b, s, p) + r):
        leaves = [t.clone().requires_grad_() for t in (x, bias, residual)]
        out = fn(*leaves, state, 0.3)
        results.append((out, *torch.autograd.grad(out, leaves, grad)))
    for fused, eager in zip(*results):
        same_bits(fused, eager)


def test_fused_example_names_bad_arguments():
    x = torch.randn(4, 6)
    with pytest.raises(ValueError, match="bias must have shape"):
        fused_dropout_add(x, torch.randn(4), x, make_state(1, 0), 0.5)
    with pytest.raises(TypeError, match="residual must be a tensor of x's dtype"):
        fused_dropout_add(x, torch.randn(6), x.double(), make_state(1, 0), 0.5)
    with pytest.raises(ValueError, match="p must be in"):
        fused_dropout_add(x, torch.randn(6), x, make_state(1, 0), -0.1)


ROUND_PAIRS = [(src, dst) for src, dsts in ROUND_TARGETS.items() for dst in dsts]


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("src,dst", ROUND_PAIRS, ids=[f"{s}->{d}" for s, d in ROUND_PAIRS])
def test_stochastic_round_equals_op(src, dst, saturate):
    """Every (input, target) pair, on values from below the target's smallest subnormal to past its largest, with
    the specials; one key and a global view with batched keys."""
    fi = torch.finfo(dst)
    g = torch.Generator().manual_seed(7)
    scale = torch.logspace(math.log10(fi.smallest_normal * fi.eps) - 2, math.log10(fi.max) + 0.3, 50,
                           dtype=torch.float64)
    x = (torch.randn(3, 50, generator=g, dtype=torch.float64) * scale).to(src)
    x[0, :6] = torch.tensor([0.0, -0.0, math.nan, math.inf, -math.inf, fi.max * 1.5], dtype=torch.float64).to(src)
    op = "stochastic_round_saturate" if saturate else "stochastic_round"
    for seed, offset in KEYS[:3]:
        state = make_state(seed, offset)
        out = draw(op, torch.empty(x.shape, dtype=dst), state, x=x)
        same_bits(out, F.stochastic_round(x, state, dst, saturate))
    keys = torch.stack([make_state(9 + i, 2**64 - 1 - i) for i in range(4)]).view(4, 1, 2)
    block = draw(op, torch.empty(2, 40, dtype=dst), keys, x=x[1:, 5:45].contiguous(), global_shape=(4, 50),
                 global_start=(1, 5))
    same_bits(block, F.stochastic_round(x[1:, 5:45], keys, dst, saturate, global_shape=(4, 50), global_start=(1, 5)))
