"""PyTorch's own OpInfo samples of its random ops under torch_rngx.mode (issue 43): every sample of every op in
torch.testing._internal's op_db whose samples reach an aten op torch tags random (found by running the samples, not
from a list of names), under mode(uncovered="error"), eager and compiled with Inductor, is routed (it runs, torch's
default generator does not move, and compiled draws eager's values: every op of ours gives eager's bits and the
stream ends where eager's does) or named (the mode raises naming it, eager and compiled); none is silent, and none
fails to compile where it compiles without the mode. A compiled result is eager's bit for bit, or differs by
torch's own arithmetic on top of our draws alone: then the same graph with eager kernels (aot_eager) gives eager's
bits (multi-head attention's softmax and linear layers, and fractional max pooling's windows from the same samples
round otherwise under Inductor: docs/guarantees.md, "Not promised"). `make opinfo` (a CI target of its own) runs every sample eager, and compiles each op's first drawing sample, in
float32 and bfloat16; `make opinfo-sweep` (RNGX_OPINFO_ALL=1) does both for every sample in every float dtype."""
import functools
import os

import pytest
import torch
import torch.utils._pytree as pytree

import torch_rngx
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("compares the same stream's draws eager and compiled")

REPORT = "torch_rngx.mode: "
ALL = os.environ.get("RNGX_OPINFO_ALL") == "1"
INDUCTOR_SAMPLES = None if ALL else 1
DTYPES = [torch.float32, torch.bfloat16] + ([torch.float16, torch.float64] if ALL else [])


def _fresh(v):
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, v)


def _call(op, sample):
    return op(*_fresh((sample.input, *sample.args)), **_fresh(sample.kwargs))


class _Seeded(torch.utils._python_dispatch.TorchDispatchMode):
    """Whether a call reaches an aten op torch tags nondeterministic_seeded."""

    def __init__(self):
        super().__init__()
        self.found = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.found |= torch.Tag.nondeterministic_seeded in func.tags
        return func(*args, **(kwargs or {}))


def _draws(op, sample):
    seeded = _Seeded()
    try:
        with seeded:
            _call(op, sample)
    except Exception:  # noqa: BLE001  (a sample torch itself refuses on the CPU draws nothing here)
        return False
    return seeded.found


def _moves_torchs_generator(op, sample):
    """Whether the sample draws, without the mode: some reach a tagged op that draws nothing (rrelu out of training,
    attention with dropout_p=0)."""
    before = torch.get_rng_state()
    _call(op, sample)
    return not torch.equal(torch.get_rng_state(), before)


@functools.cache
def random_samples(dtype):
    """(name, op, samples): each op of op_db with a sample in dtype on the CPU that draws, and its samples that do."""
    from torch.testing._internal.common_methods_invocations import op_db

    out = []
    for op in op_db:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        drawing = [s for s in op.sample_inputs("cpu", dtype, requires_grad=False) if _draws(op, s)]
        if drawing:
            out.append((f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}", op, drawing))
    return out


_KEYS = {"take_", "step_", "seed_state", "split", "fold_in"}  # ops that make keys: eager and compiled take them apart


class _OurOps(torch.utils._python_dispatch.TorchDispatchMode):
    """Each draw of ours a call makes, in order, eager or in a compiled graph's run: (op, key, the tensors it reads,
    its values). A sampler's first argument is read only where its op reads it (_spec.Op.input == "x"); a one-call
    form (<name>_from_) takes its key from its state argument, before the step."""

    def __init__(self):
        super().__init__()
        self.draws = []

    @classmethod
    def ignore_compile_internals(cls):
        return True  # so that compiled code still runs compiled, and its ops still come here

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._opname
        fused = name.endswith("_from_")
        key = args[0].clone() if fused and func.namespace == "rngx" else None
        out = func(*args, **(kwargs or {}))
        if func.namespace == "rngx" and name not in _KEYS:
            op = name[: -len("_from_")] if fused else name
            first, key = (args[1], key) if fused else (args[0], args[1])
            spec = torch_rngx._engine.spec.SPECS.get(op)
            reads = [t for t in args[2:] if isinstance(t, torch.Tensor)] + ([first] if spec is None or
                                                                              spec.input == "x" else [])
            self.draws.append((op, key.clone(), [t.clone() for t in reads], out.clone()))
        return out


def _under_mode(run, seed=5):
    """("ran", its tensor leaves, the stream, our ops' outputs) or ("named", the message), torch's default generator
    checked."""
    before, g, ours = torch.get_rng_state(), Generator(seed), _OurOps()
    try:
        with torch_rngx.mode(generator=g, uncovered="error"), ours:
            out = run()
    except RuntimeError as error:
        if REPORT not in str(error):
            raise
        return "named", str(error)
    assert torch.equal(torch.get_rng_state(), before), "ran under the mode and drew from torch's generator: silent"
    return "ran", [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)], g.state.clone(), ours.draws


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.detach().contiguous().view(-1).view(torch.uint8), b.detach().contiguous().view(-1).view(torch.uint8))


