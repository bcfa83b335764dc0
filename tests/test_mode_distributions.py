"""Every torch.distributions sampler under torch_rngx.mode, eager and compiled: routed (our stream moves, torch's
default generator does not, compiled == eager bitwise) or reported (uncovered="error" raises naming the torch call,
"warn" warns), never silent. The classes are enumerated from torch.distributions: a class this table lacks fails
test_every_sampler_is_in_the_table."""
import inspect
import warnings

import pytest
import torch
import torch.distributions as D

import torch_rngx
from torch_rngx import Generator

pytestmark = pytest.mark.key_reuse_ok("draws each sampler eager and compiled from one seed, to compare")


def t(*values):
    return torch.tensor(values)


p3 = t(0.2, 0.3, 0.5)
EXAMPLES = {
    "Bernoulli": lambda: D.Bernoulli(probs=p3),
    "Beta": lambda: D.Beta(t(2.0, 0.5), t(3.0, 1.5)),
    "Binomial": lambda: D.Binomial(t(5.0, 9.0), probs=t(0.3, 0.6)),
    "Categorical": lambda: D.Categorical(probs=p3),
    "Cauchy": lambda: D.Cauchy(t(0.0, 1.0), t(1.0, 2.0)),
    "Chi2": lambda: D.Chi2(t(3.0, 0.5)),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(probs=p3),
    "Dirichlet": lambda: D.Dirichlet(t(1.0, 2.0, 0.5)),
    "Exponential": lambda: D.Exponential(t(1.0, 3.0)),
    "FisherSnedecor": lambda: D.FisherSnedecor(t(3.0, 5.0), t(4.0, 2.0)),
    "Gamma": lambda: D.Gamma(t(2.0, 0.5), t(1.0, 3.0)),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(t(0.0, 1.0), t(1.0, 2.0), t(0.2, -0.1)),
    "Geometric": lambda: D.Geometric(probs=p3),
    "Gumbel": lambda: D.Gumbel(t(0.0, 1.0), t(1.0, 2.0)),
    "HalfCauchy": lambda: D.HalfCauchy(t(1.0, 2.0)),
    "HalfNormal": lambda: D.HalfNormal(t(1.0, 2.0)),
    "Independent": lambda: D.Independent(D.Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1),
    "InverseGamma": lambda: D.InverseGamma(t(2.0, 3.0), t(1.0, 2.0)),
    "Kumaraswamy": lambda: D.Kumaraswamy(t(2.0, 0.5), t(3.0, 1.5)),
    "LKJCholesky": lambda: D.LKJCholesky(3, t(1.5)),
    "Laplace": lambda: D.Laplace(t(0.0, 1.0), t(1.0, 2.0)),
    "LogNormal": lambda: D.LogNormal(t(0.0, 1.0), t(1.0, 0.5)),
    "LogisticNormal": lambda: D.LogisticNormal(t(0.0, 1.0), t(1.0, 0.5)),
    "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(torch.zeros(3), torch.full((3, 1), 0.5),
                                                                     torch.ones(3)),
    "MixtureSameFamily": lambda: D.MixtureSameFamily(D.Categorical(probs=t(0.3, 0.7)),
                                                     D.Normal(t(-1.0, 1.0), t(1.0, 0.5))),
    "Multinomial": lambda: D.Multinomial(5, probs=p3),
    "MultivariateNormal": lambda: D.MultivariateNormal(torch.zeros(3), scale_tril=torch.eye(3)),
    "NegativeBinomial": lambda: D.NegativeBinomial(t(5.0, 2.0), probs=t(0.3, 0.6)),
    "Normal": lambda: D.Normal(t(0.0, 1.0), t(1.0, 2.0)),
    "OneHotCategorical": lambda: D.OneHotCategorical(probs=p3),
    "OneHotCategoricalStraightThrough": lambda: D.OneHotCategoricalStraightThrough(probs=p3),
    "Pareto": lambda: D.Pareto(t(1.0, 2.0), t(3.0, 1.5)),
    "Poisson": lambda: D.Poisson(t(1.0, 4.0)),
    "RelaxedBernoulli": lambda: D.RelaxedBernoulli(t(0.5), probs=p3),
    "RelaxedOneHotCategorical": lambda: D.RelaxedOneHotCategorical(t(0.5), probs=p3),
    "StudentT": lambda: D.StudentT(t(3.0, 0.5)),
    "TransformedDistribution": lambda: D.TransformedDistribution(D.Normal(t(0.0), t(1.0)), [D.ExpTransform()]),
    "Uniform": lambda: D.Uniform(t(0.0, 1.0), t(1.0, 3.0)),
    "VonMises": lambda: D.VonMises(t(0.0, 1.0), t(1.0, 4.0)),
    "Weibull": lambda: D.Weibull(t(1.0, 2.0), t(1.5, 0.5)),
    "Wishart": lambda: D.Wishart(t(4.0), covariance_matrix=torch.eye(3)),
}


