"""An independent reference for the stream v2 (docs/stream.md), written from the Philox paper and the spec in
vectorized NumPy. It shares no code with torch_rngx: the tests compare the package against this, bit for bit.

A state is [seed, offset] as uint64; the offset counts 128-bit Philox blocks. Key (seed, offset) defines the
word sequence W(t) = block(seed, offset + t // 4)[t % 4] (block indices mod 2^64). The element at local index
j that takes k words (k = 2 for float64 and 64-bit bits) uses W(k j) .. W(k j + k - 1).

Batched states (*B, 2) follow the event rule: per_element_keys() gives every logical element its key and j.
States may be given as a (seed, offset) pair of Python ints or as an int64/uint64 array of shape (*B, 2).
"""
import math

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
        return ((w[:, 0] << _32) | w[:, 1]).view(np.dtype(dtype))
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


# ---- normal, truncated normal, bernoulli, randint (docs/stream.md): the float sequences in NumPy float64 -------

_F64 = np.float64
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
PI = 3.14159265358979311600


def _bits64(v):
    return np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)


def _from_bits64(b):
    return np.ascontiguousarray(b, dtype=np.uint64).view(np.float64)


def _horner(x, coefs):
    """coefs from the highest degree down: (...(c0 x + c1) x + ...) + cn, each step rounded."""
    p = np.full_like(x, coefs[0])
    for c in coefs[1:]:
        p = p * x + c
    return p


def log_ref(x, full):
    """ln x, x > 0 normal: reduction to m in [sqrt(1/2), sqrt(2)), then the atanh series in s = f / (2 + f)."""
    b = _bits64(x)
    m = _from_bits64((b & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000))
    big = m > 1.41421356237309514547
    m = np.where(big, m * 0.5, m)
    dk = ((b >> np.uint64(52)).astype(np.int64) + big).astype(np.float64) - 1023.0
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    hfsq = 0.5 * f * f
    r = _horner(z, [2.0 / n for n in ((21, 19, 17, 15, 13, 11, 9, 7, 5, 3) if full else (11, 9, 7, 5, 3))]) * z
    return dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)


def _sin_small(x, full):
    y = x * x
    inv = [1.0 / math.factorial(n) for n in range(3, 18, 2)]  # 1/3!, 1/5!, ..., 1/17!
    signs = [-1, 1, -1, 1, -1, 1, -1, 1]
    terms = list(zip(signs, inv))[: 8 if full else 5][::-1]
    p = np.full_like(y, terms[0][0] * terms[0][1])
    for sg, c in terms[1:]:
        p = p * y + c if sg > 0 else p * y - c
    return x + x * (y * p)


def _cos_small(x, full):
    y = x * x
    terms = [(1 if n % 4 == 0 else -1, 1.0 / math.factorial(n)) for n in range(4, 17, 2)][: 7 if full else 4][::-1]
    p = np.full_like(y, terms[0][0] * terms[0][1])
    for sg, c in terms[1:]:
        p = p * y + c if sg > 0 else p * y - c
    return (1.0 - 0.5 * y) + (y * y) * p


def polar_ref(r, t, b, full):
    """(r cos a, r sin a), a = 2 pi t / 2^b, the angle folded exactly (integers) into [0, pi/4]."""
    t = np.asarray(t, dtype=np.uint64)
    half, quarter, eighth = (np.uint64(1 << (b - n)) for n in (1, 2, 3))
    sin_neg = t > half
    t = np.where(sin_neg, np.uint64(2) * half - t, t)
    cos_neg = t > quarter
    t = np.where(cos_neg, half - t, t)
    swap = t > eighth
    t = np.where(swap, quarter - t, t)
    x = t.astype(np.float64) * (PI * 2.0 ** (1 - b))
    sn, cs = _sin_small(x, full), _cos_small(x, full)
    c, s = np.where(swap, sn, cs), np.where(swap, cs, sn)
    return r * np.where(cos_neg, -c, c), r * np.where(sin_neg, -s, s)


