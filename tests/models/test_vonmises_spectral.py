"""reconstruct_spectral: the band-pass prior's public entry point (cheap checks)."""

import numpy as np
import pytest
from pmctx.models.vonmises_spectral import reconstruct_spectral
from scipy.stats import vonmises

from pmctx.vonmises.spectral import prior_draws, ring_spectrum
from pmctx.vonmises.spectral_cv import RATIOS, WIDTHS


def _theta(size=12, spacing=6.0, missing=0.3, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.angle(prior_draws(ring_spectrum((size, size), spacing, floor=0.0), 1, rng)[0])
    z = rng.vonmises(truth, 4.0)
    observed = rng.random(truth.shape) >= missing
    return np.where(observed, np.mod(z, 2 * np.pi) / 2, np.nan), observed


def test_cv_groups_weights_and_log_likelihood():
    theta, observed = _theta()
    idata = reconstruct_spectral(
        theta, draws=12, tune=6, cv_draws=4, cv_tune=4, n_folds=2, random_seed=1
    )
    post = idata.posterior
    assert post["theta"].dims == ("chain", "draw", "row", "col")
    assert post["theta"].shape == (1, 12, 12, 12)
    assert float(post["theta"].min()) >= 0.0 and float(post["theta"].max()) <= np.pi
    cv = idata.cv
    # The search: posterior fits at the refinement's spacings around the spacing linear
    # prediction ranked first, each at every width.
    assert len(cv["spacing"]) == len(RATIOS) * len(WIDTHS)
    assert set(cv["width"].values) == set(WIDTHS)
    assert cv.attrs["search_best"] in cv["spacing"].values
    assert cv["search_cosine"].dims == ("search",) and cv["search_spacing"].size >= 2
    assert len(set(zip(cv["spacing"].values, cv["width"].values))) == len(cv["spacing"])
    assert float(cv["weight"].sum()) == pytest.approx(1.0)
    assert cv.attrs["estimate"] > 2.0
    assert set(np.unique(post["spacing"])) <= set(cv["spacing"].values)
    assert set(np.unique(post["width"])) <= set(WIDTHS)
    # log_likelihood: the von Mises density of every observed pixel at each draw.
    z = 2.0 * theta[observed]
    o = post["o"].values[0][:, observed]
    k = post["kappa_obs"].values[0]
    direct = vonmises.logpdf(z[None], k[:, None], loc=o)
    np.testing.assert_allclose(idata.log_likelihood["z"].values[0], direct, rtol=1e-9)
    np.testing.assert_array_equal(idata.constant_data["obs_mask"].values, observed)


def test_fixed_spacing_and_kappa_obs_skip_cv():
    theta, _ = _theta(size=10)
    idata = reconstruct_spectral(theta, spacing=5.0, kappa_obs=3.0, draws=5, tune=3, random_seed=2)
    assert "cv" not in idata.children
    assert np.all(idata.posterior["kappa_obs"].values == 3.0)
    assert np.all(idata.posterior["spacing"].values == 5.0)
    again = reconstruct_spectral(theta, spacing=5.0, kappa_obs=3.0, draws=5, tune=3, random_seed=2)
    np.testing.assert_array_equal(idata.posterior["o"].values, again.posterior["o"].values)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"spacing": 0.0}, "spacing must be positive"),
        ({"spacing": -4.0}, "spacing must be positive"),
        ({"spacing": 1.0}, "at least 2 pixels"),
        ({"spacing": "auto"}, "spacing must be a number of pixels"),
        ({"spacing": []}, "at least one value"),
        ({"spacing": 5.0, "width": -0.1}, "width must be positive"),
        ({"spacing": 5.0, "kappa_obs": 0.0}, "kappa_obs must be positive"),
        ({"draws": 0}, "draws"),
        ({"mask": np.ones((3, 3))}, "mask must have theta_obs's shape"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    theta, _ = _theta(size=8)
    with pytest.raises(ValueError, match=match):
        reconstruct_spectral(theta, **kwargs)


def test_bad_maps_raise():
    with pytest.raises(ValueError, match="no observed pixel"):
        reconstruct_spectral(np.full((6, 6), np.nan), spacing=4.0)
    with pytest.raises(ValueError, match="theta_obs"):
        reconstruct_spectral(np.full((6, 6), 4.0), spacing=4.0)
