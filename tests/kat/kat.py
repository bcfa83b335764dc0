"""The stream's known answers (docs/stream.md, version 1.0): one list of cases, each op x dtype x layout, and how
torch_rngx and the NumPy reference (tests/reference.py) compute them. `python tests/kat/kat.py` writes
stream-1.0.json (the answers, from torch_rngx, each checked against the reference first) and stream-1.0.h (the
same for the CUDA kernels' emulator test, tests/cuda_emu). An op added later is one line in OPS (and one branch
in tests/cuda_emu/test_cuda_emu.cpp's check_kat, which calls the CUDA kernel).

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
# values in the output dtype), "like+dtype" (a float32 tensor and dtype=). randint's ranges up to 2^32 take two
# words per element, int64's wider ones four: an entry each.
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
}

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

CASES = [(entry, dtype, layout) for entry, (dtypes, *_) in OPS.items() for dtype in dtypes for layout in LAYOUTS]


def case_name(entry, dtype, layout):
    return f"{entry}/{dtype}/{layout}"


def case_of(case):
    """(entry, dtype, layout) of a case of the file: what rngx_bits and ref_bits take."""
    return tuple(case["name"].split("/"))


def op_of(entry):
    """The op an OPS entry calls."""
    return OPS[entry][3] if len(OPS[entry]) > 3 else entry


def prod(shape):
    return int(np.prod(shape))


def input_values(shape):
    """The input of the ops that read one (quantize_noise, dropout): exact in every float dtype."""
    n = prod(shape)
    return (((np.arange(n) * 7) % 11 - 5) * 0.375).reshape(shape)


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
    kwargs = {} if gshape is None else {"global_shape": gshape, "global_start": gstart}
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
    out = getattr(F, op_of(entry))(arg, st, *params.values(), **kwargs)
    width = out.element_size() * 8
    flat = out.contiguous().view(-1).view({8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width])
    return [int(v) % (1 << width) for v in flat.cpu().tolist()]


# ---- the NumPy reference ----
def ref_bits(entry, dtype, layout):
    """The reference's values of a case, computed on the whole (global) tensor and cut to the block."""
    import reference as ref

    shape, state, gshape, gstart = LAYOUTS[layout]
    _, params, first = OPS[entry][:3]
    full_shape = gshape or shape
    ct = np.float64 if dtype == "float64" else np.float32
    arg = input_values(full_shape).astype(ct) if first == "x" else full_shape
    out = getattr(ref, f"{op_of(entry)}_ref")(arg, np.array(state, dtype=np.uint64), dtype, *params.values())
    out = np.asarray(out)
    out = out.view(np.dtype(f"u{out.dtype.itemsize}")).reshape(full_shape)
    if gshape is not None:
        out = out[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]
    return [int(v) for v in out.reshape(-1)]


def load():
    with open(JSON_PATH) as f:
        return json.load(f)


def width_of(dtype):
    return {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "bfloat16": 16}.get(
        dtype, 64 if dtype in ("int64", "uint64", "float64") else 32)


def write():
    cases = []
    for entry, dtype, layout in CASES:
        got, want = rngx_bits(entry, dtype, layout), ref_bits(entry, dtype, layout)
        if got != want:
            sys.exit(f"{case_name(entry, dtype, layout)}: torch_rngx {got} != reference {want}; nothing written")
        digits = width_of(dtype) // 4
        cases.append({"name": case_name(entry, dtype, layout), "op": op_of(entry), "dtype": dtype,
                      "params": OPS[entry][1], "layout": layout, "bits": [f"{v:0{digits}x}" for v in got]})
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
             "  int n;", "  uint64_t bits[10];", "} rngx_kat_case;", "",
             "static const rngx_kat_case RNGX_KAT[] = {"]
    for c in doc["cases"]:
        lay = doc["layouts"][c["layout"]]
        p = list(c["params"].values()) + [0] * (4 - len(c["params"]))
        keys = np.array(lay["state"], dtype=object).reshape(-1).tolist()
        shapes = [_c_array(lay[k] or [], 2) for k in ("shape", "global_shape", "global_start")]
        lines.append(
            f'  {{"{c["name"]}", "{c["op"]}", "{c["dtype"]}", {", ".join(repr(float(v)) for v in p)}, '
            f'{len(lay["shape"])}, {", ".join(shapes)}, {len(keys) // 2}, {_c_array(keys, 4, "{}ull")}, '
            f'{len(c["bits"])}, {_c_array(["0x" + b for b in c["bits"]], 0, "{}ull")}}},')
    lines += ["};", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    write()
