"""torch_rngx's classes where torch code meets them (issue 45): the dropout modules are subclasses of torch's, so
code that finds dropouts by type finds ours, state dicts load both ways, and nn.convert and checkpoints still work;
a Generator given to the wrong library is refused with both classes named in full."""
import copy
import io

import pytest
import torch

import torch_rngx

PAIRS = [
    (torch_rngx.nn.Dropout, torch.nn.Dropout, (2, 8)),
    (torch_rngx.nn.Dropout1d, torch.nn.Dropout1d, (2, 3, 8)),
    (torch_rngx.nn.Dropout2d, torch.nn.Dropout2d, (2, 3, 4, 4)),
    (torch_rngx.nn.Dropout3d, torch.nn.Dropout3d, (2, 3, 2, 2, 2)),
    (torch_rngx.nn.AlphaDropout, torch.nn.AlphaDropout, (2, 8)),
    (torch_rngx.nn.FeatureAlphaDropout, torch.nn.FeatureAlphaDropout, (2, 3, 4)),
]
IDS = [ours.__name__ for ours, _, _ in PAIRS]


@pytest.mark.parametrize("ours, torchs, shape", PAIRS, ids=IDS)
def test_ours_are_torchs(ours, torchs, shape):
    m = ours(0.25, seed=1)
    assert isinstance(m, torchs) and isinstance(m, torch.nn.modules.dropout._DropoutNd)
    assert (m.p, m.inplace) == (0.25, False) and repr(m).startswith(f"torch_rngx.nn.{ours.__name__}(p=0.25")
    assert m(torch.ones(shape)).shape == shape


@pytest.mark.parametrize("ours, torchs, shape", PAIRS, ids=IDS)
def test_code_that_finds_dropouts_by_type_finds_ours(ours, torchs, shape):
    """What model surgery and libraries' helpers do: set p = 0 on every dropout found by type."""
    model = torch.nn.Sequential(torch.nn.Identity(), ours(0.5, seed=3))
    model.apply(lambda m: setattr(m, "p", 0.0) if isinstance(m, torchs) else None)
    x = torch.randn(shape)
    assert model[1].p == 0.0 and torch.equal(model.train()(x), x)


def _model(dropout):
    return torch.nn.Sequential(torch.nn.Linear(8, 8), dropout, torch.nn.Linear(8, 8))


def test_state_dicts_load_both_ways():
    torchs = _model(torch.nn.Dropout(0.5))
    converted = torch_rngx.nn.convert(copy.deepcopy(torchs), seed=0, functional=False).model
    shared = torch_rngx.nn.convert(copy.deepcopy(torchs), generator=torch_rngx.Generator(0), functional=False).model
    assert isinstance(converted[1], torch.nn.Dropout) and type(converted[1]) is torch_rngx.nn.Dropout
    # torch's checkpoint into ours: strict (the stream it lacks starts where seed= put it)
    converted.load_state_dict(torchs.state_dict())
    # ours into torch's: a module with a stream of its own saves it, which torch's module has no place for
    result = torchs.load_state_dict(converted.state_dict(), strict=False)
    assert result.unexpected_keys == ["1.rng_state"] and result.missing_keys == []
    # a module drawing from a shared generator saves nothing of its own: both ways strict
    torchs.load_state_dict(shared.state_dict())
    shared.load_state_dict(torchs.state_dict())
    for name, value in torchs.state_dict().items():
        assert torch.equal(converted.state_dict()[name], value)


def test_convert_replaces_torchs_modules_and_leaves_ours():
    model = torch.nn.Sequential(torch.nn.Dropout(0.1), torch_rngx.nn.Dropout(0.2, seed=1), torch.nn.Dropout2d(0.3))
    replaced = torch_rngx.nn.convert(model, seed=0).replaced
    assert replaced == [("0", "Dropout"), ("2", "Dropout2d")]
    assert [type(m).__name__ for m in model] == ["Dropout", "Dropout", "Dropout2d"]
    assert all(type(m).__module__ == "torch_rngx.nn" for m in model)


def test_checkpoints_restore_the_stream():
    model = _model(torch_rngx.nn.Dropout(0.5, seed=7))
    x = torch.ones(4, 8)
    model(x)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    restored = torch.load(buffer, weights_only=False)
    copied = copy.deepcopy(model)
    reloaded = _model(torch_rngx.nn.Dropout(0.5, seed=0))
    reloaded.load_state_dict(model.state_dict())
    want = model(x)
    with torch_rngx.debug.key_reuse("off"):  # the same stream position again, on purpose
        for other in (restored, copied, reloaded):
            assert isinstance(other[1], torch.nn.Dropout) and torch.equal(other(x), want)


def test_our_generator_given_to_torch_names_both_classes():
    g = torch_rngx.Generator(0)
    with pytest.raises(TypeError, match=r"must be torch\.Generator, not torch_rngx\.Generator"):
        torch.empty(3).uniform_(generator=g)
    with pytest.raises(TypeError, match=r"torch\.Generator generator.*|generator=torch_rngx\.Generator"):
        torch.rand(3, generator=g)
    with pytest.raises(TypeError, match=r"generator=torch_rngx\.nn\.RNG"):
        torch.randperm(3, generator=torch_rngx.nn.RNG(0))
    assert repr(g) == "torch_rngx.Generator(seed=0, offset=0)" and type(g).__qualname__ == "Generator"


def test_torchs_generator_given_to_us_names_both_classes():
    with pytest.raises(TypeError, match=r"must be a torch_rngx\.Generator, a torch_rngx\.nn\.RNG or None, got "
                                        r"torch\.Generator"):
        torch_rngx.rand_like(torch.ones(2), generator=torch.Generator())
    with pytest.raises(TypeError, match=r"got torch\.Generator"):
        torch_rngx.nn.Dropout(generator=torch.Generator())
