"""The stream's known answers (docs/stream.md, version 1.0): one list of cases, each op x dtype x layout, and how
torch_rngx and the NumPy reference (tests/reference.py) compute them. `python tests/kat/kat.py` writes
stream-1.0.json (the answers, from torch_rngx, each checked against the reference first) and stream-1.0.h (the
same for the CUDA kernels' emulator test, tests/cuda_emu). An op added later is one line in OPS (and one branch
in tests/cuda_emu/test_cuda_emu.cpp's check_kat, which calls the CUDA kernel); tests/test_kat.py fails while an op
of the registry (torch_rngx._engine.spec and the rngx ops) has no case. Cases are only ever added: stream 1.0's answers
never change.

Every value is stored as its bit pattern (hex, the dtype's width), so NaN, -0 and every float are exact."""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

STREAM = "1.0"
JSON_PATH = os.path.join(HERE, f"stream-{STREAM}.json")
HEADER_PATH = os.path.join(HERE, f"stream-{STREAM}.h")
U64 = 1 << 64
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")

# entry: (dtypes, parameters, first argument[, op]). One line per op (the entry's name, unless given): torch_rngx
# calls functional.<op>(first, state, *parameters) and the reference <op>_ref(shape or x, state, dtype,
# *parameters). The first argument: "shape" (and dtype=), "like" (a tensor of the output dtype), "x" (the input
# values in the output dtype), "like+dtype" (a float32 tensor and dtype=), "like+p" (bernoulli with the tensor p of
# `probabilities`, in like's dtype), "like+mean+std" (normal_tensor: mean `input_values`, std `probabilities`, in
# like's dtype). randint's ranges up to 2^32 take two words per element, int64's wider ones
# four: an entry each; exponential's clamps (docs/stream.md) an entry each, the rate taking E / rate below and above
# every dtype's range. The ops that are not elementwise take their own first arguments (NOT_ELEMENTWISE, below).
OPS = {
    "bits": (INTS, {}, "shape"),
    "uniform": (FLOATS, {"low": -2.0, "high": 3.0}, "like"),
    "quantize_noise": (FLOATS, {"half": 0.5}, "x"),
    "dropout": (FLOATS, {"p": 0.3}, "x"),
    "normal": (FLOATS, {"mean": 0.25, "std": 1.5}, "like"),
    "truncated_normal": (FLOATS, {"mean": 0.5, "std": 2.0, "a": -1.0, "b": 3.3}, "like"),
    "bernoulli": (FLOATS, {"p": 0.3}, "like"),
    "randint": (("uint8", "int8", "int16", "int32", "int64"), {"low": 3, "high": 103}, "like+dtype"),
    "randint_wide": (("int64",), {"low": -(1 << 40), "high": (1 << 41) + 12345}, "like+dtype", "randint"),
    "bernoulli_tensor": (FLOATS, {}, "like+p"),
    "exponential": (FLOATS, {"rate": 1.5}, "like"),
    "exponential_underflow": (FLOATS, {"rate": 1e45}, "like", "exponential"),
    "exponential_overflow": (FLOATS, {"rate": 1e-310}, "like", "exponential"),
    # randperm(n, state, dtype=): n = the layout's last dim, a batched layout's keys one permutation each
    "randperm": (("int64", "float16"), {}, "n"),
    # multinomial(probs, state, num_samples, replacement): probs (the layout's rows, CATEGORIES) of `weights` in
    # the dtype, num_samples = the layout's last dim, a batched layout's keys one per row
    "multinomial": (("float32", "float64"), {"replacement": True}, "probs"),
    "multinomial_without": (("float32", "float64"), {"replacement": False}, "probs", "multinomial"),
    # split(state, num) and fold_in(state, data) on the layout's keys (int64, or the same bits as uint64)
    "split": (("int64", "uint64"), {"num": 3}, "state"),
    "fold_in": (("int64", "uint64"), {"data": 9}, "state"),
    "fold_in_wrap": (("int64",), {"data": U64 - 2}, "state", "fold_in"),
    # stochastic_round(x, state, dtype, saturate): x of the case's dtype holding `round_inputs`, rounded to the
    # target `dtype`; its values are the target's bits, and the case also stores x's bits
    "stochastic_round": (("float16", "float32", "float64"), {"dtype": "bfloat16", "saturate": False}, "x+dtype"),
    "stochastic_round_float16": (("float32", "float64"), {"dtype": "float16", "saturate": False}, "x+dtype",
                                 "stochastic_round"),
    "stochastic_round_e4m3fn": (FLOATS, {"dtype": "float8_e4m3fn", "saturate": False}, "x+dtype", "stochastic_round"),
    "stochastic_round_e5m2": (FLOATS, {"dtype": "float8_e5m2", "saturate": False}, "x+dtype", "stochastic_round"),
    "stochastic_round_saturate": (("float32", "float64"), {"dtype": "bfloat16", "saturate": True}, "x+dtype",
                                  "stochastic_round"),
    "stochastic_round_saturate_float16": (("float32",), {"dtype": "float16", "saturate": True}, "x+dtype",
                                          "stochastic_round"),
    "stochastic_round_saturate_e5m2": (("float32", "float64"), {"dtype": "float8_e5m2", "saturate": True}, "x+dtype",
                                       "stochastic_round"),
    # issue 43's ops: normal with the tensor mean `input_values` and std `probabilities` ("like+mean+std"); alpha
    # dropout at p = 1 (x * 0) an entry of its own; geometric's counts past float16's range an entry of their own
    "normal_tensor": (FLOATS, {}, "like+mean+std"),
    "alpha_dropout": (FLOATS, {"p": 0.3}, "x"),
    "alpha_dropout_all": (FLOATS, {"p": 1.0}, "x", "alpha_dropout"),
    "rrelu": (FLOATS, {"lower": 0.125, "upper": 1.0 / 3}, "x"),
    "cauchy": (FLOATS, {"median": 0.5, "sigma": 2.0}, "like"),
    "log_normal": (FLOATS, {"mean": 0.25, "std": 1.5}, "like"),
    "geometric": (FLOATS, {"p": 0.3}, "like"),
    "geometric_rare": (FLOATS, {"p": 1e-5}, "like", "geometric"),
}
NOT_ELEMENTWISE = ("randperm", "multinomial", "split", "fold_in")  # no global view: every layout but "global"
CATEGORIES = 9

