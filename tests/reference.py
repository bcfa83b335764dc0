"""An independent reference for the stream (docs/stream.md), written from the paper and the spec in NumPy.

It shares no code with torch_rngx: the tests compare the package against this, bit for bit."""
import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Scalar Philox4x32-10 on Python ints: ctr is 4 words, key 2 words."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
    return c0, c1, c2, c3


def words(seed, first, count):
    """Words first .. first+count-1 (mod 2^64) of seed's stream, as a uint64 array, vectorized."""
    seed &= (1 << 64) - 1
    n = (np.uint64(first % (1 << 64)) + np.arange(count, dtype=np.uint64)) if count else np.zeros(0, np.uint64)
    block, lane = n >> np.uint64(2), n & np.uint64(3)
    c = [block & np.uint64(MASK32), block >> np.uint64(32), np.zeros_like(block), np.zeros_like(block)]
    k0, k1 = seed & MASK32, seed >> 32
    m0, m1, lo = np.uint64(M0), np.uint64(M1), np.uint64(MASK32)
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = m0 * c[0], m1 * c[2]  # < 2^64: exact in uint64
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & lo, (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & lo]
    out = np.choose(lane.astype(np.int64), c) if count else np.zeros(0, np.uint64)
    return out.astype(np.uint64)


def element_words(seed, offset, numel, k):
    """(numel, k) array: the k words of each logical element."""
    return words(seed, offset, numel * k).reshape(numel, k)


def u_float(w, dtype):
    """Uniform in [0, 1) as float32 (float64 for 'float64') from an element's words."""
    if dtype == "float64":
        m = ((w[:, 1] << np.uint64(32)) | w[:, 0]) & np.uint64((1 << 53) - 1)
        return m.astype(np.float64) * 2.0**-53
    bits = {"float32": 24, "float16": 11, "bfloat16": 8}[dtype]
    return (w[:, 0] & np.uint64((1 << bits) - 1)).astype(np.float32) * np.float32(2.0**-bits)


def u24(w):
    return (w[:, 0] & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0**-24)


# ---- The ops, from the spec (docs/stream.md), on logical row-major values --------------------------------
# Everything below is NumPy only. Results are returned as the output's raw bit patterns (uint16 for float16
# and bfloat16, uint32 for float32, uint64 for float64), so tests can compare bit for bit.

_WORDS_PER_ELEMENT = {"float16": 1, "bfloat16": 1, "float32": 1, "float64": 2}


def words_used(numel, dtype):
    """The advance of one call: round_up(numel * k, 4)."""
    return -(-numel * _WORDS_PER_ELEMENT.get(dtype, 1) // 4) * 4


def f32_to_bf16_bits(v):
    """float32 values -> bfloat16 bit patterns, rounded to nearest, ties to even; NaN stays NaN."""
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    nan = (b & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000)
    return np.where(nan, (b >> np.uint64(16)) | np.uint64(0x40), rounded).astype(np.uint16)


def round_to_bits(v, dtype):
    """Computed values (float32, or float64 for 'float64') rounded once to `dtype`, as bit patterns."""
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            return np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
        v = np.ascontiguousarray(v, dtype=np.float32)
        if dtype == "float32":
            return v.view(np.uint32)
        if dtype == "float16":
            return v.astype(np.float16).view(np.uint16)  # NumPy rounds to nearest even
        return f32_to_bf16_bits(v)


def op_u(seed, offset, numel, dtype):
    """The u of quantize_noise and dropout: 24 bits in float32 for <= 32-bit types, 53 bits for float64."""
    w = element_words(seed, offset, numel, _WORDS_PER_ELEMENT[dtype])
    return u_float(w, "float64") if dtype == "float64" else u24(w)


def uniform_ref(seed, offset, numel, dtype, low, high):
    """low + u * (high - low): rounded multiply, then rounded add, in float32 (float64 for 'float64')."""
    return uniform_from_words(element_words(seed, offset, numel, _WORDS_PER_ELEMENT[dtype]), dtype, low, high)


def element_words_at(seed, offset, indices, dtype):
    """(len(indices), k) array: the words of the elements at these logical indices, for a call at offset."""
    k = _WORDS_PER_ELEMENT[dtype]
    return words_at(seed, [offset + k * int(i) + j for i in indices for j in range(k)]).reshape(-1, k)


def uniform_from_words(w, dtype, low, high):
    u = u_float(w, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            return round_to_bits(np.float64(low) + u * np.float64(high - low), dtype)
        return round_to_bits(np.float32(low) + u * np.float32(high - low), dtype)


def quantize_noise_ref(x, seed, offset, dtype, half):
    """x + (-half + u * 2 half), x given as its float32 (float64) values in logical order."""
    u = op_u(seed, offset, len(x), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            return round_to_bits(np.asarray(x, np.float64) + (np.float64(-half) + u * np.float64(2 * half)), dtype)
        return round_to_bits(np.asarray(x, np.float32) + (np.float32(-half) + u * np.float32(2 * half)), dtype)


def dropout_mask_ref(seed, offset, numel, dtype, p):
    """True where the element is kept: u >= p, compared exactly."""
    return op_u(seed, offset, numel, dtype).astype(np.float64) >= p


def dropout_mask_from_words(w, dtype, p):
    u = u_float(w, "float64") if dtype == "float64" else u24(w)
    return u.astype(np.float64) >= p


def dropout_ref(x, seed, offset, dtype, p):
    """x * (1 / (1 - p)) where kept (the scale rounded to the compute type), +0 where dropped."""
    keep = dropout_mask_ref(seed, offset, len(x), dtype, p)
    ct = np.float64 if dtype == "float64" else np.float32
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scale = ct(1.0 / (1.0 - p)) if p < 1 else ct(0)
        return round_to_bits(np.where(keep, np.asarray(x, ct) * scale, ct(0)), dtype)


def words_at(seed, indices):
    """Words at arbitrary word indices (taken mod 2^64) of seed's stream, as a uint64 array."""
    n = np.asarray([i % (1 << 64) for i in indices], dtype=np.uint64)
    if n.size == 0:
        return np.zeros(0, np.uint64)
    block, lane = n >> np.uint64(2), n & np.uint64(3)
    c = [block & np.uint64(MASK32), block >> np.uint64(32), np.zeros_like(block), np.zeros_like(block)]
    k0, k1 = (seed % (1 << 64)) & MASK32, (seed % (1 << 64)) >> 32
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(MASK32),
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(MASK32)]
    return np.choose(lane.astype(np.int64), c).astype(np.uint64)
