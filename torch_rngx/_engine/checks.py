"""Argument checks shared by the public functions and the fake kernels: each error names its argument."""

import functools
import math
import numbers
import operator
import struct
import warnings

import torch

from .torch_private import peek_interpreter_stack, view_base

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INT_DTYPES = (torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.uint64)
STATE_DTYPES = (torch.int64, torch.uint64)
MAX_DIMS = 64  # csrc/kernels/job.h: RNGX_MAX_DIMS
_FLOATS = frozenset(FLOAT_DTYPES)
_PLAIN = frozenset({torch.Tensor, torch.nn.Parameter, torch.nn.Buffer})  # no subclass whose storage is elsewhere
NO_VIEW = (None, None)


class _Later:
    """A stateful call's key, drawn after its arguments are checked (by a step that checks its own state)."""

    def __repr__(self):
        return "LATER"


LATER = _Later()


def tensor(t, name):
    if type(t) is not torch.Tensor and not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")


def state(s, name="state", shape=None):
    """A key [seed, offset] or a batch of them, shape (*B, 2), int64 or uint64. With `shape` (the output's), a
    batched state must have one batch dim per output dim, each 1 or the output's size (docs: stream/)."""
    tensor(s, name)
    if s.dtype not in STATE_DTYPES:
        raise TypeError(f"{name} must be an int64 or uint64 tensor of [seed, offset] pairs, got dtype {s.dtype}")
    if s.dim() == 0 or s.shape[-1] != 2:
        raise ValueError(f"{name} must have shape (2,) or (*B, 2) = [seed, offset] pairs, got {tuple(s.shape)}")
    if shape is not None and s.dim() > 1:
        batch = tuple(s.shape[:-1])
        if len(batch) != len(shape) or any(b != 1 and b != n for b, n in zip(batch, shape)):
            raise ValueError(
                f"{name} of shape {tuple(s.shape)} does not broadcast to the output {tuple(shape)}: "
                f"a batched state needs shape (*B, 2) with one batch dim per output dim, each 1 or "
                f"the output's size"
            )
    if s.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} must be on the CPU or a CUDA device, got device {s.device}")
    if s.layout != torch.strided:  # any strides, though
        raise ValueError(f"{name} must be a strided (dense) tensor, got layout {s.layout}")
    if s.requires_grad:
        raise ValueError(f"{name} must not require grad")


def generator_state(s, name="state"):
    """A state that a step advances in place (a Generator's, a module's buffer): a contiguous int64 tensor of shape
    (2,) = [seed, offset]."""
    state(s, name)
    if s.dtype != torch.int64 or s.shape != (2,) or not s.is_contiguous():
        raise ValueError(
            f"{name} must be a Generator's: a contiguous int64 tensor of shape (2,) = [seed, offset], got "
            f"{s.dtype} {tuple(s.shape)} with strides {s.stride()}"
        )
    return s


def writable(x, owner, name, recorded):
    """An in-place write into x, checked before any key is drawn: never into the state the call draws from (owner, a
    state tensor), which it would overwrite. For torch's generator (owner None), whose draw cannot be given back, also
    what torch refuses to write, with torch's messages: with the write recorded (`recorded`: grad mode on), a leaf or a
    view of a leaf that requires grad; an inference tensor outside inference mode; a tensor with elements that share
    memory (a dim of stride 0). With a stream, torch's own refusal after the draw gives the blocks back (_step).
    Plain eager only: a compiled call is checked when traced, before it draws; torch.func transforms check their own
    writes."""
    if torch.compiler.is_compiling() or peek_interpreter_stack() is not None:
        return
    if owner is not None:
        if (
            type(owner) in _PLAIN
            and type(x) in _PLAIN
            and x.untyped_storage().data_ptr() == owner.untyped_storage().data_ptr()
        ):
            raise ValueError(
                f"{name} shares memory with the state the call draws from: writing it in place would overwrite the "
                "stream's [seed, offset]"
            )
        return
    if recorded and x.requires_grad:
        if x.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        base = view_base(x)
        if base is not None and base.is_leaf and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if x.is_inference() and not torch.is_inference_mode_enabled():
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a "
            "normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
        )
    strides = x.stride()
    if 0 in strides and any(st == 0 and n > 1 for n, st in zip(x.shape, strides)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )


def int_dtype(dtype, name):
    if dtype not in INT_DTYPES:
        raise TypeError(f"{name} must be an integer dtype of 8 to 64 bits (not bool), got {dtype}")


class DtypeError(TypeError, RuntimeError):
    """A tensor of a dtype the op does not take: a TypeError, and the RuntimeError torch raises there."""


