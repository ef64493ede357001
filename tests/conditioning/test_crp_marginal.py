"""Per-trial CRP log-likelihood with the cause summed out, against a direct loop."""

import warnings

import arviz as az
import numpy as np

from pmctx.conditioning.marginal import add_integrated_log_likelihood, trial_log_likelihood
from pmctx.testing import assert_docstring_examples


def test_matches_direct_sum_over_causes():
    rng = np.random.default_rng(0)
    K, N, I = 3, 5, 4
    weights = rng.dirichlet(np.ones(K), size=(2, 3))
    theta = rng.uniform(0.05, 0.95, size=(2, 3, K, I))
    F = rng.integers(0, 2, (N, I)).astype(float)
    F[1, 2] = np.nan
    F[3, 0] = -1
    post = az.from_dict({"posterior": {"weights": weights, "theta": theta}}).posterior
    got = trial_log_likelihood(post, F).values
    for c, d, t in [(0, 0, 1), (1, 2, 3), (0, 1, 4)]:
        total = 0.0
        for k in range(K):
            p = weights[c, d, k]
            for i in range(I):
                if np.isfinite(F[t, i]) and F[t, i] >= 0:
                    p *= theta[c, d, k, i] if F[t, i] == 1 else 1 - theta[c, d, k, i]
            total += p
        np.testing.assert_allclose(got[c, d, t], np.log(total), rtol=1e-12)


def test_added_to_a_sampled_posterior():
    from pmctx.models.crp_conditioning import sample_posterior

    F = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [np.nan, 1, 0]])
    idata = sample_posterior(
        F, max_causes=3, draws=25, tune=10, chains=1, random_seed=0, check_convergence=False
    )  # adds it; a structure test, tiny chain (ArviZ 1's PSIS needs at least 25 draws)
    np.testing.assert_allclose(
        add_integrated_log_likelihood(idata.copy()).log_likelihood["trial_features"],
        idata.log_likelihood["trial_features"],
    )  # from the stored features, the same
    ll = idata.log_likelihood["trial_features"]
    assert ll.dims == ("chain", "draw", "trial") and ll.shape == (1, 25, 4)
    np.testing.assert_allclose(ll.values, trial_log_likelihood(idata.posterior, F).values)
    assert list(idata.log_likelihood.data_vars) == ["trial_features"]
    with warnings.catch_warnings():  # a 25-draw chain: ArviZ warns about its Pareto k
        warnings.simplefilter("ignore")
        assert np.isfinite(az.loo(idata).elpd)  # no var_name needed
    assert "features" in idata.conditional_log_likelihood  # the per-entry conditional stays


def test_docstring_examples():
    assert_docstring_examples("pmctx.conditioning.marginal")
