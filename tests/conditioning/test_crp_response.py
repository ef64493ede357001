"""Response models linking V_t to conditioned responses."""

import numpy as np
import pytest
from scipy import stats

from pmctx.conditioning.response import (
    BinaryChoice,
    LinearGaussian,
    OrdinalRating,
    get_response_model,
)

RNG = np.random.default_rng(0)
V = RNG.uniform(0.05, 0.95, 400)


def test_linear_gaussian_is_lcm_lik_with_missing_trials_skipped():
    cr = 0.3 + 1.7 * V + RNG.normal(0, 0.2, V.size)
    cr[::7] = np.nan
    fit = LinearGaussian().fit(V, cr)
    # LCM_lik: b = (X'X) \ (X'CR), sd = sqrt(mean(residual^2)), sum of normal log pdfs.
    seen = ~np.isnan(cr)
    X = np.column_stack([np.ones(seen.sum()), V[seen]])
    b = np.linalg.solve(X.T @ X, X.T @ cr[seen])
    sd = np.sqrt(np.mean((cr[seen] - X @ b) ** 2))
    lik = np.sum(np.log(stats.norm.pdf(cr[seen], X @ b, sd)))
    assert fit.params["intercept"] == pytest.approx(b[0], rel=1e-10)
    assert fit.params["gain"] == pytest.approx(b[1], rel=1e-10)
    assert fit.params["sd"] == pytest.approx(sd, rel=1e-10)
    assert fit.log_likelihood == pytest.approx(lik, rel=1e-10)
    assert fit.n_observed == seen.sum() and fit.pointwise.shape == (seen.sum(),)
    no_icpt = LinearGaussian(intercept=False).fit(V, cr)
    assert set(no_icpt.params) == {"gain", "sd"}
    assert no_icpt.log_likelihood < fit.log_likelihood


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_binary_choice_recovers_slope_and_is_the_map(link):
    model = BinaryChoice(link=link)
    truth = {"bias": 0.3, "slope": 4.0}
    y = model.simulate(V, truth, rng=1)
    y[:5] = np.nan
    fit = model.fit(V, y)
    assert fit.params["slope"] == pytest.approx(truth["slope"], abs=1.2)

    # The optimiser's answer beats nearby parameter values on the penalised likelihood.
    def pen(p):
        return model.pointwise(V, y, p).sum() - 0.5 * (p["bias"] ** 2 + p["slope"] ** 2) / 100

    best = pen(fit.params)
    for db, ds in [(0.05, 0), (-0.05, 0), (0, 0.1), (0, -0.1)]:
        p = {"bias": fit.params["bias"] + db, "slope": fit.params["slope"] + ds}
        assert pen(p) < best


def test_ordinal_probabilities_sum_to_one_and_slope_recovered():
    model = OrdinalRating(n_levels=5)
    truth = {"slope": 6.0, "cut_0": 0.5, "cut_1": 1.8, "cut_2": 3.0, "cut_3": 4.5}
    levels = np.arange(5.0)
    probs = np.exp([model.pointwise(np.array([v] * 5), levels, truth) for v in (0.0, 0.4, 0.9)])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    y = model.simulate(V, truth, rng=2)
    fit = model.fit(V, y)
    assert fit.params["slope"] == pytest.approx(truth["slope"], abs=1.5)
    cuts = [fit.params[f"cut_{k}"] for k in range(4)]
    assert np.all(np.diff(cuts) > 0)
    assert fit.n_params == 5


@pytest.mark.parametrize(
    ("model", "responses", "match"),
    [
        (LinearGaussian(), np.zeros(3), "one entry per trial"),
        (LinearGaussian(), np.full(V.size, np.nan), "all NaN"),
        (BinaryChoice(), np.full(V.size, 0.5), "binary"),
        (OrdinalRating(3), np.full(V.size, 3.0), "0..2"),
        (OrdinalRating(3), np.full(V.size, 1.5), "integer"),
    ],
)
def test_bad_responses(model, responses, match):
    with pytest.raises(ValueError, match=match):
        model.fit(V, responses)


def test_get_response_model_errors():
    with pytest.raises(ValueError, match="response model"):
        get_response_model("tobit")
    with pytest.raises(ValueError, match="n_levels"):
        get_response_model("ordinal")