def normal_pair(w, dtype):
    """Both normals (float64) of each pair from its words (npairs, 2k): u1 = (w0 + 1) 2^-32, t = w1; float64
    u1 = (m53(w0, w1) + 1) 2^-53, t = m53(w2, w3)."""
    if dtype == "float64":
        m = ((w[:, 0] & np.uint64(0x1FFFFF)) << _32) | w[:, 1]
        t = ((w[:, 2] & np.uint64(0x1FFFFF)) << _32) | w[:, 3]
        v = (m >> _32).astype(np.float64) * 2.0**32 + ((m & _LO).astype(np.float64) + 1.0)
        b, full = 53, True
    else:
        v, t, b, full = w[:, 0].astype(np.float64) + 1.0, w[:, 1], 32, False
    u1 = v * 2.0**-b
    return polar_ref(np.sqrt(-2.0 * log_ref(u1, full)), t, b, full)


def normal_z(shape, state, dtype):
    """The standard normal z (float64) of each logical element: element j of its key takes pair j // 2 (words
    2k (j // 2) ... 2k (j // 2) + 2k - 1, k = 2 for float64 else 1), the cosine when j is even, else the sine."""
    k = 2 if dtype == "float64" else 1
    seed, offset, j = (a.reshape(-1) for a in np.broadcast_arrays(*per_element_keys(shape, state)))
    t = (j // np.uint64(2))[:, None] * np.uint64(2 * k) + np.arange(2 * k, dtype=np.uint64)
    c, s = normal_pair(word(seed[:, None], offset[:, None], t), dtype)
    return np.where(j % np.uint64(2) == 0, c, s)


def normal_ref(shape, state, dtype, mean=0.0, std=1.0):
    z = normal_z(shape, state, dtype)
    if dtype == "float64":
        return round_to_bits(z * std + mean, dtype)
    return round_to_bits(z.astype(np.float32) * np.float32(std) + np.float32(mean), dtype)


def _exp_neg(y):
    kd = float(int(y * 1.44269504088896338700 - 0.5))
    r = (y - kd * LN2_HI) - kd * LN2_LO
    e = 1.0
    for n in range(14, 0, -1):
        e = 1.0 + r / n * e
    k = int(kd)
    k1 = -((-k) // 2)  # C's k / 2 for k <= 0
    return e * 2.0 ** k1 * 2.0 ** (k - k1)


def _cdf_lower(x):
    pdf = 0.398942280401432677940 * _exp_neg(-0.5 * (x * x))
    if x > -3.0:
        s = t = x
        for n in range(1, 120):
            t = t * (x * x) / (2 * n + 1)
            s += t
        return 0.5 + pdf * s
    f = -x
    for n in range(400, 0, -1):
        f = -x + n / f
    return pdf / f


def normal_cdf_ref(x):
    x = min(max(x, -38.0), 38.0)
    return _cdf_lower(x) if x <= 0 else 1.0 - _cdf_lower(-x)


_AS241 = {
    "a": [2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4, 4.5921953931549871457e4,
          1.3731693765509461125e4, 1.9715909503065514427e3, 1.3314166789178437745e2, 3.3871328727963666080],
    "b": [5.2264952788528545610e3, 2.8729085735721942674e4, 3.9307895800092710610e4, 2.1213794301586595867e4,
          5.3941960214247511077e3, 6.8718700749205790830e2, 4.2313330701600911252e1, 1.0],
    "c": [7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1, 1.27045825245236838258,
          3.64784832476320460504, 5.76949722146069140550, 4.63033784615654529590, 1.42343711074968357734],
    "d": [1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2, 1.48103976427480074590e-1,
          6.89767334985100004550e-1, 1.67638483018380384940, 2.05319162663775882187, 1.0],
    "e": [2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3, 2.65321895265761230930e-2,
          2.96560571828504891230e-1, 1.78482653991729133580, 5.46378491116411436990, 6.65790464350110377720],
    "f": [2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5, 7.86869131145613259100e-4,
          1.48753612908506148525e-2, 1.36929880922735805310e-1, 5.99832206555887937690e-1, 1.0],
}


def ndtri_ref(p):
    """Wichura's AS 241 with log_ref, each branch computed and selected."""
    p = np.asarray(p, dtype=np.float64)
    q = p - 0.5
    rc = 0.180625 - q * q
    central = q * _horner(rc, _AS241["a"]) / _horner(rc, _AS241["b"])
    r = np.sqrt(-log_ref(np.where(q < 0, p, 1.0 - p), True))
    near = _horner(r - 1.6, _AS241["c"]) / _horner(r - 1.6, _AS241["d"])
    far = _horner(r - 5.0, _AS241["e"]) / _horner(r - 5.0, _AS241["f"])
    v = np.where(r <= 5.0, near, far)
    return np.where(np.abs(q) <= 0.425, central, np.where(q < 0, -v, v))


def _step(v, dtype, up):
    """The dtype's neighbour of v (a value of it) towards +inf (up) or -inf, as float32."""
    if dtype == "float32":
        b = int(np.float32(v).view(np.uint32))
        b = (1 if up else 0x80000001) if b & 0x7FFFFFFF == 0 else (b + 1 if (v > 0) == up else b - 1)
        return np.uint32(b).view(np.float32)
    h = int(round_to_bits(np.array([v], np.float32), dtype)[0])
    h = (1 if up else 0x8001) if h & 0x7FFF == 0 else (h + 1 if (v > 0) == up else h - 1)
    if dtype == "float16":
        return np.float32(np.uint16(h).view(np.float16))
    return (np.uint32(h) << np.uint32(16)).view(np.float32)


def truncated_normal_ref(shape, state, dtype, mean, std, a, b):
    """Phi^-1(pa + u (pb - pa)) on the lower-tail side (flipped when alpha + beta > 0), u = m53 2^-53 from two words,
    mean + std z clamped to [a, b]; <= 32-bit types round it (through float32) and clamp to their values in [a, b]."""
    al, be = (min(max((v - mean) / std, -37.0), 37.0) for v in (a, b))
    flip = al + be > 0
    lo, hi = (-be, -al) if flip else (al, be)
    pa = normal_cdf_ref(lo)
    pw = normal_cdf_ref(hi) - pa
    w = element_words(shape, state, 2)
    m53 = ((w[:, 0] & np.uint64(0x1FFFFF)) << _32) | w[:, 1]
    p = np.clip(pa + (m53.astype(np.float64) * 2.0**-53) * pw, 2.0**-1022, 1.0 - 2.0**-53)
    z = ndtri_ref(p)
    v = np.clip(mean + std * (-z if flip else z), a, b)
    if dtype == "float64":
        return round_to_bits(v, dtype)
    ra, rb = dtype_value(a, dtype), dtype_value(b, dtype)
    tlo = _step(ra, dtype, True) if ra < a else ra
    thi = _step(rb, dtype, False) if rb > b else rb
    r = v.astype(np.float32)
    if dtype in ("float16", "bfloat16"):
        bits = round_to_bits(r, dtype)
        r = bits.view(np.float16).astype(np.float32) if dtype == "float16" else \
            (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return round_to_bits(np.clip(r, tlo, thi), dtype)


def bernoulli_ref(shape, state, dtype, p):
    """1.0 where u < p (dropout's u), else 0.0, as bit patterns; p a float or an array of `shape` (its values in
    the output dtype, as float64)."""
    u = op_u(element_words(shape, state, _k(dtype)), dtype).astype(np.float64)
    p = np.broadcast_to(np.asarray(p, dtype=np.float64), shape).reshape(-1)
    return round_to_bits(np.where(u < p, 1.0, 0.0), dtype)


def randint_ref(shape, state, dtype, low, high):
    """low + floor((high - low) x / 2^bits), x from two words (64 bits) when high - low <= 2^32 (always, below
    int64), else four (128 bits), first word high; the sum modulo 2^64 in the dtype's bits. Python integers: exact."""
    rng = high - low
    k = 2 if rng <= 1 << 32 else 4
    w = element_words(shape, state, k)
    vals = []
    for row in w.tolist():
        x = 0
        for word_ in row:
            x = (x << 32) | word_
        vals.append((low + (rng * x >> (32 * k))) % U64)
    out = np.array(vals, dtype=np.uint64)
    width = np.dtype(dtype).itemsize * 8
    return (out & np.uint64((1 << width) - 1) if width < 64 else out).astype(
        np.dtype("u%d" % (width // 8))).view(np.dtype(dtype)).reshape(shape)


def exponential_e(w, dtype):
    """E = -ln u (float64) with u in (0, 1): one word, u = (2 w + 1) 2^-33 and the short log; float64 two words,
    u = (2 m + 1) 2^-53 with m = ((w0 & 0xFFFFF) << 32) | w1, and the full log."""
    if dtype == "float64":
        v = (w[:, 0] & np.uint64(0xFFFFF)).astype(np.float64) * 2.0**33 + (w[:, 1].astype(np.float64) * 2.0 + 1.0)
        return -log_ref(v * 2.0**-53, True)
    return -log_ref((w[:, 0].astype(np.float64) * 2.0 + 1.0) * 2.0**-33, False)


def exponential_ref(shape, state, dtype, rate=1.0):
    """E / rate in double, rounded to the dtype (through float32 for the 16-bit types), then a 0 raised to the
    smallest positive value and an infinity lowered to the largest finite one; as bit patterns."""
    q = exponential_e(element_words(shape, state, _k(dtype)), dtype) / rate
    with np.errstate(over="ignore"):
        bits = round_to_bits(q if dtype == "float64" else q.astype(np.float32), dtype)
    inf = {"float64": 0x7FF0000000000000, "float32": 0x7F800000, "float16": 0x7C00, "bfloat16": 0x7F80}[dtype]
    return np.where(bits == 0, 1, np.where(bits == inf, inf - 1, bits)).astype(bits.dtype)


def race_ref(weights, state, draws):
    """multinomial's scores for weights (*R, C) (float64 array): E / w of shape (*R, draws, C), E the float64
    exponentials of that shape's stream; +inf where w <= 0, at most the largest double where w > 0."""
    w = np.asarray(weights, dtype=np.float64)
    shape = (*w.shape[:-1], draws, w.shape[-1])
    e = exponential_e(element_words(shape, state, 2), "float64").reshape(shape)
    w = w[..., None, :]
    with np.errstate(over="ignore"):
        q = np.minimum(e / np.where(w > 0, w, 1.0), np.finfo(np.float64).max)
    return np.where(w > 0, q, np.inf)


def multinomial_ref(weights, state, num_samples, replacement):
    """Category indices (int64): with replacement, per sample the first argmin over categories of its scores;
    without, the num_samples smallest scores of one draw, in increasing order, ties by index."""
    if replacement:
        return race_ref(weights, state, num_samples).argmin(axis=-1)
    scores = race_ref(weights, state, 1)[..., 0, :]
    return np.argsort(scores, axis=-1, kind="stable")[..., :num_samples]


def randperm_ref(n, state):
    """range(n) sorted by the 64-bit keys (w0 << 32) | w1 of each index, read as signed integers, ties by index."""
    w = element_words((n,), state, 2)
    keys = ((w[:, 0] << _32) | w[:, 1]).view(np.int64)
    return np.argsort(keys, kind="stable")


# ---- issue 43's ops (docs/stream.md): normal with tensor mean and std, alpha dropout, rrelu, cauchy, log_normal,
# geometric ----


def _to_dtype(v, dtype):
    """Computed float32 values rounded to a 16-bit dtype and widened back (float32 and float64 unchanged)."""
    if dtype in ("float32", "float64"):
        return v
    bits = round_to_bits(v, dtype).astype(np.uint32)
    if dtype == "float16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits << np.uint32(16)).view(np.float32)


def normal_tensor_ref(shape, state, dtype, mean, std):
    """normal(0, 1)'s value v, then v * std and + mean, each rounded to the dtype (float32 arithmetic below float64);
    mean and std arrays of `shape`, their values in the dtype."""
    ct = np.float64 if dtype == "float64" else np.float32
    z = normal_z(shape, state, dtype)
    m, s = (np.broadcast_to(np.asarray(a, dtype=ct), shape).reshape(-1) for a in (mean, std))
    with np.errstate(over="ignore", invalid="ignore"):
        v = _to_dtype(z.astype(ct) * ct(1) + ct(0), dtype)
        return round_to_bits(_to_dtype(v * s, dtype) + m, dtype)


SELU_ALPHA = 1.7580993408473766


def alpha_dropout_ref(x, state, dtype, p):
    """keep = dropout's mask (u >= p); out = x * (keep * a) + ((keep - 1) * b1 + b2), a = ((alpha^2 p + 1)(1 - p))^-1/2,
    b1 = alpha a, b2 = b1 p; below float64 in float32 with a and b1 in float32, b2 in the dtype, every product and sum
    rounded to the dtype. p = 1: a = b1 = 0, b2 = -0."""
    x = np.asarray(x)
    keep = dropout_mask_ref(x.shape, state, dtype, p)
    a = 0.0 if p == 1 else 1.0 / math.sqrt((SELU_ALPHA * SELU_ALPHA * p + 1) * (1 - p))
    b1 = SELU_ALPHA * a
    b2 = -0.0 if p == 1 else b1 * p
    ct = np.float64 if dtype == "float64" else np.float32
    k = keep.astype(ct)
    b2 = ct(b2) if dtype in ("float32", "float64") else _to_dtype(np.array([b2], dtype=np.float32), dtype)[0]
    r = lambda v: _to_dtype(v, dtype)  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):
        b = r(r((k - ct(1)) * ct(b1)) + b2)
        return round_to_bits(r(x.reshape(-1).astype(ct) * r(k * ct(a))) + b, dtype)


def rrelu_ref(x, state, dtype, lower, upper):
    """x where x > 0, else x * r rounded to the dtype, r = uniform(lower, upper)'s value with the same words."""
    x = np.asarray(x)
    ct = np.float64 if dtype == "float64" else np.float32
    bits = uniform_from_words(element_words(x.shape, state, _k(dtype)), dtype, lower, upper)
    if dtype == "float64":
        r = bits.view(np.float64)
    elif dtype == "float32":
        r = bits.view(np.float32)
    else:
        r = _to_dtype_bits(bits, dtype)
    xv = x.reshape(-1).astype(ct)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(xv > 0, round_to_bits(xv, dtype), round_to_bits(xv * r, dtype))


def _to_dtype_bits(bits, dtype):
    """16-bit patterns as float32 values."""
    if dtype == "float16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def cauchy_ref(shape, state, dtype, median, sigma):
    """median + sigma * cos/sin of the angle 2 pi t / 2^b: t = 2 w + 1, b = 33 (the short series) below float64;
    t = 2 m + 1, m = ((w0 & 0xFFFFF) << 32) | w1, b = 53 (the full one) for float64. Scaled as normal's."""
    w = element_words(shape, state, _k(dtype))
    if dtype == "float64":
        m = ((w[:, 0] & np.uint64(0xFFFFF)) << _32) | w[:, 1]
        c, s = polar_ref(1.0, m * np.uint64(2) + np.uint64(1), 53, True)
        return round_to_bits(c / s * sigma + median, dtype)
    c, s = polar_ref(1.0, w[:, 0] * np.uint64(2) + np.uint64(1), 33, False)
    with np.errstate(over="ignore"):
        return round_to_bits((c / s).astype(np.float32) * np.float32(sigma) + np.float32(median), dtype)


INV_LN2 = 1.44269504088896338700


def exp_ref(y):
    """e^y: y clamped to [-746, 710], k = y / ln 2 rounded to nearest even, r = (y - k LN2_HI) - k LN2_LO, e^r =
    1 + (r + r^2 q) with q the Taylor series from 1/2! to 1/13! nested from 1/13!, times 2^floor(k / 2) and then
    2^(k - floor(k / 2))."""
    y = np.clip(np.asarray(y, dtype=np.float64), -746.0, 710.0)
    kd = (y * INV_LN2 + 1.5 * 2.0**52) - 1.5 * 2.0**52
    r = (y - kd * LN2_HI) - kd * LN2_LO
    e = 1.0 + (r + (r * r) * _horner(r, [1.0 / math.factorial(n) for n in range(13, 1, -1)]))
    k = kd.astype(np.int64)
    k1 = k >> 1
    with np.errstate(over="ignore"):
        return e * np.power(2.0, k1.astype(np.float64)) * np.power(2.0, (k - k1).astype(np.float64))


def log_normal_ref(shape, state, dtype, mean, std):
    """exp(z * std + mean) in double (z normal's pair value), rounded once to the dtype (through float32)."""
    v = exp_ref(normal_z(shape, state, dtype) * std + mean)
    with np.errstate(over="ignore"):
        return round_to_bits(v if dtype == "float64" else v.astype(np.float32), dtype)


def geometric_ref(shape, state, dtype, p):
    """ceil(E / lambda), E exponential's, lambda = p * ln(1 - p) / ((1 - p) - 1) (p where 1 - p rounds to 1), in double,
    rounded to the dtype (through float32)."""
    u = 1.0 - p
    lam = p if u == 1.0 else p * float(log_ref(np.array([u]), True)[0]) / (u - 1.0)
    v = np.ceil(exponential_e(element_words(shape, state, _k(dtype)), dtype) / lam)
    with np.errstate(over="ignore"):
        return round_to_bits(v if dtype == "float64" else v.astype(np.float32), dtype)


# ---- stochastic_round (docs/stream.md, "stochastic_round"): exact rationals on Python ints --------------------

# target: (m, emin, MAX, OVER or None, bits at and past OVER, NaN bits, sign bit, ml_dtypes name)
SROUND_TARGETS = {
    "bfloat16": (7, -126, (2 - 2.0**-7) * 2.0**127, (2 - 2.0**-8) * 2.0**127, 0x7F80, 0x7FC0, 0x8000, "bfloat16"),
    "float16": (10, -14, 65504.0, 65520.0, 0x7C00, 0x7E00, 0x8000, "float16"),
    "float8_e4m3fn": (3, -6, 448.0, None, None, 0x7F, 0x80, "float8_e4m3fn"),
    "float8_e5m2": (2, -14, 57344.0, 61440.0, 0x7C, 0x7F, 0x80, "float8_e5m2"),
}


def _target_bits(v, to):
    """A value the target holds (a float64, >= 0) as the target's bits, through ml_dtypes' conversion (exact here,
    so its rounding never acts)."""
    import ml_dtypes

    np_dtype = np.float16 if to == "float16" else getattr(ml_dtypes, SROUND_TARGETS[to][7])
    out = np.array([v], dtype=np.float64).astype(np.float32).astype(np_dtype)
    assert float(out[0]) == v, (v, to)
    return int(out.view(np.uint16 if out.itemsize == 2 else np.uint8)[0])


def stochastic_round_ref(x, state, from_dtype, to, saturate=False):
    """x: the inputs (float64 values, each exact in from_dtype; NaN and infinities allowed), the output's shape.
    Returns the target's bit patterns (uint16, or uint8 for the float8 types), steps 1-4 of the spec."""
    from fractions import Fraction

    m, emin, top, over, over_bits, nan_bits, sign_bit, _ = SROUND_TARGETS[to]
    k = 2 if from_dtype == "float64" else 1
    R = 32 * k
    x = np.asarray(x, dtype=np.float64)
    w = element_words(x.shape, state, k)
    out = []
    for v, ws in zip(x.reshape(-1).tolist(), w.tolist()):
        u = ws[0] if k == 1 else (ws[0] << 32) | ws[1]
        sign = sign_bit if math.copysign(1.0, v) < 0 else 0
        a = abs(v)
        if math.isnan(v):
            mag = nan_bits
        elif a > top and saturate:
            mag = _target_bits(top, to)
        elif a > top:
            with np.errstate(over="ignore"):
                f = float(np.float32(a))
            mag = over_bits if over is not None and f >= over else _target_bits(top, to)
        elif a == 0:
            mag = 0
        else:
            e = math.frexp(a)[1] - 1  # floor(log2 |x|): frexp gives |x| = f 2^E, f in [1/2, 1)
            q = Fraction(2) ** (max(e, emin) - m)
            lo = (Fraction(a) // q) * q
            F = math.floor((Fraction(a) - lo) * 2**R / q)
            mag = _target_bits(float(lo + q if u < F else lo), to)
        out.append(sign | mag)
    return np.array(out, dtype=np.uint16 if to in ("bfloat16", "float16") else np.uint8).reshape(x.shape)
