"""The torch-rngx stream inside Triton kernels (docs/device_api.md): `@triton.jit` device functions that give an
element exactly the bits our ops give it; their arguments come from torch_rngx.params (re-exported here).

Keys and positions are uint64 (block numbers wrap at 2^64, as docs/stream.md says). Counters reach `tl.philox`
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
    """Words 2j and 2j + 1: element j of a 2-word op (float64 uniform, dropout, ...; float32 normal)."""
    j = j.to(tl.uint64)
    r0, r1, r2, r3 = philox_block(seed, offset + (j >> 1))
    odd = (j & 1) != 0
    return tl.where(odd, r2, r0), tl.where(odd, r3, r1)


@triton.jit
def words4(seed, offset, j):
    """Words 4j .. 4j + 3: element j of a 4-word op (float64 normal)."""
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
