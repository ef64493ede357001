"""Random-effects BMS recovers the generating model frequencies of simulated populations."""

from __future__ import annotations

import numpy as np
import pytest

from pmctx.batch.bms import plot_bms, random_effects_bms


def _normal_evidences(model, rng, n_obs=100, tau=2.0):
    """Exact log evidences of one subject's data under m0 (mu = 0) and m1 (mu ~ N(0, tau^2)).

    Subjects of m1 whose mu is near 0 are (rightly) attributed to m0; with 100 observations
    and tau = 2 that happens rarely enough for the frequencies to be recoverable.
    """
    mu = 0.0 if model == 0 else rng.normal(0.0, tau)
    y = rng.normal(mu, 1.0, n_obs)
    log_m0 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.sum(y**2)
    # y ~ N(0, I + tau^2 11^T): the conjugate marginal, by the matrix determinant lemma.
    quad = np.sum(y**2) - tau**2 * y.sum() ** 2 / (1 + n_obs * tau**2)
    log_m1 = -0.5 * n_obs * np.log(2 * np.pi) - 0.5 * np.log1p(n_obs * tau**2) - 0.5 * quad
    return [log_m0, log_m1]


def _population(freq, n_units, seed):
    rng = np.random.default_rng(seed)
    models = rng.choice(len(freq), size=n_units, p=freq)
    return np.array([_normal_evidences(m, rng) for m in models]), models


@pytest.mark.parametrize("freq", [(0.75, 0.25), (0.3, 0.7), (0.5, 0.5)])
def test_recovers_generating_frequencies(freq):
    errors = []
    for seed in range(4):
        L, models = _population(freq, 80, seed)
        result = random_effects_bms(L, models=["null", "mean"], n_samples=20_000, seed=seed)
        estimate = result.table["expected_frequency"].to_numpy()
        errors.append(np.abs(estimate - np.asarray(freq)).max())
        # The unit posteriors classify the generating model of most units.
        assert (result.unit_probabilities.to_numpy().argmax(1) == models).mean() > 0.85
    # Sampling noise of 80 units alone is about 0.05; the mean error must stay near it.
    assert np.mean(errors) < 0.08, errors


def test_exceedance_and_bor():
    L, _ = _population((0.85, 0.15), 60, seed=1)
    result = random_effects_bms(L, models=["null", "mean"], n_samples=50_000)
    assert result.table.loc["null", "xp"] > 0.99 and result.table.loc["null", "pxp"] > 0.95
    assert result.bor < 0.05
    # Models that cannot be told apart: the omnibus risk is high, pxp close to 1/K.
    flat = random_effects_bms(np.zeros((40, 3)), n_samples=20_000)
    assert flat.bor > 0.9
    np.testing.assert_allclose(flat.table["pxp"], 1 / 3, atol=0.05)
    np.testing.assert_allclose(flat.table["expected_frequency"], 1 / 3, atol=1e-6)


def test_three_models_and_plot():
    rng = np.random.default_rng(5)
    truth = rng.choice(3, size=90, p=[0.5, 0.3, 0.2])
    L = rng.normal(0.0, 1.0, (90, 3))
    L[np.arange(90), truth] += 6.0
    result = random_effects_bms(L, models=list("abc"), n_samples=20_000)
    np.testing.assert_allclose(
        result.table["expected_frequency"], np.bincount(truth) / 90, atol=0.05
    )
    fig = plot_bms(result)
    assert len(fig.axes) == 2


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2 models"):
        random_effects_bms(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="log_evidence"):
        random_effects_bms(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="prior"):
        random_effects_bms(np.zeros((3, 2)), prior=-1.0)
