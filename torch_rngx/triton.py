"""The torch-rngx stream inside Triton kernels (docs: device_api/): `@triton.jit` device functions that give an
element exactly the bits our ops give it; their arguments come from torch_rngx.params (re-exported here).

Keys and positions are uint64 (block numbers wrap at 2^64, as docs: stream/ says). Counters reach `tl.philox`
as uint32 pairs: 64-bit counters would switch it to Philox4x64. The float functions do IEEE float32 (float64
for float64) arithmetic rounded after every operation, so kernels that call uniform, quantize_noise or normal
must launch with `enable_fp_fusion=False`: compiled Triton otherwise contracts `a * b + c` into one FMA, which
rounds once and changes bits. Dropout, bernoulli and the raw words hold no such pair and give our bits either
way. The 16-bit types round with integer operations (bfloat16) or an explicit round-to-nearest-even cast
(float16), so the interpreter (TRITON_INTERPRET=1) and the GPU agree."""

import triton
import triton.language as tl

from .params import dropout_params, noise_params, normal_params, uniform_params, view  # noqa: F401

# ---- device side: keys, positions, words ----


@triton.jit
def load_key(state_ptr):
    """The key [seed, offset] at state_ptr (int64 or uint64; a tensor of pointers gives one key per element)."""
    seed = tl.load(state_ptr).to(tl.uint64, bitcast=True)
    offset = tl.load(state_ptr + 1).to(tl.uint64, bitcast=True)
    return seed, offset


@triton.jit
def locate(i, view_ptr, NDIM: tl.constexpr):
    """For logical (row-major) element indices i of the output that `view` describes: the offset of each
    element's key in `state` (int64 elements) and its position in that key's stream."""
    rem = i.to(tl.int64)
    key = tl.zeros_like(rem)
    pos = tl.zeros_like(rem)
    for k in tl.static_range(NDIM):
        row = view_ptr + 4 * (NDIM - 1 - k)
        size = tl.load(row)
        g = rem % size + tl.load(row + 1)
        rem = rem // size
        pos += g * tl.load(row + 2)
        key += g * tl.load(row + 3)
    return key, pos.to(tl.uint64)


@triton.jit
def philox_block(seed, b):
    """Block b of the seed: Philox4x32-10 of counter (lo32 b, hi32 b, 0, 0), key (lo32 seed, hi32 seed)."""
    b = b.to(tl.uint64)
    lo = b.to(tl.uint32)
    zero = tl.zeros_like(lo)
    return tl.philox(seed, lo, (b >> 32).to(tl.uint32), zero, zero)


@triton.jit
def word(seed, offset, t):
    """Word t of the key (seed, offset): lane t % 4 of block offset + t / 4 (one element of a 1-word op)."""
    t = t.to(tl.uint64)
    r0, r1, r2, r3 = philox_block(seed, offset + (t >> 2))
    lane = t & 3
    return tl.where(lane < 2, tl.where(lane == 0, r0, r1), tl.where(lane == 2, r2, r3))


@triton.jit
def words2(seed, offset, j):
    """Words 2j and 2j + 1: element j of a 2-word op (float64 uniform, dropout, ...), or pair j of a float32-family
    normal."""
    j = j.to(tl.uint64)
    r0, r1, r2, r3 = philox_block(seed, offset + (j >> 1))
    odd = (j & 1) != 0
    return tl.where(odd, r2, r0), tl.where(odd, r3, r1)


@triton.jit
def words4(seed, offset, j):
    """Words 4j .. 4j + 3 (block offset + j): pair j of a float64 normal."""
    return philox_block(seed, offset + j.to(tl.uint64))


@triton.jit
def bits64(seed, offset, j):
    """bits(dtype=int64) of element j: its first word high."""
    w0, w1 = words2(seed, offset, j)
    return (w0.to(tl.uint64) << 32) | w1.to(tl.uint64)


# ---- device side: words to floats (docs/stream.md, "Floats") ----


@triton.jit
def to_dtype(v, DTYPE: tl.constexpr):
    """A float32 value rounded to nearest even in DTYPE (float16, bfloat16 or float32)."""
    if DTYPE == tl.bfloat16:
        b = v.to(tl.uint32, bitcast=True)
        nan = (b & 0x7FFFFFFF) > 0x7F800000
        b = tl.where(nan, (b >> 16) | 0x40, (b + 0x7FFF + ((b >> 16) & 1)) >> 16)  # carries round up
        return b.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    elif DTYPE == tl.float16:
        return v.to(tl.float16, fp_downcast_rounding="rtne")
    else:
        return v


