"""NUTS backend choice (pmctx.gum.backends) and the nutpie path of GumModel.sample."""

import numpy as np
import pytest

import pmctx.gum.backends as backends
from pmctx.gum import gum
from pmctx.gum.backends import NUTPIE_MIN_ITERATIONS, choose_backend


@pytest.mark.parametrize("installed", [True, False])
def test_auto_rule(monkeypatch, installed):
    monkeypatch.setattr(backends, "nutpie_available", lambda: installed)
    long_run = {"draws": 1000, "tune": 1000, "chains": 4}
    assert NUTPIE_MIN_ITERATIONS <= 8000
    expected = "nutpie" if installed else "pymc"
    assert choose_backend("auto", **long_run, pymc_only=False) == expected
    assert choose_backend("auto", **long_run, pymc_only=True) == "pymc"
    assert choose_backend("auto", draws=100, tune=100, chains=2, pymc_only=False) == "pymc"
    assert choose_backend("pymc", **long_run, pymc_only=False) == "pymc"


def test_nutpie_errors(monkeypatch):
    monkeypatch.setattr(backends, "nutpie_available", lambda: False)
    with pytest.raises(ValueError, match="needs the nutpie package"):
        choose_backend("nutpie", draws=10, tune=10, chains=1, pymc_only=False)
    monkeypatch.setattr(backends, "nutpie_available", lambda: True)
    with pytest.raises(ValueError, match="pm.sample-only"):
        choose_backend("nutpie", draws=10, tune=10, chains=1, pymc_only=True)
    with pytest.raises(ValueError, match="backend"):
        choose_backend("stan", draws=10, tune=10, chains=1, pymc_only=False)


@pytest.mark.slow
def test_nutpie_sample_matches_laplace():
    rng = np.random.default_rng(3)
    data = {"x": rng.uniform(0, 2, 200)}
    data["y"] = rng.poisson(np.exp(np.sin(2 * data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5, max_points=12)", data, family="poisson")
    idata = g.sample(draws=500, tune=500, chains=2, random_seed=1, backend="nutpie")
    assert {"log_likelihood", "posterior_predictive", "observed_data"} <= set(idata.children)
    assert idata.log_likelihood["y"].shape == (2, 500, 200)
    laplace = g.laplace(draws=2000, posterior_predictive=False)
    nuts_mean = idata.posterior["f_x"].mean(("chain", "draw")).values
    lap_mean = laplace.posterior["f_x"].mean(("chain", "draw")).values
    lap_sd = laplace.posterior["f_x"].std(("chain", "draw")).values
    assert np.all(np.abs(nuts_mean - lap_mean) < 0.5 * lap_sd + 0.02)


class _Captured(Exception):
    """Raised by the stand-in nutpie.sample with the keyword arguments it was given."""


def test_target_accept_reaches_nutpie(monkeypatch):
    # nutpie's own default (0.8) diverges on products of functions (about 1 % of draws of the
    # product GUM in test_gum_whiten.py, which then failed its sd check by 20-45 %): the GUM's
    # 0.9, or the user's value, must be the one nutpie runs with.
    import nutpie

    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 2, 30)}
    data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5, max_points=8)", data, family="poisson")

    def capture(compiled, **kwargs):
        raise _Captured(kwargs)

    monkeypatch.setattr(nutpie, "sample", capture)
    seen = []
    for extra in ({}, {"target_accept": 0.97}):
        with pytest.raises(_Captured) as info:
            g.sample(draws=20, tune=20, chains=1, backend="nutpie", **extra)
        seen.append(info.value.args[0]["target_accept"])
    assert seen == [0.9, 0.97]


def test_init_is_not_dropped_on_the_nutpie_path(monkeypatch):
    # nutpie has no counterpart of pm.sample's init: asking for nutpie with it is an error,
    # and "auto" hands even a long run to PyMC, which reads it.
    import pmctx.sampling

    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 2, 30)}
    data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5, max_points=8)", data, family="poisson")
    with pytest.raises(ValueError, match="pm.sample-only"):
        g.sample(draws=20, tune=20, chains=1, backend="nutpie", init="adapt_diag")

    def capture(model, **kwargs):
        raise _Captured(kwargs)

    monkeypatch.setattr(backends, "nutpie_available", lambda: True)
    monkeypatch.setattr(pmctx.sampling, "run_sampler", capture)
    with pytest.raises(_Captured) as info:
        g.sample(draws=1000, tune=1000, chains=4, init="adapt_diag")
    assert info.value.args[0]["init"] == "adapt_diag"


def test_target_accept_is_checked_and_reaches_the_sampler_from_the_command_line(monkeypatch):
    # The divergence warning says to raise target_accept; `pmctx fit gum --set
    # target_accept=0.95` is how a command-line user does that.
    from pmctx.models import gum as gum_module

    from pmctx.gum.model import GumModel

    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(0, 2, 30)}
    data["y"] = rng.poisson(np.exp(np.sin(data["x"])))
    g = gum("y ~ f(x, lengthscale=0.5, max_points=8)", data, family="poisson")
    for bad in (1.5, 0.0):
        with pytest.raises(ValueError, match=r"target_accept must be a probability in the open"):
            g.sample(draws=20, tune=20, chains=1, target_accept=bad)
    assert "target_accept" in gum_module.SPEC.options

    def capture(self, **kwargs):
        raise _Captured(kwargs)

    monkeypatch.setattr(GumModel, "sample", capture)
    with pytest.raises(_Captured) as info:
        gum_module.fit_data({"columns": data}, formula="y ~ f(x)", family="poisson",
                            draws=50, target_accept=0.95)  # fmt: skip
    assert info.value.args[0]["target_accept"] == 0.95
    assert info.value.args[0]["draws"] == 50
