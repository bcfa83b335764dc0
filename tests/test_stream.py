"""The stream, bit-exact: the package's raw words against an independent Philox written in the tests."""
import numpy as np
import pytest
import torch
from conftest import make_state
from reference import philox4x32_10, words

import torch_rngx
from torch_rngx import functional as F

# Random123's published known-answer vectors for philox4x32-10: (counter, key) -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,expected", KNOWN_ANSWERS)
def test_reference_matches_known_answers(ctr, key, expected):
    assert philox4x32_10(ctr, key) == expected


def test_reference_vectorized_equals_scalar():
    seed = 0xDEADBEEF_12345678
    got = words(seed, 4 * (2**32 - 1), 12)
    for j, w in enumerate(got):
        n = 4 * (2**32 - 1) + j
        block = n // 4
        assert int(w) == philox4x32_10((block & 0xFFFFFFFF, block >> 32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))[n % 4]


def test_bits_first_block_is_the_zero_vector():
    assert F.bits([4], make_state(0, 0)).tolist() == list(KNOWN_ANSWERS[0][2])


@pytest.mark.parametrize("seed", [0, 1, 0xFFFFFFFF, 2**32, 2**63, 2**64 - 1, 0x0123456789ABCDEF])
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 5, 4 * 2**32 - 3, 2**63 + 1, 2**64 - 6])
def test_bits_equal_reference(seed, offset):
    got = F.bits([3, 7], make_state(seed, offset))
    expected = words(seed, offset, 21).reshape(3, 7)
    assert got.dtype == torch.int64
    np.testing.assert_array_equal(got.numpy().astype(np.uint64), expected)


def test_bits_large_call_spans_threads():
    state = make_state(99, 7)
    got = F.bits([300_001], state).numpy().astype(np.uint64)
    np.testing.assert_array_equal(got, words(99, 7, 300_001))


def test_consecutive_calls_continue_the_stream():
    """Generator calls tile the stream: call k starts where call k-1's words_used ended."""
    g = torch_rngx.Generator(5)
    a = torch_rngx.rand_like(torch.empty(6), generator=g)   # 6 words, advances 8
    b = torch_rngx.rand_like(torch.empty(3), generator=g)   # starts at word 8
    w = words(5, 0, 11)
    u = lambda ws: torch.tensor((ws & 0xFFFFFF).astype(np.float32) * np.float32(2**-24))  # noqa: E731
    assert torch.equal(a, u(w[:6])) and torch.equal(b, u(w[8:11]))
    assert g.state.tolist() == [5, 12]


@pytest.mark.parametrize(
    "numel,dtype,expected",
    [(0, torch.float32, 0), (1, torch.float32, 4), (4, torch.float16, 4), (5, torch.bfloat16, 8),
     (1, torch.float64, 4), (2, torch.float64, 4), (3, torch.float64, 8), (10**9 + 1, torch.float32, 10**9 + 4)],
)
def test_words_used(numel, dtype, expected):
    assert torch_rngx.words_used(numel, dtype) == expected
