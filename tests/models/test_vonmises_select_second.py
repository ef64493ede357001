"""reconstruct_cv and cross_validate with second-neighbour couplings in the grid."""

import numpy as np
import pytest
from pmctx.models.vonmises_select import reconstruct_cv

from pmctx.vonmises.select import cross_validate


def _theta(seed=0, shape=(6, 6)):
    rng = np.random.default_rng(seed)
    theta = np.mod(rng.vonmises(np.zeros(shape), 3.0), 2 * np.pi) / 2
    theta[rng.random(shape) < 0.2] = np.nan
    return theta


def test_ratios_are_a_grid_axis_and_reach_the_posterior():
    idata = reconstruct_cv(
        _theta(), kappas=[2.0], ranks=[3], kappa2_ratios=(0.0, -0.25), cv_sweeps=9,
        draws=6, tune=3, spacings=None, random_seed=1,
    )  # fmt: skip
    assert idata.cv["kappa2_ratio"].values.tolist() == [0.0, -0.25]
    assert float(idata.cv["weight"].sum()) == pytest.approx(1.0)
    ratios = idata.posterior["kappa2_ratio"].values.ravel()
    assert set(ratios) <= {0.0, -0.25} and ratios.size == 6


def test_the_default_grid_has_no_ratio_column():
    idata = reconstruct_cv(
        _theta(), kappas=[2.0], ranks=[3], cv_sweeps=6, draws=3, tune=2, spacings=None,
        random_seed=1,
    )  # fmt: skip
    assert "kappa2_ratio" not in idata.cv and "kappa2_ratio" not in idata.posterior


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kappa2_ratios": ()}, "kappa2_ratios must be a non-empty sequence"),
        ({"kappa2_ratios": (0.0, np.nan)}, "kappa2_ratios must be a non-empty sequence"),
        ({"kappa2_ratios": (0.0, -0.2), "method": "one_se"}, "cannot choose among"),
    ],
)
def test_bad_ratio_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reconstruct_cv(_theta(), kappas=[2.0], ranks=[3], cv_sweeps=6, draws=3, **kwargs)


def test_cross_validate_refuses_a_pick_rule_that_ignores_ratios():
    z = np.where(np.isnan(_theta()), np.nan, 0.3)
    with pytest.raises(ValueError, match="use rule='best'"):
        cross_validate(z, kappas=[2.0], ranks=[3], kappa2_ratios=(0.0, -0.2), rule="one_se")