def float_dtype(dtype, name):
    if dtype not in FLOAT_DTYPES:
        raise DtypeError(f"{name} must be float16, bfloat16, float32 or float64, got {dtype}")


def strided(x, name):
    """A plain dense tensor: not sparse, mkldnn or nested, and within the kernels' dims."""
    tensor(x, name)
    if x.layout != torch.strided or x.is_nested:
        raise ValueError(f"{name} must be a strided (dense) tensor, got layout {x.layout}{' (nested)' * x.is_nested}")
    if x.dim() > MAX_DIMS:
        raise ValueError(f"{name} may have at most {MAX_DIMS} dims, got {x.dim()}")


def float_tensor(x, name="x"):
    tensor(x, name)
    float_dtype(x.dtype, f"{name}'s dtype")
    strided(x, name)


def same_device(x, s, name="x"):
    """x and state on one device, except that a CPU state holding one key also serves CUDA inputs (docs: cuda/)."""
    if s.device.type == "cpu" and x.device.type == "cuda":
        if s.dim() > 1 and s.numel() > 2:
            raise ValueError(f"a batched state for {name} on {x.device} must be on that device, got one on the CPU")
        return
    if x.device != s.device and x.device.type != "meta" and s.device.type != "meta":
        raise ValueError(f"{name} is on {x.device} but state is on {s.device}")


def _isfinite(v):
    """math.isfinite as comparisons: torch.compile(dynamic=True) may trace a float default as a symbolic
    float, on which comparisons guard but math.isfinite breaks the graph."""
    return -math.inf < v < math.inf


def _as_float(v, name):
    try:
        return float(v)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be finite, got an int too large for a float") from None


def real(v, name):
    """A finite Python number (not a bool, not a tensor); returns it as float."""
    if type(v) is float and _isfinite(v):  # the common case, without the ABC check below
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    v = _as_float(v, name)
    if not _isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def probability(p, name="p"):
    if type(p) is float and 0.0 <= p <= 1.0:
        return p
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(p).__name__}")
    p = _as_float(p, name)
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {p}")
    return p


def dropout_probability(p):
    """The dropout family's p, refused with torch.nn.functional.dropout's message and the argument's name."""
    if not isinstance(p, bool) and isinstance(p, numbers.Real) and not 0.0 <= p <= 1.0:  # also NaN
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p} (argument p)")
    return probability(p)


# Below FLT_MAX plus half its ulp a double rounds to a finite float32 (the tie rounds to infinity).
_FLOAT32_LIMIT = float.fromhex("0x1.ffffffp+127")


def _finite_in(v, dtype):
    """v is finite in the compute type of dtype: float64 for float64, float32 for the others."""
    return _isfinite(v) and (dtype in (None, torch.float64) or abs(v) < _FLOAT32_LIMIT)


def half_width(half, name="half", dtype=None):
    if (
        type(half) is float
        and 0.0 <= half
        and 2 * half < (math.inf if dtype in (None, torch.float64) else _FLOAT32_LIMIT)
    ):
        return half  # the common case of the checks below
    half = real(half, name)
    if half < 0:
        raise ValueError(f"{name} must be >= 0, got {half}")
    if not _finite_in(2 * half, dtype):
        raise ValueError(f"{name} is too large: 2 * {name} must be finite in the compute type of {dtype}, got {half}")
    return half


def round_to(v, dtype):
    """v rounded to dtype as torch converts a double (through float32 for the 16-bit types); inf past the
    range. elements.h's rngx_round_to, in Python."""
    if dtype in (None, torch.float64):
        return v
    try:
        f = struct.unpack("<f", struct.pack("<f", v))[0]
        if dtype == torch.float16:
            f = struct.unpack("<e", struct.pack("<e", f))[0]
    except OverflowError:
        return math.copysign(math.inf, v)
    if dtype == torch.bfloat16:  # round to nearest even on the float32 bits, as convert.h
        b = struct.unpack("<I", struct.pack("<f", f))[0]
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        f = struct.unpack("<f", struct.pack("<I", b))[0]
    return f


def interval(low, high, dtype=None):
    """low <= high, all finite; for <= 32-bit dtypes low and high rounded to the dtype, and their difference in
    float32 rounded to it, finite too: the numbers the kernels compute with (docs: stream/, "uniform")."""
    if type(low) is not float or not -math.inf < low < math.inf:
        low = real(low, "low")
    if type(high) is not float or not -math.inf < high < math.inf:
        high = real(high, "high")
    if low > high:
        raise ValueError(f"low must be <= high, got low={low}, high={high}")
    if not -math.inf < high - low < math.inf:
        raise ValueError(f"high - low must be finite, got low={low}, high={high}")
    # Under torch.compile the bounds may be symbolic floats, which the rounding cannot take: there the kernel
    # checks the same rule when it runs (RuntimeError, csrc/glue.h).
    if (
        dtype not in (None, torch.float64)
        and not torch.compiler.is_compiling()
        and not _finite_bounds(low, high, dtype)
    ):
        raise ValueError(
            f"low, high and high - low must be finite in {dtype}, the output dtype, got low={low}, high={high}"
        )
    return low, high


