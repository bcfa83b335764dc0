"""Bad input, broadly: every public function and every raw torch.ops.rngx op, called with each wrong kind of
argument, raises a clear exception that names the argument, and leaves every state as it was: the state tensors it
was given, the Generators it draws from, and torch's default generator (which every call with generator=None draws
its seed from). A state is an int64 or uint64 tensor (*B, 2); batched states must broadcast to the output
(docs/stream.md).

The calls run in a child process (this file, run as a script), so a segfault or abort fails its case instead
of killing the test run: the parent restarts the child after the case that died and carries on.
"""
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import torch_rngx
from torch_rngx import functional as F

REUSES_KEYS = pytest.mark.key_reuse_ok("recomputes draws to compare valid calls around the bad ones")

ops = torch.ops.rngx
PUBLIC = (TypeError, ValueError)  # what the Python API raises
RAW = (RuntimeError, TypeError, ValueError, NotImplementedError)  # C++ checks, the schema parser, the dispatcher


class Case:
    def __init__(self, name, fn, names, exc=PUBLIC, watch=()):
        self.name, self.fn, self.names, self.exc, self.watch = name, fn, names, exc, watch


def good_state():
    return torch.tensor([0x1234, 5], dtype=torch.int64)


def x32():
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


def w34():
    """multinomial's weights: 3 rows of 4 positive categories."""
    return torch.rand(3, 4, generator=torch.Generator().manual_seed(0)) + 0.1


# Each maker returns a fresh wrong `state`: one per wrong kind.
BAD_STATES = {
    "int32": lambda: good_state().int(),
    "uint32": lambda: good_state().to(torch.uint32),
    "float": lambda: good_state().float(),
    "float_requires_grad": lambda: torch.zeros(2, requires_grad=True),
    "bool": lambda: torch.tensor([True, False]),
    "shape_3": lambda: torch.zeros(3, dtype=torch.int64),
    "shape_2x1": lambda: torch.zeros(2, 1, dtype=torch.int64),
    "shape_3x3_uint64": lambda: torch.zeros(3, 3, dtype=torch.uint64),
    "batched_B_mismatch": lambda: torch.zeros(3, 2, 2, dtype=torch.int64),  # B (3, 2) on (3, 4) or on (3,)
    "batched_too_many_dims": lambda: torch.zeros(3, 4, 1, 2, dtype=torch.uint64),
    "shape_0dim": lambda: torch.tensor(5),
    "noncontiguous": lambda: torch.zeros(4, dtype=torch.int64)[::2],
    "meta": lambda: good_state().to("meta"),
    "sparse": lambda: good_state().to_sparse(),
    "list": lambda: [0x1234, 5],
    "tuple": lambda: (1, 2),
    "int": lambda: 5,
    "none": lambda: None,
    "numpy": lambda: np.array([1, 2], dtype=np.int64),
}

# Kinds that are valid states in themselves, wrong only for the output they are used on.
NOT_BROADCASTING = ("batched_B_mismatch", "batched_too_many_dims")

# Wrong `x` (or `like`): wrong dtype, layout, dims or type. A meta x with a CPU state is not wrong: it gives a
# meta result (shape propagation), so it is not listed.
BAD_XS = {
    "int32": lambda: torch.ones(3, 4, dtype=torch.int32),
    "int64": lambda: torch.ones(3, dtype=torch.int64),
    "bool": lambda: torch.ones(3, dtype=torch.bool),
    "uint8": lambda: torch.ones(3, dtype=torch.uint8),
    "complex64": lambda: torch.ones(3, dtype=torch.complex64),
    "sparse": lambda: x32().to_sparse(),
    "nested": lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
    "65_dims": lambda: torch.zeros([1] * 65),
    "list": lambda: [1.0, 2.0],
    "float": lambda: 1.5,
    "none": lambda: None,
    "numpy": lambda: np.ones(3, dtype=np.float32),
}

BAD_P = {"nan": math.nan, "inf": math.inf, "neg": -0.1, "above_1": 1.5, "int_2": 2, "huge_int": 10**400,
         "str": "0.5", "none": None, "bool": True, "complex": 0.5j, "tensor": torch.tensor(0.5)}
BAD_HALF = {"neg": -1.0, "nan": math.nan, "inf": math.inf, "huge_int": 10**400, "str": "a", "none": None,
            "bool": True, "tensor": torch.tensor(0.5), "float32_overflow": 1e39}
BAD_LOW_HIGH = {"low_gt_high": (2.0, 1.0), "nan_low": (math.nan, 1.0), "nan_high": (0.0, math.nan),
                "inf_high": (0.0, math.inf), "-inf_low": (-math.inf, 0.0), "width_overflows_float64": (-1e308, 1e308),
                "width_overflows_float32": (-3e38, 3e38), "low_overflows_float32": (-1e39, -1e39),
                "str_low": ("0", 1.0), "none_high": (0.0, None), "complex_low": (0j, 1.0), "huge_int_high": (0, 10**400)}
BAD_SIZES = {"negative": [-1], "float": [2.5], "none": None, "str": "3", "bool_elem": [True], "beyond_int64": [2**64],
             "2^63": [2**63], "numel_overflows": [2**40, 2**40], "65_dims": [1] * 65, "nested_list": [[2]]}
BAD_SEEDS = {"2^64": 2**64, "2^64+5": 2**64 + 5, "2^100": 2**100, "neg": -1, "int64_min-1": -(2**63) - 1, "float": 1.5,
             "str": "1", "bool": True, "tensor_float": torch.tensor(1.5), "none_manual": None}


