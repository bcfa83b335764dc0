"""Where torch_rngx stands in for torch it behaves like torch: exception types and messages, argument forms,
Generator's methods, reprs that say what an object is (docs/guarantees.md, "Torch's manners")."""
import pickle
import warnings

import pytest
import torch

import torch_rngx
import torch_rngx.functional as rf

DROPOUTS = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
MODULES = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


def _error(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except Exception as e:  # noqa: BLE001 (the exception itself is the result)
            return type(e), str(e)
    return None, None


@pytest.mark.parametrize("name", DROPOUTS)
@pytest.mark.parametrize("p", [1.5, -0.1, float("nan")])
def test_dropout_probability_message_is_torchs(name, p):
    x = torch.ones({"dropout2d": (2, 3, 4, 4), "dropout3d": (2, 3, 2, 2, 2)}.get(name, (2, 3, 4)))
    ours = _error(lambda: getattr(torch_rngx, name)(x, p, True))
    theirs = _error(lambda: getattr(torch.nn.functional, name)(x, p, True))
    assert theirs[0] is not None and ours[1] == theirs[1] + " (argument p)"
    assert ours[0] is ValueError  # torch: ValueError, but RuntimeError from its C++ check for NaN


@pytest.mark.parametrize("name", MODULES)
def test_module_probability_message_is_torchs(name):
    ours, theirs = _error(lambda: getattr(torch_rngx.nn, name)(1.5)), _error(lambda: getattr(torch.nn, name)(1.5))
    assert theirs[0] is ValueError and ours == (ValueError, theirs[1] + " (argument p)")


def test_channel_dropout_of_one_dim_raises_like_torch():
    """(dropout1d/2d/3d: tests/test_dropout_family.py, every rank.)"""
    x = torch.ones(5)
    ours = _error(lambda: torch_rngx.feature_alpha_dropout(x, 0.5, True))
    assert ours[0] is RuntimeError and ours == _error(lambda: torch.nn.functional.feature_alpha_dropout(x, 0.5, True))


@pytest.mark.parametrize("name", DROPOUTS)
def test_int_input_raises_torchs_runtime_error_naming_the_argument(name):
    x = torch.ones(2, 3, 4, dtype=torch.int64)
    assert _error(lambda: getattr(torch.nn.functional, name)(x, 0.5, True))[0] is RuntimeError
    with pytest.raises(RuntimeError, match="input's dtype must be"):
        getattr(torch_rngx, name)(x, 0.5, True)
    with pytest.raises(TypeError):  # and still the TypeError the project's checks promise
        getattr(torch_rngx, name)(x, 0.5, True)


def test_randint_like_takes_torchs_one_bound_form():
    x = torch.empty(1000)
    one = torch_rngx.randint_like(x, 10, generator=torch_rngx.Generator(3))
    two = torch_rngx.randint_like(x, 0, 10, generator=torch_rngx.Generator(3))
    assert torch.equal(one, two) and int(one.min()) == 0 and int(one.max()) == 9
    assert torch.randint_like(x, 10).shape == one.shape  # torch's form, the same call
    with pytest.raises(ValueError):
        torch_rngx.randint_like(x, 0)  # [0, 0) is empty


_INT_CALLS = {  # (call(generator, T), what torch takes the same way); T makes each int argument
    "randint_like": lambda g, T: torch_rngx.randint_like(torch.empty(9), T(2), T(5), generator=g),
    "randint_like one bound": lambda g, T: torch_rngx.randint_like(torch.empty(9, dtype=torch.int8), T(5), generator=g),
    "randperm": lambda g, T: torch_rngx.randperm(T(7), generator=g),
    "multinomial": lambda g, T: torch_rngx.multinomial(torch.ones(2, 5), T(3), generator=g),
    "multinomial, replacement": lambda g, T: torch_rngx.multinomial(torch.ones(5), T(8), True, generator=g),
    "Generator.split": lambda g, T: torch.stack([child.state for child in g.split(T(3))]),
    "rf.randint": lambda g, T: rf.randint(torch.empty(9), g.state, T(0), T(1000)),
    "rf.randperm": lambda g, T: rf.randperm(T(7), g.state),
    "rf.multinomial": lambda g, T: rf.multinomial(torch.ones(2, 5), g.state, T(2)),
    "rf.split": lambda g, T: rf.split(g.state, T(3)),
}


@pytest.mark.key_reuse_ok("draws the same key twice, with an int and with a NumPy integer, to compare them")
@pytest.mark.parametrize("numpy_int", ["int64", "int32", "uint16"])
@pytest.mark.parametrize("name", _INT_CALLS)
def test_a_numpy_integer_stands_for_its_int_as_in_torch(name, numpy_int):
    """torch takes a NumPy integer wherever it takes an int (torch.randint_like(x, np.int64(5)), torch.randperm(n) with
    n from NumPy), as a data pipeline often passes one: so do ours, the same values and the same step as the int."""
    np = pytest.importorskip("numpy")
    T = getattr(np, numpy_int)
    g_int, g_numpy = torch_rngx.Generator(7), torch_rngx.Generator(7)
    want, got = _INT_CALLS[name](g_int, int), _INT_CALLS[name](g_numpy, T)
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(g_numpy.state, g_int.state)


@pytest.mark.parametrize("bad", [True, 2.0, "3", torch.tensor(3)], ids=["bool", "float", "str", "tensor"])
def test_an_int_argument_refuses_what_is_not_an_integer(bad):
    """A bool, a float, a string or a tensor (which .item() would read, and no compiled graph captures) is refused,
    naming the argument, before the stream moves."""
    np = pytest.importorskip("numpy")
    g = torch_rngx.Generator(7)
    for call, name in ((lambda: torch_rngx.randperm(bad, generator=g), "n"),
                       (lambda: torch_rngx.randint_like(torch.empty(3), 0, bad, generator=g), "high"),
                       (lambda: torch_rngx.multinomial(torch.ones(4), bad, generator=g), "num_samples"),
                       (lambda: rf.split(g.state, np.bool_(True)), "num")):
        with pytest.raises(TypeError, match=f"{name} must be an int"):
            call()
    assert torch.equal(g.state, torch_rngx.Generator(7).state)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.uint8, torch.int64, torch.bool])
