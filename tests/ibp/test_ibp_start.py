"""The subsample start (pmctx.ibp.start) and sample(start=...)."""

import arviz as az
import numpy as np
import pytest
from pmctx.models.ibp import build_model, sample, subsample_initvals

from pmctx.ibp.data import visuomotor_data
from pmctx.ibp.diagnostics import align_features
from pmctx.ibp.start import subsample_start

LEARNED = ("alpha", "sigma_n", "sigma_A", "phi", "lam", "eps")


def _aligned_z_right(Z, truth_Z):
    # Each true feature matched to the column that agrees with it most.
    agree = [(Z == truth_Z[:, [j]]).mean(axis=0).max() for j in range(truth_Z.shape[1])]
    return float(np.min(agree))


def test_subsample_start_finds_the_features_of_a_larger_data_set():
    data = visuomotor_data(2000, random_seed=3)
    start = subsample_start(data.F, data.X, 12, learned=LEARNED, n_sub=150, sweeps=150, rng=0)
    m = start["Z"].sum(axis=0)
    assert start["Z"].shape == (2000, 12)
    # Every row is assigned (not only the subsample), and the 4 features are found.
    assert (m >= 100).sum() == 4
    assert _aligned_z_right(start["Z"], data.Z) > 0.98
    assert 0.2 < start["sigma_n"] < 0.4 and 0.8 < start["lam"] < 0.97
    assert np.all((start["pi"] > 0) & (start["pi"] < 1))


def test_subsample_start_keeps_fixed_hyperparameters_and_handles_cues_only():
    data = visuomotor_data(300, random_seed=1)
    start = subsample_start(
        np.zeros((300, 0)), data.X, 8, learned=("phi",), fixed=dict(lam=0.8), n_sub=50,
        sweeps=20, rng=1,
    )  # fmt: skip
    assert start["lam"] == 0.8 and start["A"].shape == (8, 0)
    assert start["Z"].shape == (300, 8)


def test_subsample_initvals_match_the_model_and_differ_between_chains():
    data = visuomotor_data(60, random_seed=0)
    model = build_model(data.F, data.X, K_max=8, lam=0.9)
    points = subsample_initvals(model, data.F, data.X, chains=2, random_seed=4)
    assert len(points) == 2 and "lam" not in points[0]
    assert set(points[0]) == {"Z", "pi", "A", "Y", "alpha", "sigma_n2", "sigma_A2", "phi", "eps"}
    assert not np.array_equal(points[0]["Z"], points[1]["Z"])
    again = subsample_initvals(model, data.F, data.X, chains=2, random_seed=4)
    assert np.array_equal(again[1]["Z"], points[1]["Z"])


def test_sample_from_the_subsample_start():
    data = visuomotor_data(120, random_seed=2)
    idata = sample(data.F, data.X, K_max=8, draws=20, tune=5, chains=2, random_seed=0,
                   start="subsample", log_likelihood=False, posterior_predictive=False,
                   check_convergence=False, progressbar=False)  # fmt: skip
    # The chains start at a fit, not at Z = 0: features are active from the first draw.
    assert (idata.posterior["n_active"].values[:, 0] >= 3).all()


def test_sample_rejects_an_unknown_start():
    with pytest.raises(ValueError, match="start must be one of"):
        sample(X=np.eye(4, dtype=int), K_max=3, start="truth")


@pytest.mark.slow
def test_recovery_at_n_1000_from_the_default_start():
    # sample()'s default start at N >= 500 with short chains (400 sweeps each, ~1 CPU min):
    # the chains agree, hold the true features and recover Z and Y.
    data = visuomotor_data(1000, random_seed=5)
    idata = sample(data.F, data.X, K_max=10, draws=200, tune=200, random_seed=5, cores=1,
                   reconstructions=False, log_likelihood=False, posterior_predictive=False,
                   check_convergence=False, progressbar=False)  # fmt: skip
    n_active = idata.posterior["n_active"].values
    n_shared = n_active - idata.sample_stats["n_singletons"].values
    # Every chain's most frequent number of shared features is the truth; how often a small
    # extra feature shared by a few noisy trials is kept is the posterior's (0.78-0.96 per
    # chain at seed 5), so the chains must agree on it, not reach a fixed share.
    modes = [np.bincount(chain).argmax() for chain in n_shared]
    assert modes == [4] * 4, modes
    p_shared = (n_shared == 4).mean(axis=1)
    assert np.ptp(p_shared) <= 0.25, p_shared
    rhat = float(az.rhat(idata, var_names=["n_active"])["n_active"])
    assert rhat < 1.05, rhat
    aligned = align_features(idata, reference=data.Z)
    z_hat = aligned["Z"].mean(axis=(0, 1)).round()
    y_hat = aligned["Y"].mean(axis=(0, 1)).round()
    assert (z_hat == data.Z).mean() >= 0.99, (z_hat == data.Z).mean()
    assert (y_hat == data.Y).mean() >= 0.97, (y_hat == data.Y).mean()
