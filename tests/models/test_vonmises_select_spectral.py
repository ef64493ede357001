"""reconstruct_cv(spacings=...): the band-pass prior weighed against the kappa grid."""

import numpy as np
import pytest
from pmctx.models.vonmises_select import reconstruct_cv

from pmctx.vonmises.spectral import prior_draws, ring_spectrum


def _theta(size=10, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.angle(prior_draws(ring_spectrum((size, size), 5.0, floor=0.0), 1, rng)[0])
    z = rng.vonmises(truth, 4.0)
    theta = np.mod(z, 2 * np.pi) / 2
    theta[rng.random(theta.shape) < 0.3] = np.nan
    return theta


def test_joint_grid_weights_and_pooled_draws():
    idata = reconstruct_cv(
        _theta(),
        kappas=[2.0],
        ranks=[3],
        cv_sweeps=9,
        draws=10,
        tune=5,
        spacings=[4.0, 6.0],
        random_seed=0,
    )
    cv = idata.cv
    assert cv["prior"].values.tolist() == ["mrf", "spectral", "spectral"]
    assert float(cv["weight"].sum()) == pytest.approx(1.0)
    assert np.isnan(cv["spacing"].values[0]) and np.isnan(cv["kappa"].values[1])
    assert cv.attrs["spectral_weight"] == pytest.approx(float(cv["weight"][1:].sum()))
    assert cv.attrs["spectral_weight"] in (pytest.approx(0.0), pytest.approx(1.0))  # one prior
    spacing = idata.posterior["spacing"].values.ravel()
    kappa = idata.posterior["kappa"].values.ravel()
    assert np.all(np.isnan(spacing) != np.isnan(kappa))  # each draw from one prior
    assert idata.posterior["theta"].shape == (1, 10, 10, 10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "one_se"}, "with spacings use"),
        ({"signal": np.ones((10, 10))}, "does not support a per-pixel signal"),
        ({"spacings": "auto"}, "spacings must be None, 'cv'"),
    ],
)
def test_spacings_refuse_what_they_cannot_do(kwargs, match):
    kwargs = {"spacings": [4.0], **kwargs}
    with pytest.raises(ValueError, match=match):
        reconstruct_cv(_theta(), kappas=[2.0], ranks=[2], cv_sweeps=6, draws=4, tune=2, **kwargs)
