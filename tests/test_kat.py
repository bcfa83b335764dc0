"""Guarantee: stream 1.0 is frozen. Every value of tests/kat/stream-1.0.json (each op x dtype x key layout: the
2^32 carry, the 2^64 wrap, batched keys, a global view starting mid-pair) is what torch_rngx and the NumPy
reference compute now, bit for bit; the file holds every case of tests/kat/kat.py's list and nothing else, and a
case for every op the package registers (every dtype of every sampler, randint at both of its ranges)."""
import pytest
import torch
from kat import kat

from torch_rngx._engine import spec as _spec

DOC = kat.load()
BY_NAME = {c["name"]: c for c in DOC["cases"]}


def test_file_holds_exactly_the_cases():
    assert DOC["stream"] == kat.STREAM
    assert list(BY_NAME) == [kat.case_name(*c) for c in kat.CASES]
    for c in DOC["cases"]:
        entry, dtype, layout = kat.case_of(c)
        assert (c["dtype"], c["layout"]) == (dtype, layout) and c["op"] == kat.op_of(entry) and c["params"] == kat.OPS[entry][1], c["name"]
        assert len(c["bits"]) == kat.expected_count(entry, layout), c["name"]


def registered_ops():
    """Every op a user draws with: the samplers (_spec.SPECS), the composites (randperm, multinomial) and every
    other rngx op, but a Generator's steps and seed, the samplers' one-call forms (their kernels), multinomial's
    race (its kernel) and the optimizer's fused Adam step, whose words are stochastic_round's (its float32 update
    is the optimizer's formula, not the stream's: tests/test_optim.py checks it against NumPy, make cuda-emu CUDA
    against the CPU)."""
    names = {n.split("::")[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("rngx::")}
    internal = {"take_", "step_", "seed_state", "race", "adam_sround_"} | {spec.fused for spec in _spec.SPECS.values()}
    return sorted((names - internal) | set(_spec.SPECS) | set(_spec.COMPOSITE_WORDS))


def test_every_registered_op_has_known_answers():
    covered = {(c["op"], c["dtype"]) for c in DOC["cases"]}
    missing = [op for op in registered_ops() if op not in {o for o, _ in covered}]
    assert not missing, f"no known answers for {missing}: add them to tests/kat/kat.py's OPS"
    for spec in _spec.SPECS.values():
        for dtype in spec.dtypes:
            assert (spec.name, str(dtype).split(".")[1]) in covered, f"{spec.name} has no {dtype} case"
        for dtype in spec.wide:  # randint above its narrow range takes more words: a case of its own
            assert any(c["op"] == spec.name and c["dtype"] == str(dtype).split(".")[1]
                       and c["params"]["high"] - c["params"]["low"] > spec.narrow for c in DOC["cases"])


def test_header_is_the_file():
    with open(kat.HEADER_PATH) as f:
        assert f.read() == kat.header_text(DOC)


@pytest.mark.parametrize("case", kat.CASES, ids=lambda c: kat.case_name(*c))
def test_torch_rngx_gives_the_known_answers(case):
    want = [int(b, 16) for b in BY_NAME[kat.case_name(*case)]["bits"]]
    assert kat.rngx_bits(*case) == want


@pytest.mark.parametrize("case", kat.CASES, ids=lambda c: kat.case_name(*c))
def test_reference_gives_the_known_answers(case):
    want = [int(b, 16) for b in BY_NAME[kat.case_name(*case)]["bits"]]
    assert kat.ref_bits(*case) == want
