"""The stream's known answers (docs/stream.md, version 1.0): one list of cases, each op x dtype x layout, and how
torch_rngx and the NumPy reference (tests/reference.py) compute them. `python tests/kat/kat.py` writes
stream-1.0.json (the answers, from torch_rngx, each checked against the reference first) and stream-1.0.h (the
same for the CUDA kernels' emulator test, tests/cuda_emu). An op added later is one line in OPS.

Every value is stored as its bit pattern (hex, the dtype's width), so NaN, -0 and every float are exact."""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import reference as ref  # noqa: E402

STREAM = "1.0"
JSON_PATH = os.path.join(HERE, f"stream-{STREAM}.json")
HEADER_PATH = os.path.join(HERE, f"stream-{STREAM}.h")
U64 = 1 << 64
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")

# op: (dtypes, parameters). The calls and the reference are in CALLS below.
OPS = {
    "bits": (INTS, {}),
    "uniform": (FLOATS, {"low": -2.0, "high": 3.0}),
    "quantize_noise": (FLOATS, {"half": 0.5}),
    "dropout": (FLOATS, {"p": 0.3}),
    "normal": (FLOATS, {"mean": 0.25, "std": 1.5}),
    "truncated_normal": (FLOATS, {"mean": 0.5, "std": 2.0, "a": -1.0, "b": 3.3}),
    "bernoulli": (FLOATS, {"p": 0.3}),
    "randint": (("uint8", "int8", "int16", "int32", "int64"), {"low": 3, "high": 103}),
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

CASES = [(op, dtype, layout) for op, (dtypes, _) in OPS.items() for dtype in dtypes for layout in LAYOUTS]


def case_name(op, dtype, layout):
    return f"{op}/{dtype}/{layout}"


def prod(shape):
    return int(np.prod(shape))


def input_values(shape):
    """The input of the ops that read one (quantize_noise, dropout): exact in every float dtype."""
    n = prod(shape)
    return (((np.arange(n) * 7) % 11 - 5) * 0.375).reshape(shape)


def _signed(v):
    return v - U64 if v >= 1 << 63 else v


# ---- torch_rngx ----
def rngx_bits(op, dtype, layout):
    """torch_rngx's values of a case, flat, as unsigned bit patterns (Python ints)."""
    import torch
    import torch_rngx.functional as F

    shape, state, gshape, gstart = LAYOUTS[layout]
    params = OPS[op][1]
    tdt = getattr(torch, dtype)
    st = torch.tensor(np.vectorize(_signed)(np.array(state, dtype=object)).astype(np.int64))
    view = {} if gshape is None else {"global_shape": gshape, "global_start": gstart}
    full = input_values(gshape or shape)
    block = full if gshape is None else full[tuple(slice(s, s + n) for s, n in zip(gstart, shape))]
    x = torch.tensor(block, dtype=tdt) if dtype in FLOATS else None
    like = torch.empty(shape, dtype=tdt if dtype in FLOATS else torch.float32)
    out = {
        "bits": lambda: F.bits(shape, st, dtype=tdt, **view),
        "uniform": lambda: F.uniform(like, st, params.get("low"), params.get("high"), **view),
        "quantize_noise": lambda: F.quantize_noise(x, st, params.get("half"), **view),
        "dropout": lambda: F.dropout(x, st, params.get("p"), **view),
        "normal": lambda: F.normal(like, st, params.get("mean"), params.get("std"), **view),
        "truncated_normal": lambda: F.truncated_normal(like, st, params.get("mean"), params.get("std"),
                                                       params.get("a"), params.get("b"), **view),
        "bernoulli": lambda: F.bernoulli(like, st, params.get("p"), **view),
        "randint": lambda: F.randint(like, st, params.get("low"), params.get("high"), dtype=tdt, **view),
    }[op]()
    width = out.element_size() * 8
    flat = out.contiguous().view(-1).view({8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width])
    return [int(v) % (1 << width) for v in flat.tolist()]


# ---- the NumPy reference ----
def ref_bits(op, dtype, layout):
    """The reference's values of a case, computed on the whole (global) tensor and cut to the block."""
    shape, state, gshape, gstart = LAYOUTS[layout]
    params = OPS[op][1]
    full_shape = gshape or shape
    st = np.array(state, dtype=np.uint64)
    ct = np.float64 if dtype == "float64" else np.float32
    x = input_values(full_shape).astype(ct)
    out = {
        "bits": lambda: ref.bits_ref(full_shape, st, dtype),
        "uniform": lambda: ref.uniform_ref(full_shape, st, dtype, params["low"], params["high"]),
        "quantize_noise": lambda: ref.quantize_noise_ref(x, st, dtype, params["half"]),
        "dropout": lambda: ref.dropout_ref(x, st, dtype, params["p"]),
        "normal": lambda: ref.normal_ref(full_shape, st, dtype, params["mean"], params["std"]),
        "truncated_normal": lambda: ref.truncated_normal_ref(full_shape, st, dtype, params["mean"], params["std"],
                                                             params["a"], params["b"]),
        "bernoulli": lambda: ref.bernoulli_ref(full_shape, st, dtype, params["p"]),
        "randint": lambda: ref.randint_ref(full_shape, st, dtype, params["low"], params["high"]),
    }[op]()
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
    for op, dtype, layout in CASES:
        got, want = rngx_bits(op, dtype, layout), ref_bits(op, dtype, layout)
        if got != want:
            sys.exit(f"{case_name(op, dtype, layout)}: torch_rngx {got} != reference {want}; nothing written")
        digits = width_of(dtype) // 4
        cases.append({"name": case_name(op, dtype, layout), "op": op, "dtype": dtype, "params": OPS[op][1],
                      "layout": layout, "bits": [f"{v:0{digits}x}" for v in got]})
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
        pad = lambda v, n: list(v) + [0] * (n - len(v))  # noqa: E731
        g = lay["global_shape"] or [0, 0]
        g0 = lay["global_start"] or [0, 0]
        lines.append(
            f'  {{"{c["name"]}", "{c["op"]}", "{c["dtype"]}", {", ".join(repr(float(v)) for v in p)}, '
            f'{len(lay["shape"])}, {{{", ".join(map(str, pad(lay["shape"], 2)))}}}, {{{", ".join(map(str, pad(g, 2)))}}}, '
            f'{{{", ".join(map(str, pad(g0, 2)))}}}, {len(keys) // 2}, {{{", ".join(f"{k}ull" for k in pad(keys, 4))}}}, '
            f'{len(c["bits"])}, {{{", ".join("0x" + b + "ull" for b in c["bits"])}}}}},')
    lines += ["};", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    write()