def cases():
    out = []

    def add(name, fn, names, exc=PUBLIC, watch=()):
        out.append(Case(name, fn, names, exc, watch))

    # ---- state: every function and raw op that takes one ----
    takes_state = {
        "F.bits": lambda s: F.bits([3], s),
        "F.uniform": lambda s: F.uniform(x32(), s),
        "F.quantize_noise": lambda s: F.quantize_noise(x32(), s),
        "F.dropout": lambda s: F.dropout(x32(), s, 0.5),
        "Generator.set_state": None,  # below: it must also keep the Generator's own state
        "F.split": lambda s: F.split(s, 2),
        "F.fold_in": lambda s: F.fold_in(s, 3),
        "ops.bits": lambda s: ops.bits([3], s, torch.int32),
        "ops.uniform": lambda s: ops.uniform(x32(), s, 0.0, 1.0, None),
        "ops.quantize_noise": lambda s: ops.quantize_noise(x32(), s, 0.5),
        "ops.dropout": lambda s: ops.dropout(x32(), s, 0.5),
        "ops.split": lambda s: ops.split(s, 2),
        "ops.fold_in": lambda s: ops.fold_in(s, torch.tensor(3)),
        "ops.take_": lambda s: ops.take_(s, 4),
        "F.normal": lambda s: F.normal(x32(), s),
        "F.truncated_normal": lambda s: F.truncated_normal(x32(), s),
        "F.bernoulli": lambda s: F.bernoulli(x32(), s, 0.5),
        "F.randint": lambda s: F.randint(x32(), s, 0, 10),
        "ops.normal": lambda s: ops.normal(x32(), s, 0.0, 1.0, None),
        "ops.truncated_normal": lambda s: ops.truncated_normal(x32(), s, 0.0, 1.0, -2.0, 2.0, None),
        "ops.bernoulli": lambda s: ops.bernoulli(x32(), s, 0.5),
        "ops.bernoulli_tensor": lambda s: ops.bernoulli_tensor(x32(), s, torch.full((3, 4), 0.5)),
        "ops.randint": lambda s: ops.randint(x32(), s, 0, 10, torch.int64),
        "F.exponential": lambda s: F.exponential(x32(), s),
        "ops.exponential": lambda s: ops.exponential(x32(), s, 1.0, None),
        "F.randperm": lambda s: F.randperm(5, s),
        "F.multinomial": lambda s: F.multinomial(w34(), s, 2),
        "ops.race": lambda s: ops.race(w34().double(), s, 1, 1),
    }
    for fname, call in takes_state.items():
        for kind, make in BAD_STATES.items():
            raw = fname.startswith("ops.")
            if kind in NOT_BROADCASTING and fname.split(".")[-1] in ("split", "fold_in", "take_", "set_state",
                                                                     "randperm"):
                continue  # any (*B, 2) state splits, folds and permutes; take_ and set_state: tests/test_keys.py
            if kind == "noncontiguous" and not raw:
                continue  # the public functions take keys of any strides (tests/test_keys.py); the raw ops refuse
            if fname == "Generator.set_state":
                g = torch_rngx.Generator(9)
                s = make()
                watch = [g.state] + ([s] if isinstance(s, torch.Tensor) else [])
                add(f"{fname}[state={kind}]", lambda g=g, s=s: g.set_state(s), ("new_state",), PUBLIC, watch)
                continue
            s = make()
            names = ("state",)
            if raw and kind == "sparse":
                names = ("state", "SparseCPU")  # the dispatcher finds no sparse kernel for the C++ ops, and says so
            if raw and kind == "none" and fname in ("ops.bits", "ops.split"):
                names = ("no tensor arguments",)  # nothing to dispatch on: the dispatcher says so, naming the op
            add(f"{fname}[state={kind}]", lambda call=call, s=s: call(s), names, RAW if raw else PUBLIC,
                [s] if isinstance(s, torch.Tensor) else [])

    # ---- x / like ----
    takes_x = {
        "F.uniform": (lambda x, s: F.uniform(x, s), "like"),
        "F.quantize_noise": (lambda x, s: F.quantize_noise(x, s), "x"),
        "F.dropout": (lambda x, s: F.dropout(x, s, 0.5), "x"),
        "rand_like": (lambda x, s: torch_rngx.rand_like(x, generator=torch_rngx.Generator(1)), "x"),
        "uniform_like": (lambda x, s: torch_rngx.uniform_like(x, 0.0, 1.0), "x"),
        "quantize": (lambda x, s: torch_rngx.quantize(x), "x"),
        "quantize_dequantize": (lambda x, s: torch_rngx.quantize(x, "dequantize"), "x"),
        "dropout": (lambda x, s: torch_rngx.dropout(x, 0.5), "input"),  # torch's argument names
        "nn.Dropout": (lambda x, s: torch_rngx.nn.Dropout(0.5)(x), "input"),
        "dropout2d": (lambda x, s: torch_rngx.dropout2d(x, 0.5), "input"),
        "nn.AlphaDropout": (lambda x, s: torch_rngx.nn.AlphaDropout(0.5)(x), "input"),
        "F.feature_dropout": (lambda x, s: F.feature_dropout(x, s, 0.5), "x"),
        "ops.uniform": (lambda x, s: ops.uniform(x, s, 0.0, 1.0, None), "like"),
        "ops.quantize_noise": (lambda x, s: ops.quantize_noise(x, s, 0.5), "x"),
        "ops.dropout": (lambda x, s: ops.dropout(x, s, 0.5), "x"),
        "F.normal": (lambda x, s: F.normal(x, s), "like"),
        "F.truncated_normal": (lambda x, s: F.truncated_normal(x, s), "like"),
        "F.bernoulli": (lambda x, s: F.bernoulli(x, s, 0.5), "like"),
        "F.randint": (lambda x, s: F.randint(x, s, 0, 3), "like"),
        "randn_like": (lambda x, s: torch_rngx.randn_like(x), "x"),
        "normal_like": (lambda x, s: torch_rngx.normal_like(x, 1.0, 2.0, generator=torch_rngx.Generator(1)), "x"),
        "bernoulli_like": (lambda x, s: torch_rngx.bernoulli_like(x, 0.5), "x"),
        "randint_like": (lambda x, s: torch_rngx.randint_like(x, 0, 3), "x"),
        "nn.init.trunc_normal_": (lambda x, s: torch_rngx.nn.init.trunc_normal_(x), "tensor"),
        "ops.normal": (lambda x, s: ops.normal(x, s, 0.0, 1.0, None), "like"),
        "ops.truncated_normal": (lambda x, s: ops.truncated_normal(x, s, 0.0, 1.0, -2.0, 2.0, None), "like"),
        "ops.bernoulli": (lambda x, s: ops.bernoulli(x, s, 0.5), "like"),
        "ops.randint": (lambda x, s: ops.randint(x, s, 0, 3, torch.int64), "like"),
        "F.exponential": (lambda x, s: F.exponential(x, s), "like"),
        "exponential_like": (lambda x, s: torch_rngx.exponential_like(x, 2.0), "x"),
        "ops.exponential": (lambda x, s: ops.exponential(x, s, 1.0, None), "like"),
        "F.multinomial": (lambda x, s: F.multinomial(x, s, 1), "input"),
        "multinomial": (lambda x, s: torch_rngx.multinomial(x, 1, True), "input"),
        "ops.race": (lambda x, s: ops.race(x, s, 1, 1), "weights"),
    }
    shape_only = ("F.randint", "randint_like", "ops.randint")  # any dtype's shape will do
    for fname, (call, argname) in takes_x.items():
        for kind, make in BAD_XS.items():
            raw = fname.startswith("ops.")
            if fname in shape_only and kind in ("int32", "int64", "bool", "uint8", "complex64"):
                continue
            if (fname in ("ops.normal", "ops.truncated_normal", "ops.exponential")
                    and kind in ("int32", "int64", "bool", "uint8", "complex64")):
                names = ("dtype",)  # as ops.uniform: the output dtype defaults to like's
            elif fname == "ops.uniform" and kind in ("int32", "int64", "bool", "uint8", "complex64"):
                names = ("dtype",)  # uniform only reads like's shape; the dtype it would produce is wrong
            elif raw and kind in ("sparse", "nested"):
                names = ("SparseCPU",) if kind == "sparse" else ("NestedTensorCPU",)
            elif raw and kind == "65_dims":
                names = ("dims",)  # "tensors may have at most 64 dims"
            elif raw and kind == "float":
                names = (argname,)  # the schema parser: "Expected a value of type 'Tensor' for argument 'x'"
            else:
                names = (argname,)
            s = good_state()
            add(f"{fname}[{argname}={kind}]", lambda call=call, make=make, s=s: call(make(), s), names,
                RAW if raw else PUBLIC, [s])

    # ---- p ----
    for kind, p in BAD_P.items():
        for fname, call in {
            "F.dropout": lambda p, s: F.dropout(x32(), s, p),
            "dropout": lambda p, s: torch_rngx.dropout(x32(), p),
            "dropout_eval": lambda p, s: torch_rngx.dropout(x32(), p, training=False),
            "nn.Dropout": lambda p, s: torch_rngx.nn.Dropout(p),
            "ops.dropout": lambda p, s: ops.dropout(x32(), s, p),
        }.items():
            raw = fname.startswith("ops.")
            if raw and kind in ("int_2", "bool", "tensor"):
                continue  # the schema parser converts 2, True and a 0-dim tensor to float; 2.0 is rejected below
            s = good_state()
            add(f"{fname}[p={kind}]", lambda call=call, p=p, s=s: call(p, s), ("p",), RAW if raw else PUBLIC, [s])
    s = good_state()
    add("ops.dropout[p=2.0]", lambda s=s: ops.dropout(x32(), s, 2.0), ("p",), RAW, [s])

    s = good_state()
    add("F.bernoulli[p=out_of_range_tensor]", lambda s=s: F.bernoulli(x32(), s, torch.tensor([0.5, 1.5, 0.2, 0.1])),
        ("p",), PUBLIC, [s])
    add("F.bernoulli[p=nan_tensor]", lambda s=s: F.bernoulli(x32(), s, torch.tensor(math.nan)), ("p",), PUBLIC, [s])
    add("F.bernoulli[p=wrong_shape]", lambda s=s: F.bernoulli(x32(), s, torch.full((3, 5), 0.5)), ("p",), PUBLIC, [s])
    add("F.bernoulli[p=bool_tensor]", lambda s=s: F.bernoulli(x32(), s, torch.ones(4, dtype=torch.bool)), ("p",),
        PUBLIC, [s])
    add("bernoulli_like[p=out_of_range_tensor]", lambda: torch_rngx.bernoulli_like(x32(), torch.full((4,), -0.5)),
        ("p",))
    add("ops.bernoulli_tensor[p=out_of_range]", lambda s=s: ops.bernoulli_tensor(x32(), s, torch.full((3, 4), 2.0)),
        ("p",), RAW, [s])
    add("ops.bernoulli_tensor[p=wrong_shape]", lambda s=s: ops.bernoulli_tensor(x32(), s, torch.full((4,), 0.5)),
        ("p",), RAW, [s])
    add("ops.bernoulli_tensor[p=wrong_dtype]", lambda s=s: ops.bernoulli_tensor(x32(), s, torch.full((3, 4), 0.5).double()),
        ("p",), RAW, [s])
    for kind, p in BAD_P.items():
        if kind == "tensor":
            continue  # a tensor of probabilities is valid here
        for fname, call in {
            "F.bernoulli": lambda p, s: F.bernoulli(x32(), s, p),
            "bernoulli_like": lambda p, s: torch_rngx.bernoulli_like(x32(), p),
            "ops.bernoulli": lambda p, s: ops.bernoulli(x32(), s, p),
        }.items():
            raw = fname.startswith("ops.")
            if raw and kind in ("int_2", "bool"):
                continue  # the schema parser converts 2 and True to float; 2.0 is rejected below
            s = good_state()
            add(f"{fname}[p={kind}]", lambda call=call, p=p, s=s: call(p, s), ("p",), RAW if raw else PUBLIC, [s])
    s = good_state()
    add("ops.bernoulli[p=2.0]", lambda s=s: ops.bernoulli(x32(), s, 2.0), ("p",), RAW, [s])

    # ---- normal's mean and std, the truncated normal's bounds ----
    bad_std = {"neg": -1.0, "nan": math.nan, "inf": math.inf, "str": "1", "none": None, "bool": True,
               "float32_overflow": 1e39}
    for kind, std in bad_std.items():
        for fname, call in {
            "F.normal": lambda v, s: F.normal(x32(), s, 0.0, v),
            "normal_like": lambda v, s: torch_rngx.normal_like(x32(), 0.0, v),
            "F.truncated_normal": lambda v, s: F.truncated_normal(x32(), s, 0.0, v),
            "nn.init.trunc_normal_": lambda v, s: torch_rngx.nn.init.trunc_normal_(x32(), 0.0, v),
            "ops.normal": lambda v, s: ops.normal(x32(), s, 0.0, v, None),
            "ops.truncated_normal": lambda v, s: ops.truncated_normal(x32(), s, 0.0, v, -2.0, 2.0, None),
        }.items():
            raw = fname.startswith("ops.")
            if raw and kind in ("bool", "str", "none"):
                continue  # the schema parser converts True; it rejects "1" and None naming the argument below
            if kind == "float32_overflow" and "trunc" in fname:
                continue  # the truncated normal computes in double: 1e39 is a fine std there
            s = good_state()
            add(f"{fname}[std={kind}]", lambda call=call, v=std, s=s: call(v, s), ("std",), RAW if raw else PUBLIC, [s])
    for kind, mean in {"nan": math.nan, "inf": math.inf, "float32_overflow": 1e39, "str": "0"}.items():
        s = good_state()
        add(f"F.normal[mean={kind}]", lambda m=mean, s=s: F.normal(x32(), s, m), ("mean",), PUBLIC, [s])
        if kind != "str":
            add(f"ops.normal[mean={kind}]", lambda m=mean, s=s: ops.normal(x32(), s, m, 1.0, None), ("mean",), RAW, [s])
    for fname in ("F.truncated_normal", "ops.truncated_normal"):
        s = good_state()
        call = (lambda st, *a: F.truncated_normal(x32(), st, *a)) if fname[0] == "F" else \
            (lambda st, *a: ops.truncated_normal(x32(), st, *a, None))
        exc = PUBLIC if fname[0] == "F" else RAW
        add(f"{fname}[std=0]", lambda c=call, s=s: c(s, 0.0, 0.0, -1.0, 1.0), ("std",), exc, [s])
        add(f"{fname}[a>b]", lambda c=call, s=s: c(s, 0.0, 1.0, 2.0, 1.0), ("a", "b"), exc, [s])
        add(f"{fname}[a=b]", lambda c=call, s=s: c(s, 0.0, 1.0, 1.0, 1.0), ("a", "b"), exc, [s])
        add(f"{fname}[a=nan]", lambda c=call, s=s: c(s, 0.0, 1.0, math.nan, 1.0), ("a",), exc, [s])
        add(f"{fname}[b=inf]", lambda c=call, s=s: c(s, 0.0, 1.0, 0.0, math.inf), ("b",), exc, [s])
        add(f"{fname}[no float16 in [a, b]]",
            lambda s=s, f=fname: (F.truncated_normal(x32().half(), s, 0.0, 1.0, 1.0001, 1.0002) if f[0] == "F" else
                                  ops.truncated_normal(x32().half(), s, 0.0, 1.0, 1.0001, 1.0002, None)),
            ("a", "b"), exc, [s])
    add("nn.init.trunc_normal_[a>b]", lambda: torch_rngx.nn.init.trunc_normal_(x32(), 0.0, 1.0, 3.0, -3.0), ("a", "b"))

    # ---- randint's bounds and dtype ----
    bad_bounds = {"low=high": (5, 5, torch.int64), "low>high": (6, 5, torch.int64),
                  "uint8_low": (-1, 5, torch.uint8), "uint8_high": (0, 257, torch.uint8),
                  "int8_high": (0, 129, torch.int8), "int32_low": (-2**31 - 1, 0, torch.int32),
                  "int16_high": (0, 2**15 + 1, torch.int16)}
    for kind, (lo, hi, dt) in bad_bounds.items():
        s = good_state()
        add(f"F.randint[{kind}]", lambda lo=lo, hi=hi, dt=dt, s=s: F.randint(x32(), s, lo, hi, dtype=dt),
            ("low", "high"), PUBLIC, [s])
        add(f"randint_like[{kind}]", lambda lo=lo, hi=hi, dt=dt: torch_rngx.randint_like(x32(), lo, hi, dtype=dt),
            ("low", "high"))
        add(f"ops.randint[{kind}]", lambda lo=lo, hi=hi, dt=dt, s=s: ops.randint(x32(), s, lo, hi, dt),
            ("low", "high"), RAW, [s])
    for kind, (lo, hi) in {"float_low": (0.5, 3), "str_high": (0, "3"), "none_low": (None, 3), "bool_high": (0, True),
                           "high_2^64": (0, 2**64)}.items():
        s = good_state()
        add(f"F.randint[{kind}]", lambda lo=lo, hi=hi, s=s: F.randint(x32(), s, lo, hi), ("low", "high"), PUBLIC, [s])
    for kind, dt in {"float32": torch.float32, "bool": torch.bool, "uint16": torch.uint16, "str": "int64"}.items():
        s = good_state()
        add(f"F.randint[dtype={kind}]", lambda d=dt, s=s: F.randint(x32(), s, 0, 3, dtype=d), ("dtype",), PUBLIC, [s])
        if kind in ("uint16", "str"):  # a float or bool dtype is torch's randint_like's too
            add(f"randint_like[dtype={kind}]", lambda d=dt: torch_rngx.randint_like(x32(), 0, 3, dtype=d), ("dtype",))
        if kind != "str":
            add(f"ops.randint[dtype={kind}]", lambda d=dt, s=s: ops.randint(x32(), s, 0, 3, d), ("dtype",), RAW, [s])
    for kind, dt in {"int64": torch.int64, "bool": torch.bool}.items():
        s = good_state()
        add(f"F.normal[dtype={kind}]", lambda d=dt, s=s: F.normal(x32(), s, dtype=d), ("dtype",), PUBLIC, [s])
        add(f"randn_like[dtype={kind}]", lambda d=dt: torch_rngx.randn_like(x32(), dtype=d), ("dtype",))
        add(f"ops.normal[dtype={kind}]", lambda d=dt, s=s: ops.normal(x32(), s, 0.0, 1.0, d), ("dtype",), RAW, [s])
    add("blocks_used[op=unknown]", lambda: torch_rngx.blocks_used(4, torch.float32, "gamma"), ("op",))

    # ---- half ----
    for kind, half in BAD_HALF.items():
        for fname, call in {
            "F.quantize_noise": lambda h, s: F.quantize_noise(x32(), s, h),
            "ops.quantize_noise": lambda h, s: ops.quantize_noise(x32(), s, h),
        }.items():
            raw = fname.startswith("ops.")
            if raw and kind in ("bool", "tensor"):
                continue  # the schema parser converts True and a 0-dim tensor to float (valid values)
            s = good_state()
            add(f"{fname}[half={kind}]", lambda call=call, h=half, s=s: call(h, s), ("half",), RAW if raw else PUBLIC, [s])
    s = good_state()
    add("F.quantize_noise[half=float64_overflow]",
        lambda s=s: F.quantize_noise(x32().double(), s, 1e308), ("half",), PUBLIC, [s])
    add("ops.quantize_noise[half=float64_overflow]",
        lambda s=s: ops.quantize_noise(x32().double(), s, 1e308), ("half",), RAW, [s])

    # ---- low, high ----
    for kind, (low, high) in BAD_LOW_HIGH.items():
        names = ("high",) if "high" in kind else ("low",)
        for fname, call in {
            "F.uniform": lambda lo, hi, s: F.uniform(x32(), s, lo, hi),
            "uniform_like": lambda lo, hi, s: torch_rngx.uniform_like(x32(), lo, hi),
            "ops.uniform": lambda lo, hi, s: ops.uniform(x32(), s, lo, hi, None),
        }.items():
            raw = fname.startswith("ops.")
            s = good_state()
            add(f"{fname}[{kind}]", lambda call=call, lo=low, hi=high, s=s: call(lo, hi, s), names,
                RAW if raw else PUBLIC, [s])

    # ---- dtype ----
    for kind, dtype in {"int64": torch.int64, "complex64": torch.complex64, "bool": torch.bool, "str": "float32",
                        "numpy": np.float32}.items():
        s = good_state()
        add(f"F.uniform[dtype={kind}]", lambda d=dtype, s=s: F.uniform(x32(), s, dtype=d), ("dtype",), PUBLIC, [s])
        add(f"rand_like[dtype={kind}]", lambda d=dtype: torch_rngx.rand_like(x32(), dtype=d), ("dtype",))
        add(f"ops.uniform[dtype={kind}]", lambda d=dtype, s=s: ops.uniform(x32(), s, 0.0, 1.0, d), ("dtype",), RAW, [s])
        if kind != "int64":  # bits dtypes have a size too (2 words for 64-bit ones)
            add(f"blocks_used[dtype={kind}]", lambda d=dtype: torch_rngx.blocks_used(4, d), ("dtype",))
    # bits takes the integer dtypes only
    for kind, dtype in {"bool": torch.bool, "float32": torch.float32, "float64": torch.float64,
                        "bfloat16": torch.bfloat16, "complex64": torch.complex64, "str": "int32",
                        "numpy": np.int32}.items():
        s = good_state()
        add(f"F.bits[dtype={kind}]", lambda d=dtype, s=s: F.bits([3], s, dtype=d), ("dtype",), PUBLIC, [s])
        if kind not in ("str", "numpy"):
            add(f"ops.bits[dtype={kind}]", lambda d=dtype, s=s: ops.bits([3], s, d), ("dtype",), RAW, [s])

    # ---- key, split's num and fold_in's data ----
    for kind, seed in BAD_SEEDS.items():
        if kind != "none_manual":
            add(f"F.key[seed={kind}]", lambda seed=seed: F.key(seed), ("seed",))
    for kind, dtype in {"int32": torch.int32, "float64": torch.float64, "str": "int64"}.items():
        add(f"F.key[dtype={kind}]", lambda d=dtype: F.key(1, dtype=d), ("dtype",))
    for kind, num in {"zero": 0, "negative": -1, "float": 1.5, "str": "2", "none": None}.items():
        s = good_state()
        add(f"F.split[num={kind}]", lambda n=num, s=s: F.split(s, n), ("num",), PUBLIC, [s])
        if kind in ("zero", "negative", "float", "str"):
            add(f"ops.split[num={kind}]", lambda n=num, s=s: ops.split(s, n), ("num",), RAW, [s])
        g = torch_rngx.Generator(3)
        add(f"Generator.split[n={kind}]", lambda g=g, n=num: g.split(n), ("n",), PUBLIC, [g.state])
    bad_data = {"negative": -1, "2^64": 2**64, "2^100": 2**100, "float": 1.5, "str": "3", "none": None,
                "float_tensor": torch.tensor(1.5), "bool_tensor": torch.tensor(True),
                "int32_tensor": torch.tensor(3, dtype=torch.int32), "no_broadcast": torch.tensor([1, 2, 3])}
    for kind, data in bad_data.items():
        s = good_state()
        add(f"F.fold_in[data={kind}]", lambda d=data, s=s: F.fold_in(s, d), ("data",), PUBLIC, [s])
        if isinstance(data, torch.Tensor):
            add(f"ops.fold_in[data={kind}]", lambda d=data, s=s: ops.fold_in(s, d), ("data",), RAW, [s])
        g = torch_rngx.Generator(3)
        add(f"Generator.fold_in[data={kind}]", lambda g=g, d=data: g.fold_in(d), ("data",), PUBLIC, [g.state])
    s = torch.zeros(2, 3, 2, dtype=torch.int64)
    add("F.fold_in[data=per_key_no_broadcast]", lambda s=s: F.fold_in(s, torch.zeros(3, 3, dtype=torch.int64)),
        ("data",), PUBLIC, [s])

    # ---- size ----
    for kind, size in BAD_SIZES.items():
        s = good_state()
        add(f"F.bits[size={kind}]", lambda sz=size, s=s: F.bits(sz, s), ("size",), PUBLIC, [s])
        if kind in ("str", "bool_elem"):
            continue  # the schema reads "3" and [True] as sequences of ints; F.bits rejects them
        add(f"ops.bits[size={kind}]", lambda sz=size, s=s: ops.bits(sz, s, torch.int32), ("size", "dims"), RAW, [s])

    # ---- seeds and Generators ----
    for kind, seed in BAD_SEEDS.items():
        if kind != "none_manual":
            add(f"Generator[seed={kind}]", lambda seed=seed: torch_rngx.Generator(seed), ("seed",))
        g = torch_rngx.Generator(3)
        g.state[1] = 40
        add(f"Generator.manual_seed[seed={kind}]", lambda g=g, seed=seed: g.manual_seed(seed), ("seed",), PUBLIC,
            [g.state])
    for kind, device in {"meta": "meta", "bogus": "bogus"}.items():
        add(f"Generator[device={kind}]", lambda d=device: torch_rngx.Generator(1, device=d), ("device",),
            (TypeError, ValueError, RuntimeError))
    for kind, gen in {"torch.Generator": torch.Generator(), "int": 5, "str": "g"}.items():
        add(f"rand_like[generator={kind}]", lambda gen=gen: torch_rngx.rand_like(x32(), generator=gen), ("generator",))
        add(f"quantize[generator={kind}]", lambda gen=gen: torch_rngx.quantize(x32(), generator=gen), ("generator",))
        add(f"dropout[generator={kind}]", lambda gen=gen: torch_rngx.dropout(x32(), generator=gen), ("generator",))
        add(f"nn.Dropout[generator={kind}]", lambda gen=gen: torch_rngx.nn.Dropout(generator=gen)(x32()),
            ("generator",))
        add(f"dropout3d[generator={kind}]", lambda gen=gen: torch_rngx.dropout3d(x32(), generator=gen),
            ("generator",))

    # ---- quantize's mode and means ----
    for kind, mode in {"unknown": "round", "none": None, "upper": "NOISE", "int": 1}.items():
        add(f"quantize[mode={kind}]", lambda m=mode: torch_rngx.quantize(x32(), m), ("mode",))
    for kind, means in {"no_broadcast": torch.zeros(5), "bigger": torch.zeros(2, 3, 4), "list": [0.0],
                        "float": 0.5, "str": "m"}.items():
        for mode in ("dequantize", "symbols"):
            add(f"quantize[{mode},means={kind}]", lambda m=means, mode=mode: torch_rngx.quantize(x32(), mode, m),
                ("means",))

    # ---- exponential's rate ----
    for kind, rate in {"zero": 0.0, "neg": -1.0, "nan": math.nan, "inf": math.inf, "str": "1", "none": None,
                       "bool": True, "huge_int": 10**400}.items():
        for fname, call in {
            "F.exponential": lambda r, s: F.exponential(x32(), s, r),
            "exponential_like": lambda r, s: torch_rngx.exponential_like(x32(), r),
            "ops.exponential": lambda r, s: ops.exponential(x32(), s, r, None),
        }.items():
            raw = fname.startswith("ops.")
            if raw and kind in ("bool", "huge_int"):
                continue  # the schema parser converts True to 1.0; 10**400 it rejects without naming the argument
            s = good_state()
            add(f"{fname}[rate={kind}]", lambda call=call, r=rate, s=s: call(r, s), ("rate",), RAW if raw else PUBLIC,
                [s])
    for kind, dt in {"int64": torch.int64, "bool": torch.bool}.items():
        s = good_state()
        add(f"F.exponential[dtype={kind}]", lambda d=dt, s=s: F.exponential(x32(), s, dtype=d), ("dtype",), PUBLIC, [s])
        add(f"ops.exponential[dtype={kind}]", lambda d=dt, s=s: ops.exponential(x32(), s, 1.0, d), ("dtype",), RAW, [s])

    # ---- randperm's n, dtype and device ----
    for kind, (n, dt) in {"neg": (-1, torch.int64), "float": (2.5, torch.int64), "str": ("3", torch.int64),
                          "none": (None, torch.int64), "bool": (True, torch.int64), "uint8_too_big": (257, torch.uint8),
                          "float16_too_big": (2050, torch.float16)}.items():
        s = good_state()
        add(f"F.randperm[{kind}]", lambda n=n, d=dt, s=s: F.randperm(n, s, dtype=d), ("n",), PUBLIC, [s])
        add(f"randperm[{kind}]", lambda n=n, d=dt: torch_rngx.randperm(n, dtype=d), ("n",))
    for kind, dt in {"bool": torch.bool, "complex64": torch.complex64, "uint16": torch.uint16, "str": "int64"}.items():
        s = good_state()
        add(f"F.randperm[dtype={kind}]", lambda d=dt, s=s: F.randperm(4, s, dtype=d), ("dtype",), PUBLIC, [s])
        add(f"randperm[dtype={kind}]", lambda d=dt: torch_rngx.randperm(4, dtype=d), ("dtype",))
    s = good_state()
    add("F.randperm[device=meta]", lambda s=s: F.randperm(4, s, device="meta"), ("device",), PUBLIC, [s])
    add("randperm[device=meta]", lambda: torch_rngx.randperm(4, device="meta"), ("device",))
    for kind, gen in {"torch.Generator": torch.Generator(), "int": 5}.items():
        add(f"randperm[generator={kind}]", lambda gen=gen: torch_rngx.randperm(4, generator=gen), ("generator",))
        add(f"multinomial[generator={kind}]", lambda gen=gen: torch_rngx.multinomial(w34(), 1, generator=gen),
            ("generator",))

    # ---- multinomial: torch.multinomial's error cases; the race op's own checks ----
    bad_weights = {"negative": torch.tensor([0.5, -0.1, 1.0]), "nan": torch.tensor([0.5, math.nan]),
                   "inf": torch.tensor([math.inf, 1.0]), "zero_row": torch.tensor([[1.0, 2.0], [0.0, 0.0]]),
                   "3_dims": torch.ones(2, 2, 2), "0_dims": torch.tensor(1.0), "no_categories": torch.ones(3, 0)}
    for kind, w in bad_weights.items():
        for repl in (False, True):
            s = good_state()
            add(f"F.multinomial[input={kind},replacement={repl}]", lambda w=w, s=s, r=repl: F.multinomial(w, s, 1, r),
                ("input",), PUBLIC, [s])
            add(f"multinomial[input={kind},replacement={repl}]",
                lambda w=w, r=repl: torch_rngx.multinomial(w, 1, r), ("input",))
    s = good_state()
    add("F.multinomial[too_few_positive]", lambda s=s: F.multinomial(torch.tensor([1.0, 0.0, 2.0]), s, 3),
        ("input", "num_samples"), PUBLIC, [s])
    for kind, (num, repl) in {"zero": (0, True), "neg": (-2, False), "float": (1.5, True), "str": ("2", True),
                              "bool": (True, True), "above_categories": (5, False)}.items():
        s = good_state()
        add(f"F.multinomial[num_samples={kind}]", lambda n=num, r=repl, s=s: F.multinomial(w34(), s, n, r),
            ("num_samples",), PUBLIC, [s])
        add(f"multinomial[num_samples={kind}]", lambda n=num, r=repl: torch_rngx.multinomial(w34(), n, r),
            ("num_samples",))
    for kind, repl in {"int": 1, "str": "yes", "none": None}.items():
        s = good_state()
        add(f"F.multinomial[replacement={kind}]", lambda r=repl, s=s: F.multinomial(w34(), s, 1, r),
            ("replacement",), PUBLIC, [s])
    s = torch.zeros(4, 2, dtype=torch.int64)
    add("F.multinomial[state=rows_mismatch]", lambda s=s: F.multinomial(w34(), s, 1), ("state",), PUBLIC, [s])
    s = torch.zeros(3, 2, dtype=torch.int64)
    add("F.multinomial[state=batched_1d_input]", lambda s=s: F.multinomial(w34()[0], s, 1), ("state",), PUBLIC, [s])
    race_bad = {"negative": (torch.tensor([[0.5, -1.0]], dtype=torch.float64), 1, 1, "weights"),
                "nan": (torch.tensor([[math.nan, 1.0]], dtype=torch.float64), 1, 1, "weights"),
                "zero_row": (torch.tensor([[0.0, 0.0]], dtype=torch.float64), 1, 1, "weights"),
                "float32": (torch.ones(2, 3), 1, 1, "weights"),
                "noncontiguous": (torch.ones(3, 4, dtype=torch.float64).T, 1, 1, "weights"),
                "no_categories": (torch.ones(3, 0, dtype=torch.float64), 1, 1, "weights"),
                "draws_0": (torch.ones(2, 3, dtype=torch.float64), 0, 1, "draws"),
                "need_0": (torch.ones(2, 3, dtype=torch.float64), 1, 0, "need"),
                "need_above_categories": (torch.ones(2, 3, dtype=torch.float64), 1, 4, "need"),
                "too_few_positive": (torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64), 1, 3, "need")}
    for kind, (w, draws, need, name) in race_bad.items():
        s = good_state()
        add(f"ops.race[{kind}]", lambda w=w, d=draws, n=need, s=s: ops.race(w, s, d, n), (name,), RAW, [s])

    # ---- a stream to draw from, watched: a refused stateful call moves no Generator, nn.RNG or module stream ----
    # (the calls above draw from torch's generator, which _check watches for every case)
    streams = {"Generator": lambda: torch_rngx.Generator(3), "nn.RNG": lambda: torch_rngx.nn.RNG(3)}
    draws_like = {
        "rand_like": lambda x, g: torch_rngx.rand_like(x, generator=g),
        "uniform_like": lambda x, g: torch_rngx.uniform_like(x, -1.0, 1.0, generator=g),
        "randn_like": lambda x, g: torch_rngx.randn_like(x, generator=g),
        "normal_like": lambda x, g: torch_rngx.normal_like(x, 1.0, 2.0, generator=g),
        "bernoulli_like": lambda x, g: torch_rngx.bernoulli_like(x, 0.5, generator=g),
        "exponential_like": lambda x, g: torch_rngx.exponential_like(x, generator=g),
        "quantize": lambda x, g: torch_rngx.quantize(x, generator=g),
        "dropout": lambda x, g: torch_rngx.dropout(x, 0.5, generator=g),
        "dropout2d": lambda x, g: torch_rngx.dropout2d(x, 0.5, generator=g),
        "alpha_dropout": lambda x, g: torch_rngx.alpha_dropout(x, 0.5, True, generator=g),
        "nn.Dropout": lambda x, g: torch_rngx.nn.Dropout(0.5, generator=g)(x),
        "nn.init.trunc_normal_": lambda x, g: torch_rngx.nn.init.trunc_normal_(x, generator=g),
        "multinomial": lambda x, g: torch_rngx.multinomial(x, 1, generator=g),
    }
    for fname, call in draws_like.items():
        argname = {"nn.init.trunc_normal_": "tensor", "multinomial": "input"}.get(fname, "input" if "drop" in fname
                                                                                  or fname == "nn.Dropout" else "x")
        for kind in ("int32", "complex64", "sparse", "nested", "65_dims", "list"):
            for sname, make in streams.items():
                g = make()
                add(f"{fname}[x={kind},generator={sname}]", lambda call=call, m=BAD_XS[kind], g=g: call(m(), g),
                    (argname,), PUBLIC, [g.state])
    # What torch refuses to write in place (its messages), and a NaN weight: refused before the key is drawn.
    leaf = lambda: torch.ones(2, 3, 4, 4, requires_grad=True)  # noqa: E731
    expanded = lambda: torch.ones(1, 3, 1, 1).expand(2, 3, 4, 4)  # noqa: E731
    in_place = {
        "dropout": lambda x, g: torch_rngx.dropout(x, 0.5, inplace=True, generator=g),
        "dropout2d": lambda x, g: torch_rngx.dropout2d(x, 0.5, inplace=True, generator=g),
        "alpha_dropout": lambda x, g: torch_rngx.alpha_dropout(x, 0.5, True, inplace=True, generator=g),
        "feature_alpha_dropout": lambda x, g: torch_rngx.feature_alpha_dropout(x, 0.5, True, True, generator=g),
        "nn.Dropout": lambda x, g: torch_rngx.nn.Dropout(0.5, inplace=True, generator=g)(x),
        "nn.init.trunc_normal_": lambda x, g: torch_rngx.nn.init.trunc_normal_(x, generator=g),
    }
    for fname, call in in_place.items():
        refusals = {"expanded": (expanded, "written-to tensor"), "leaf": (leaf, "leaf Variable"),
                    "leaf_view": (lambda: leaf()[1:], "leaf Variable")}
        for kind, (make_x, says) in refusals.items():
            if fname == "nn.init.trunc_normal_" and kind != "expanded":
                continue  # torch's nn.init fills under no_grad: a leaf that requires grad is its usual target
            for sname, make in {**streams, "none": lambda: None}.items():
                g = make()
                add(f"{fname}[inplace,x={kind},generator={sname}]", lambda call=call, m=make_x, g=g: call(m(), g),
                    (says,), (RuntimeError,), [] if g is None else [g.state])
    for sname, make in streams.items():
        g = make()
        add(f"multinomial[input=nan,generator={sname}]",
            lambda g=g: torch_rngx.multinomial(torch.tensor([1.0, math.nan]), 1, generator=g), ("input",), PUBLIC,
            [g.state])

    # ---- blocks_used, the take_ step and seed_state ----
    for kind, n in {"negative": -1, "float": 1.5, "bool": True, "none": None, "str": "3"}.items():
        add(f"blocks_used[numel={kind}]", lambda n=n: torch_rngx.blocks_used(n, torch.float32), ("numel",))
    for kind, (dt, r) in {"missing": (torch.int64, None), "zero": (torch.int64, 0), "2^64": (torch.int64, 2**64),
                          "int32 2^32+1": (torch.int32, 2**32 + 1), "float": (torch.int8, 3.0), "bool": (torch.int8, True),
                          "not randint": (torch.float32, 5)}.items():
        op = None if dt == torch.float32 else "randint"
        add(f"blocks_used[range={kind}]", lambda d=dt, r=r, op=op: torch_rngx.blocks_used(4, d, op, range=r), ("range",))
    s = good_state()
    add("ops.take_[blocks=-4]", lambda s=s: ops.take_(s, -4), ("blocks",), RAW, [s])
    add("ops.take_[blocks=2^64]", lambda s=s: ops.take_(s, 2**64), ("blocks",), RAW, [s])
    add("ops.seed_state[an argument]", lambda s=s: ops.seed_state(s), ("seed_state",), RAW, [s])
    return out


