"""Guarantee: stream 1.0 is frozen. Every value of tests/kat/stream-1.0.json (each op x dtype x key layout: the
2^32 carry, the 2^64 wrap, batched keys, a global view starting mid-pair) is what torch_rngx and the NumPy
reference compute now, bit for bit; the file holds every case of tests/kat/kat.py's list and nothing else."""
import pytest

from kat import kat

DOC = kat.load()
BY_NAME = {c["name"]: c for c in DOC["cases"]}


def test_file_holds_exactly_the_cases():
    assert DOC["stream"] == kat.STREAM
    assert list(BY_NAME) == [kat.case_name(*c) for c in kat.CASES]
    for c in DOC["cases"]:
        entry, dtype, layout = kat.case_of(c)
        assert (c["dtype"], c["layout"]) == (dtype, layout) and c["op"] == kat.op_of(entry) and c["params"] == kat.OPS[entry][1], c["name"]
        assert len(c["bits"]) == kat.prod(kat.LAYOUTS[c["layout"]][0]), c["name"]


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
