"""The tests' ops table (tests/ops_table.py) covers the registry, and every op of it is layout-invariant: in any
memory layout of its input (contiguous, channels_last, transposed, sliced with steps, expanded, with a storage offset)
and any dtype, an elementwise op gives its contiguous copy's values, laid out like torch.empty_like of the input."""
import pytest
import torch
from conftest import FLOAT_DTYPES, layouts, make_state, recompute
from ops_table import ROWS, draws

from torch_rngx._engine.spec import COMPOSITE_WORDS, SPECS

KEY = make_state(0x9E3779B97F4A7C15, 2**64 - 3)  # the offset wraps past 2^64 inside each call


def test_every_registered_op_has_a_row():
    assert {row.spec for row in ROWS.values()} == set(SPECS) | set(COMPOSITE_WORDS) | {"bits"}


def _layouts(dtype):
    out = layouts(dtype=dtype)
    out["expanded"] = out["contiguous"][:, :1].expand(2, 3, 4, 5)  # stride 0 along dim 1
    holder = torch.randn(2 * 3 * 4 * 5 + 7).to(dtype)
    out["storage_offset"] = holder[7:].view(2, 3, 4, 5).copy_(out["contiguous"])
    return out


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.key_reuse_ok("draws every op from one key in every layout, to compare with its contiguous copy")
def test_every_op_is_the_same_in_every_layout(dtype):
    for layout, x in _layouts(dtype).items():
        got = draws(x, KEY)
        with recompute():
            want = draws(x.contiguous(), KEY)
        for name, out in got.items():
            assert torch.equal(out, want[name]), (name, layout)
            if ROWS[name].view and ROWS[name].spec == name != "bits":  # a kernel's output follows x's layout
                assert out.stride() == torch.empty_like(x).stride(), (name, layout)