# ---- the child: runs cases from an index on, reporting each before and after --------------------------------


def _check(case):
    """None when the case behaved, else what went wrong."""
    before = [t.detach().clone() for t in case.watch]
    torch_before = torch.default_generator.get_state()
    try:
        case.fn()
    except case.exc as e:
        msg = str(e)
        found = [n for n in case.names if re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", msg)]
        if not found:
            return f"{type(e).__name__} does not name any of {case.names}: {msg[:300]!r}"
    except BaseException as e:  # noqa: BLE001
        return f"raised {type(e).__name__} (expected one of {[t.__name__ for t in case.exc]}): {str(e)[:300]!r}"
    else:
        return "no exception"
    for t, b in zip(case.watch, before):
        if not _same(t.detach(), b):
            return "a state tensor changed"
    if not torch.equal(torch.default_generator.get_state(), torch_before):
        return "torch's generator moved"
    return None


def _same(t, b):
    if t.shape != b.shape or t.dtype != b.dtype or t.layout != b.layout:
        return False
    if t.device.type == "meta":
        return True  # no values to compare
    if t.layout != torch.strided:
        t, b = t.to_dense(), b.to_dense()
    flat = lambda v: v.contiguous().reshape(-1).view(torch.uint8)  # noqa: E731  (bitwise: NaN equals NaN)
    return torch.equal(flat(t), flat(b))


def _worker(start, selftest):
    all_cases = _selftest_cases() if selftest else cases()
    for i in range(start, len(all_cases)):
        print(f"START {i}", flush=True)
        problem = _check(all_cases[i])
        print("RESULT " + json.dumps({"i": i, "problem": problem}), flush=True)


def run_harness(selftest=False, timeout=600):
    """name -> None (good) or a description of the failure, crashes included."""
    names = [c.name for c in (_selftest_cases() if selftest else cases())]
    results, start = {}, 0
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    while start < len(names):
        args = [sys.executable, os.path.abspath(__file__), "--worker", str(start)] + (["--selftest"] if selftest else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
        current = None
        for line in proc.stdout.splitlines():
            if line.startswith("START "):
                current = int(line.split()[1])
            elif line.startswith("RESULT "):
                r = json.loads(line[len("RESULT "):])
                results[names[r["i"]]] = r["problem"]
                current = None
        if proc.returncode == 0 and current is None:
            break
        if current is None:  # died outside any case (e.g. on import): fail everything left
            for n in names[start:]:
                results.setdefault(n, f"the harness child failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
            break
        results[names[current]] = f"crashed (rc {proc.returncode}): {proc.stderr[-1500:]}"
        start = current + 1
    return results


# ---- the harness's own check: it must see crashes, silences, vague messages and changed states --------------


def _selftest_cases():
    s = good_state()

    def clobber():
        s[1] = 99
        raise ValueError("state must be int64")

    def crash():
        os.abort()

    def draws_from_torch():
        torch.rand(1)
        raise ValueError("p must be a probability")

    return [
        Case("good", lambda: F.dropout(x32(), s, 2.0), ("p",), PUBLIC, [s]),
        Case("crash", crash, ("x",)),
        Case("silent", lambda: F.dropout(x32(), s, 0.5), ("p",), PUBLIC, [s]),
        Case("vague", lambda: F.dropout(x32(), s, 2.0), ("half",), PUBLIC, [s]),
        Case("wrong_type", lambda: F.dropout(x32(), s, 2.0), ("p",), (TypeError,), [s]),
        Case("clobbers_state", clobber, ("state",), PUBLIC, [s]),
        Case("moves_torchs_generator", draws_from_torch, ("p",)),
        Case("after_crash", lambda: F.dropout(x32(), s, -1.0), ("p",), PUBLIC, [s]),
    ]


def test_harness_catches_crashes_and_bad_behaviour():
    r = run_harness(selftest=True)
    assert r["good"] is None and r["after_crash"] is None, r
    assert r["crash"].startswith("crashed"), r["crash"]
    assert r["silent"] == "no exception"
    assert "does not name" in r["vague"]
    assert "expected one of" in r["wrong_type"]
    assert r["clobbers_state"] == "a state tensor changed"
    assert r["moves_torchs_generator"] == "torch's generator moved"


# ---- the limits above are tight: what is just inside them still works, in-process and with finite values ----

FLOAT32_EDGE = float.fromhex("0x1.fffffefffffffp+127")  # the largest double that rounds to a finite float32


@pytest.mark.parametrize("op", [F.uniform, ops.uniform])
@REUSES_KEYS
def test_float32_limits_just_inside_are_accepted(op):
    s = good_state()
    args = (None,) if op is ops.uniform else ()
    out = op(x32(), s, 0.0, FLOAT32_EDGE, *args)
    assert torch.isfinite(out).all() and out.max() > 1e38
    out = op(x32(), s, -FLOAT32_EDGE / 2, FLOAT32_EDGE / 2, *args)
    assert torch.isfinite(out).all()
    # float64 computes in double: float32's limit does not apply.
    assert torch.isfinite(F.uniform(x32().double(), s, -3e38, 3e38)).all()
    with pytest.raises((ValueError, RuntimeError), match="float32"):
        op(x32(), s, 0.0, float.fromhex("0x1.ffffffp+127"), *args)  # the tie: rounds to infinity
    assert torch.equal(s, good_state())


@pytest.mark.parametrize("op", [F.quantize_noise, ops.quantize_noise])
@REUSES_KEYS
def test_half_limits_just_inside_are_accepted(op):
    s = good_state()
    assert torch.isfinite(op(torch.zeros(64), s, FLOAT32_EDGE / 2)).all()
    assert torch.isfinite(op(torch.zeros(64, dtype=torch.float64), s, 1e300)).all()
    with pytest.raises((ValueError, RuntimeError), match="half"):
        op(torch.zeros(64), s, float.fromhex("0x1.ffffffp+126"))


def test_bool_seed_is_rejected_but_numpy_and_big_ints_are_fine():
    with pytest.raises(TypeError, match="seed"):
        torch_rngx.Generator(False)
    assert torch_rngx.Generator(np.uint64(2**64 - 1)).initial_seed() == 2**64 - 1
    assert torch_rngx.Generator(2**63).initial_seed() == 2**63


@pytest.fixture(scope="module")
def harness_results():
    return run_harness()


@pytest.mark.parametrize("name", [c.name for c in cases()])
def test_bad_input(harness_results, name):
    problem = harness_results[name]
    assert problem is None, f"{name}: {problem}"


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker(int(sys.argv[sys.argv.index("--worker") + 1]), "--selftest" in sys.argv)
