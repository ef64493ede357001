"""Sampling until converged (pmctx.continuation): the budget, the stopping rule, and that a
continued run equals one run of the same total length with the same seed, bit for bit."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from pmctx.continuation import Budget, planned_draws
from pmctx.convergence import _budget_advice
from pmctx.memory import MOMENTS_GROUP, StoreTrace
from pmctx.sampling import run_sampler


def passes_from(n_pass):
    """A judge that fails until the chains hold ``n_pass`` draws (a deterministic stop)."""

    def judge(tree):
        n = tree.sample_stats.sizes["draw"]  # the posterior holds every thin-th draw
        return pd.DataFrame(
            {"converged": [n >= n_pass], "r_hat_largest": [1.0 + 1.0 / n],
             "ess_bulk": [float(n)], "ess_tail": [float(n)]},
            index=["toy"],
        )  # fmt: skip

    return judge


def mixed_model():
    """NUTS for (mu, sd) and PyMC's binary Gibbs for k: both kinds of step continue."""
    with pm.Model(coords={"i": range(3)}) as model:
        mu = pm.Normal("mu")
        sd = pm.HalfNormal("sd")
        k = pm.Bernoulli("k", 0.3)
        x = pm.Normal("x", dims="i")
        pm.Normal("y", mu + k + x.sum(), sd, observed=np.r_[0.1, -0.3, 0.4, 2.0])
    return model


def test_budget_defaults_and_checkpoints():
    budget = Budget.from_options(100, until_converged=True, max_draws=None, max_time=None)
    assert (budget.max_draws, budget.block) == (300, 50)
    assert budget.checkpoints == (100, 150, 200, 250, 300)
    odd = Budget.from_options(100, until_converged=True, max_draws=170, max_time=5)
    assert odd.checkpoints == (100, 150, 170) and odd.max_time == 5.0
    assert Budget.from_options(100, until_converged=False, max_draws=None, max_time=None) is None
    assert planned_draws(100, until_converged=True, max_draws=250) == 250
    assert planned_draws(100, until_converged=False, max_draws=250) == 100


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"until_converged": "yes"}, TypeError, "until_converged must be True or False"),
        ({"max_draws": 50}, ValueError, r"max_draws must be at least draws \(100\), got 50"),
        ({"max_draws": 2.5}, TypeError, "max_draws"),
        ({"max_time": 0}, ValueError, "max_time must be a positive number of seconds"),
        ({"max_time": "1h"}, TypeError, "max_time must be a number of seconds"),
    ],
)
def test_bad_budget_options_say_what_was_expected(options, error, match):
    kwargs = {"until_converged": True, "max_draws": None, "max_time": None, **options}
    with pytest.raises(error, match=match):
        Budget.from_options(100, **kwargs)


@pytest.mark.parametrize("chains", [1, 2])
def test_continued_run_equals_one_run_of_the_same_length(chains):
    """NUTS (tuned step size and mass matrix kept) and a Gibbs step continue their chains:
    a run that continued to 90 draws equals a fixed 90-draw run with the same seed."""
    model = mixed_model()
    kw = {"tune": 40, "chains": chains, "random_seed": 7, "progressbar": False}
    continued = run_sampler(model, draws=40, judge=passes_from(90), **kw)
    stats = continued.sample_stats.attrs
    assert continued.posterior.sizes["draw"] == 100  # checks at 40, 60, 80, 100
    assert (stats["pmctx_stop_reason"], stats["pmctx_extensions"]) == ("converged", 3)
    assert stats["pmctx_draws_requested"] == 40 and stats["pmctx_draws_kept"] == 100
    fixed = run_sampler(model, draws=100, until_converged=False, cores=chains, **kw)
    assert fixed.sample_stats.attrs["pmctx_stop_reason"] == "fixed_length"
    for name in ("mu", "sd", "k", "x"):
        np.testing.assert_array_equal(continued.posterior[name], fixed.posterior[name])
    for name in ("step_size", "tree_depth", "energy"):
        np.testing.assert_array_equal(continued.sample_stats[name], fixed.sample_stats[name])


