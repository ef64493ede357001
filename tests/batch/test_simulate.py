"""The simulate functions: reproducible prior draws whose truth the fits can rank."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pmctx.batch.adapters import resolve_fit, resolve_invariants, resolve_simulate


@pytest.mark.parametrize("model", ["ibp", "crp", "vonmises", "gum"])
def test_simulate_is_reproducible_and_truth_is_scalar(model):
    simulate = resolve_simulate(model)
    options = {"vonmises": {"n_sweeps": 5}}.get(model, {})
    data, truth = simulate(np.random.default_rng(3), **options)
    again, truth_again = simulate(np.random.default_rng(3), **options)
    assert truth == truth_again and truth
    assert all(np.isscalar(v) and np.isfinite(v) for v in truth.values())
    for key, value in data.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(again[key]))


def test_priors_match_the_model_declarations():
    from pmctx.ibp.simulate import ALPHA_PRIOR
    from pmctx.steps.ibp_gibbs import ALPHA_PRIOR as MODEL_ALPHA_PRIOR

    assert ALPHA_PRIOR == MODEL_ALPHA_PRIOR


def test_ibp_prior_moments():
    from pmctx.ibp.simulate import simulate

    rng = np.random.default_rng(0)
    draws = [simulate(rng, n_trials=5, K_max=4)[1] for _ in range(3000)]
    alpha = np.array([d["alpha"] for d in draws])
    sigma = np.array([d["sigma_n"] for d in draws])
    assert abs(alpha.mean() - 2.0) < 0.1  # Gamma(2, 1)
    assert abs(sigma.mean() - np.sqrt(2 / np.pi)) < 0.03  # HalfNormal(1)


def test_gum_truth_matches_the_fit_names():
    data, truth = resolve_simulate("gum")(0, n=30)
    idata = resolve_fit("gum")(data, random_seed=0, draws=20)
    draws = resolve_invariants("gum")(idata)
    assert set(truth) <= set(draws)


def test_crp_alpha_fit_gives_grid_posterior():
    data, truth = resolve_simulate("crp")(1, target="alpha", n_particles=100)
    idata = resolve_fit("crp")(data, random_seed=0, n_particles=100, n_draws=200)
    assert set(np.unique(idata.posterior["alpha"])) <= set(data["alphas"])
    assert np.isfinite(idata.posterior.attrs["log_evidence"])
    assert "responses" in idata.log_likelihood
    assert set(resolve_invariants("crp")(idata)) == set(truth)


def test_bad_options():
    with pytest.raises(ValueError, match="target"):
        resolve_simulate("crp")(0, target="nope")
    with pytest.raises(ValueError, match="n_dims"):
        resolve_simulate("ibp")(0, n_dims=0, n_pixels=0)
    with pytest.raises(ValueError, match="Unknown model"):
        resolve_fit("nope")


def test_crp_fit_reads_table_columns():
    from pmctx.batch import discover_units

    data, _ = resolve_simulate("crp")(2, target="alpha", n_particles=50)
    F = data["features"]
    frame = pd.DataFrame(F, columns=["US", "tone", "A", "B", "C"]).assign(
        unit="s1", responses=data["responses"]
    )
    unit = discover_units(frame)["s1"].load()
    from_table = resolve_fit("crp")(unit, random_seed=0, alphas=data["alphas"], n_particles=50)
    direct = resolve_fit("crp")(data, random_seed=0, n_particles=50)
    np.testing.assert_array_equal(from_table.posterior["alpha"], direct.posterior["alpha"])