@functools.lru_cache(maxsize=256)  # a model asks for the same few intervals on every step
def _finite_bounds(low, high, dtype):
    lo, hi = round_to(low, dtype), round_to(high, dtype)
    return all(_isfinite(v) for v in (lo, hi, round_to(round_to(hi - lo, torch.float32), dtype)))


def size(sz, name="size"):
    if isinstance(sz, (int, torch.SymInt)):
        sz = (sz,)
    try:
        sz = tuple(sz)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints, got {type(sz).__name__}") from None
    for n in sz:
        if isinstance(n, bool) or not isinstance(n, (int, torch.SymInt)):
            raise TypeError(f"{name} must be a sequence of ints, got an element {n!r}")
        if isinstance(n, int) and not 0 <= n < 1 << 63:
            raise ValueError(f"{name} must hold non-negative int64 values, got {n}")
    if len(sz) > MAX_DIMS:
        raise ValueError(f"{name} may have at most {MAX_DIMS} dims, got {len(sz)}")
    if all(isinstance(n, int) for n in sz) and math.prod(sz) * 8 >= 1 << 63:
        raise ValueError(f"{name} {tuple(sz)} has too many elements for an int64 tensor")
    return list(sz)


def integer(v, name):
    """An int argument as torch's parser takes one: an int or SymInt as it is, anything else with __index__ (a NumPy
    integer) as its int. A bool, a float or a tensor is refused, naming the argument (a tensor would be read with
    .item(), which a compiled graph cannot capture)."""
    if isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool):
        return v
    if isinstance(v, (bool, torch.Tensor)) or not hasattr(type(v), "__index__"):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    return operator.index(v)


def num(n, name="num"):
    n = integer(n, name)
    if isinstance(n, int) and not 1 <= n < 1 << 63:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n


def fold_data(data, s, name="data") -> torch.Tensor:
    """fold_in's data as an int64 tensor on the state's device: one value, or one per key."""
    if isinstance(data, torch.Tensor):
        if data.dtype not in STATE_DTYPES:
            raise TypeError(f"{name} must be an int in [0, 2^64) or an int64/uint64 tensor, got dtype {data.dtype}")
        if data.device != s.device:
            raise ValueError(f"{name} is on {data.device} but state is on {s.device}")
        try:
            return torch.broadcast_to(data, s.shape[:-1]).contiguous()
        except RuntimeError:
            raise ValueError(
                f"{name} of shape {tuple(data.shape)} does not broadcast to the state's batch shape "
                f"{tuple(s.shape[:-1])}"
            ) from None
    if isinstance(data, bool) or not isinstance(data, int):
        raise TypeError(f"{name} must be an int in [0, 2^64) or an int64/uint64 tensor, got {type(data).__name__}")
    if not 0 <= data < 1 << 64:
        raise ValueError(f"{name} must be in [0, 2^64), got {data}")
    return torch.tensor(data - (1 << 64) if data >= 1 << 63 else data, dtype=torch.int64, device=s.device)


def broadcasts(t, shape, name, target):
    """t broadcasts to `shape` without growing it."""
    try:
        ok = torch.broadcast_shapes(t.shape, shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} of shape {tuple(t.shape)} does not broadcast to {target} {tuple(shape)}")


def global_view(shape, global_shape, global_start):
    """A global view (docs: stream/, "Global view"): the tensor of `shape` is the block of a tensor of global_shape
    that starts at global_start. Returns both as lists, or (None, None) for no view."""
    if (global_shape is None) != (global_start is None):
        raise ValueError("global_shape and global_start go together: pass both or neither")
    if global_shape is None:
        return None, None
    gshape, gstart = size(global_shape, "global_shape"), size(global_start, "global_start")
    for name, v in (("global_shape", gshape), ("global_start", gstart)):
        if len(v) != len(shape):
            raise ValueError(f"{name} needs one entry per dim of the tensor ({len(shape)}), got {len(v)}")
    for d, (n, g, s) in enumerate(zip(shape, gshape, gstart)):
        if all(isinstance(v, int) for v in (n, g, s)) and s + n > g:
            raise ValueError(
                f"global_shape and global_start do not contain the tensor: its dim {d} (size {n}) "
                f"starting at global_start[{d}]={s} ends past global_shape[{d}]={g}"
            )
    return gshape, gstart