# name: (shape, state, global_shape, global_start). Odd sizes, so a normal pair is cut at the end, and the global
# view's block starts mid-pair. The keys: 0; the 2^32 carry of the block counter (offset 2^32 - 2, all-ones seed);
# the 2^64 wrap (offset 2^64 - 1); one key per row of a (2, 5) output; a (2, 3) block at (1, 1) of a (4, 5) tensor.
LAYOUTS = {
    "zero": ((7,), [0, 0], None, None),
    "carry": ((7,), [U64 - 1, (1 << 32) - 1], None, None),
    "wrap": ((7,), [1 << 32, U64 - 1], None, None),
    "batched": ((2, 5), [[[5, 9]], [[U64 - 3, 1 << 40]]], None, None),
    "global": ((2, 3), [123456789, 17], (4, 5), (1, 1)),
}



def case_name(entry, dtype, layout):
    return f"{entry}/{dtype}/{layout}"


def case_of(case):
    """(entry, dtype, layout) of a case of the file: what rngx_bits and ref_bits take."""
    return tuple(case["name"].split("/"))


def op_of(entry):
    """The op an OPS entry calls."""
    return OPS[entry][3] if len(OPS[entry]) > 3 else entry


def layouts_of(entry):
    """The layouts an entry runs on: all, but a global view only for the elementwise ops."""
    return [name for name in LAYOUTS if name != "global" or op_of(entry) not in NOT_ELEMENTWISE]


CASES = [(entry, dtype, layout) for entry, (dtypes, *_) in OPS.items() for dtype in dtypes for layout in layouts_of(entry)]


def prod(shape):
    return int(np.prod(shape))


def input_values(shape):
    """The input of the ops that read one (quantize_noise, dropout): exact in every float dtype."""
    n = prod(shape)
    return (((np.arange(n) * 7) % 11 - 5) * 0.375).reshape(shape)


def probabilities(shape):
    """bernoulli's tensor p at row-major index i: ((5 i) % 9) / 8, 0 and 1 included, exact in every float dtype."""
    return (((np.arange(prod(shape)) * 5) % 9) / 8).reshape(shape)


def weights(rows):
    """multinomial's probs at row r, category c: ((7 (9 r + c)) % 5) / 4, two zeros a row, exact in every dtype."""
    i = np.arange(rows * CATEGORIES).reshape(rows, CATEGORIES)
    return ((i * 7) % 5) / 4


