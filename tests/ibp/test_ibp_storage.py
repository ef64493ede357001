"""What an IBP fit keeps (pmctx.ibp.storage): a fit made big by shrinking the size limits keeps
the same draws as one that keeps everything, in compact forms that summaries and LOO read."""

import arviz as az
import numpy as np
import pytest
from pmctx.models import ibp

import pmctx
from pmctx.ibp import storage
from pmctx.ibp.data import visuomotor_data

KW = dict(K_max=10, draws=60, tune=40, chains=2, cores=1, random_seed=4, sigma_n=0.3,
          check_convergence=False, progressbar=False)  # fmt: skip


@pytest.fixture(scope="module")
def fits():
    data = visuomotor_data(30, random_seed=2)
    full = ibp.sample(data.F, data.X, store="all", **KW)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage, "PER_DRAW_BYTES", 1000)  # every per-trial array is "big"
        mp.setattr(storage, "CONDITIONAL_BYTES", 1000)
        mp.setattr(storage, "PREDICTIVE_BYTES", 2 * 30 * 38 * 8 * 3)  # three draws per chain
        slim = ibp.sample(data.F, data.X, **KW)
    return full, slim


@pytest.mark.slow  # two IBP fits, about 20 s on a loaded 2-CPU machine
def test_slim_fit_keeps_the_same_draws_compactly(fits):
    full, slim = fits
    assert full.posterior["Z"].dtype == slim.posterior["Z"].dtype == np.int8
    np.testing.assert_array_equal(slim.posterior["Z"], full.posterior["Z"])
    np.testing.assert_array_equal(slim.posterior["n_active"], full.posterior["n_active"])
    assert "X_prob" not in slim.posterior and "F_hat" not in slim.posterior
    assert "conditional_log_likelihood" not in slim.children
    assert "conditional_log_likelihood" in full.children
    # Recovery reports read the running means where the draws are not kept.
    from pmctx.ibp.diagnostics import recovery_report

    Z = full.posterior["Z"].values[0, -1]
    a = recovery_report(full, Z, full.posterior["F_hat"].values[0, -1], Z @ np.ones((10, 36)))
    b = recovery_report(slim, Z, full.posterior["F_hat"].values[0, -1], Z @ np.ones((10, 36)))
    assert a.keys() == b.keys() and {"F_rmse", "X_prob_mae"} <= set(b)
    np.testing.assert_allclose([a["F_rmse"], a["X_prob_mae"]], [b["F_rmse"], b["X_prob_mae"]],
                               rtol=1e-5)  # fmt: skip
    # Running per-chain moments equal the moments of the per-draw values (float32 draws).
    for name in ("X_prob", "F_hat"):
        moments = slim.posterior_moments[name]
        draws = full.posterior[name].values.astype(np.float64)
        np.testing.assert_allclose(moments.sel(moment="mean"), draws.mean(axis=1), atol=1e-6)
        np.testing.assert_allclose(moments.sel(moment="sd"), draws.std(axis=1), atol=1e-5)


@pytest.mark.slow  # two IBP fits, about 20 s on a loaded 2-CPU machine
def test_slim_log_likelihood_gives_the_same_loo(fits):
    full, slim = fits
    assert slim.log_likelihood["joint"].dtype == np.float32
    assert full.log_likelihood["joint"].dtype == np.float64
    np.testing.assert_allclose(slim.log_likelihood["joint"], full.log_likelihood["joint"],
                               rtol=1e-6)  # fmt: skip
    a, b = az.loo(full), az.loo(slim)
    assert abs(a.elpd - b.elpd) < 1e-3 * a.se
    summary = pmctx.summary(slim, var_names=["n_active", "loglik"])
    assert list(summary.index) == ["n_active", "loglik"]


@pytest.mark.slow  # two IBP fits, about 20 s on a loaded 2-CPU machine
def test_slim_posterior_predictive_uses_a_subset_of_draws(fits):
    full, slim = fits
    assert full.posterior_predictive.sizes["draw"] == 60
    pred = slim.posterior_predictive
    assert pred.sizes["draw"] == 3 and pred["X"].dtype == np.int8
    assert pred["draw"].values.tolist() == [0, 30, 59]
    assert set(np.unique(pred["X"].values)) <= {0, 1}


def test_store_and_reconstructions_are_checked():
    data = visuomotor_data(5, random_seed=0)
    with pytest.raises(ValueError, match="store must be one of .*got 'some'"):
        ibp.sample(data.F, data.X, store="some", draws=5, tune=0, chains=1)
    with pytest.raises(ValueError, match="reconstructions must be True, False, 'draws' or"):
        ibp.sample(data.F, data.X, reconstructions="mean", draws=5, tune=0, chains=1)


def test_integrated_likelihood_in_blocks_of_trials_is_the_same(monkeypatch):
    from pmctx.ibp import marginal

    rng = np.random.default_rng(0)
    n, k = 300, 8
    Z = (rng.random((n, k)) < 0.3).astype(np.int8)
    Z[:, 6:] = 0  # two inactive columns: the stratified term draws from the generator
    A, Y = rng.normal(size=(k, 2)), (rng.random((k, 12)) < 0.3).astype(int)
    F, X = Z @ A + 0.3 * rng.normal(size=(n, 2)), (rng.random((n, 12)) < 0.4).astype(int)
    pi = np.r_[np.full(6, 0.3), 0.01, 0.02]
    kw = dict(sigma_n=0.3, lam=0.9, eps=0.05)
    whole = marginal.trial_logliks(F, X, Z, A, Y, pi, rng=np.random.default_rng(1), **kw)
    monkeypatch.setattr(marginal, "BLOCK_BYTES", 2000)  # a few trials per block
    blocks = marginal.trial_logliks(F, X, Z, A, Y, pi, rng=np.random.default_rng(1), **kw)
    for name in ("joint", "F", "X"):
        np.testing.assert_array_equal(blocks[name], whole[name])