def test_stop_reasons_and_their_record():
    model = mixed_model()
    kw = {"tune": 20, "chains": 2, "random_seed": 1, "progressbar": False}
    first = run_sampler(model, draws=30, judge=passes_from(0), **kw)
    assert first.posterior.sizes["draw"] == 30
    assert first.sample_stats.attrs["pmctx_stop_reason"] == "converged"
    assert first.sample_stats.attrs["pmctx_extensions"] == 0
    never = run_sampler(model, draws=30, max_draws=75, judge=passes_from(10**6), **kw)
    attrs = never.sample_stats.attrs
    assert never.posterior.sizes["draw"] == 75
    assert (attrs["pmctx_stop_reason"], attrs["pmctx_extensions"]) == ("max_draws", 3)
    looks = [c.split(":")[:2] for c in attrs["pmctx_checks"]]
    assert looks == [["30", "0"], ["45", "0"], ["60", "0"], ["75", "0"]]
    late = run_sampler(model, draws=30, max_time=1e-9, judge=passes_from(10**6), **kw)
    assert late.sample_stats.attrs["pmctx_stop_reason"] == "max_time"
    assert late.posterior.sizes["draw"] == 30
    advice = _budget_advice(never)
    assert "continued to 75 draws per chain (3 extensions)" in advice and "max_draws=" in advice


def test_without_a_judge_the_length_is_fixed():
    model = mixed_model()
    idata = run_sampler(model, draws=25, tune=10, chains=1, random_seed=2, progressbar=False)
    assert idata.posterior.sizes["draw"] == 25
    assert idata.sample_stats.attrs["pmctx_stop_reason"] == "fixed_length"


@pytest.mark.parametrize("thin", [1, 3])
def test_store_trace_keeps_the_moments_of_exactly_the_kept_draws(thin):
    """A faster chain's draws past the stop leave neither the per-draw store nor the
    running moments (they are restored from the checkpoint); a thinning store is judged on
    its kept draws."""
    model = mixed_model()
    kw = {"tune": 20, "chains": 2, "random_seed": 3, "progressbar": False}

    def store(draws):
        return StoreTrace(model, draws=draws, per_draw={"x": "float64"}, moments=["mu"],
                          thin=thin, thinned_group="posterior_thinned")  # fmt: skip

    trace = store(150)
    continued = trace.attach(run_sampler(model, draws=50, judge=passes_from(75), trace=trace,
                                         **kw))  # fmt: skip
    trace = store(75)
    fixed = trace.attach(run_sampler(model, draws=75, until_converged=False, trace=trace,
                                     cores=2, **kw))  # fmt: skip
    group = "posterior" if thin == 1 else "posterior_thinned"
    assert continued.posterior.sizes["draw"] == 75
    assert continued[group].sizes["draw"] == -(-75 // thin)
    np.testing.assert_array_equal(continued[group]["x"], fixed[group]["x"])
    np.testing.assert_array_equal(continued[MOMENTS_GROUP]["mu"], fixed[MOMENTS_GROUP]["mu"])


def test_nutpie_chains_continue_to_the_same_draws_as_one_run():
    nutpie = pytest.importorskip("nutpie")
    from pmctx.continuation import UntilConverged, nutpie_until_converged

    with pm.Model() as model:
        x = pm.Normal("x", shape=5)
        pm.Normal("y", x.sum(), 1.0, observed=[1.0])
    compiled = nutpie.compile_pymc_model(model)
    budget = Budget.from_options(40, until_converged=True, max_draws=200, max_time=None)
    stopper = UntilConverged(budget, tune=50, chains=2, first_draws=None, judge=passes_from(70))
    kw = {"tune": 50, "chains": 2, "seed": 11, "progress_bar": False}
    sampler = nutpie.sample(compiled, draws=budget.max_draws, blocking=False, **kw)
    continued = nutpie_until_converged(sampler, stopper)
    assert (stopper.kept, stopper.reason, stopper.extensions) == (80, "converged", 2)
    assert continued.posterior.sizes["draw"] == 80
    fixed = nutpie.sample(compiled, draws=80, **kw)
    np.testing.assert_array_equal(continued.posterior["x"], fixed.posterior["x"])