@pytest.mark.slow("runs every sample of torch's random OpInfos under the mode: ~1 min a dtype")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_random_opinfo_sample_is_routed_or_named_eager(dtype):
    samples = random_samples(dtype)
    assert len(samples) >= 20, [name for name, *_ in samples]
    bad = []
    for name, op, drawing in samples:
        for i, sample in enumerate(drawing):
            try:
                outcome = _under_mode(lambda: _call(op, sample))
                if outcome[0] == "ran" and not outcome[3] and _moves_torchs_generator(op, sample):
                    bad.append(f"{name}#{i}: ran under the mode and drew nothing of ours")
            except AssertionError as error:
                bad.append(f"{name}#{i}: {error}")
    assert not bad, "\n".join(bad)


def _compiles_without_the_mode(op, sample):
    torch._dynamo.reset()
    try:
        torch.compile(lambda: _call(op, sample), backend="inductor")()
    except Exception:  # noqa: BLE001  (torch's own failure: nothing to compare the mode's with)
        return False
    return True


@pytest.mark.slow("compiles torch's random OpInfo samples with Inductor under the mode: ~1 min a dtype")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_opinfo_samples_compile_with_inductor_as_eager(dtype):
    bad = []
    for name, op, drawing in random_samples(dtype):
        for i, sample in enumerate(drawing[:INDUCTOR_SAMPLES]):
            eager = _under_mode(lambda: _call(op, sample))
            torch._dynamo.reset()
            compiled = torch.compile(lambda: _call(op, sample), backend="inductor")
            try:
                got = _under_mode(compiled)
            except Exception as error:  # noqa: BLE001
                if _compiles_without_the_mode(op, sample):
                    bad.append(f"{name}#{i}: fails compiled under the mode, not without it: {error!r}"[:400])
                continue
            if got[0] != eager[0]:
                bad.append(f"{name}#{i}: eager {eager[0]}, compiled {got[0]}")
            elif got[0] == "ran" and not (_same_draws(got[3], eager[3]) and torch.equal(got[2], eager[2])):
                bad.append(f"{name}#{i}: compiled draws differ from eager's")
            elif got[0] == "ran" and not _same_all(got[1], eager[1]):  # torch's arithmetic on top of our draws?
                torch._dynamo.reset()
                kernels = _under_mode(torch.compile(lambda: _call(op, sample), backend="aot_eager"))
                if not _same_all(kernels[1], eager[1]):
                    bad.append(f"{name}#{i}: compiled differs from eager, with eager kernels too")
    assert not bad, "\n".join(bad)


def _same_all(a, b):
    return len(a) == len(b) and all(map(_same, a, b))


def _same_draws(compiled, eager):
    """The same ops with the same keys, in order, each giving eager's values where it read eager's inputs (an op
    that reads a value torch computed, dropout of Inductor's softmax, gets Inductor's)."""
    return len(compiled) == len(eager) and all(
        c[0] == e[0] and torch.equal(c[1], e[1]) and (not _same_all(c[2], e[2]) or _same(c[3], e[3]))
        for c, e in zip(compiled, eager)
    )
