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
