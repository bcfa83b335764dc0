"""An independent reference for the stream v2 (docs/stream.md), written from the Philox paper and the spec in
vectorized NumPy. It shares no code with torch_rngx: the tests compare the package against this, bit for bit.

A state is [seed, offset] as uint64; the offset counts 128-bit Philox blocks. Key (seed, offset) defines the
word sequence W(t) = block(seed, offset + t // 4)[t % 4] (block indices mod 2^64). The element at local index
j that takes k words (k = 2 for float64 and 64-bit bits) uses W(k j) .. W(k j + k - 1).

Batched states (*B, 2) follow the event rule: per_element_keys() gives every logical element its key and j.
States may be given as a (seed, offset) pair of Python ints or as an int64/uint64 array of shape (*B, 2).
"""
import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF
U64 = 1 << 64
_LO, _32 = np.uint64(MASK32), np.uint64(32)


def philox4x32_10(ctr, key):
    """Scalar Philox4x32-10 on Python ints: ctr is 4 words, key 2 words (the paper, for the known answers)."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
    return c0, c1, c2, c3


def u64(v):
    """Ints (any sign, taken mod 2^64; Python or NumPy, scalars or nested lists) or an integer array -> a uint64
    array of the same two's complement bits."""
    if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "iu":
        return np.asarray(v) if v.dtype == np.uint64 else np.asarray(v).astype(np.int64).view(np.uint64)
    a = np.array(v, dtype=object)
    return np.array([int(x) % U64 for x in a.reshape(-1)], dtype=np.uint64).reshape(a.shape)


def _add(a, b):
    """a + b mod 2^64 on uint64 arrays, without NumPy's overflow warning for 0-d operands."""
    a, b = np.broadcast_arrays(a, b)
    return np.add(a, b, out=np.empty(a.shape, np.uint64))


def as_state(state):
    """(seed, offset) ints, or an int64/uint64 array (*B, 2) -> uint64 array (*B, 2)."""
    return u64(state)


def block(seed, b):
    """Philox block(seed, b) for arrays of seeds and block indices (broadcast): (..., 4) uint64 words."""
    seed, b = np.broadcast_arrays(u64(seed), u64(b))
    c0, c1, c2, c3 = b & _LO, b >> _32, np.zeros_like(b), np.zeros_like(b)
    k0, k1 = seed & _LO, seed >> _32
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(W0)) & _LO, (k1 + np.uint64(W1)) & _LO
        p0, p1 = np.uint64(M0) * c0, np.uint64(M1) * c2  # < 2^64: exact in uint64
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _LO, (p0 >> _32) ^ c3 ^ k1, p0 & _LO
    return np.stack([c0, c1, c2, c3], axis=-1)


def word(seed, offset, t):
    """W(t) of key (seed, offset), elementwise over broadcast arrays: block(seed, offset + t // 4)[t % 4]."""
    seed, offset, t = np.broadcast_arrays(u64(seed), u64(offset), u64(t))
    b = block(seed, _add(offset, t >> np.uint64(2)))
    return np.take_along_axis(b, (t & np.uint64(3)).astype(np.int64)[..., None], axis=-1)[..., 0]


def words(seed, offset, count):
    """W(0) .. W(count - 1) of one key, as a uint64 array."""
    return word(seed, offset, np.arange(count, dtype=np.uint64))


def per_element_keys(shape, state):
    """The broadcast/event rule: for an output of `shape` and a state (2,) or (*B, 2) with len(B) == len(shape),
    (seed, offset, j) uint64 arrays of `shape`: each logical element's key and local index in its event."""
    state, shape = as_state(state), tuple(shape)
    if state.shape == (2,):
        return state[0], state[1], np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    B = state.shape[:-1]
    if state.shape[-1] != 2 or len(B) != len(shape) or any(b not in (1, n) for b, n in zip(B, shape)):
        raise ValueError(f"state of shape {state.shape} does not broadcast to an output of shape {shape}")
    e = 1 + max([d for d, b in enumerate(B) if b != 1], default=-1)
    j = np.arange(int(np.prod(shape[e:])), dtype=np.uint64).reshape(shape[e:])
    bc = lambda a: np.broadcast_to(a, shape)  # noqa: E731  (B_d == 1 -> index 0: broadcast dims reuse the key)
    return bc(state[..., 0]), bc(state[..., 1]), bc(j)


def element_words(shape, state, k):
    """(numel, k) array: the k words of each logical element (row-major) of an output of `shape`."""
    seed, offset, j = (a.reshape(-1) for a in np.broadcast_arrays(*per_element_keys(shape, state)))
    t = j[:, None] * np.uint64(k) + np.arange(k, dtype=np.uint64)
    return word(seed[:, None], offset[:, None], t)


def element_words_at(state, j, k):
    """(len(j), k) array: the words of the elements at local indices j of one key (state (2,))."""
    state = as_state(state)
    t = u64(j)[:, None] * np.uint64(k) + np.arange(k, dtype=np.uint64)
    return word(state[0], state[1], t)


