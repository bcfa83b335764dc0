"""Every *_like function takes torch's keyword set for the function it stands in for (dtype, layout, device,
requires_grad, memory_format, pin_memory), with torch's meaning and errors (issue 45): per keyword, the result's
dtype, layout, device, strides, requires_grad and pinning are those of torch's own call, the values do not depend
on the keyword (the stream is layout- and device-independent), and what torch refuses we refuse with torch's
exception type and, where the rule is torch's own (empty_like's), its message."""
import pytest
import torch

import torch_rngx
from conftest import recompute
from torch_rngx import Generator

# ours(x, **kw) and the torch call it stands in for, whose keywords are the ones tested (randint_like's dtype is int)
LIKE = {
    "rand_like": (lambda x, **kw: torch_rngx.rand_like(x, **kw), torch.rand_like),
    "randn_like": (lambda x, **kw: torch_rngx.randn_like(x, **kw), torch.randn_like),
    "randint_like": (lambda x, **kw: torch_rngx.randint_like(x, 10, **kw), lambda x, **kw: torch.randint_like(x, 10, **kw)),
    "uniform_like": (lambda x, **kw: torch_rngx.uniform_like(x, -1.0, 1.0, **kw), torch.empty_like),
    "normal_like": (lambda x, **kw: torch_rngx.normal_like(x, 1.0, 2.0, **kw), torch.empty_like),
    "exponential_like": (lambda x, **kw: torch_rngx.exponential_like(x, 2.0, **kw), torch.empty_like),
    "cauchy_like": (lambda x, **kw: torch_rngx.cauchy_like(x, 0.5, 2.0, **kw), torch.empty_like),
    "log_normal_like": (lambda x, **kw: torch_rngx.log_normal_like(x, 0.25, 1.5, **kw), torch.empty_like),
    "geometric_like": (lambda x, **kw: torch_rngx.geometric_like(x, 0.3, **kw), torch.empty_like),
    "bernoulli_like": (lambda x, **kw: torch_rngx.bernoulli_like(x, 0.5, **kw),
                       lambda x, **kw: torch.full_like(x, 0.5, **kw)),
}
X = torch.ones(2, 3, 4, 5)
ACCEPTED = {
    "dtype": {"dtype": torch.float64},
    "layout": {"layout": torch.strided},
    "device": {"device": "meta"},
    "device_object": {"device": torch.device("cpu")},
    "requires_grad": {"requires_grad": True},
    "no_grad": {"requires_grad": False},
    "channels_last": {"memory_format": torch.channels_last},
    "contiguous_format": {"memory_format": torch.contiguous_format},
    "preserve_format": {"memory_format": torch.preserve_format},
    "pin_memory_off": {"pin_memory": False},
    "all": {"dtype": torch.float64, "layout": torch.strided, "device": "cpu", "requires_grad": True,
            "memory_format": torch.channels_last, "pin_memory": False},
}
REFUSED = {  # torch refuses these on this machine; so do we, in torch's words where the rule is empty_like's
    "sparse_layout": ({"layout": torch.sparse_coo}, False),
    "channels_last_3d_on_4d": ({"memory_format": torch.channels_last_3d}, True),
    "pin_memory_without_accelerator": ({"pin_memory": True}, True),
    "no_such_device": ({"device": "nope"}, True),
}


def _props(t):
    return t.shape, t.stride(), t.dtype, t.layout, t.device, t.requires_grad, t.is_leaf



@pytest.mark.parametrize("case", ACCEPTED)
@pytest.mark.parametrize("name", LIKE)
def test_accepted_as_torch_does(name, case):
    ours, theirs = LIKE[name]
    kw = ACCEPTED[case]
    x = X.to(memory_format=torch.channels_last) if case == "contiguous_format" else X
    got, want = ours(x, generator=Generator(3), **kw), theirs(x, **kw)
    assert _props(got) == _props(want)
    if got.device.type != "meta":
        with recompute():  # the same words again, without the keyword
            plain = ours(X, generator=Generator(3), **({"dtype": kw["dtype"]} if "dtype" in kw else {}))
        assert torch.equal(got.detach(), plain), "a keyword other than dtype changed the values"


@pytest.mark.parametrize("case", REFUSED)
@pytest.mark.parametrize("name", LIKE)
def test_refused_as_torch_does(name, case):
    ours, theirs = LIKE[name]
    kw, same_message = REFUSED[case]
    with pytest.raises(Exception) as torchs:
        theirs(X, **kw)
    with pytest.raises(type(torchs.value)) as got:
        ours(X, generator=Generator(3), **kw)
    if same_message:
        assert str(got.value) == str(torchs.value)


@pytest.mark.parametrize("name", [n for n in LIKE if n != "randint_like"])
def test_requires_grad_leaf_gets_gradients(name):
    y = LIKE[name][0](X, generator=Generator(3), requires_grad=True)
    (y * 2).sum().backward()
    assert torch.equal(y.grad, torch.full_like(y, 2.0))


def test_requires_grad_on_an_integer_dtype_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="can require gradients"):
        torch.randint_like(X, 10, dtype=torch.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="can require gradients"):
        torch_rngx.randint_like(X, 10, dtype=torch.int64, requires_grad=True)
    with pytest.raises(TypeError, match="requires_grad"):
        torch_rngx.rand_like(X, requires_grad="yes")


def test_keywords_advance_the_generator_as_the_plain_call():
    g, h = Generator(5), Generator(5)
    torch_rngx.randn_like(X, generator=g, memory_format=torch.channels_last, device="cpu")
    with recompute():  # the same words again, for the plain call's step
        torch_rngx.randn_like(X, generator=h)
    assert torch.equal(g.state, h.state)


def test_bernoulli_like_dtype_is_a_float_dtype():
    assert torch_rngx.bernoulli_like(X, 0.5, dtype=torch.float16).dtype == torch.float16
    with pytest.raises(TypeError, match="dtype must be float16"):
        torch_rngx.bernoulli_like(X, 0.5, dtype=torch.int32)


def test_like_functions_take_torchs_keyword_set():
    """The keywords of torch's function (from its docstring's signature, pin_memory from its schema) are ours."""
    import inspect
    torch_keywords = {"dtype", "layout", "device", "requires_grad", "memory_format", "pin_memory"}
    for name in LIKE:
        params = inspect.signature(getattr(torch_rngx, name)).parameters
        assert torch_keywords <= {p for p, v in params.items() if v.kind is v.KEYWORD_ONLY}, name
    for op in (torch.ops.aten.rand_like, torch.ops.aten.randn_like, torch.ops.aten.empty_like, torch.ops.aten.full_like,
               torch.ops.aten.randint_like):
        names = {a.name for a in op.default._schema.arguments}
        assert torch_keywords - {"requires_grad"} <= names, op
