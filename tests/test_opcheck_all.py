"""torch_rngx.testing's opcheck helpers, as users put them in their CI: opcheck_cases, one pytest case per op and
sample (the quick subset in make test, the rest in make opcheck, a CI target of its own), and opcheck_all, one call
that reports every failure."""
import pytest
import torch

import torch_rngx
from torch_rngx.testing import opcheck_cases, samples

QUICK = opcheck_cases(quick=True)
QUICK_IDS = {case.id for case in QUICK}
REST = [case for case in opcheck_cases() if case.id not in QUICK_IDS]


@pytest.mark.parametrize("case", QUICK)
def test_opcheck_quick(case):
    case.check()


@pytest.mark.slow("torch.library.opcheck on each sample: about 220 s of one core in all")
@pytest.mark.parametrize("case", REST)
def test_opcheck_every_sample(case):
    """make opcheck runs these (make test the rest of this module)."""
    case.check()


def test_cases_are_the_samples_with_readable_unique_ids():
    every = opcheck_cases()
    assert len(every) == len(list(samples())) > 300 and len({c.id for c in every}) == len(every)
    assert [(c.values[0].op, len(c.values[0].args)) for c in every] == [(op, len(a)) for op, a in samples()]
    ids = {c.id for c in every}
    assert {"dropout-float32-channels_last-p=0.3", "dropout-float16-transposed-grad-p=1.0", "uniform-float32-global_view",
            "bits-int32-batched_keys", "randint-float32-contiguous-low=-3-dtype=int8"} <= ids
    # the quick subset: every op of the full set, on every input dtype it takes
    assert {c.values[0].op for c in QUICK} == {c.values[0].op for c in every} and 40 < len(QUICK) < len(every) / 5
    assert {c.id for c in QUICK} >= {f"dropout-{d}-contiguous-p=0.0" for d in ("float16", "bfloat16", "float32",
                                                                               "float64")}


def test_samples_cover_every_op_dtype_layout_and_state_kind():
    seen = {(op.name(), a[0].dtype if a and isinstance(a[0], torch.Tensor) else None) for op, a in samples()}
    for op in ("rngx::uniform", "rngx::quantize_noise", "rngx::dropout", "rngx::normal", "rngx::truncated_normal",
               "rngx::bernoulli", "rngx::bernoulli_tensor", "rngx::exponential"):
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            assert (op, dtype) in seen
    assert {name for name, _ in seen} >= {"rngx::bits", "rngx::seed_state", "rngx::take_", "rngx::step_", "rngx::split", "rngx::fold_in",
                                          "rngx::uniform_from_", "rngx::quantize_noise_from_", "rngx::normal_from_",
                                          "rngx::bernoulli_from_", "rngx::randint_from_", "rngx::randint",
                                          "rngx::race", "rngx::adam_sround_"}
    state_first = ("rngx::split", "rngx::fold_in", "rngx::take_", "rngx::step_")
    state_at = {"rngx::adam_sround_": 4}  # after param, grad and the moments
    states = [a[0] if op.name() in state_first or op.name().endswith("_from_") else a[state_at.get(op.name(), 1)]
              for op, a in samples() if a]
    assert any(s.dim() > 1 for s in states), "no batched state"
    assert {s.dtype for s in states} == {torch.int64, torch.uint64}


@pytest.fixture
def broken_fake_kernel():
    """quantize_noise's fake kernel with strides that disagree with the real kernel's (opcheck must catch it)."""
    lib = torch.library.Library("rngx", "IMPL")
    try:
        torch.library.register_fake("rngx::quantize_noise", lambda x, state, half, global_shape=None,
                                    global_start=None: torch.empty(x.shape, dtype=x.dtype), lib=lib,
                                    allow_override=True)
        yield
    finally:
        lib._destroy()


def test_opcheck_all_reports_every_failure(monkeypatch, broken_fake_kernel):
    """opcheck_all over seed_state's sample and quantize_noise's float32 ones alone (the tests above cover all of
    them): it checks them all and lists every failure, each by its case id, not only the first."""
    def chosen(parts):
        return parts == ["seed_state"] or parts[:2] == ["quantize_noise", "float32"]

    monkeypatch.setattr(torch_rngx.testing, "_labeled", lambda device="cpu", labeled=torch_rngx.testing._labeled: (
        c for c in labeled(device) if chosen(c[0])))
    with pytest.raises(AssertionError, match=r"opcheck failed for rngx\.quantize_noise") as failed:
        torch_rngx.testing.opcheck_all()
    text = str(failed.value)
    n_failed, n = (int(w) for w in text.split(" samples failed")[0].split(" of "))
    assert n == 1 + len([c for c in opcheck_cases() if c.id.startswith("quantize_noise-float32-")])
    assert n_failed > 1 and text.count("opcheck failed for") == n_failed
    assert "[quantize_noise-float32-channels_last]" in text and "seed_state" not in text


def test_a_case_names_its_id_when_it_fails(broken_fake_kernel):
    case = next(c.values[0] for c in QUICK if c.id == "quantize_noise-float32-channels_last")
    with pytest.raises(AssertionError, match=r"opcheck failed for rngx\.quantize_noise\.default "
                                             r"\[quantize_noise-float32-channels_last\]"):
        case.check()