@triton.jit
def _m53(w0, w1):
    return ((w0 & 0x1FFFFF).to(tl.uint64) << 32) | w1.to(tl.uint64)


@triton.jit
def _u(w, DTYPE: tl.constexpr):
    """The uniform of one word for DTYPE: as many low bits as its significand holds, times 2^-bits."""
    if DTYPE == tl.float16:
        return (w & 0x7FF).to(tl.float32) * (1.0 / 2048)
    elif DTYPE == tl.bfloat16:
        return (w & 0xFF).to(tl.float32) * (1.0 / 256)
    else:
        return (w & 0xFFFFFF).to(tl.float32) * (1.0 / 16777216)


@triton.jit
def _u53(w0, w1):
    return _m53(w0, w1).to(tl.float64) * (1.0 / 9007199254740992)


@triton.jit
def uniform(seed, offset, j, params_ptr, DTYPE: tl.constexpr):
    """uniform(like, state, low, high) of element j in DTYPE; params from `uniform_params` (launch with
    enable_fp_fusion=False)."""
    if DTYPE == tl.float64:
        w0, w1 = words2(seed, offset, j)
        return tl.load(params_ptr) + _u53(w0, w1) * tl.load(params_ptr + 1)
    else:
        lo = tl.load(params_ptr).to(tl.float32)
        return to_dtype(lo + _u(word(seed, offset, j), DTYPE) * tl.load(params_ptr + 1).to(tl.float32), DTYPE)


@triton.jit
def quantize_noise(x, seed, offset, j, params_ptr):
    """quantize_noise(x, state, half) of element j, x in its own dtype; params from `noise_params` (launch with
    enable_fp_fusion=False)."""
    if x.dtype == tl.float64:
        w0, w1 = words2(seed, offset, j)
        return x + (tl.load(params_ptr) + _u53(w0, w1) * tl.load(params_ptr + 1))
    else:
        lo = tl.load(params_ptr).to(tl.float32)
        noise = lo + _u(word(seed, offset, j), tl.float32) * tl.load(params_ptr + 1).to(tl.float32)
        return to_dtype(x.to(tl.float32) + noise, x.dtype)


@triton.jit
def dropout_kept(seed, offset, j, params_ptr, DTYPE: tl.constexpr):
    """Whether dropout keeps element j (u >= p, exactly); params from `dropout_params`."""
    keep = tl.load(params_ptr).to(tl.uint64)
    if DTYPE == tl.float64:
        w0, w1 = words2(seed, offset, j)
        return _m53(w0, w1) >= keep
    else:
        return (word(seed, offset, j) & 0xFFFFFF).to(tl.uint64) >= keep


@triton.jit
def dropout(x, seed, offset, j, params_ptr):
    """dropout(x, state, p) of element j: x * scale where kept, else 0 (a select: a dropped NaN gives 0). Also
    its backward, applied to the incoming gradient."""
    kept = dropout_kept(seed, offset, j, params_ptr, x.dtype)
    if x.dtype == tl.float64:
        return tl.where(kept, x * tl.load(params_ptr + 1), 0.0)
    else:
        return to_dtype(tl.where(kept, x.to(tl.float32) * tl.load(params_ptr + 1).to(tl.float32), 0.0), x.dtype)


@triton.jit
def bernoulli(seed, offset, j, params_ptr, DTYPE: tl.constexpr):
    """bernoulli(like, state, p) of element j in DTYPE: 1 iff u < p, dropout's u; params from `dropout_params`."""
    one = tl.where(dropout_kept(seed, offset, j, params_ptr, DTYPE), 0.0, 1.0)
    if DTYPE == tl.float64:
        return one.to(tl.float64)
    else:
        return to_dtype(one.to(tl.float32), DTYPE)


# ---- device side: normal, with dists.h's own log, sin and cos (docs/stream.md, "normal") ----
# Each step is one IEEE double operation as dists.h writes it: launch with enable_fp_fusion=False, or compiled
# Triton fuses the Horner steps' multiply-adds. Constants are Python floats, which Triton makes float64
# constants where they meet a float64 tensor.

