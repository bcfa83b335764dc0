"""Checkpoints across nn.convert (docs/guide.md §6): the unconverted model's state_dict loads strictly into the
converted model, each stream missing from it starting where seed= put it (so loading it twice gives the same
masks after, whatever ran before); the same for a torch_rngx.nn.Dropout(seed=) and an nn.RNG that a checkpoint
predates. A stream buffer that is present still loads as it is, and one that is bad is still refused. The other
way round, a converted checkpoint into the unconverted model, strict loading names the streams as unexpected keys
and strict=False loads everything else."""
import copy

import pytest
import torch

import torch_rngx
from conftest import recompute


class Net(torch.nn.Module):
    """A forward with a dropout module and a random call of its own (routed to the model's stream by convert)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return torch.nn.functional.dropout(self.drop(self.lin(x)), 0.25) + torch.randn_like(x)


STREAMS = ["rngx_state", "drop.rng_state"]
X = torch.ones(4, 8)


def original():
    torch.manual_seed(0)
    return Net()


def converted(**kwargs):
    return torch_rngx.nn.convert(original(), seed=0, **kwargs).model


def streams(model):
    """The model's stream buffers as [seed, offset] lists, by state_dict key."""
    return {k: v.tolist() for k, v in model.state_dict().items() if k in STREAMS}


def test_the_unconverted_checkpoint_loads_strictly_and_restarts_the_streams():
    checkpoint = original().state_dict()
    fresh = converted()
    model = converted()
    with torch.no_grad():
        model.lin.weight.add_(1.0)  # weights the checkpoint must overwrite
    model(X), model(X)  # the streams move on
    assert streams(model) != streams(fresh)
    result = model.load_state_dict(checkpoint)  # strict
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert all(torch.equal(model.state_dict()[k], v) for k, v in checkpoint.items())
    assert streams(model) == streams(fresh) and streams(fresh).keys() == set(STREAMS)
    with recompute():  # the restarted streams draw again what the model drew before loading
        assert torch.equal(model(X), fresh(X)) and torch.equal(model(X), fresh(X))  # the same masks and noise


def test_a_missing_stream_restarts_with_strict_false_too():
    model = converted()
    model(X)
    model.load_state_dict(original().state_dict(), strict=False)
    assert streams(model) == streams(converted())


def test_a_present_stream_loads_as_saved():
    saved = converted()
    saved(X)
    model = converted()
    model.load_state_dict(saved.state_dict())
    assert streams(model) == streams(saved)
    with recompute():  # both models draw on the same stream, to compare
        assert torch.equal(model(X), saved(X))


@pytest.mark.parametrize("key", STREAMS)
def test_a_bad_stream_is_still_refused(key):
    bad = {**original().state_dict(), key: torch.zeros(2, dtype=torch.int32)}
    with pytest.raises(ValueError, match=rf"{key} must be an int64 tensor of shape \(2,\) = \[seed, offset\], got"):
        converted().load_state_dict(bad)


def test_fold_in_moves_where_a_missing_stream_restarts():
    """After fold_in_ (per data-parallel rank), an unconverted checkpoint restarts the folded streams."""
    model = converted()
    torch_rngx.nn.fold_in_(model, 3)
    folded = streams(model)
    model(X)
    model.load_state_dict(original().state_dict())
    assert streams(model) == folded
    assert all(v != streams(converted())[k] for k, v in folded.items())


def test_a_seeded_dropout_module_loads_torchs_checkpoint():
    drop = torch_rngx.nn.Dropout(0.5, seed=7)
    first = drop(X)
    drop.load_state_dict(torch.nn.Dropout(0.5).state_dict())  # strict: torch's has no buffer
    assert drop.rng_state.tolist() == [7, 0]
    assert torch.equal(drop(X), first)


def test_an_rng_module_a_checkpoint_predates_restarts_at_its_seed():
    plain = torch.nn.Sequential(torch.nn.Linear(8, 8))
    model = torch.nn.Sequential(copy.deepcopy(plain[0]), torch_rngx.nn.RNG(5))
    torch_rngx.rand_like(X, generator=model[1])
    model.load_state_dict(plain.state_dict())
    assert model[1].state.tolist() == [5, 0]
    model[1].manual_seed(9)
    torch_rngx.rand_like(X, generator=model[1])
    model.load_state_dict(plain.state_dict())
    assert model[1].state.tolist() == [9, 0]


def test_a_converted_checkpoint_into_the_unconverted_model():
    checkpoint = converted().state_dict()
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "rngx_state", "drop.rng_state"'):
        original().load_state_dict(checkpoint)
    model = original()
    with torch.no_grad():
        model.lin.weight.add_(1.0)
    result = model.load_state_dict(checkpoint, strict=False)
    assert result.missing_keys == [] and sorted(result.unexpected_keys) == sorted(STREAMS)
    assert torch.equal(model.lin.weight, checkpoint["lin.weight"])


def test_restarting_a_stream_is_not_key_reuse():
    """Loading restarts the streams on purpose: the key-reuse checker is told, as for a loaded stream."""
    model = converted()
    checkpoint = original().state_dict()
    with torch_rngx.debug.key_reuse("raise"):
        model(X)
        model.load_state_dict(checkpoint)
        model(X)