def keyed(x, key, view, name="x"):
    """`key` for an output laid out like x (the global tensor's under the view): a key or a batch of them that
    broadcasts to it, on x's device."""
    state(key, shape=x.shape if view[0] is None else view[0])
    same_device(x, key, name)


# ---- the samplers' validators, named by the parameters they check. Each is shared by the public functions and the
# fake kernels (so compile-time checks equal eager ones) and returns the op's parameters as the kernels take them,
# ending with the global view. key=LATER checks everything but the key, which a stateful call draws afterwards. The
# common case (a plain tensor, Python floats, no view) makes no further call. ----


def float_like(like, key, dtype=None, global_shape=None, global_start=None, name="like"):
    """A float output laid out like `like` (a dense tensor), in `dtype` or like's. Returns that dtype and the view."""
    if type(like) is not torch.Tensor or like.layout != torch.strided or like.is_nested or like.dim() > MAX_DIMS:
        strided(like, name)
    view = (
        NO_VIEW
        if global_shape is None and global_start is None
        else global_view(like.shape, global_shape, global_start)
    )
    if key is not LATER:
        keyed(like, key, view, name)
    out = like.dtype if dtype is None else dtype
    if out not in _FLOATS:
        float_dtype(out, "dtype" if dtype is not None else f"{name}'s dtype")
    return out, view


def float_x(x, key, global_shape=None, global_start=None, name="x"):
    """A float tensor that the op reads, its output laid out like it. Returns the view."""
    if (
        type(x) is not torch.Tensor
        or x.dtype not in _FLOATS
        or x.layout != torch.strided
        or x.is_nested
        or x.dim() > MAX_DIMS
    ):
        float_tensor(x, name)
    view = (
        NO_VIEW if global_shape is None and global_start is None else global_view(x.shape, global_shape, global_start)
    )
    if key is not LATER:
        keyed(x, key, view, name)
    return view


def size_dtype(size_, key, dtype, global_shape=None, global_start=None):
    """An output of `size` in an integer dtype (raw words)."""
    size_ = size(size_)
    view = global_view(size_, global_shape, global_start)
    if key is not LATER:
        state(key, shape=size_ if view[0] is None else view[0])
    int_dtype(dtype, "dtype")
    return size_, *view


def like_interval(like, key, low, high, dtype, global_shape=None, global_start=None, name="like"):
    """[low, high), finite in the output dtype."""
    out, view = float_like(like, key, dtype, global_shape, global_start, name)
    return *interval(low, high, out), dtype, *view


def like_mean_std(like, key, mean, std, dtype, global_shape=None, global_start=None, name="like"):
    out, view = float_like(like, key, dtype, global_shape, global_start, name)
    return *mean_std(mean, std, out), dtype, *view


def like_rate(like, key, rate, dtype, global_shape=None, global_start=None, name="like"):
    """rate: a finite number > 0 (values are E / rate in double, so any such rate works for every dtype)."""
    _, view = float_like(like, key, dtype, global_shape, global_start, name)
    rate = real(rate, "rate")
    if not rate > 0:
        raise ValueError(f"rate must be > 0, got {rate}")
    return rate, dtype, *view


def x_half(x, key, half, global_shape=None, global_start=None, name="x"):
    """A half-width >= 0 whose double is finite in x's compute type."""
    view = float_x(x, key, global_shape, global_start, name)
    return half_width(half, dtype=x.dtype), *view


def x_p(x, key, p, global_shape=None, global_start=None, name="x"):
    """A probability p in [0, 1]."""
    view = float_x(x, key, global_shape, global_start, name)
    return probability(p), *view


def x_channel_p(x, key, p, global_shape=None, global_start=None, name="x"):
    """One decision per (batch, channel): x has both dims; a batched key may vary along those two only."""
    float_tensor(x, name)
    if x.dim() < 2:
        raise ValueError(f"{name} must have at least 2 dims (batch, channel, ...) for channel dropout, got {x.dim()}")
    view = global_view(x.shape, global_shape, global_start)
    if key is not LATER:
        keyed(x, key, view, name)
        if key.dim() > 3 and any(b != 1 for b in key.shape[2:-1]):
            raise ValueError(
                f"state of shape {tuple(key.shape)} varies along a spatial dim: channel dropout makes one "
                f"decision per (batch, channel), so only the first two batch dims may be larger than 1"
            )
    return probability(p), *view


