"""What an IBP fit says beyond R-hat (pmctx.ibp.fit_checks)."""

import warnings

import arviz as az
import numpy as np
import pytest
from pmctx.models.ibp import SPEC

from pmctx.convergence import report_after_fit
from pmctx.exceptions import ConvergenceWarning
from pmctx.ibp.fit_checks import shared_feature_modes, with_disagreement_advice


def _fit(shared_per_chain, draws=400, seed=0):
    """A fake fit whose chains hold ``shared_per_chain`` shared features (plus noise)."""
    rng = np.random.default_rng(seed)
    n_active = np.array([k + rng.integers(0, 2, draws) for k in shared_per_chain])
    singletons = n_active - np.array([[k] * draws for k in shared_per_chain])
    loglik = rng.normal(size=n_active.shape) + 3.0 * np.asarray(shared_per_chain)[:, None]
    return az.from_dict(
        {
            "posterior": {"n_active": n_active, "loglik": loglik},
            "sample_stats": {"n_active": n_active, "n_singletons": singletons},
        }
    )


def test_modes_are_per_chain():
    assert shared_feature_modes(_fit([6, 5, 5, 7])) == [6, 5, 5, 7]


def test_agreeing_chains_keep_the_advice():
    assert with_disagreement_advice(SPEC, _fit([4, 4, 4, 4])) is SPEC


def test_a_warning_from_disagreeing_chains_says_so():
    idata = _fit([6, 5, 5, 7])
    spec = with_disagreement_advice(SPEC, idata)
    assert spec.advice.endswith(SPEC.advice) and spec.name == SPEC.name
    pattern = r"chains disagree on the number of shared features .*: 6, 5, 5, 7\)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # invariants of the fake fit's shapes
        with pytest.warns(ConvergenceWarning, match=pattern):
            report_after_fit(idata, spec)


def test_truncation_share_is_per_sweep():
    """12 % of draws with a hit is 12 % of the sweeps at one sweep per draw, and under 1 % at
    14 (1 - 0.88 ** (1 / 14) = 0.0091)."""
    from pmctx.exceptions import TruncationWarning
    from pmctx.ibp.fit_checks import warn_if_truncated

    hit = np.zeros((1, 100), bool)
    hit[0, :12] = True
    idata = az.from_dict({"sample_stats": {"truncation_hit": hit}})
    with pytest.warns(TruncationWarning, match="full after 12% of the sweeps"):
        warn_if_truncated(idata, K_max=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        warn_if_truncated(idata, K_max=6, sweeps_per_draw=14)
