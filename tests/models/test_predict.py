"""Posterior predictive groups (az.plot_ppc_dist works) and predictions for new inputs."""

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pytest
from pmctx.models import crp_conditioning as crp
from pmctx.models import gum as gum_module
from pmctx.models import ibp, vonmises_map

from pmctx.conditioning import shipped_design
from pmctx.ibp.data import visuomotor_data
from pmctx.vonmises.maps import orientation_error


def _ppc_plots(idata, var_names=None):
    assert "posterior_predictive" in idata.children
    axes = az.plot_ppc_dist(idata, var_names=var_names, num_samples=20)
    plt.close("all")
    return axes


@pytest.fixture(scope="module")
def ibp_split():
    data = visuomotor_data(70, random_seed=0)
    train, test = slice(0, 40), slice(40, 70)
    idata = ibp.sample(
        data.F[train], data.X[train], K_max=10, draws=100, tune=100, chains=1, random_seed=0,
        sigma_n=0.3, check_convergence=False,  # prediction here; convergence is tested elsewhere
    )  # fmt: skip
    return data, train, test, idata


def test_ibp_predicts_held_out_forces_from_cues_better_than_the_mean_force(ibp_split):
    data, train, test, idata = ibp_split
    _ppc_plots(idata, ["F"])
    predicted = ibp.predict(idata, {"X": data.X[test]})["F"].mean(("chain", "draw")).values
    mse = np.mean((predicted - data.F[test]) ** 2)
    baseline = np.mean((data.F[train].mean(axis=0) - data.F[test]) ** 2)
    assert mse < 0.3 * baseline  # noise sd 0.3 bounds mse below by 0.09


def test_ibp_predicts_held_out_cues_from_forces_better_than_pixel_frequencies(ibp_split):
    data, train, test, idata = ibp_split
    prob = ibp.predict(idata, {"F": data.F[test]})["X_prob"].mean(("chain", "draw")).values
    X = data.X[test]
    base = np.clip(data.X[train].mean(axis=0), 1e-3, 1 - 1e-3)

    def loglik(p):
        return np.mean(X * np.log(p) + (1 - X) * np.log1p(-p))

    assert loglik(prob) > loglik(base) + 0.1


def test_crp_ppc_and_prediction_for_a_new_design():
    design = shipped_design("renewal_aba", n_acquisition=3, n_extinction=3, n_test=1)
    idata = crp.sample_posterior(
        design, max_causes=4, draws=200, tune=50, chains=1, random_seed=0, alpha=0.5,
        check_convergence=False,
    )  # fmt: skip
    _ppc_plots(idata)
    new = shipped_design("renewal_abc", n_acquisition=5, n_extinction=5, n_test=2)
    pred = crp.predict(idata, new, n_particles=200, random_seed=0)
    assert pred["V"].shape == (new.to_array().shape[0],)
    v, p = pred["V"].values, pred["response_prob"].values
    assert np.all((0 <= v) & (v <= 1)) and np.all(np.diff(p[np.argsort(v)]) >= 0)
    assert v[4] > 0.7  # end of acquisition: the US is expected


def test_vonmises_ppc_and_prediction_at_missing_sites():
    rng = np.random.default_rng(0)
    truth = np.full((5, 5), 1.0) + 0.05 * rng.normal(size=(5, 5))
    observed = vonmises_map.noisy_observations(truth, kappa_obs=8.0, missing=0.3, random_seed=1)
    idata = vonmises_map.reconstruct(
        observed, kappa=5.0, kappa_obs=8.0, rank=3, draws=200, tune=50, chains=1,
        random_seed=0, check_convergence=False,
    )  # fmt: skip
    _ppc_plots(idata)
    pred = vonmises_map.predict(idata, random_seed=0)
    missing = np.isnan(observed)
    assert pred.sizes["site"] == missing.sum()
    theta = pred["theta_pred"].values.reshape(-1, missing.sum())
    mean = np.mod(np.angle(np.exp(2j * theta).mean(axis=0)), 2 * np.pi) / 2
    assert orientation_error(mean, truth[missing]).mean() < 0.3  # chance: pi / 4


def test_vonmises_chain_predicts_missing_times_near_the_truth():
    from pmctx.models import vonmises_chain

    x, y = vonmises_chain.simulate(40, kappa=8.0, kappa_obs=6.0, rank=5, random_seed=3)
    y = np.array(y, dtype=float)
    y[10:14] = np.nan
    idata = vonmises_chain.smooth(
        y, kappa=8.0, kappa_obs=6.0, draws=200, tune=20, chains=1, random_seed=0,
        check_convergence=False,
    )  # fmt: skip
    pred = vonmises_chain.predict(idata, random_seed=0)
    assert pred["time"].values.tolist() == [10, 11, 12, 13]
    mean = np.angle(np.exp(1j * pred["y_pred"].values).mean(axis=(0, 1)))
    error = np.abs(np.angle(np.exp(1j * (mean - x[10:14]))))
    assert error.mean() < 0.6  # chance: pi / 2
    assert pred["y_pred"].attrs["period"] == 2 * np.pi


@pytest.mark.slow
def test_gum_ppc():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2, 60)
    g = gum_module.gum("y ~ f(x, max_points=8)", {"x": x, "y": rng.poisson(np.exp(np.sin(x)))},
                       family="poisson")  # fmt: skip
    idata = g.sample(draws=100, tune=100, chains=1, random_seed=0, check_convergence=False)
    _ppc_plots(idata)
    az.loo_pit(idata, var_names="y")
