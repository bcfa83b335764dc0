"""Guarantee: blocks_used, by which a Generator advances, covers exactly the words each kernel reads, for every op
in the registry (_spec.SPECS, the composites and bits) and every dtype it takes; randint at both of its ranges.

The words per element come from the C op table (csrc/kernels/op_table.h, through _C.samplers()), so _spec cannot restate
them wrong; here each kernel's own outputs show how many it reads. With one key, a block (4 words) later in the
stream moves element j's words to element j - 4 / k, k the words per element: the call at offset o + 1 gives
element j the value the call at offset o gives element j + 4 / k, for the kernel's k and no other (normal's pairs
too: 4 / k is even). The one-call forms (fused ops) advance their state by ceil(n k / 4) blocks."""

import pytest
import torch

from torch_rngx._engine import spec as _spec

pytestmark = pytest.mark.key_reuse_ok(
    "draws one stream at two offsets on purpose, to see which words each element takes"
)

ops = torch.ops.rngx
N = 64  # elements: a wrong k matches by chance with probability below 2^-64 even for 0/1 values


def as_bytes(t):
    return t.contiguous().view(-1).view(torch.uint8)


def words_read(draw):
    """The k in (1, 2, 4) for which draw(n, key) shifts by 4 / k elements per block of offset; asserts it is one."""
    full = as_bytes(draw(N + 4, torch.tensor([0x5EED, 7])))
    later = as_bytes(draw(N, torch.tensor([0x5EED, 8])))
    size = len(later) // N
    found = [k for k in (1, 2, 4) if torch.equal(later, full[4 // k * size : (4 // k + N) * size])]
    assert len(found) == 1, f"the outputs fit words per element {found}"
    return found[0]


def params_for(spec, x):
    """The opcheck example with the most distinct values (a p of 0 draws nothing), tensors made deterministic."""
    best = None
    for params in spec.examples(x):
        params = [torch.full_like(x, 0.5) if isinstance(a, torch.Tensor) else a for a in params]
        out = spec.kernel(x, torch.tensor([1, 2]), *params)
        distinct = (out.view(torch.uint8) if out.element_size() == 1 else out).unique().numel()  # float8: no unique
        if best is None or distinct > best[0]:
            best = (distinct, params)
    return best[1]


def sampler_cases():
    """(id, spec, dtype, randint's range or None, draw(n, key))."""
    for spec in _spec.SPECS.values():
        for dtype in spec.dtypes:
            if spec.name == "randint":
                for low, high in [(-3, 100), (-(1 << 40), (1 << 41) + 5)] if dtype == torch.int64 else [(0, 100)]:
                    yield (
                        f"randint-{dtype}-{high - low}",
                        spec,
                        dtype,
                        high - low,
                        lambda n, key, d=dtype, lo=low, hi=high: ops.randint(torch.empty(n), key, lo, hi, d),
                    )
                continue

            def draw(n, key, spec=spec, dtype=dtype):
                x = torch.full((n,), -1.1, dtype=dtype)  # negative: rrelu draws a slope for each; -1.1: between two
                #                                           values of every stochastic_round target
                return spec.kernel(x, key, *params_for(spec, x))

            yield f"{spec.name}-{dtype}", spec, dtype, None, draw


SAMPLERS = list(sampler_cases())


@pytest.mark.parametrize("case", SAMPLERS, ids=[c[0] for c in SAMPLERS])
def test_blocks_used_is_what_the_kernel_reads(case):
    _, spec, dtype, span, draw = case
    k = words_read(draw)
    assert _spec.words_per_element(dtype, spec.name, span) == k
    for n in (1, 3, 4, 5, 1001):
        assert _spec.blocks_of(n, dtype, spec.name, span) == -(-n * k // 4)


@pytest.mark.parametrize(
    "case", [c for c in SAMPLERS if c[1].fused is not None], ids=[c[0] for c in SAMPLERS if c[1].fused is not None]
)
def test_the_one_call_form_advances_by_blocks_used(case):
    _, spec, dtype, span, _ = case
    x = torch.ones(37, dtype=torch.float32 if spec.name == "randint" else dtype)
    state = torch.tensor([3, 10])
    if spec.name == "randint":
        low = 0 if dtype == torch.uint8 else -3
        params = [low, low + span, dtype]
    else:
        params = params_for(spec, x)
    spec.fused_kernel(state, x, *params)
    assert state.tolist() == [3, 10 + _spec.blocks_of(37, dtype, spec.name, span)]


@pytest.mark.parametrize("dtype", list(_spec.WORDS), ids=str)
def test_bits_and_the_default_words_are_what_bits_reads(dtype):
    if dtype.is_floating_point:  # the default words: those of bits of the same width
        same_width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
        assert _spec.words_per_element(dtype) == _spec.words_per_element(same_width)
        return
    assert words_read(lambda n, key: ops.bits([n], key, dtype)) == _spec.words_per_element(dtype)


def test_the_composites_words_are_their_kernels():
    # randperm sorts int64 bits; multinomial's race scores one float64 exponential per (draw, category)
    bits = words_read(lambda n, key: ops.bits([n], key, torch.int64))
    race = words_read(lambda n, key: ops.race(torch.ones(1, n, dtype=torch.float64), key, 1, 1))
    assert set(_spec.COMPOSITE_WORDS) == {"randperm", "multinomial"}
    assert set(_spec.COMPOSITE_WORDS["randperm"].values()) == {bits}
    assert set(_spec.COMPOSITE_WORDS["multinomial"].values()) == {race}