# stochastic_round's inputs by the target's m (mantissa bits), emin (smallest normal exponent) and MAX (largest
# finite value): a value between two of its values, a negative one, one in its subnormals, one below its smallest
# subnormal, NaN, inf, one past MAX (to inf or MAX), one just below MAX, -0 and one far past MAX.
ROUND_TARGETS = {"bfloat16": (7, -126, (2 - 2**-7) * 2.0**127), "float16": (10, -14, 65504.0),
                 "float8_e4m3fn": (3, -6, 448.0), "float8_e5m2": (2, -14, 57344.0)}


def round_inputs(shape, dtype, target):
    """The input at row-major index i of the (global) tensor, as float64 values exact in `dtype` (each rounded there
    to nearest even; out of its range to +-inf): class i % 10 of the list above, scaled by 1 + 0.1234 (i // 10)."""
    import torch

    m, emin, top = ROUND_TARGETS[target]
    table = [1 + 0.3 * 2.0**-m, -2.718281828459045, 0.37 * 2.0**emin, 0.37 * 2.0 ** (emin - m), float("nan"),
             float("inf"), -1.01 * top, 0.999 * top, -0.0, 1.9 * top]
    v = [table[i % 10] * (1 + 0.1234 * (i // 10)) for i in range(prod(shape))]
    return torch.tensor(v, dtype=torch.float64).to(getattr(torch, dtype)).double().numpy().reshape(shape)


def _block(full, shape, gshape, gstart):
    return full if gshape is None else full[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]


def keys_of(layout):
    """The layout's keys as a flat list of [seed, offset] pairs (unsigned)."""
    return np.array(LAYOUTS[layout][1], dtype=object).reshape(-1, 2).tolist()


def expected_count(entry, layout):
    """How many values a case holds."""
    op, nkeys = op_of(entry), len(keys_of(layout))
    if op == "split":
        return OPS[entry][1]["num"] * nkeys * 2
    if op == "fold_in":
        return nkeys * 2
    return prod(LAYOUTS[layout][0])


def _signed(v):
    return v - U64 if v >= 1 << 63 else v


# ---- torch_rngx ----
def rngx_bits(entry, dtype, layout, device="cpu"):
    """torch_rngx's values of a case on `device` (state and input there too), flat, as unsigned bit patterns."""
    import torch

    import torch_rngx.functional as F

    shape, state, gshape, gstart = LAYOUTS[layout]
    _, params, first = OPS[entry][:3]
    tdt = getattr(torch, dtype)
    st = torch.tensor(np.vectorize(_signed)(np.array(state, dtype=object)).astype(np.int64), device=device)
    if op_of(entry) in NOT_ELEMENTWISE:
        return _bits_of(_not_elementwise(entry, dtype, layout, st))
    kwargs = {} if gshape is None else {"global_shape": gshape, "global_start": gstart}
    if first == "like+p":
        p = probabilities(gshape or shape)
        p = p if gshape is None else p[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]
        out = F.bernoulli(torch.empty(shape, dtype=tdt, device=device), st, torch.tensor(p, dtype=tdt, device=device),
                          **kwargs)
        return _bits_of(out)
    if first == "like+mean+std":
        mean, std = (torch.tensor(_block(f(gshape or shape), shape, gshape, gstart), dtype=tdt, device=device)
                     for f in (input_values, probabilities))
        return _bits_of(F.normal(torch.empty(shape, dtype=tdt, device=device), st, mean, std, **kwargs))
    if first == "x+dtype":
        x = torch.tensor(_block(round_inputs(gshape or shape, dtype, params["dtype"]), shape, gshape, gstart),
                         dtype=torch.float64).to(tdt).to(device)
        return _bits_of(F.stochastic_round(x, st, getattr(torch, params["dtype"]), params["saturate"], **kwargs))
    if first == "x":
        full = input_values(gshape or shape)
        block = full if gshape is None else full[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]
        arg = torch.tensor(block, dtype=tdt, device=device)
    elif first == "shape":
        arg, kwargs["dtype"] = shape, tdt
    else:
        arg = torch.empty(shape, dtype=tdt if first == "like" else torch.float32, device=device)
        if first == "like+dtype":
            kwargs["dtype"] = tdt
    return _bits_of(getattr(F, op_of(entry))(arg, st, *params.values(), **kwargs))


def _bits_of(out):
    import torch

    width = out.element_size() * 8
    flat = out.contiguous().view(-1).view({8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width])
    return [int(v) % (1 << width) for v in flat.cpu().tolist()]


def _not_elementwise(entry, dtype, layout, st):
    """randperm, multinomial, split and fold_in through torch_rngx.functional."""
    import torch

    import torch_rngx.functional as F

    shape, _, params, op = LAYOUTS[layout][0], None, OPS[entry][1], op_of(entry)
    tdt = getattr(torch, dtype)
    if op == "randperm":
        return F.randperm(shape[-1], st, dtype=tdt)
    if op == "multinomial":
        rows = prod(shape[:-1])
        probs = torch.tensor(weights(rows), dtype=tdt, device=st.device)
        key = st.reshape(rows, 2) if st.dim() > 1 else st
        return F.multinomial(probs if len(shape) > 1 else probs[0], key, shape[-1], params["replacement"])
    st = st.view(torch.uint64) if dtype == "uint64" else st
    return F.split(st, params["num"]) if op == "split" else F.fold_in(st, params["data"])


# ---- the NumPy reference ----
def ref_bits(entry, dtype, layout):
    """The reference's values of a case, computed on the whole (global) tensor and cut to the block."""
    import reference as ref

    shape, state, gshape, gstart = LAYOUTS[layout]
    _, params, first = OPS[entry][:3]
    if op_of(entry) in NOT_ELEMENTWISE:
        return _ref_not_elementwise(entry, dtype, layout)
    full_shape = gshape or shape
    ct = np.float64 if dtype == "float64" else np.float32
    state = np.array(state, dtype=np.uint64)
    if first == "like+p":  # p converted to the dtype (exact here), then compared as float64
        out = ref.bernoulli_ref(full_shape, state, dtype, probabilities(full_shape))
    elif first == "x+dtype":
        x = round_inputs(full_shape, dtype, params["dtype"])
        out = ref.stochastic_round_ref(x, state, dtype, params["dtype"], params["saturate"])
    elif first == "like+mean+std":  # both exact in every dtype
        out = ref.normal_tensor_ref(full_shape, state, dtype, input_values(full_shape), probabilities(full_shape))
    else:
        arg = input_values(full_shape).astype(ct) if first == "x" else full_shape
        out = getattr(ref, f"{op_of(entry)}_ref")(arg, state, dtype, *params.values())
    out = np.asarray(out)
    out = out.view(np.dtype(f"u{out.dtype.itemsize}")).reshape(full_shape)
    if gshape is not None:
        out = out[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]
    return [int(v) for v in out.reshape(-1)]


def _ref_not_elementwise(entry, dtype, layout):
    """The reference's randperm, multinomial, split and fold_in, one key (row) at a time."""
    import reference as ref

    shape, keys, params, op = LAYOUTS[layout][0], keys_of(layout), OPS[entry][1], op_of(entry)
    state = np.array(LAYOUTS[layout][1], dtype=np.uint64)
    if op == "split":
        return [int(v) for v in ref.split_ref(state, params["num"]).reshape(-1)]
    if op == "fold_in":
        return [int(v) for v in ref.fold_in_ref(state, params["data"]).reshape(-1)]
    out = []
    for r, key in enumerate(keys):
        key = np.array(key, dtype=np.uint64)
        if op == "randperm":
            perm = ref.randperm_ref(shape[-1], key)
            vals = perm if dtype == "int64" else perm.astype(np.float16).view(np.uint16)
        else:
            w = weights(len(keys))[r]
            vals = ref.multinomial_ref(w, key, shape[-1], params["replacement"])
        out += [int(v) % (1 << 64) for v in np.asarray(vals).reshape(-1)]
    return out


def load():
    with open(JSON_PATH) as f:
        return json.load(f)


def width_of(entry, dtype):
    """The bits of a case's values: its dtype's, or int64 indices (multinomial)."""
    if op_of(entry) == "multinomial":
        return 64
    if op_of(entry) == "stochastic_round":  # the target's
        dtype = OPS[entry][1]["dtype"]
    return {"float8_e4m3fn": 8, "float8_e5m2": 8, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "bfloat16": 16}.get(
        dtype, 64 if dtype in ("int64", "uint64", "float64") else 32)


def write():
    cases = []
    for entry, dtype, layout in CASES:
        got, want = rngx_bits(entry, dtype, layout), ref_bits(entry, dtype, layout)
        if got != want:
            sys.exit(f"{case_name(entry, dtype, layout)}: torch_rngx {got} != reference {want}; nothing written")
        digits = width_of(entry, dtype) // 4
        case = {"name": case_name(entry, dtype, layout), "op": op_of(entry), "dtype": dtype,
                "params": OPS[entry][1], "layout": layout, "bits": [f"{v:0{digits}x}" for v in got]}
        if OPS[entry][2] == "x+dtype":  # the input too, as x's bits
            case["x"] = input_bits(entry, dtype, layout)
        cases.append(case)
    layouts = {name: {"shape": list(s), "state": st, "global_shape": g and list(g), "global_start": g0 and list(g0)}
               for name, (s, st, g, g0) in LAYOUTS.items()}
    doc = {"stream": STREAM, "about": "docs/stream.md; written by tests/kat/kat.py", "layouts": layouts,
           "cases": cases}
    with open(JSON_PATH, "w") as f:  # one case per line
        head = json.dumps({k: v for k, v in doc.items() if k != "cases"})[:-1]
        f.write(head + ', "cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")
    with open(HEADER_PATH, "w") as f:
        f.write(header_text(doc))
    print(f"wrote {len(cases)} cases to {JSON_PATH} and {HEADER_PATH}")


def input_bits(entry, dtype, layout):
    """A stochastic_round case's input (the block of round_inputs), as hex bits of x's dtype."""
    import torch

    shape, _, gshape, gstart = LAYOUTS[layout]
    x = torch.tensor(_block(round_inputs(gshape or shape, dtype, OPS[entry][1]["dtype"]), shape, gshape, gstart))
    return [f"{v:0{width_of('bits', dtype) // 4}x}" for v in _bits_of(x.to(getattr(torch, dtype)))]


def _c_array(v, n, fmt="{}"):
    """A C initializer of at least n entries, zero-padded."""
    return "{" + ", ".join(fmt.format(x) for x in list(v) + [0] * (n - len(v))) + "}"


def header_text(doc):
    """The cases as C for tests/cuda_emu: one struct per case, bits widened to uint64."""
    lines = [f"/* Written by tests/kat/kat.py from stream-{STREAM}.json: the stream's known answers. */",
             "#include <stdint.h>", "", "typedef struct {", "  const char *name, *op, *dtype;",
             "  double p0, p1, p2, p3; /* the op's parameters in OPS order */", "  int ndim;",
             "  int64_t shape[2], global_shape[2], global_start[2]; /* global_shape[0] == 0: no view */",
             "  int nkeys;", "  uint64_t keys[4]; /* [seed, offset] pairs: one key, or one per row */",
             "  int n;", "  uint64_t bits[12];",
             "  uint64_t u0; /* split's num, fold_in's data, exactly */",
             "  const char *to; /* stochastic_round's target dtype (p0: saturate) */",
             "  uint64_t x[12]; /* stochastic_round's input, as x's bits */", "} rngx_kat_case;", "",
             "static const rngx_kat_case RNGX_KAT[] = {"]
    for c in doc["cases"]:
        lay = doc["layouts"][c["layout"]]
        numbers = [v for v in c["params"].values() if not isinstance(v, str)]  # a target dtype goes in `to`
        p = numbers + [0] * (4 - len(numbers))
        keys = np.array(lay["state"], dtype=object).reshape(-1).tolist()
        shapes = [_c_array(lay[k] or [], 2) for k in ("shape", "global_shape", "global_start")]
        exact = f", {c['params'].get('num', c['params'].get('data'))}ull" if c["op"] in ("split", "fold_in") else ""
        if "x" in c:
            exact = f', 0ull, "{c["params"]["dtype"]}", {_c_array(["0x" + b for b in c["x"]], 0, "{}ull")}'
        lines.append(
            f'  {{"{c["name"]}", "{c["op"]}", "{c["dtype"]}", {", ".join(repr(float(v)) for v in p)}, '
            f'{len(lay["shape"])}, {", ".join(shapes)}, {len(keys) // 2}, {_c_array(keys, 4, "{}ull")}, '
            f'{len(c["bits"])}, {_c_array(["0x" + b for b in c["bits"]], 0, "{}ull")}{exact}}},')
    lines += ["};", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    write()