def dropout_args(x, p, training, inplace, global_shape=None, global_start=None, input_too=False):
    """The stateful dropout family's arguments, refused with torch.nn.functional's messages. Returns p and the view.
    x's dtype and layout are dropout_input's: torch returns any tensor when it does not draw. input_too: check them
    here when the call draws (training, p > 0), in the same frame (plain dropout's path: a frame fewer)."""
    if not isinstance(x, torch.Tensor):
        float_tensor(x, "input")  # names the argument
    if type(p) is not float or not 0.0 <= p <= 1.0:
        p = dropout_probability(p)
    view = (
        NO_VIEW if global_shape is None and global_start is None else global_view(x.shape, global_shape, global_start)
    )
    if type(training) is not bool or type(inplace) is not bool:
        raise TypeError(
            f"training and inplace must be bools, got {type(training).__name__} and {type(inplace).__name__}"
        )
    if input_too and training and p != 0:
        dropout_input(x)
    return p, *view


def dropout_input(x):
    """A tensor the dropout family draws for: a strided float tensor of at most MAX_DIMS dims."""
    if (
        type(x) is not torch.Tensor
        or x.dtype not in _FLOATS
        or x.layout != torch.strided
        or x.is_nested
        or x.dim() > MAX_DIMS
    ):
        float_tensor(x, "input")


def adam_operands(param, grad, exp_avg, exp_avg_sq, step):
    """rngx::adam_sround_'s tensors, as its C++ checks them: a contiguous bfloat16 or float16 param; grad of its dtype
    and the float32 moments, each contiguous, of its shape and on its device; step >= 1."""
    if param.dtype not in (torch.bfloat16, torch.float16) or not param.is_contiguous():
        raise ValueError(f"param must be a contiguous bfloat16 or float16 tensor, got {param.dtype}")
    for name, t, dtype in (
        ("grad", grad, param.dtype),
        ("exp_avg", exp_avg, torch.float32),
        ("exp_avg_sq", exp_avg_sq, torch.float32),
    ):
        if t.dtype != dtype or t.shape != param.shape or t.device != param.device or not t.is_contiguous():
            raise ValueError(f"{name} must be a contiguous {dtype} tensor of param's shape and device")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")


# stochastic_round's targets by x's dtype: the float types of fewer mantissa bits (csrc/kernels/elements.h:
# rngx_sround_pair). torch.finfo(target).eps > torch.finfo(x.dtype).eps for each.
ROUND_TARGETS = {
    torch.float16: (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2),
    torch.bfloat16: (torch.float8_e4m3fn, torch.float8_e5m2),
    torch.float32: (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2),
    torch.float64: (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2),
}
_ROUND_TO = frozenset(ROUND_TARGETS[torch.float32])


def x_round(x, key, saturate, dtype, global_shape=None, global_start=None, name="x"):
    """stochastic_round's arguments, in the kernel's order: a float x; saturate a bool; a target dtype among
    bfloat16, float16, float8_e4m3fn and float8_e5m2 of lower precision than x's. Returns saturate, dtype and the
    view."""
    view = float_x(x, key, global_shape, global_start, name)
    if type(saturate) is not bool:
        raise TypeError(f"saturate must be a bool, got {type(saturate).__name__}")
    if dtype not in ROUND_TARGETS[x.dtype]:
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
        if dtype not in _ROUND_TO:
            raise DtypeError(f"dtype must be bfloat16, float16, float8_e4m3fn or float8_e5m2, got {dtype}")
        raise DtypeError(
            f"dtype must be of lower precision than {name}'s dtype: {dtype} is not, for {name} of {x.dtype} (the "
            f"targets of {x.dtype}: {', '.join(str(d).split('.')[1] for d in ROUND_TARGETS[x.dtype])})"
        )
    return saturate, dtype, *view


def mean_std(mean, std, dtype, strict=False):
    """mean finite, std finite and >= 0 (> 0 when strict), both finite in the compute type (float32 for <= 32-bit
    types)."""
    if type(mean) is not float or not -math.inf < mean < math.inf:
        mean = real(mean, "mean")
    if type(std) is not float:
        if isinstance(std, bool) or not isinstance(std, numbers.Real):
            raise TypeError(f"std must be a real number, got {type(std).__name__}")
        std = _as_float(std, "std")
    if not (std > 0 if strict else std >= 0) or not std < math.inf:  # also rejects NaN
        raise ValueError(f"std must be finite and {'> 0' if strict else '>= 0'}, got {std}")
    limit = math.inf if dtype in (None, torch.float64) else _FLOAT32_LIMIT  # _finite_in, for both
    if not (abs(mean) < limit and std < limit):
        raise ValueError(f"mean and std must be finite in the compute type of {dtype}, got mean={mean}, std={std}")
    return mean, std


