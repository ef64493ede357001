"""reconstruct_cv(spacings=...): the band-pass prior weighed against the kappa grid."""

import numpy as np
import pytest
from pmctx.models.vonmises_select import reconstruct_cv

from pmctx.vonmises.average import PRIOR_MARGIN, choose_prior
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
        ({"spacings": "grid"}, "spacings must be 'auto', 'cv', None"),
    ],
)
def test_spacings_refuse_what_they_cannot_do(kwargs, match):
    kwargs = {"spacings": [4.0], **kwargs}
    with pytest.raises(ValueError, match=match):
        reconstruct_cv(_theta(), kappas=[2.0], ranks=[2], cv_sweeps=6, draws=4, tune=2, **kwargs)


def _paired(diff_mean, n=400, seed=0):
    """One-row priors whose pixel-wise difference has mean ``diff_mean`` and SE 0.01."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=n)
    noise = (noise - noise.mean()) / noise.std(ddof=1) * 0.01 * np.sqrt(n)
    base = np.full(n, -1.5)
    return base[None], (base + diff_mean + noise)[None]


@pytest.mark.parametrize(
    ("lead", "prior"),
    [(0.015, "spectral"), (-0.015, "spectral"), (-0.025, "mrf"), (-0.05, "mrf")],
)
def test_choose_prior_keeps_the_band_pass_prior_within_the_margin(lead, prior):
    # With one row per prior the mixtures are the rows: d has mean `lead`, paired SE 0.01,
    # so the nearest-neighbour prior wins only when it leads by more than 2 SE (0.02).
    mrf, band = _paired(lead)
    chosen, weights, diff, se = choose_prior(mrf, band)
    assert diff == pytest.approx(lead) and se == pytest.approx(0.01)
    assert PRIOR_MARGIN == 2.0 and chosen == prior
    assert weights.tolist() == ([1.0, 0.0] if prior == "mrf" else [0.0, 1.0])


def test_choose_prior_compares_each_prior_s_stacking_mixture():
    # Two complementary MRF rows: each alone trails the band-pass row, their stacked
    # mixture (weights 1/2, 1/2) leads it on every pixel.
    mrf = np.log([[0.9, 0.1] * 50, [0.1, 0.9] * 50])
    band = np.log([[0.45, 0.45] * 50])
    chosen, weights, diff, _ = choose_prior(mrf, band)
    assert chosen == "mrf" and diff == pytest.approx(np.log(0.45 / 0.5))
    np.testing.assert_allclose(weights, [0.5, 0.5, 0.0], atol=1e-6)


def test_auto_weighs_the_band_pass_prior_unless_it_cannot():
    small = {"kappas": [2.0], "ranks": [3], "cv_sweeps": 6, "draws": 4, "tune": 2}
    idata = reconstruct_cv(_theta(), **small, spacings="auto", random_seed=0)
    assert set(idata.cv["prior"].values) == {"mrf", "spectral"}
    assert idata.cv.attrs["prior"] in ("mrf", "spectral")
    assert idata.cv.attrs["prior_se"] > 0
    for fallback in ({"signal": np.ones((10, 10))}, {"method": "one_se"}):
        plain = reconstruct_cv(_theta(), **small, **fallback, spacings="auto", random_seed=0)
        assert "prior" not in plain.cv and "spectral_weight" not in plain.cv.attrs