_LN2_HI: tl.constexpr = 6.93147180369123816490e-01
_LN2_LO: tl.constexpr = 1.90821492927058770002e-10
_SQRT2: tl.constexpr = 1.41421356237309514547
_PI: tl.constexpr = 3.14159265358979311600


@triton.jit
def _log(x, FULL: tl.constexpr):
    """ln x for positive normal doubles: dists.h's rngx_log (j <= 10 terms when FULL, else 5)."""
    b = x.to(tl.uint64, bitcast=True)
    m = ((b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).to(tl.float64, bitcast=True)
    big = (m > _SQRT2).to(tl.uint64)
    m = (m.to(tl.uint64, bitcast=True) - (big << 52)).to(tl.float64, bitcast=True)  # m * 0.5 when big: exact
    dk = ((b >> 52) + big).to(tl.float64) - 1023.0
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    hfsq = 0.5 * f * f
    if FULL:
        r = 2.0 / 21 * z + 2.0 / 19
        r = r * z + 2.0 / 17
        r = r * z + 2.0 / 15
        r = r * z + 2.0 / 13
        r = r * z + 2.0 / 11
    else:
        r = z * 0.0 + 2.0 / 11  # a float64 tensor from here on
    r = r * z + 2.0 / 9
    r = r * z + 2.0 / 7
    r = r * z + 2.0 / 5
    r = r * z + 2.0 / 3
    r = r * z
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)


@triton.jit
def _sin_small(x, FULL: tl.constexpr):
    y = x * x
    if FULL:
        p = 1.0 / 355687428096000.0 * y - 1.0 / 1307674368000.0
        p = p * y + 1.0 / 6227020800.0
        p = p * y - 1.0 / 39916800.0
    else:
        p = y * 0.0 - 1.0 / 39916800.0
    p = p * y + 1.0 / 362880.0
    p = p * y - 1.0 / 5040.0
    p = p * y + 1.0 / 120.0
    p = p * y - 1.0 / 6.0
    return x + x * (y * p)


@triton.jit
def _cos_small(x, FULL: tl.constexpr):
    y = x * x
    if FULL:
        p = 1.0 / 20922789888000.0 * y - 1.0 / 87178291200.0
        p = p * y + 1.0 / 479001600.0
        p = p * y - 1.0 / 3628800.0
    else:
        p = y * 0.0 - 1.0 / 3628800.0
    p = p * y + 1.0 / 40320.0
    p = p * y - 1.0 / 720.0
    p = p * y + 1.0 / 24.0
    return (1.0 - 0.5 * y) + (y * y) * p


@triton.jit
def _negate_if(cond, v):
    """-v where cond, as IEEE negation: the sign bit flipped (0 - v would turn -0 into +0)."""
    return (v.to(tl.uint64, bitcast=True) ^ (cond.to(tl.uint64) << 63)).to(tl.float64, bitcast=True)


