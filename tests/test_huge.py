"""Huge tensors and the ends of the counter.

Always run (cheap): calls whose block range crosses the counter's 32-bit carry (block 2^32) and the wrap at
block 2^64, for every op and dtype, unbatched and batched; a Generator whose offset wraps. Logical indices past
2^31, 2^32 and up to 2^63 are also covered cheaply by tests/c/test_huge_index.c (a zero row stride makes a
huge tensor fit in 64 elements of memory).

Opt-in (`make huge`, or RNGX_HUGE=1): real tensors past 2^31 and 2^32 elements, 16-bit so they fit a 24 GiB
machine (4 and 8 GiB outputs). Only the elements at the ends and a sparse sample are checked against the
reference, so the time is the op's own.
"""
import gc
import os

import numpy as np
import pytest
import reference as ref
import torch

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare huge tensors against their slices")

U64 = 1 << 64
CARRY = 1 << 32  # a block index
NAME = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}
INT_VIEW = {2: torch.int16, 4: torch.int32, 8: torch.int64}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}

huge = pytest.mark.skipif(os.environ.get("RNGX_HUGE") != "1", reason="needs ~10 GiB and minutes: `make huge`")


def state(seed, offset):
    s = lambda v: v - U64 if v >= 1 << 63 else v  # noqa: E731
    return torch.tensor([s(seed), s(offset % U64)], dtype=torch.int64)


def bits_of(t):
    return t.contiguous().view(INT_VIEW[t.element_size()]).reshape(-1).numpy().view(UINT[t.element_size()])


SEED = 0x0123456789ABCDEF


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
# 37 elements take 10 blocks (19 for float64): these calls cross the carry or the wrap, or end right at it.
@pytest.mark.parametrize("offset", [CARRY - 9, CARRY - 1, U64 - 10, U64 - 9, U64 - 1, U64 - 19])
@pytest.mark.parametrize("batched", [False, True])
@REUSES_KEYS
def test_all_ops_across_the_carry_and_the_wrap(dtype, offset, batched):
    n = 37
    x = torch.linspace(-3, 3, n).to(dtype)
    s = state(SEED, offset)
    if batched:  # three rows, each with its own key: (3, 1, 2) on (3, 37)
        x = x.view(1, n).expand(3, n)
        s = torch.stack([state(SEED + r, offset + r) for r in range(3)]).view(3, 1, 2)
    keys = s.numpy().view(np.uint64)
    name = NAME[dtype]
    assert (bits_of(F.uniform(x, s, -1.0, 4.0)) == ref.uniform_ref(x.shape, keys, name, -1.0, 4.0)).all()
    xs = x.to(torch.float64 if dtype == torch.float64 else torch.float32).contiguous().numpy()
    assert (bits_of(F.quantize_noise(x, s, 0.25)) == ref.quantize_noise_ref(xs, keys, name, 0.25)).all()
    assert (bits_of(F.dropout(x, s, 0.5)) == ref.dropout_ref(xs, keys, name, 0.5)).all()
    for bits_dtype in ("int32", "int64"):
        got = F.bits(x.shape, s, dtype=getattr(torch, bits_dtype)).numpy()
        assert (got == ref.bits_ref(x.shape, keys, bits_dtype)).all()


def test_words_after_the_carry_differ_from_block_zero():
    """A counter that dropped the carry would repeat the stream's start at block 2^32."""
    after = F.bits([8], state(SEED, CARRY), dtype=torch.uint32).numpy()
    start = F.bits([8], state(SEED, 0), dtype=torch.uint32).numpy()
    assert not (after == start).all()
    assert (after == ref.words(SEED, CARRY, 8)).all()


@REUSES_KEYS
def test_generator_offset_wraps_modulo_2_64():
    g = torch_rngx.Generator(SEED)
    g.set_state(state(SEED, U64 - 2))
    x = torch.empty(10)  # consumes 3 blocks: 2 before the wrap, 1 after
    out = torch_rngx.rand_like(x, generator=g)
    assert (bits_of(out) == ref.uniform_ref(x.shape, (SEED, U64 - 2), "float32", 0.0, 1.0)).all()
    assert int(g.state[1]) == 1 and int(g.state[0]) == SEED
    # Block 2^64 is block 0: the words just after the wrap are the stream's very first ones.
    assert torch.equal(F.bits([12], state(SEED, U64 - 2))[8:], F.bits([4], state(SEED, 0)))


# ---- opt-in: real huge tensors --------------------------------------------------------------------------


def check_sample(out, offset, dtype, reference_at, extra=()):
    """The last 1000 elements, the ones around 2^31 and 2^32, and every 2^24-th one, against the reference."""
    n = out.numel()
    flat = out.view(-1)
    idx = sorted({*range(n - 1000, n), *range(0, 8), *range(0, n, 1 << 24), *extra})
    idx = [i for i in idx if 0 <= i < n]
    got = flat[torch.tensor(idx)].view(INT_VIEW[out.element_size()]).numpy().view(UINT[out.element_size()])
    want = reference_at(idx)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {len(idx)} sampled elements differ; first at index {idx[bad[0]]}"


def around(*points):
    return [p + d for p in points for d in range(-64, 64)]


@huge
def test_uniform_past_2_31_elements():
    n, offset, dtype = (1 << 31) + 1000, 5, torch.float16
    out = F.uniform(torch.empty((), dtype=dtype).expand(n), state(SEED, offset), -1.0, 1.0)
    assert out.shape == (n,) and out.is_contiguous()
    check_sample(out, offset, dtype,
                 lambda idx: ref.uniform_from_words(ref.element_words_at((SEED, offset), idx, 1), "float16", -1.0, 1.0),
                 around(1 << 31))
    del out
    gc.collect()


@huge
def test_dropout_with_an_expanded_input_past_2_31_elements():
    """Input stride 0 in the row dim, a 2-D odometer near its end: the strided path at huge indices."""
    rows, cols, offset, dtype, p = (1 << 15) + 1, 1 << 16, CARRY - 3, torch.bfloat16, 0.3
    x = torch.full((1, cols), 1.5, dtype=dtype).expand(rows, cols)
    out = F.dropout(x, state(SEED, offset), p)
    scale = ref.round_to_bits(np.float32(1.5) * np.float32(1 / (1 - p)), "bfloat16")[0]

    def want(idx):
        keep = ref.dropout_mask_from_words(ref.element_words_at((SEED, offset), idx, 1), "bfloat16", p)
        return np.where(keep, scale, np.uint16(0)).astype(np.uint16)

    check_sample(out, offset, dtype, want, around(1 << 31))
    del out
    gc.collect()


@huge
def test_uniform_past_2_32_elements():
    n, offset, dtype = (1 << 32) + 1000, U64 - 3, torch.bfloat16
    out = F.uniform(torch.empty((), dtype=dtype).expand(n), state(SEED, offset), 2.0, 3.0)
    check_sample(out, offset, dtype,
                 lambda idx: ref.uniform_from_words(ref.element_words_at((SEED, offset), idx, 1), "bfloat16", 2.0, 3.0),
                 around(1 << 31, 1 << 32))
    del out
    gc.collect()