def test_randint_like_returns_xs_dtype_as_torch(dtype):
    """As torch.randint_like: x's dtype unless dtype= says otherwise (README's tour once said int64)."""
    x, high = torch.empty(50, dtype=dtype), 2 if dtype == torch.bool else 10
    assert torch_rngx.randint_like(x, high).dtype == torch.randint_like(x, high).dtype == dtype
    assert torch_rngx.randint_like(x, high, dtype=torch.int16).dtype == torch.int16


class TestGeneratorLikeTorch:
    def test_has_torch_generators_methods(self):
        for name in ["manual_seed", "seed", "initial_seed", "get_state", "set_state", "get_offset", "set_offset",
                     "device"]:
            assert hasattr(torch.Generator(), name) and hasattr(torch_rngx.Generator(0), name), name

    def test_seed_reseeds_from_entropy_at_offset_zero(self):
        g = torch_rngx.Generator(5, offset=9)
        first, second = g.seed(), g.seed()
        assert first != second and 0 <= second < 2**64
        assert g.initial_seed() == second and g.get_offset() == 0

    def test_offset_round_trips(self):
        g = torch_rngx.Generator(1)
        torch_rngx.rand_like(torch.empty(10), generator=g)
        assert g.get_offset() == 3
        assert g.set_offset(2**64 - 1) is g and g.get_offset() == 2**64 - 1 and g.initial_seed() == 1
        with pytest.raises(ValueError, match="offset"):
            g.set_offset(2**64)
        with pytest.raises(TypeError, match="offset"):
            g.set_offset(1.0)

    @pytest.mark.parametrize("seed, offset", [(0, 0), (1, 7), (2**64 - 1, 2**64 - 1)])
    def test_repr_evals_to_an_equal_generator(self, seed, offset):
        g = torch_rngx.Generator(seed, offset=offset)
        back = eval(repr(g), {"torch_rngx": torch_rngx})  # noqa: S307 (the point of the test)
        assert isinstance(back, torch_rngx.Generator) and torch.equal(back.state, g.state) and back is not g
        assert repr(back) == repr(g)

    @pytest.mark.key_reuse_ok("draws one stream from two Generators set to the same place, to compare them")
    def test_offset_argument_starts_where_set_state_would(self):
        a = torch_rngx.rand_like(torch.empty(6), generator=torch_rngx.Generator(4, offset=5))
        assert torch.equal(a, rf.uniform(torch.empty(6), torch.tensor([4, 5])))


class TestModuleReprs:
    def test_dropout_modules_say_they_are_ours(self):
        for name in MODULES:
            module = getattr(torch_rngx.nn, name)(0.25)
            assert repr(module) == f"torch_rngx.nn.{name}(p=0.25, inplace=False)"
            assert repr(getattr(torch.nn, name)(0.25)) == f"{name}(p=0.25, inplace=False)"

    def test_repr_says_whether_the_module_owns_a_seed(self):
        assert repr(torch_rngx.nn.Dropout(0.1, seed=7)) == \
            "torch_rngx.nn.Dropout(p=0.1, inplace=False, rng_state=(seed=7, offset=0))"
        g = torch_rngx.Generator(3)
        assert repr(torch_rngx.nn.Dropout(0.1, generator=g)) == \
            "torch_rngx.nn.Dropout(p=0.1, inplace=False, generator=torch_rngx.Generator(seed=3, offset=0))"

    def test_converted_model_shows_what_was_converted(self):
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
        torch_rngx.nn.convert(model)
        assert "(1): torch_rngx.nn.Dropout(p=0.1, inplace=False)" in repr(model)

    def test_rng_repr(self):
        assert repr(torch_rngx.nn.RNG(5)) == "torch_rngx.nn.RNG(seed=5, offset=0)"


def test_whole_model_save_needs_weights_only_false(tmp_path):
    """docs/training.md: a state_dict loads with torch.load's default; a whole module needs weights_only=False."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch_rngx.nn.Dropout(0.5, seed=1))
    model(torch.ones(3, 2))
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    assert torch.equal(torch.load(tmp_path / "sd.pt")["1.rng_state"], model[1].rng_state)
    torch.save(model, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tmp_path / "model.pt")
    loaded = torch.load(tmp_path / "model.pt", weights_only=False)
    assert torch.equal(loaded[1].rng_state, model[1].rng_state)
