"""rngx::step_, a Generator state's bare C++ step (take_ without the checkpoint journal): what it returns and how far
it moves the state, its checks, and the same steps compiled (fullgraph, static and dynamic shapes) and exported.
Threads: tests/test_threads.py; DTensor states: tests/test_dtensor_rules_at_import.py; fake kernel: opcheck_all."""
import pytest
import torch

step = torch.ops.rngx.step_


def test_step_returns_the_key_and_moves_the_offset_modulo_2_to_the_64():
    state = torch.tensor([7, 10])
    assert step(state, 6).tolist() == [7, 10] and state.tolist() == [7, 16]
    assert step(state, 0).tolist() == [7, 16] and state.tolist() == [7, 16]
    state = torch.tensor([7, -2])  # offset 2^64 - 2
    assert step(state, 5).tolist() == [7, -2] and state.tolist() == [7, 3]


def test_step_is_take_without_the_journal():
    a, b = torch.tensor([3, 100]), torch.tensor([3, 100])
    for blocks in (1, 4, 2**40):
        assert torch.equal(step(a, blocks), torch.ops.rngx.take_(b, blocks)) and torch.equal(a, b)


@pytest.mark.parametrize(
    "state, blocks, names",
    [
        (torch.tensor([1.0, 2.0]), 1, "state"),
        (torch.tensor([1, 2, 3]), 1, "state"),
        (torch.tensor([[1, 2], [3, 4]]), 1, "state"),
        (torch.tensor([1, 2, 3, 4])[::2], 1, "state"),
        (torch.tensor([1, 2]), -1, "blocks"),
    ],
    ids=["float", "shape 3", "batched", "strided", "negative blocks"],
)
def test_step_refuses_a_bad_state_or_blocks_and_moves_nothing(state, blocks, names):
    before = state.clone()
    with pytest.raises(RuntimeError, match=names):
        step(state, blocks)
    assert torch.equal(state, before)


def _steps(state, x):
    """Three steps by x's size: the keys, and x scaled so that the graph has other work."""
    return step(state, x.numel()), step(state, 2 * x.numel()), step(state, 1), x * 2


@pytest.mark.parametrize("dynamic", [False, True])
def test_step_compiled_fullgraph_equals_eager(dynamic):
    torch._dynamo.reset()
    compiled = torch.compile(_steps, fullgraph=True, dynamic=dynamic)
    for n in (3, 5, 8):
        eager_state, compiled_state, x = torch.tensor([9, 1]), torch.tensor([9, 1]), torch.ones(n)
        want, got = _steps(eager_state, x), compiled(compiled_state, x)
        assert all(torch.equal(a, b) for a, b in zip(want, got)), (n, want, got)
        assert torch.equal(compiled_state, eager_state), n


class _Stepper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.tensor([9, 1]))

    def forward(self, x):
        return _steps(self.state, x)


def test_step_exported_equals_eager():
    eager, exported_module = _Stepper(), _Stepper()
    exported = torch.export.export(exported_module, (torch.ones(4),)).module()
    for _ in range(2):
        want, got = eager(torch.ones(4)), exported(torch.ones(4))
        assert all(torch.equal(a, b) for a, b in zip(want, got))
    assert torch.equal(exported.state, eager.state) and eager.state.tolist() == [9, 1 + 2 * 13]
