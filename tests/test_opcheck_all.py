"""torch_rngx.testing.opcheck_all: the helper users put in their CI."""
import pytest
import torch

import torch_rngx
from torch_rngx.testing import samples


@pytest.mark.slow("torch.library.opcheck on every sample: about 100 s")
def test_opcheck_all_passes_on_every_sample():
    n = torch_rngx.testing.opcheck_all()
    assert n == len(list(samples())) and n > 300


def test_samples_cover_every_op_dtype_layout_and_state_kind():
    seen = {(op.name(), a[0].dtype if a and isinstance(a[0], torch.Tensor) else None) for op, a in samples()}
    for op in ("rngx::uniform", "rngx::quantize_noise", "rngx::dropout", "rngx::normal", "rngx::truncated_normal",
               "rngx::bernoulli", "rngx::bernoulli_tensor", "rngx::exponential"):
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            assert (op, dtype) in seen
    assert {name for name, _ in seen} >= {"rngx::bits", "rngx::seed_state", "rngx::take_", "rngx::step_", "rngx::split", "rngx::fold_in",
                                          "rngx::uniform_from_", "rngx::quantize_noise_from_", "rngx::normal_from_",
                                          "rngx::bernoulli_from_", "rngx::randint_from_", "rngx::randint",
                                          "rngx::race"}
    state_first = ("rngx::split", "rngx::fold_in", "rngx::take_", "rngx::step_")
    states = [a[0] if op.name() in state_first or op.name().endswith("_from_") else a[1] for op, a in samples() if a]
    assert any(s.dim() > 1 for s in states), "no batched state"
    assert {s.dtype for s in states} == {torch.int64, torch.uint64}


def test_opcheck_all_reports_a_broken_fake_kernel(monkeypatch):
    """A fake kernel whose strides disagree with the real kernel must be caught (opcheck_all over the samples of the
    broken op alone: the test above runs it over all of them)."""
    everything = list(samples())
    monkeypatch.setattr(torch_rngx.testing, "samples", lambda device="cpu": (
        (op, args) for op, args in everything if op.name() in ("rngx::seed_state", "rngx::quantize_noise")))
    lib = torch.library.Library("rngx", "IMPL")
    try:
        torch.library.register_fake("rngx::quantize_noise", lambda x, state, half: torch.empty(x.shape, dtype=x.dtype),
                                    lib=lib, allow_override=True)
        with pytest.raises(AssertionError, match="opcheck failed for rngx.quantize_noise"):
            torch_rngx.testing.opcheck_all()
    finally:
        lib._destroy()
