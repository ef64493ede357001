"""Linear prediction under a ring spectrum: the spacing search's first stage."""

import numpy as np
import pytest

from pmctx.vonmises.spectral import prior_draws, ring_spectrum
from pmctx.vonmises.spectral_kriging import (
    SIGNAL_SHARES,
    kriging_predict,
    linear_prediction_score,
)


def _dense_prediction(y, train, test, spectrum, lam):
    """The same predictor from the dense covariance matrix (small maps only)."""
    torus = spectrum.shape
    kernel = np.fft.ifft2(spectrum / spectrum.mean())  # correlation at every lag
    m, n = train.shape
    rows, cols = np.indices((m, n))
    lag_r = (rows.ravel()[:, None] - rows.ravel()[None, :]) % torus[0]
    lag_c = (cols.ravel()[:, None] - cols.ravel()[None, :]) % torus[1]
    K = kernel[lag_r, lag_c]
    tr, te = train.ravel(), test.ravel()
    system = lam * K[np.ix_(tr, tr)] + (1 - lam) * np.eye(tr.sum())
    return lam * K[np.ix_(te, tr)] @ np.linalg.solve(system, y.ravel()[tr])


@pytest.mark.parametrize("lam", [0.1, 0.6, 0.9])
def test_prediction_matches_the_dense_solve(lam):
    rng = np.random.default_rng(0)
    spectrum = ring_spectrum((14, 13), 4.0, 0.4)
    y = np.exp(1j * rng.uniform(-np.pi, np.pi, size=(9, 8)))
    train = rng.random((9, 8)) < 0.6
    test = ~train
    fast = kriging_predict(y, train, test, spectrum, lam)
    np.testing.assert_allclose(fast, _dense_prediction(y, train, test, spectrum, lam), atol=1e-5)


def test_the_true_spacing_of_a_band_pass_map_ranks_first():
    # A draw of the band-pass prior itself at spacing 8, observed at kappa_obs 2 with 40%
    # missing: of spacings 4, 8 and 16, linear prediction of held-out pixels prefers 8.
    rng = np.random.default_rng(5)
    truth = np.angle(prior_draws(ring_spectrum((40, 40), 8.0, floor=0.0), 1, rng)[0])
    z = rng.vonmises(truth, 2.0)
    observed = rng.random(truth.shape) >= 0.4
    fold_of = rng.permutation(int(observed.sum())) % 3
    scores = [linear_prediction_score(z, observed, fold_of, s, 0.25) for s in (4.0, 8.0, 16.0)]
    assert int(np.argmax([c for c, _ in scores])) == 1
    assert all(share in SIGNAL_SHARES for _, share in scores)
    assert 0.0 < scores[1][0] <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"signal_share": 1.0}, r"signal_share must lie in \(0, 1\)"),
        ({"spectrum": np.ones((4, 4))}, r"torus \(4, 4\) must be at least the map's shape"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, match):
    args = {
        "y": np.ones((6, 6), dtype=complex),
        "train": np.eye(6, dtype=bool),
        "test": ~np.eye(6, dtype=bool),
        "spectrum": ring_spectrum((8, 8), 4.0),
        "signal_share": 0.5,
    }
    with pytest.raises(ValueError, match=match):
        kriging_predict(**{**args, **kwargs})


def test_folds_must_match_the_observed_pixels():
    observed = np.ones((6, 6), dtype=bool)
    with pytest.raises(ValueError, match=r"one fold per observed pixel, shape \(36,\)"):
        linear_prediction_score(np.zeros((6, 6)), observed, np.zeros(35, int), 4.0, 0.25)