def blocks_used(numel, dtype):
    """What a Generator advances per call: ceil(numel * k / 4) blocks."""
    return -(-numel * _k(dtype) // 4)


def _k(dtype):
    return 2 if dtype in ("float64", "int64", "uint64") else 1


# ---- floats ----------------------------------------------------------------------------------------------


def u_float(w, dtype):
    """Uniform in [0, 1) as float32 (float64 for 'float64') from the elements' words (numel, k)."""
    if dtype == "float64":
        m53 = ((w[:, 0] & np.uint64(0x1FFFFF)) << _32) | w[:, 1]
        return m53.astype(np.float64) * 2.0**-53
    bits = {"float32": 24, "float16": 11, "bfloat16": 8}[dtype]
    return (w[:, 0] & np.uint64((1 << bits) - 1)).astype(np.float32) * np.float32(2.0**-bits)


def op_u(w, dtype):
    """The u of quantize_noise and dropout: 24 bits in float32 for <= 32-bit types, 53 bits for float64."""
    return u_float(w, "float64" if dtype == "float64" else "float32")


def f32_to_bf16_bits(v):
    """float32 values -> bfloat16 bit patterns, rounded to nearest, ties to even; NaN stays NaN."""
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    nan = (b & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000)
    return np.where(nan, (b >> np.uint64(16)) | np.uint64(0x40), rounded).astype(np.uint16)


def round_to_bits(v, dtype):
    """Computed values (float32, or float64 for 'float64') rounded once to `dtype`, as bit patterns
    (uint16 for float16/bfloat16, uint32 for float32, uint64 for float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            return np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
        v = np.ascontiguousarray(v, dtype=np.float32)
        if dtype == "float32":
            return v.view(np.uint32)
        if dtype == "float16":
            return v.astype(np.float16).view(np.uint16)  # NumPy rounds to nearest even
        return f32_to_bf16_bits(v)


# ---- the ops, on logical row-major values; float results as raw bit patterns (flat, numel) ---------------


def dtype_value(v, dtype):
    """A Python float rounded to a <= 32-bit dtype through float32, as torch converts a double; as float32."""
    with np.errstate(over="ignore"):
        f = np.float32(v)
    if dtype == "float16":
        return np.float32(np.float16(f))
    if dtype == "bfloat16":
        return (f32_to_bf16_bits(np.array([f])).astype(np.uint32) << np.uint32(16)).view(np.float32)[0]
    return f


def uniform_from_words(w, dtype, low, high):
    """lo + u * width: rounded multiply, then rounded add, in float32 (float64 for 'float64'). For <= 32-bit
    dtypes lo and hi are low and high rounded to the dtype, and width is fl32(hi - lo) rounded to it."""
    u = u_float(w, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float64":
            return round_to_bits(np.float64(low) + u * np.float64(high - low), dtype)
        lo, hi = dtype_value(low, dtype), dtype_value(high, dtype)
        return round_to_bits(lo + u * dtype_value(hi - lo, dtype), dtype)


def uniform_ref(shape, state, dtype, low=0.0, high=1.0):
    return uniform_from_words(element_words(shape, state, _k(dtype)), dtype, low, high)


def quantize_noise_ref(x, state, dtype, half):
    """x + (-half + u * 2 half); x: the input's float32 (float64) values, shaped like the output (or flat
    for an unbatched state)."""
    x = np.asarray(x)
    u = op_u(element_words(x.shape, state, _k(dtype)), dtype)
    ct = np.float64 if dtype == "float64" else np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        return round_to_bits(x.reshape(-1).astype(ct) + (ct(-half) + u * ct(2 * half)), dtype)


def dropout_mask_from_words(w, dtype, p):
    """True where the element is kept: u >= p, compared exactly."""
    return op_u(w, dtype).astype(np.float64) >= p


def dropout_mask_ref(shape, state, dtype, p):
    return dropout_mask_from_words(element_words(shape, state, _k(dtype)), dtype, p)


def dropout_ref(x, state, dtype, p):
    """x * (1 / (1 - p)) where kept (the scale rounded to the compute type), +0 where dropped."""
    x = np.asarray(x)
    keep = dropout_mask_ref(x.shape, state, dtype, p)
    ct = np.float64 if dtype == "float64" else np.float32
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scale = ct(1.0 / (1.0 - p)) if p < 1 else ct(0)
        return round_to_bits(np.where(keep, x.reshape(-1).astype(ct) * scale, ct(0)), dtype)


INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def bits_from_words(w, dtype):
    """<= 32-bit: the low bits of the one word (two's complement for signed); 64-bit: (w0 << 32) | w1."""
    if dtype in ("int64", "uint64"):
        return (((w[:, 0] << _32) | w[:, 1])).view(np.dtype(dtype))
    width = np.dtype(dtype).itemsize * 8
    return (w[:, 0] & np.uint64((1 << width) - 1)).astype(np.dtype("u%d" % (width // 8))).view(np.dtype(dtype))


def bits_ref(shape, state, dtype="int32"):
    """bits(shape, state, dtype) as a NumPy array of that dtype and shape."""
    return bits_from_words(element_words(shape, state, _k(dtype)), dtype).reshape(shape)


# ---- key derivation ----------------------------------------------------------------------------------------


def _key_from_block(r):
    return np.stack([r[..., 0] | (r[..., 1] << _32), r[..., 2] | (r[..., 3] << _32)], axis=-1)


def split_ref(state, num=2):
    """(num, *B, 2) uint64: child i of key (s, o) is (r0 | r1 << 32, r2 | r3 << 32), r = block(s, o + i)."""
    state = as_state(state)
    i = np.arange(num, dtype=np.uint64).reshape((num,) + (1,) * (state.ndim - 1))
    return _key_from_block(block(state[..., 0], _add(state[..., 1], i)))


def fold_in_ref(state, data):
    """Same shape as state: block(s, o + d) as a key; data an int in [0, 2^64) or per-key values broadcast to B."""
    state = as_state(state)
    return _key_from_block(block(state[..., 0], _add(state[..., 1], u64(data))))