@functools.lru_cache(maxsize=256)
def value_between(a, b, dtype):
    """Some value of dtype lies in [a, b] (a < b). A rounded bound inside does; else, with ra < a < b < rb, values
    strictly between ra and rb exist (and lie in [a, b]) iff their midpoint rounds to neither."""
    ra, rb = round_to(a, dtype), round_to(b, dtype)
    if a <= ra <= b or a <= rb <= b:
        return True
    if not (ra < a and rb > b):  # both round past the same end: no value between
        return False
    return not (_isfinite(ra) and _isfinite(rb)) or round_to((ra + rb) / 2, dtype) not in (ra, rb)


def like_p(like, key, p, global_shape=None, global_start=None, name="like"):
    """p: a probability, or a real tensor broadcastable to like's shape (returned cast to like's dtype and
    expanded to its shape: the kernel reads it in place, stride-0 dims and all); then the global view."""
    _, view = float_like(like, key, None, global_shape, global_start, name)
    if not isinstance(p, torch.Tensor):
        return probability(p), *view
    if p.is_complex() or p.dtype == torch.bool or not (p.is_floating_point() or p.dtype in INT_DTYPES):
        raise TypeError(f"p must be a real number or a real tensor, got a tensor of dtype {p.dtype}")
    if p.device != like.device:
        raise ValueError(f"p is on {p.device} but {name} is on {like.device}")
    if p.requires_grad:
        raise ValueError("p must not require grad: the draw is not differentiable")
    broadcasts(p, like.shape, "p", f"{name}'s shape")
    return p.to(like.dtype).expand(like.shape), *view


def probabilities(p):
    """A tensor p's values all in [0, 1] (NaN refused), for the eager public functions on CPU tensors: a
    data-dependent check, so neither the fake kernels, compiled code nor torch.func transforms make it (the CPU
    kernel checks again). Returns p."""
    if not isinstance(p, torch.Tensor):
        return p
    if hasattr(p, "to_local"):  # a DTensor: each rank checks its own block
        probabilities(p.to_local())
        return p
    if (
        p.device.type == "cpu"
        and not torch.compiler.is_compiling()
        and peek_interpreter_stack() is None
        and p.numel()
        and not _in_unit(p)
    ):
        raise ValueError("p must hold probabilities in [0, 1] (no NaN)")
    return p


def _in_unit(p):
    lo, hi = torch.aminmax(p)  # one pass; NaN propagates, and fails both comparisons
    return bool(lo >= 0) and bool(hi <= 1)


RANDINT_DTYPES = {
    torch.uint8: (0, 1 << 8),
    torch.int8: (-(1 << 7), 1 << 7),
    torch.int16: (-(1 << 15), 1 << 15),
    torch.int32: (-(1 << 31), 1 << 31),
    torch.int64: (-(1 << 63), (1 << 63) - 1),
}


def randint_draw_dtype(dtype, low, high):
    """The dtype randint draws in for output `dtype`: itself, or int64 for a float dtype and uint8 for bool (the
    draws converted, as torch's randint_like allows), with torch's warning where a float dtype cannot hold every
    value and torch's error where bool cannot."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    if dtype == torch.bool:
        if isinstance(high, int) and not isinstance(high, bool) and high > 2:
            raise ValueError(f"high must be <= 2 for dtype torch.bool, got {high}")
        return torch.uint8
    if dtype.is_floating_point:
        digits = int(-math.log2(torch.finfo(dtype).eps)) + 1
        ints = [v for v in (low, high) if isinstance(v, int) and not isinstance(v, bool)]
        outside = len(ints) == 2 and not (-(1 << digits) <= low and high - 1 <= 1 << digits)
        if outside and not torch.compiler.is_compiling():  # a warning would break a fullgraph trace
            warnings.warn(
                f"randint_like: [low, high) = [{low}, {high}) leaves [-(2^{digits}), 2^{digits}], where {dtype} holds "
                "every integer: values are rounded to it, as torch's",
                UserWarning,
                stacklevel=3,
            )
        return torch.int64
    return dtype


def like_int_range(like, key, low, high, dtype, global_shape=None, global_start=None, name="like"):
    """[low, high) within dtype (high may be one past its largest value; int64: high <= 2^63 - 1, the schema's
    int); then the global view."""
    if type(like) is not torch.Tensor or like.layout != torch.strided or like.is_nested or like.dim() > MAX_DIMS:
        strided(like, name)
    view = (
        NO_VIEW
        if global_shape is None and global_start is None
        else global_view(like.shape, global_shape, global_start)
    )
    if key is not LATER:
        keyed(like, key, view, name)
    if dtype not in RANDINT_DTYPES:
        raise TypeError(f"dtype must be uint8, int8, int16, int32 or int64, got {dtype}")
    if type(low) is not int or type(high) is not int:
        low, high = integer(low, "low"), integer(high, "high")
    if isinstance(low, int) and isinstance(high, int):
        if not low < high:
            raise ValueError(f"low must be < high, got low={low}, high={high}")
        lo, hi = RANDINT_DTYPES[dtype]
        if not (lo <= low and high <= hi):
            raise ValueError(f"[low, high) = [{low}, {high}) does not fit {dtype}: low >= {lo} and high <= {hi} needed")
    return low, high, dtype, *view


# The permutations' output dtypes and the largest n each holds: every value 0 .. n - 1 exact.
RANDPERM_LIMITS = {
    torch.uint8: 1 << 8,
    torch.int8: 1 << 7,
    torch.int16: 1 << 15,
    torch.int32: 1 << 31,
    torch.int64: (1 << 63) - 1,
    torch.float16: (1 << 11) + 1,
    torch.bfloat16: (1 << 8) + 1,
    torch.float32: (1 << 24) + 1,
    torch.float64: (1 << 53) + 1,
}


def permutation(n, key, dtype, device=None):
    """n an int >= 0 that dtype holds; key LATER, (2,) or batched (*B, 2) (one permutation per key); device None or
    the key's device (the permutation is made where its key is). Returns n."""
    n = integer(n, "n")
    if dtype not in RANDPERM_LIMITS:
        raise TypeError(f"dtype must be one of {', '.join(str(d) for d in RANDPERM_LIMITS)}, got {dtype}")
    if isinstance(n, int) and not 0 <= n <= RANDPERM_LIMITS[dtype]:
        raise ValueError(f"n must be in [0, {RANDPERM_LIMITS[dtype]}] for {dtype}, got {n}")
    if key is LATER:
        return n
    state(key)
    if key.dim() > 1:
        size([*key.shape[:-1], n], "the output's shape (*B, n)")
    if device is not None:
        want = torch.device(device)
        if want.type != key.device.type or (want.index is not None and want != key.device):
            raise ValueError(
                f"device is {want} but state is on {key.device}: the permutation is made on its state's device"
            )
    return n