def _samplers():
    """torch.distributions' classes that sample: those that define sample or rsample (not the abstract bases)."""
    found = []
    for name in D.__all__:
        cls = getattr(D, name)
        if inspect.isclass(cls) and issubclass(cls, D.Distribution):
            if cls.sample is not D.Distribution.sample or cls.rsample is not D.Distribution.rsample:
                found.append(name)
    return sorted(found)


def test_every_sampler_is_in_the_table():
    assert _samplers() == sorted(EXAMPLES)


# What each sampler is under the mode: "routed" (every draw on our stream) or the torch call it is reported by.
REPORTED = {
    "Beta": "_sample_dirichlet", "Binomial": "binomial", "Chi2": "_standard_gamma", "Dirichlet": "_sample_dirichlet",
    "FisherSnedecor": "_standard_gamma", "Gamma": "_standard_gamma", "InverseGamma": "_standard_gamma",
    "LKJCholesky": "_sample_dirichlet", "NegativeBinomial": "_standard_gamma", "Poisson": "poisson",
    "StudentT": "_standard_gamma", "Wishart": "_standard_gamma",
}


def _draws(d):
    return [d.sample((2,))] + ([d.rsample((2,))] if d.has_rsample else [])


def _fullgraph_without_the_mode(d):
    """Whether torch.compile(fullgraph=True) captures the sampler without any mode."""
    torch._dynamo.reset()
    try:
        torch.compile(lambda: _draws(d), fullgraph=True, backend="aot_eager")()
        return True
    except torch._dynamo.exc.Unsupported:
        return False


@pytest.mark.slow("compiles ~40 samplers under aot_eager, twice or three times each: ~1 min of CPU")
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sampler_is_routed_or_reported_eager_and_compiled(name):
    d = EXAMPLES[name]()
    fullgraph = _fullgraph_without_the_mode(d)
    reported = REPORTED.get(name)
    for compiled in (False, True):
        torch._dynamo.reset()
        torch_rngx._mode.mode._warned.clear()
        draw = torch.compile(lambda: _draws(d), fullgraph=fullgraph, backend="aot_eager") if compiled else _draws
        args = () if compiled else (d,)
        if reported is not None:
            with pytest.raises(RuntimeError, match=rf"torch_rngx\.mode: torch\.{reported.replace('.', '[.]')}\b"):
                with torch_rngx.mode(seed=0, uncovered="error"):
                    draw(*args)
            torch._dynamo.reset()
            with warnings.catch_warnings(record=True) as caught, torch_rngx.mode(seed=0):
                warnings.simplefilter("always")
                draw(*args)
            assert any(issubclass(w.category, torch_rngx.UncoveredRandomWarning) and reported in str(w.message)
                       for w in caught)
            continue
        g, before = Generator(3), torch.get_rng_state()
        with torch_rngx.mode(generator=g, uncovered="error"):
            got = draw(*args)
        assert torch.equal(torch.get_rng_state(), before), "drew from torch's default generator"
        assert g.get_offset() > 0, "drew nothing from the mode's stream"
        if not compiled:
            eager, eager_state = got, g.state.clone()
        else:
            assert all(torch.equal(a, b) for a, b in zip(got, eager)), "compiled must draw eager's values"
            assert torch.equal(g.state, eager_state)
