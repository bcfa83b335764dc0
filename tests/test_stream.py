"""The stream, bit-exact: the package's raw words against an independent Philox written in the tests. The
offset counts 128-bit Philox blocks: key (seed, offset) gives W(t) = block(seed, offset + t // 4)[t % 4]."""
import numpy as np
import pytest
import torch
from conftest import make_state
from reference import philox4x32_10, words

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare the stream against the reference in pieces")


# Random123's published known-answer vectors for philox4x32-10: (counter, key) -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def raw_words(size, state):
    """bits as raw 32-bit words (uint64 NumPy values in [0, 2^32))."""
    return F.bits(size, state, dtype=torch.uint32).numpy().astype(np.uint64)


@pytest.mark.parametrize("ctr,key,expected", KNOWN_ANSWERS)
def test_reference_matches_known_answers(ctr, key, expected):
    assert philox4x32_10(ctr, key) == expected


def test_reference_vectorized_equals_scalar():
    seed, first = 0xDEADBEEF_12345678, 2**32 - 1  # the block counter's 32-bit carry inside
    got = words(seed, first, 12)
    for t, w in enumerate(got):
        block = first + t // 4
        assert int(w) == philox4x32_10((block & 0xFFFFFFFF, block >> 32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))[t % 4]


@REUSES_KEYS
def test_bits_first_block_is_the_zero_vector():
    assert F.bits([4], make_state(0, 0), dtype=torch.uint32).tolist() == list(KNOWN_ANSWERS[0][2])
    assert (F.bits([4], make_state(0, 0)).to(torch.int64) & 0xFFFFFFFF).tolist() == list(KNOWN_ANSWERS[0][2])


@pytest.mark.parametrize("seed", [0, 1, 0xFFFFFFFF, 2**32, 2**63, 2**64 - 1, 0x0123456789ABCDEF])
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 5, 2**32 - 1, 2**63 + 1, 2**64 - 2])
def test_bits_equal_reference(seed, offset):
    got = F.bits([3, 7], make_state(seed, offset))
    assert got.dtype == torch.int32 and got.shape == (3, 7)  # torch's default for bits
    np.testing.assert_array_equal(got.numpy().view(np.uint32).astype(np.uint64), words(seed, offset, 21).reshape(3, 7))


@REUSES_KEYS
def test_offset_counts_blocks():
    """Offset o starts at word 4 o of offset 0's sequence: always at lane 0 of a block."""
    base = raw_words([60], make_state(42, 0))
    for o in range(1, 6):
        np.testing.assert_array_equal(raw_words([40], make_state(42, o)), base[4 * o : 4 * o + 40])


def test_bits_large_call_spans_threads():
    np.testing.assert_array_equal(raw_words([300_001], make_state(99, 7)), words(99, 7, 300_001))


@REUSES_KEYS
def test_float64_takes_torchs_packing():
    """float64: m53 = ((w0 & 0x1FFFFF) << 32) | w1, which is the low 53 bits of the int64 bits (w0 << 32) | w1."""
    state = make_state(0xABCDEF, 9)
    m53 = F.bits([1000], state, dtype=torch.int64) & ((1 << 53) - 1)
    assert torch.equal(F.uniform(torch.empty(1000, dtype=torch.float64), state), m53.double() * 2.0**-53)


def test_consecutive_calls_continue_the_stream():
    """Generator calls tile the stream: call k starts at the block where call k-1's blocks_used ended."""
    g = torch_rngx.Generator(5)
    a = torch_rngx.rand_like(torch.empty(6), generator=g)   # 6 words: blocks 0 and 1
    b = torch_rngx.rand_like(torch.empty(3), generator=g)   # block 2: word 8
    w = words(5, 0, 11)
    u = lambda ws: torch.tensor((ws & 0xFFFFFF).astype(np.float32) * np.float32(2**-24))  # noqa: E731
    assert torch.equal(a, u(w[:6])) and torch.equal(b, u(w[8:11]))
    assert g.state.tolist() == [5, 3]


@pytest.mark.parametrize(
    "numel,dtype,expected",
    [(0, torch.float32, 0), (1, torch.float32, 1), (4, torch.float16, 1), (5, torch.bfloat16, 2),
     (1, torch.float64, 1), (2, torch.float64, 1), (3, torch.float64, 2), (10**9 + 1, torch.float32, 250_000_001),
     (2**62, torch.float64, 2**61)],
)
def test_blocks_used(numel, dtype, expected):
    assert torch_rngx.blocks_used(numel, dtype) == expected == F.blocks_used(numel, dtype)
    assert not hasattr(torch_rngx, "words_used")