def categories(probs, key, num_samples, replacement):
    """torch.multinomial's argument rules: probs (`input`) 1-D (C,) or 2-D (R, C) float, C >= 1; num_samples >= 1,
    at most C without replacement; key LATER, (2,), or (R, 2) for one key per row of a 2-D input. Returns the key as
    the race takes it, num_samples as an int, then draws and need (rngx::race)."""
    float_tensor(probs, "input")
    if probs.dim() not in (1, 2):
        raise ValueError(f"input must be 1-D or 2-D, got {probs.dim()} dims")
    cats = probs.shape[-1]
    if cats == 0:
        raise ValueError("input must have at least one category (its last dim is 0)")
    num_samples = integer(num_samples, "num_samples")
    if not isinstance(replacement, bool):
        raise TypeError(f"replacement must be a bool, got {type(replacement).__name__}")
    if isinstance(num_samples, int) and num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if not replacement and isinstance(num_samples, int) and isinstance(cats, int) and num_samples > cats:
        raise ValueError(
            f"num_samples ({num_samples}) must be <= the number of categories ({cats}) without replacement"
        )
    draws, need = (num_samples, 1) if replacement else (1, num_samples)
    if key is LATER:
        return key, num_samples, draws, need
    state(key)
    if key.dim() > 1 and (probs.dim() != 2 or tuple(key.shape) != (probs.shape[0], 2)):
        raise ValueError(
            f"state of shape {tuple(key.shape)}: a batched state for multinomial must be (R, 2), one key "
            f"per row of a 2-D input (R, C), got input {tuple(probs.shape)}"
        )
    same_device(probs, key, "input")
    if key.dim() > 1:
        key = key.reshape(key.shape[0], 1, 1, 2)
    return key, num_samples, draws, need


def weights(probs, need):
    """torch.multinomial's value checks for the eager public functions on CPU tensors (data-dependent, so compiled
    code and torch.func transforms leave them to the CPU kernel): every weight finite and >= 0, and each row with at
    least `need` positive weights (1 with replacement, num_samples without)."""
    if (
        probs.device.type != "cpu"
        or torch.compiler.is_compiling()
        or peek_interpreter_stack() is not None
        or probs.numel() == 0
    ):
        return
    if not bool(torch.isfinite(probs).all()) or bool((probs < 0).any()):
        raise ValueError("input must hold finite weights >= 0 (no inf, NaN or negative values)")
    if bool(((probs > 0).sum(-1) < need).any()):
        raise ValueError(
            "input has a row with no positive weight"
            if need == 1
            else f"input has a row with fewer than num_samples = {need} positive weights: sampling without "
            f"replacement needs that many"
        )


# ---- issue 43's samplers: cauchy, log_normal, geometric, rrelu, and normal with tensor mean and std ----