@triton.jit
def _box_muller(v, t, B: tl.constexpr, FULL: tl.constexpr):
    """r cos and r sin of the angle 2 pi t / 2^B, r = sqrt(-2 ln(v 2^-B)); dists.h's rngx_box_muller."""
    r = tl.sqrt(-2.0 * _log(v * (1.0 / (1 << B)), FULL))
    half: tl.constexpr = 1 << (B - 1)
    sin_neg = t > half
    t = tl.where(sin_neg, 2 * half - t, t)
    cos_neg = t > half // 2
    t = tl.where(cos_neg, half - t, t)
    swap = t > half // 4
    t = tl.where(swap, half // 2 - t, t)
    x = t.to(tl.float64) * (_PI * 2.0 / (1 << B))  # pi 2^(1 - B): exact
    sn = _sin_small(x, FULL)
    cs = _cos_small(x, FULL)
    return r * _negate_if(cos_neg, tl.where(swap, sn, cs)), r * _negate_if(sin_neg, tl.where(swap, cs, sn))


@triton.jit
def normal(seed, offset, j, params_ptr, DTYPE: tl.constexpr):
    """normal(like, state, mean, std) of element j in DTYPE: pair j / 2's cosine output (j even) or sine output
    (j odd); params from `normal_params` (launch with enable_fp_fusion=False)."""
    j = j.to(tl.uint64)
    odd = (j & 1) != 0
    if DTYPE == tl.float64:
        w0, w1, w2, w3 = words4(seed, offset, j >> 1)
        m = _m53(w0, w1)
        v = (m >> 32).to(tl.float64) * 4294967296.0 + ((m & 0xFFFFFFFF).to(tl.float64) + 1.0)  # m + 1, exact
        c, s = _box_muller(v, _m53(w2, w3).to(tl.int64), 53, True)
        return tl.where(odd, s, c) * tl.load(params_ptr + 1) + tl.load(params_ptr)
    else:
        w0, w1 = words2(seed, offset, j >> 1)
        c, s = _box_muller(w0.to(tl.float64) + 1.0, w1.to(tl.int64), 32, False)
        z = tl.where(odd, s, c).to(tl.float32)
        return to_dtype(z * tl.load(params_ptr + 1).to(tl.float32) + tl.load(params_ptr).to(tl.float32), DTYPE)


# ---- device side: stochastic_round (docs/stream.md, "stochastic_round"; elements.h's rngx_sround32/64) ----
# Integer operations only (shifts clamped below the width, as in C), so any launch gives our bits: no
# enable_fp_fusion needed. float16 and bfloat16 inputs are widened to float32 exactly first.


@triton.jit
def _sround_mag32(a, w, M: tl.constexpr, BIAS: tl.constexpr):
    """|x|'s float32 bits a (at most the target's largest value) rounded to the target with the word w, as the
    target's magnitude bits: the low 23 - M bits are the distance where the target is normal; below its smallest
    normal, x's significand shifted into 64 bits holds the value below (high word) and the distance (low word)."""
    DN: tl.constexpr = 23 - M
    TOP: tl.constexpr = 128 - BIAS
    normal = (a >> DN) + (w < (a << (32 - DN))).to(tl.uint32) - ((127 - BIAS) << M)
    if BIAS == 127:  # bfloat16 has float32's exponents
        return normal
    else:
        e = a >> 23
        e1 = tl.maximum(e, 1)
        d = tl.minimum((DN + TOP) - e1, 63)  # used only where e1 < TOP
        big = ((a & 0x7FFFFF) | tl.where(e != 0, 0x800000, 0).to(tl.uint32)).to(tl.uint64) << 32
        v = big >> d.to(tl.uint64)
        small = (v >> 32).to(tl.uint32) + (w < v.to(tl.uint32)).to(tl.uint32)
        return tl.where(e1 < TOP, small, normal)


@triton.jit
def _sround_mag64(a, u, M: tl.constexpr, BIAS: tl.constexpr):
    """The same for |x|'s float64 bits a and the 64-bit u."""
    DN: tl.constexpr = 52 - M
    TOP: tl.constexpr = 1024 - BIAS
    normal = (a >> DN) + (u < (a << (64 - DN))).to(tl.uint64) - ((1023 - BIAS) << M)
    e = a >> 52
    e1 = tl.maximum(e, 1)
    d = (DN + TOP) - e1  # > DN where used (e1 < TOP)
    big = (a & 0xFFFFFFFFFFFFF) | tl.where(e != 0, 1 << 52, 0).to(tl.uint64)
    below = big >> tl.minimum(d, 63)
    dist = tl.where(d <= 64, big << ((64 - tl.minimum(d, 64)) & 63), big >> tl.minimum(d - 64, 63))  # below 64
    return tl.where(e1 < TOP, below + (u < dist).to(tl.uint64), normal).to(tl.uint32)


@triton.jit
def _sround_finish(in_range, nan_x, sign, mag, over, max_bits, over_bits, nan_bits, SATURATE: tl.constexpr):
    """NaN, values past the largest finite one (x.to(dtype)'s: over_bits from `over` on, else the largest; with
    SATURATE always the largest) and the rounding."""
    if SATURATE:
        past = tl.full(mag.shape, max_bits, tl.uint32)
    else:
        past = tl.where(over, over_bits, max_bits).to(tl.uint32)
    return sign | tl.where(nan_x, nan_bits, tl.where(in_range, mag, past)).to(tl.uint32)


@triton.jit
def _sround_target(
    x,
    seed,
    offset,
    j,
    M: tl.constexpr,
    BIAS: tl.constexpr,
    FN: tl.constexpr,
    WIDTH: tl.constexpr,
    NAN_BITS: tl.constexpr,
    SATURATE: tl.constexpr,
):
    """The target's bits of element j, its constants (elements.h's RNGX_SROUND_TARGETS) from its mantissa bits M,
    exponent bias BIAS, width and NaN: FN for float8_e4m3fn, whose top exponent holds numbers but no infinity (its
    largest mantissa there is the NaN)."""
    EMAX: tl.constexpr = BIAS + FN  # the exponent of the largest finite value
    MANT: tl.constexpr = (1 << M) - 1 - FN  # its mantissa
    MAX_BITS: tl.constexpr = ((BIAS + EMAX) << M) | MANT
    OVER_BITS: tl.constexpr = MAX_BITS if FN else (2 * BIAS + 1) << M  # what x.to(dtype) gives from OVER on
    MAX64: tl.constexpr = ((1023 + EMAX) << 52) | (MANT << (52 - M))
    if x.dtype == tl.float64:
        w0, w1 = words2(seed, offset, j)
        b = x.to(tl.uint64, bitcast=True)
        a = b & 0x7FFFFFFFFFFFFFFF
        # OVER (the largest value plus half its gap) as the smallest double whose float32 rounding reaches it
        OVER64: tl.constexpr = 0x7FF0000000000000 if FN else (MAX64 | (1 << (51 - M))) - (1 << 28)
        mag = _sround_mag64(a, (w0.to(tl.uint64) << 32) | w1.to(tl.uint64), M, BIAS)
        sign = (b >> 63).to(tl.uint32) << (WIDTH - 1)
        over = a >= OVER64
        in_range = a <= MAX64
        nan_x = a > 0x7FF0000000000000
    else:
        b = x.to(tl.float32).to(tl.uint32, bitcast=True)  # exact for float16 and bfloat16
        a = b & 0x7FFFFFFF
        MAX32: tl.constexpr = ((127 + EMAX) << 23) | (MANT << (23 - M))
        OVER32: tl.constexpr = 0x7F800000 if FN else MAX32 | (1 << (22 - M))
        mag = _sround_mag32(a, word(seed, offset, j), M, BIAS)
        sign = (b >> 31) << (WIDTH - 1)
        over = a >= OVER32
        in_range = a <= MAX32
        nan_x = a > 0x7F800000
    return _sround_finish(in_range, nan_x, sign, mag, over, MAX_BITS, OVER_BITS, NAN_BITS, SATURATE)


@triton.jit
def stochastic_round(x, seed, offset, j, DTYPE: tl.constexpr, SATURATE: tl.constexpr):
    """stochastic_round(x, state, dtype, saturate) of element j: x (float16, bfloat16, float32 or float64) rounded
    to DTYPE (tl.bfloat16, tl.float16, tl.float8e4nv for torch.float8_e4m3fn or tl.float8e5 for
    torch.float8_e5m2), of lower precision than x; SATURATE clamps values past DTYPE's range to its largest. Takes
    x's words: word j (float64: words 2j, 2j + 1). Integer operations only: any launch gives our bits."""
    tl.static_assert(
        DTYPE == tl.bfloat16 or DTYPE == tl.float16 or DTYPE == tl.float8e4nv or DTYPE == tl.float8e5,
        "DTYPE must be tl.bfloat16, tl.float16, tl.float8e4nv or tl.float8e5",
    )
    M: tl.constexpr = 7 if DTYPE == tl.bfloat16 else 10 if DTYPE == tl.float16 else 3 if DTYPE == tl.float8e4nv else 2
    BIAS: tl.constexpr = 127 if DTYPE == tl.bfloat16 else 7 if DTYPE == tl.float8e4nv else 15
    FN: tl.constexpr = 1 if DTYPE == tl.float8e4nv else 0
    NAN_BITS: tl.constexpr = 0x7FC0 if DTYPE == tl.bfloat16 else 0x7E00 if DTYPE == tl.float16 else 0x7F
    WIDTH: tl.constexpr = DTYPE.primitive_bitwidth
    r = _sround_target(x, seed, offset, j, M, BIAS, FN, WIDTH, NAN_BITS, SATURATE)
    return r.to(tl.uint16 if WIDTH == 16 else tl.uint8).to(DTYPE, bitcast=True)