def _positive(v, name):
    v = real(v, name)
    if not v > 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    return v


def like_median_sigma(like, key, median, sigma, dtype, global_shape=None, global_start=None, name="like"):
    """cauchy: median finite, sigma finite and > 0, both finite in the compute type (float32 for <= 32-bit types)."""
    out, view = float_like(like, key, dtype, global_shape, global_start, name)
    median, sigma = real(median, "median"), _positive(sigma, "sigma")
    if not (_finite_in(median, out) and _finite_in(sigma, out)):
        raise ValueError(f"median and sigma must be finite in the compute type of {out}, got {median} and {sigma}")
    return median, sigma, dtype, *view


def like_log_normal(like, key, mean, std, dtype, global_shape=None, global_start=None, name="like"):
    """log_normal: mean finite, std finite and > 0 (the values are computed in double for every dtype)."""
    _, view = float_like(like, key, dtype, global_shape, global_start, name)
    return real(mean, "mean"), _positive(std, "std"), dtype, *view


def like_open_p(like, key, p, dtype, global_shape=None, global_start=None, name="like"):
    """geometric: a probability of success p in (0, 1), as torch's geometric_."""
    _, view = float_like(like, key, dtype, global_shape, global_start, name)
    p = real(p, "p")
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return p, dtype, *view


def x_lower_upper(x, key, lower, upper, global_shape=None, global_start=None, name="x"):
    """rrelu: lower <= upper, the bounds of uniform(lower, upper) in x's dtype (finite there, as uniform's)."""
    view = float_x(x, key, global_shape, global_start, name)
    lower, upper = real(lower, "lower"), real(upper, "upper")
    if lower > upper:
        raise ValueError(f"lower must be <= upper, got lower={lower}, upper={upper}")
    if not torch.compiler.is_compiling() and not (
        _isfinite(upper - lower) and (x.dtype == torch.float64 or _finite_bounds(lower, upper, x.dtype))
    ):
        raise ValueError(f"lower, upper and upper - lower must be finite in {x.dtype}, got {lower} and {upper}")
    return lower, upper, *view


def like_mean_std_tensors(like, key, mean, std, global_shape=None, global_start=None, name="like"):
    """normal_tensor: mean and std real tensors broadcastable to like's shape (a float like), returned cast to like's
    dtype and expanded to its shape (the kernel reads them in place, stride-0 dims and all); then the view."""
    _, view = float_like(like, key, None, global_shape, global_start, name)
    out = []
    for t, arg in ((mean, "mean"), (std, "std")):
        tensor(t, arg)
        if t.is_complex() or t.dtype == torch.bool or not (t.is_floating_point() or t.dtype in INT_DTYPES):
            raise TypeError(f"{arg} must be a real tensor, got dtype {t.dtype}")
        if t.device != like.device:
            raise ValueError(f"{arg} is on {t.device} but {name} is on {like.device}")
        if t.requires_grad:
            raise ValueError(f"{arg} must not require grad: the draw is not differentiable")
        broadcasts(t, like.shape, arg, f"{name}'s shape")
        out.append(t.to(like.dtype).expand(like.shape))
    return *out, *view


def normal_args(like, key, mean, std, dtype, global_shape=None, global_start=None, name="like"):
    """normal's arguments: floats (the op "normal"), or a tensor mean or std ("normal_tensor", a float beside it taken
    as a tensor of like's dtype; the output in like's dtype). Returns the op and its parameters."""
    if not (isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor)):
        return "normal", like_mean_std(like, key, mean, std, dtype, global_shape, global_start, name)
    if dtype is not None and dtype != getattr(like, "dtype", None):
        raise ValueError(f"dtype: with a tensor mean or std the output takes {name}'s dtype, got dtype={dtype}")
    device = getattr(like, "device", None)
    full = [
        v if isinstance(v, torch.Tensor) else torch.tensor(real(v, n), device=device)
        for v, n in ((mean, "mean"), (std, "std"))
    ]
    m, s, *view = like_mean_std_tensors(like, key, *full, global_shape, global_start, name)
    return "normal_tensor", (m, deviations(s), *view)


def deviations(std):
    """A tensor std's values all >= 0 (NaN refused), for the eager public functions on CPU tensors (the CPU kernel
    checks again; compiled code and torch.func transforms leave it to it), as torch.normal refuses them."""
    if hasattr(std, "to_local"):  # a DTensor: each rank checks its own block
        deviations(std.to_local())
    elif (
        std.device.type == "cpu"
        and not torch.compiler.is_compiling()
        and peek_interpreter_stack() is None
        and std.numel()
        and not bool(std.min() >= 0)
    ):
        raise ValueError("std must hold values >= 0 (no NaN)")
    return std
